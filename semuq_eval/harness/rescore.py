"""``rescore``: recompute matrices, scores and metrics from a run store, without the LLM.

``rescore(store, operators=["lexical"], n_samples=5)`` re-runs the chosen operators on the stored
answers (``cos_int`` reads the stored hidden vectors), scores the chosen estimators and recomputes
AUROC / ECE with CIs. ``n_samples`` < the stored N is the N-ablation: the first ``n_samples`` stored
samples of every question are used (the majority label is recomputed from them too). Labels are
re-judged with the string judge when ``label_mode`` is given (or the samples are sliced); otherwise
the stored labels are reused.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from semuq_eval.harness.filters import compute_operators
from semuq_eval.harness.labels import StringJudge, label_doc
from semuq_eval.harness.report import doc_item, summarize
from semuq_eval.harness.scoring import DocInputs, estimators, score_doc
from semuq_eval.harness.settings import Settings
from semuq_eval.harness.store import RunStore, load_store

__all__ = ["rescore"]


def rescore(
    store_path: str | os.PathLike,
    *,
    operators: Sequence[str] | None = None,
    estimator_names: Sequence[str] | None = None,
    n_samples: int | None = None,
    tau: float | None = None,
    label_mode: str | None = None,
    bootstrap: int | None = None,
    output: str | os.PathLike | None = None,
    **settings_overrides: Any,
) -> dict:
    """The breakdown (as in ``breakdown.json``) recomputed from the store at ``store_path``.

    ``estimator_names`` keeps only the named estimators (e.g. ``["kle_heat@lexical", "te"]``).
    ``output`` writes the breakdown there as JSON (a directory gets ``breakdown.rescore.json``).
    """
    manifest, records = load_store(store_path)
    stored = Settings.from_metadata(manifest.get("settings"))
    settings = replace(stored, **settings_overrides)
    if operators is not None:
        settings.operators = tuple(operators)
    if tau is not None:
        settings.tau = float(tau)
    if bootstrap is not None:
        settings.bootstrap = int(bootstrap)
    if label_mode is not None:
        settings.label_mode = label_mode
    n = stored.n_samples if n_samples is None else int(n_samples)
    if n < 1 or n > stored.n_samples:
        raise ValueError(f"n_samples must be in 1..{stored.n_samples} (the stored N), got {n}")
    settings.n_samples = n
    judge = StringJudge(settings.label_mode, settings.f1_threshold)
    rejudge = label_mode is not None or n != stored.n_samples
    docs = [
        DocInputs(
            r["question"],
            r["greedy"],
            r["samples"][:n],
            doc_id=r["doc_id"],
            references=r["references"],
            n_extra_responses=r.get("n_extra_responses", 0),
        )
        for r in records
    ]
    runs = compute_operators(docs, settings)
    kinds = {name: run.kind for name, run in runs.items() if run.kind is not None}
    est = estimators(kinds, settings.aggregators)
    if estimator_names is not None:
        wanted = set(estimator_names)
        est = [e for e in est if e.name in wanted]
    items = []
    for rec, d in zip(records, docs, strict=True):
        scores, reasons = score_doc(d, est, tau=settings.tau, aggregator_options=settings.aggregator_options)
        if rejudge or rec.get("item") is None:
            labels = label_doc(judge, d.question, d.greedy.text, [g.text for g in d.samples], d.references)
        else:
            labels = dict(rec["item"]["labels"], n_missing_verdicts=rec["item"].get("n_missing_verdicts", 0))
        problems = rec["item"]["problems"] if rec.get("item") else []
        items.append(doc_item(d, scores, reasons, labels, problems, rec.get("id")))
    breakdown = summarize(
        items,
        settings,
        task=manifest.get("task", ""),
        operators=runs,
        judge=judge.info,
        extra={"rescored_from": str(store_path), "stored_n_samples": stored.n_samples},
    )
    if output is not None:
        out = Path(output)
        if out.is_dir() or not out.suffix:
            out.mkdir(parents=True, exist_ok=True)
            out = out / "breakdown.rescore.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        RunStore(out.parent)._write_json(out, breakdown)
    return breakdown
