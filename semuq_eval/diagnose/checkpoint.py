"""Per-operator checkpoints of a diagnosis: a killed run resumes at the operator it was on.

A diagnosis of several trained encoders on thousands of pairs takes an hour or more on a CPU; without
checkpoints a run stopped near its end starts again from nothing. With a checkpoint folder,
:func:`~semuq_eval.diagnose.diagnosis.diagnose` keeps each operator's outcome as soon as it is measured
(``<operator>.npz``: the similarity of every pair and, for an operator with token weights, the localization),
and a rerun reads it back instead of scoring again.

An outcome is read back only when its fingerprint matches: a SHA-256 over the operator's identity (its
``info``, which for a local model includes the weights' revision), its options, the settings that change
the figures (token unit, bootstrap, ``min_pairs``) and every text, label, token offset and hidden vector of
the questions and pairs. Anything else (another store, retrained weights, a different rewrite) scores
again and replaces the file. A file that does not read is reported in the log and scored again.

Examples
--------
>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> sims = {"trap:context": np.array([0.5, np.nan])}
>>> keep(folder, "lexical", "f" * 64, Outcome(sims, {}, {"operator": "lexical"}, 1.5)).name
'lexical.npz'
>>> float(resume(folder, "lexical", "f" * 64).sims["trap:context"][0])
0.5
>>> resume(folder, "lexical", "0" * 64) is None  # other questions, weights or settings
True
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from semuq_eval.diagnose.localization import Localization
from semuq_eval.durable import replace_file

__all__ = ["Outcome", "fingerprint", "keep", "resume"]

log = logging.getLogger(__name__)

_SIMS = "sims:"


@dataclass
class Outcome:
    """What one operator's part of a diagnosis measured: pair similarities per pair set (NaN where the
    operator could not score a pair), the counts of such pairs per reason, its identity and the seconds it
    took; ``located`` is its token localization (None for an operator without token weights)."""

    sims: dict[str, np.ndarray]
    unavailable: dict[str, int]
    info: dict[str, Any]
    seconds: float
    located: Localization | None = None


def _update(h: Any, value: Any) -> None:
    if isinstance(value, np.ndarray):
        h.update(f"array{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (list, tuple)):
        h.update(f"[{len(value)}".encode())
        for v in value:
            _update(h, v)
    else:
        h.update(json.dumps(value, sort_keys=True, default=str).encode() + b"\x00")


def fingerprint(
    name: str,
    info: Mapping[str, Any],
    options: Mapping[str, Any] | None,
    questions: Sequence[Any],
    pair_sets: Mapping[str, Sequence[Any]],
    settings: Mapping[str, Any],
) -> str:
    """SHA-256 (hex) of everything an operator's outcome depends on (module docstring)."""
    h = hashlib.sha256()
    _update(h, [name, dict(info), dict(options or {}), dict(settings)])
    for q in questions:
        _update(h, [q.uid, q.question, q.references, q.greedy, q.greedy_label, q.samples, q.sample_labels])
        _update(h, [q.greedy_offsets, q.greedy_hidden, q.sample_hidden])
    for key in sorted(pair_sets):
        _update(h, key)
        for p in pair_sets[key]:
            _update(h, [p.uid, p.question, p.a, p.b, p.sample_a, p.sample_b, p.hidden_a, p.hidden_b])
    return h.hexdigest()


def _path(folder: str | os.PathLike, name: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    return Path(folder) / f"{safe}.npz"


def keep(folder: str | os.PathLike, name: str, key: str, outcome: Outcome) -> Path:
    """Write ``outcome`` of operator ``name`` under fingerprint ``key`` (atomically: a run killed while
    writing leaves the previous file or none)."""
    path = _path(folder, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    loc = outcome.located
    meta = {
        "operator": name,
        "fingerprint": key,
        "unavailable": outcome.unavailable,
        "info": outcome.info,
        "seconds": outcome.seconds,
        "located": None if loc is None else {**loc.as_dict(), "hits": loc.hits, "uids": loc.uids},
    }
    arrays = {_SIMS + k: np.asarray(v, dtype=np.float64) for k, v in outcome.sims.items()}
    return replace_file(path, lambda fh: np.savez(fh, meta=np.array(json.dumps(meta, default=str)), **arrays))


def resume(folder: str | os.PathLike, name: str, key: str) -> Outcome | None:
    """The kept outcome of operator ``name`` when its fingerprint is ``key``; None when there is none, it
    was measured on something else, or the file does not read (logged)."""
    path = _path(folder, name)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("operator") != name or meta.get("fingerprint") != key:
                return None
            sims = {k[len(_SIMS) :]: data[k] for k in data.files if k.startswith(_SIMS)}
        located = meta["located"]
        return Outcome(
            sims,
            {str(k): int(v) for k, v in meta["unavailable"].items()},
            dict(meta["info"]),
            float(meta["seconds"]),
            None if located is None else Localization.from_dict(located),
        )
    except Exception as err:  # a broken checkpoint costs a rescoring, never the run
        log.warning(
            "diagnose: checkpoint %s does not read (%s: %s); scoring again", path, type(err).__name__, err
        )
        return None
