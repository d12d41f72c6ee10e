"""lm-eval glue of semuq-eval: the task class, the batched filter, per-question scoring, labels,
the corpus-level report, the run store and ``rescore``.

Data flow (DESIGN.md): task (greedy + N sampled requests) -> model -> :mod:`~.filters` (keep N, run
operators once per rank) -> ``process_results`` (:mod:`~.scoring`, :mod:`~.labels`) -> aggregation
(:mod:`~.report`) -> lm-eval's results + ``breakdown.json`` + the run store (:mod:`~.store`).
"""

from __future__ import annotations

from semuq_eval.harness.labels import Judge, StringJudge, label_doc, majority_label, normalize
from semuq_eval.harness.report import summarize
from semuq_eval.harness.rescore import rescore
from semuq_eval.harness.scoring import DocInputs, Estimator, estimators, score_doc
from semuq_eval.harness.settings import Settings
from semuq_eval.harness.store import RunStore, load_store

__all__ = [
    "DocInputs",
    "Estimator",
    "Judge",
    "RunStore",
    "Settings",
    "StringJudge",
    "estimators",
    "label_doc",
    "load_store",
    "majority_label",
    "normalize",
    "rescore",
    "score_doc",
    "summarize",
]
