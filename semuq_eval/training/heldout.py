"""Held-out AUROC: an epoch-selection signal that measures what the product reports.

:class:`HeldoutAUROCEvaluator` scores the encoder being trained as the harness scores ``enc``, on held-out questions
of the training distribution (never an evaluation set): each aggregator of the selection rule
(:data:`SELECTION_AGGREGATORS`) turns the operator's Gram matrix into an uncertainty, and the AUROCs against the
stored greedy verdicts are averaged. ``train-operator --select_on auroc`` selects the epoch on this mean instead of
App. B's validation triplet accuracy (a deviation recorded in the card).

Examples
--------
>>> from semuq_eval.training.stores import LabelledQuestion
>>> doc = Doc.of_texts("Capital of France?", ("Paris", "Lyon"), greedy="Paris")
>>> q = LabelledQuestion("f", doc, (1, 0), greedy_label=1)
>>> [d.question for d in heldout_docs([q])[0]]
['Capital of France?']
>>> [e.name for e in selection_estimators()][:2]
['cae@enc', 'cos@enc']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

from semuq_eval.harness.doc import Doc
from semuq_eval.harness.estimators import Estimator, OperatorSpec, valid_estimators
from semuq_eval.harness.pipeline import score_docs
from semuq_eval.harness.settings import Settings
from semuq_eval.metrics.ranking import auroc
from semuq_eval.operators.encoder import EncoderOperator
from semuq_eval.training.stores import LabelledQuestion

__all__ = [
    "SELECTION_AGGREGATORS",
    "HeldoutAUROCEvaluator",
    "check_both_classes",
    "heldout_docs",
    "selection_estimators",
]

OPERATOR = "enc"
SELECTION_AGGREGATORS = ("cae", "cos", "deg", "ecc", "eigv", "kle_heat", "kle_matern", "numsets")
"""The rule's aggregators, fixed by name (``docs/reproduction.md``, the confirmation plan): the paper's graph, kernel
and clustering aggregators that read only the matrix. Fixed, not derived from the registry, so that a newly
registered aggregator never changes a selection rule that was stated before the data were read."""


def heldout_docs(questions: Sequence[LabelledQuestion]) -> tuple[list[Doc], np.ndarray]:
    """The docs of the held-out questions that have a greedy answer with a verdict (copies, numbered in order:
    scoring fills their matrices), and their greedy correctness (1 / 0); other questions are left out."""
    kept = [
        q for q in questions if q.greedy is not None and q.greedy_label is not None and len(q.answers) > 1
    ]
    docs = [replace(q.doc, doc_id=k, matrices={}, extras={}, unavailable={}) for k, q in enumerate(kept)]
    return docs, np.array([int(q.greedy_label) for q in kept], dtype=np.int64)


def check_both_classes(correct: np.ndarray) -> None:
    """ValueError unless the held-out greedy verdicts ``correct`` hold both classes (AUROC needs them)."""
    if not 0 < int(correct.sum()) < len(correct):
        raise ValueError(
            f"held-out AUROC needs correct and incorrect greedy answers; the held-out questions have "
            f"{int(correct.sum())} correct of {len(correct)} with a greedy verdict (a training-data file exported "
            "before greedy answers were kept has none)"
        )


def selection_estimators() -> list[Estimator]:
    """The estimators ``aggregator@enc`` of :data:`SELECTION_AGGREGATORS`, as the harness builds them."""
    return valid_estimators({OPERATOR: OperatorSpec(EncoderOperator.kind)}, SELECTION_AGGREGATORS)


class HeldoutAUROCEvaluator(SentenceEvaluator):
    """Mean greedy AUROC of the selection rule's aggregators on held-out questions (module docstring).

    ``questions`` are held-out questions of the training distribution with their greedy answer and its verdict;
    ``condition_on_question``: the encoder reads "question <sep> answer" (``enc``) or the answer alone;
    ``separator``: the one ``enc`` writes between them (default: the tokenizer's); ``name`` prefixes the returned
    metrics (``{name}_mean_auroc``, ``{name}_{aggregator}_auroc``).

    Examples
    --------
    >>> evaluator = HeldoutAUROCEvaluator([], condition_on_question=True)  # doctest: +SKIP
    >>> evaluator(model)["heldout_mean_auroc"]  # doctest: +SKIP
    0.71
    """

    def __init__(
        self,
        questions: Sequence[LabelledQuestion],
        *,
        condition_on_question: bool,
        separator: str | None = None,
        batch_size: int = 32,
        name: str = "heldout",
    ) -> None:
        super().__init__()
        self.docs, self.correct = heldout_docs(questions)
        check_both_classes(self.correct)
        self.operator_options = dict(
            condition_on_question=condition_on_question, separator=separator, batch_size=batch_size
        )
        self.name = name
        self.estimators = selection_estimators()
        self.settings = Settings(n_samples=max((len(d.samples) for d in self.docs), default=0))
        self.labels = [{"greedy": int(c)} for c in self.correct]
        self.primary_metric = "mean_auroc"

    @property
    def counts(self) -> dict[str, int]:
        """Questions scored and their greedy classes."""
        n_correct = int(self.correct.sum())
        return {"n": len(self.correct), "n_correct": n_correct, "n_incorrect": len(self.correct) - n_correct}

    def __call__(
        self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        op = EncoderOperator(model, progress=False, **self.operator_options)
        was_training = model.training
        try:
            matrices = op([d.question for d in self.docs], [[g.text for g in d.samples] for d in self.docs])
        finally:
            model.train(was_training)
        for doc, matrix in zip(self.docs, matrices.matrices, strict=True):
            doc.matrices[OPERATOR] = matrix
        try:
            items = score_docs(self.docs, self.settings, self.labels, self.estimators)
        finally:
            for doc in self.docs:
                doc.matrices.clear()
        metrics: dict[str, float] = {}
        for est in self.estimators:
            u = np.array([it["scores"][est.name] for it in items], dtype=np.float64)  # None -> NaN
            metrics[f"{est.aggregator}_auroc"] = auroc(u, self.correct)
        finite = [v for v in metrics.values() if math.isfinite(v)]
        metrics["mean_auroc"] = float(np.mean(finite)) if finite else float("nan")
        return self.prefix_name_to_metrics(metrics, self.name)
