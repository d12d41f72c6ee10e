"""The figures of an operator check kept between checks: an operator whose weights did not change, checked on the
same store with the same estimators and code, reads its figures back instead of computing them."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from semuq_eval.diagnose.check_values import compute_values, tracked_estimators
from semuq_eval.diagnose.questions import load_questions
from semuq_eval.jsonio import read_json, write_json

__all__ = ["VALUES_CACHE_FORMAT", "cached_values"]

log = logging.getLogger(__name__)

VALUES_CACHE_FORMAT = "semuq-check-figures/1"


def cached_values(
    name: str,
    options: Mapping[str, Any],
    store: str | os.PathLike,
    fingerprint: str,
    *,
    estimators: Sequence[str] | None = None,
    max_questions: int | None = None,
    progress: bool = True,
    cache: str | os.PathLike | None | bool = True,
) -> dict[str, dict[str, Any]]:
    """:func:`compute_values`, read back from ``cache`` when the same operator (:func:`_identity`: the registered
    operator, its model folder, its weights' revision and its options) was checked on the same store (``fingerprint``)
    with the same estimators, questions, version and code before (the figures are deterministic). An operator whose
    weights cannot be told apart (no revision) is computed every time."""
    from semuq_eval import __version__

    folder = _cache_folder(cache)
    identity = _identity(name, options) if folder is not None else None
    if identity is None:
        return compute_values(
            name, options, store, estimators=estimators, max_questions=max_questions, progress=progress
        )
    key_source = {
        "version": __version__,
        "code": _code_fingerprint(),
        "store": fingerprint,
        "operator": [name, identity, {k: str(v) for k, v in options.items()}],
        "estimators": _tracked(name, store, estimators, max_questions),
        "max_questions": max_questions,
    }
    key = hashlib.sha256(json.dumps(key_source, sort_keys=True, default=str).encode()).hexdigest()
    path = folder / f"{key}.json"
    try:
        kept = read_json(path) if path.is_file() else None
    except (OSError, ValueError):
        kept = None  # a damaged copy is computed again and replaced
    if isinstance(kept, dict) and kept.get("format") == VALUES_CACHE_FORMAT and kept.get("key") == key:
        return kept["figures"]
    figures = compute_values(
        name, options, store, estimators=estimators, max_questions=max_questions, progress=progress
    )
    try:  # the cache only saves time: a folder that cannot be written costs the next check its time, nothing else
        folder.mkdir(parents=True, exist_ok=True)
        write_json(path, {"format": VALUES_CACHE_FORMAT, "key": key, "of": key_source, "figures": figures})
    except OSError as err:
        log.warning("check-operator: the figures were not kept in the cache %s (%s)", folder, err)
    return figures


def _identity(name: str, options: Mapping[str, Any]) -> dict[str, Any] | None:
    """What tells two operators apart, found without loading a model library: the registered operator, its model
    folder and the sha256-based revision of its weights; None when the weights cannot be told apart (a hub id).
    An operator given no model is identified by its own ``info`` (building it loads no model)."""
    from semuq_eval import operators
    from semuq_eval.harness.operator_runs import get_operator
    from semuq_eval.local_models import local_revision

    base, kwargs = operators.resolve(name, dict(options))
    if "model" not in kwargs:
        info = dict(get_operator(name, dict(options)).info)
        return None if "model" in info and not info.get("revision") else info
    revision = local_revision(kwargs["model"])
    return {"operator": base, "model": str(kwargs["model"]), "revision": revision} if revision else None


def _tracked(
    name: str, store: str | os.PathLike, estimators: Sequence[str] | None, max_questions: int | None
) -> list[str]:
    """The estimators whose AUROC :func:`compute_values` tracks (the defaults resolved), in order."""
    n_samples = max((len(q.samples) for q in load_questions(store, max_questions=max_questions)), default=0)
    return sorted(tracked_estimators(name, n_samples, estimators)) if n_samples else []


@functools.cache
def _code_fingerprint() -> str:
    """sha256 of the package's source: a copy made by other code (an edited checkout) is never read back."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _cache_folder(cache: str | os.PathLike | None | bool) -> Path | None:
    if cache is False or cache is None:
        return None
    if cache is True:
        from semuq_eval.assets import cache_dir

        return cache_dir() / "check-operator"
    return Path(cache)
