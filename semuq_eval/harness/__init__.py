"""lm-eval glue and the per-question pipeline of semuq-eval.

Data flow (README, "How a run works"): task (greedy + N sampled requests, :mod:`~.task`) -> model -> :mod:`~.pipeline`
on a rank's docs (operators, :mod:`~.operator_runs`; estimators, :mod:`~.estimators`; labels, :mod:`semuq_eval.judges`)
-> one JSON-safe item per doc -> the run finished once (:mod:`~.finish`, :mod:`~.breakdown`, :mod:`~.store`) ->
lm-eval's results. ``rescore`` (:mod:`~.rescore`) reads a store back the same way; ``judge`` relabels it
(:mod:`~.relabel`)."""

from __future__ import annotations

from semuq_eval.harness.breakdown import breakdown_table, summarize
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.estimators import Estimator, OperatorSpec, score_doc, valid_estimators
from semuq_eval.harness.finish import RunFacts, finish_run
from semuq_eval.harness.pipeline import PipelineOutput, process_docs
from semuq_eval.harness.rescore import rescore
from semuq_eval.harness.settings import Settings
from semuq_eval.harness.store import RunStore, open_store

__all__ = [
    "Doc",
    "Estimator",
    "OperatorSpec",
    "PipelineOutput",
    "RunStore",
    "Settings",
    "breakdown_table",
    "RunFacts",
    "finish_run",
    "valid_estimators",
    "open_store",
    "process_docs",
    "rescore",
    "score_doc",
    "summarize",
]
