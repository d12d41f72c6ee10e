"""The figures an operator check tracks, computed on a run store: the traps, wrong-answer clustering, token
localization (:func:`~semuq_eval.diagnose.diagnosis.diagnose`) and the AUROC of the tracked estimators under every
label strategy (scored as a run scores them).

:data:`BETTER` says which way each figure should go; ``auroc.<estimator>.<strategy>`` are higher-better, by default
``kle_heat@OP``, ``cos@OP`` and ``cae@OP`` where valid (a frozen record has no log-probabilities).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from semuq_eval.harness.record import RECORD_SUFFIX, read_record, record_fingerprint
from semuq_eval.harness.store import open_store
from semuq_eval.jsonio import finite_or_none

__all__ = [
    "BETTER",
    "FROZEN_STORE",
    "compute_values",
    "fingerprints",
    "frozen_store_path",
    "tracked_estimators",
]

FROZEN_STORE = "smollm2-webquestions"
"""The frozen record shipped with the package (``semuq_eval/diagnose/data/<name>.jsonl.gz``)."""

BETTER = {
    "trap.context": "lower",
    "trap.autoregressive": "lower",
    "trap.entailment": "higher",
    "trap.ood_syntax": "higher",
    "clustering.incorrect_equivalent": "higher",
    "clustering.gap": "higher",
    "localization.hit_rate": "higher",
}


def frozen_store_path(name: str = FROZEN_STORE) -> Path:
    """The frozen record (a run record that keeps its texts) shipped in ``semuq_eval/diagnose/data/``.

    Raises FileNotFoundError when the package holds no such record (the message lists the ones it has)."""
    root = Path(str(resources.files("semuq_eval.diagnose") / "data"))
    path = root / f"{name}{RECORD_SUFFIX}"
    if not path.is_file():
        have = sorted(p.name[: -len(RECORD_SUFFIX)] for p in root.glob(f"*{RECORD_SUFFIX}"))
        raise FileNotFoundError(f"no frozen record {name!r} in {root}; shipped: {have}")
    return path


def fingerprints(source: str | os.PathLike) -> tuple[str, set[str]]:
    """The fingerprint of a run store or record the check reads, and the ones a baseline may hold for the same
    answers and labels (a frozen record's ``former_store_fingerprint``: the store it was frozen from)."""
    path = Path(source)
    if not (path.is_file() and path.name.endswith(RECORD_SUFFIX)):
        fingerprint = open_store(path).fingerprint()
        return fingerprint, {fingerprint}
    fingerprint = record_fingerprint(path)
    former = (read_record(path).get("provenance") or {}).get("former_store_fingerprint")
    return fingerprint, {fingerprint, *([former] if isinstance(former, str) else [])}


def _figure(key: str, r: Mapping[str, Any], value: str, n: int | None = None, **more: Any) -> dict[str, Any]:
    """Figure ``key`` from a result ``r``: its entry ``value`` and its interval (None where undefined), ``n`` and
    what else it rests on (``more``)."""
    return {
        "value": finite_or_none(r.get(value)),
        "better": BETTER.get(key, "higher"),
        "ci_low": finite_or_none(r.get("ci_low")),
        "ci_high": finite_or_none(r.get("ci_high")),
        "n": n,
        **more,
    }


def _auroc_figures(
    docs: Sequence[Any], questions: Sequence[Any], settings: Any, chosen: Sequence[Any], n_resamples: int
) -> dict[str, dict[str, Any]]:
    """The tracked estimators' AUROC under every label strategy, scored as a run scores (the pipeline's
    :func:`~semuq_eval.harness.pipeline.score_docs` and the breakdown's ``summarize``) on the diagnosis's docs."""
    from dataclasses import replace

    from semuq_eval.harness.breakdown import summarize
    from semuq_eval.harness.pipeline import score_docs

    labels = [{"greedy": q.greedy_label, "samples": q.sample_labels} for q in questions]
    items = score_docs(docs, settings, labels, chosen)
    breakdown = summarize(items, replace(settings, metrics=("auroc",), bootstrap=n_resamples, seed=0))
    figures = {}
    for strategy, results in breakdown["results"].items():
        for e in chosen:
            m = (results.get(e.name) or {}).get("auroc") or {}
            key = f"auroc.{e.name}.{strategy}"
            counts = {k: m[k] for k in ("n", "n_correct", "n_incorrect")} if m else {}
            figures[key] = _figure(key, m, "value", **counts)
    return figures


def tracked_estimators(name: str, n_samples: int, wanted: Sequence[str] | None) -> list[str]:
    """The estimators whose AUROC is tracked: ``wanted``, checked against operator ``name``'s valid ones, or the
    defaults (module docstring) where valid."""
    from semuq_eval.harness.pipeline import estimators_for
    from semuq_eval.harness.settings import Settings

    valid = [e.name for e in estimators_for(Settings(n_samples=n_samples, operators=(name,)))]
    if wanted is None:
        return [e for e in (f"kle_heat@{name}", f"cos@{name}", f"cae@{name}") if e in valid]
    unknown = [e for e in wanted if e not in valid]
    if unknown:
        raise ValueError(f"estimators {unknown} are not valid with operator {name}; valid: {valid}")
    return list(wanted)


def compute_values(
    name: str,
    options: Mapping[str, Any],
    store: str | os.PathLike,
    *,
    estimators: Sequence[str] | None = None,
    max_questions: int | None = None,
    n_resamples: int = 200,
    progress: bool = True,
) -> dict[str, dict[str, Any]]:
    """The tracked figures (module docstring) of operator ``name`` on ``store``: ``{figure: {"value",
    "better", "ci_low", "ci_high", "n"}}``."""
    from semuq_eval import aggregators, signals
    from semuq_eval.diagnose.diagnosis import Diagnosis
    from semuq_eval.diagnose.questions import load_questions
    from semuq_eval.diagnose.resolve import resolve_operators
    from semuq_eval.harness.pipeline import estimators_for
    from semuq_eval.harness.settings import Settings
    from semuq_eval.metrics import Bootstrap

    op = resolve_operators([name], {name: dict(options)} if options else None, progress=progress)[name]
    questions = load_questions(store, max_questions=max_questions)
    n_samples = max((len(q.samples) for q in questions), default=0)
    names = tracked_estimators(name, n_samples, estimators) if n_samples else []
    chosen = []
    if names:
        settings = Settings(n_samples=n_samples, operators=(name,))
        chosen = [e for e in estimators_for(settings) if e.name in names]
    # the token extras the docs must carry: only those the tracked estimators read
    read = {x for e in chosen for x in aggregators.get(e.aggregator).inputs}
    diagnosis = Diagnosis.prepare(questions, bootstrap=Bootstrap(n_resamples, seed=0))
    docs = diagnosis.measure(
        name,
        op,
        dict(options) if options else None,
        token_extras=[x for x in signals.names(origin="tokens") if x in read],
    )
    result = diagnosis.result([str(store)], "run")
    if name in result["unavailable"]:
        raise RuntimeError(result["unavailable"][name])
    cl = result["clustering"]
    rows = {f"trap.{t}": res["results"][name] for t, res in result["traps"].items()}
    rows["clustering.incorrect_equivalent"] = cl["incorrect_equivalent"]["results"][name]
    figures = {key: _figure(key, r, "mean", r["n_pairs"]) for key, r in rows.items()}
    figures["clustering.gap"] = _figure("clustering.gap", cl["gap"]["results"][name], "difference")
    loc = result["localization"].get(name, {})
    if "hit_rate" in loc:
        key = "localization.hit_rate"
        figures[key] = _figure(key, loc["hit_rate"], "mean", loc["n_answers"])
    if names:
        figures.update(_auroc_figures(docs, questions, settings, chosen, n_resamples))
    return figures
