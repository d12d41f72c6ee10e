"""The per-question pipeline: docs -> operator matrices -> scores + labels -> JSON-safe items.

Every entry point (the lm-eval task, ``rescore``, the commands built on them) runs :func:`process_docs`: every operator
once, batched over all docs (:func:`~semuq_eval.harness.operator_runs.compute_operators`); every valid estimator of
every doc (:func:`~semuq_eval.harness.estimators.score_doc`); the labels of every strategy
(:func:`~semuq_eval.judges.label_answers`, or the caller's); one JSON-safe item per doc (:func:`doc_item`).

Example
-------
>>> from semuq_eval.harness.doc import Doc
>>> from semuq_eval.harness.settings import Settings
>>> from semuq_eval.judges import StringJudge
>>> from semuq_eval.models.generation import Generation
>>> doc = Doc(0, "Capital of France?", ["Paris"], Generation("Paris"), [Generation("Paris"), Generation("Lyon")])
>>> out = process_docs([doc], Settings(n_samples=2, operators=("lexical",)), judge=StringJudge())
>>> out.items[0]["labels"], round(out.items[0]["scores"]["cae@lexical"], 3)
({'greedy': 1, 'majority': 0}, 0.693)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from semuq_eval import aggregators as agg_registry
from semuq_eval import signals
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.estimators import Estimator, approximations, score_doc, valid_estimators
from semuq_eval.harness.label_sets import label_docs
from semuq_eval.harness.operator_runs import OperatorRun, compute_operators, operator_spec
from semuq_eval.harness.record import question_hash
from semuq_eval.harness.settings import Settings
from semuq_eval.jsonio import finite_or_none
from semuq_eval.judges import Judge, as_label
from semuq_eval.judges.strategies import labels_of
from semuq_eval.models.reflexive import METHODS as REFLEXIVE_METHODS

__all__ = ["PipelineOutput", "doc_item", "doc_problems", "estimators_for", "process_docs", "score_docs"]


@dataclass
class PipelineOutput:
    """What :func:`process_docs` returns: one item per doc (in order), and each operator's run record."""

    items: list[dict[str, Any]]
    operator_runs: dict[str, OperatorRun]
    estimators: list[Estimator]


def estimators_for(settings: Settings) -> list[Estimator]:
    """The estimators of a run: the settings' aggregators on the settings' operators, by their declarations.

    An operator that cannot run keeps its estimators (reported unavailable, never dropped). Without an ``aggregators``
    setting the reflexive ones are there only when setting ``reflexive`` asks for them; named in ``aggregators`` without
    it, they are unavailable with that reason."""
    aggregators = settings.aggregators
    if aggregators is None:
        aggregators = [
            n for n in agg_registry.names() if n not in REFLEXIVE_METHODS or n in settings.reflexive
        ]
    return valid_estimators(
        {name: operator_spec(name, settings.operator_options.get(name)) for name in settings.operators},
        aggregators,
    )


def process_docs(
    docs: Sequence[Doc],
    settings: Settings,
    *,
    judge: Judge | None = None,
    labels: Sequence[Mapping[str, Any]] | None = None,
    estimator_names: Sequence[str] | None = None,
) -> PipelineOutput:
    """Run the pipeline (module docstring) on ``docs``; ``judge`` labels them unless ``labels`` are given.

    ``docs`` are filled in place with matrices; ``judge`` gives App. D's greedy and majority labels; ``labels`` are one
    record per doc as :func:`~semuq_eval.judges.label_answers` returns them (a store's label set); ``estimator_names``
    keeps only these estimators."""
    if (judge is None) == (labels is None):
        raise ValueError("process_docs needs exactly one of judge= or labels=")
    if labels is not None and len(labels) != len(docs):
        raise ValueError(f"got {len(labels)} label records for {len(docs)} docs")
    est = estimators_for(settings)
    if estimator_names is not None:
        unknown = sorted(set(estimator_names) - {e.name for e in est})
        if unknown:
            raise ValueError(f"unknown estimators {unknown}; this run has {[e.name for e in est]}")
        est = [e for e in est if e.name in set(estimator_names)]
    read = {x for e in est for x in agg_registry.get(e.aggregator).inputs}
    runs = compute_operators(
        docs,
        settings.operators,
        settings.operator_options,
        token_extras=[x for x in signals.names(origin="tokens") if x in read],
    )
    if labels is None:
        labels = label_docs(judge, docs)
    return PipelineOutput(score_docs(docs, settings, labels, est), runs, est)


def score_docs(
    docs: Sequence[Doc], settings: Settings, labels: Sequence[Mapping[str, Any]], est: Sequence[Estimator]
) -> list[dict[str, Any]]:
    """The items (:func:`doc_item`) of docs whose operators ran (their matrices and extras filled): every
    estimator of ``est`` scored, with each label strategy's labels from ``labels`` (one record per doc). Shared by runs,
    rescoring and operator checks."""
    items = []
    for doc, doc_labels in zip(docs, labels, strict=True):
        scores, reasons = score_doc(
            doc, est, run_options={"tau": settings.tau}, aggregator_options=settings.aggregator_options
        )
        item = doc_item(doc, scores, reasons, doc_labels, doc_problems(doc, settings.n_samples))
        if approximate := approximations(doc, est, scores):
            item["approximate"] = approximate
        items.append(item)
    return items


def doc_item(
    doc: Doc,
    scores: Mapping[str, float],
    reasons: Mapping[str, str],
    labels: Mapping[str, Any],
    problems: Sequence[str] = (),
) -> dict[str, Any]:
    """The JSON-safe per-question item (NaN scores become None; ``reasons`` say why; :func:`process_docs` adds
    ``approximate``, ``{estimator: "input: method"}``, for estimators scored from an estimated input). Labels are
    1 / 0 / None, per strategy (``labels``) and per sampled answer (``sample_labels``, what operator training reads);
    ``p_correct`` and ``errors`` are kept when the judge gives them."""
    return {
        "doc_id": int(doc.doc_id),
        "id": doc.key,
        "question_hash": question_hash(doc.question),
        "scores": {k: finite_or_none(v) for k, v in scores.items()},
        "reasons": dict(reasons),
        "labels": {s: as_label(v) for s, v in labels_of(labels).items()},
        "sample_labels": [as_label(v) for v in labels.get("samples", [])],
        "n_missing_verdicts": int(labels.get("n_missing_verdicts", 0)),
        "n_samples": len(doc.samples),
        "n_extra_responses": int(doc.n_extra_responses),
        "problems": list(problems),
        **{key: labels[key] for key in ("p_correct", "errors") if labels.get(key)},
    }


def doc_problems(doc: Doc, n_samples: int) -> list[str]:
    """What is wrong with one doc's inputs (recorded in the breakdown's ``bad_docs``; never fatal), answers an
    operator read only in part included."""
    out = []
    if not doc.references:
        out.append("no reference answers: labels missing")
    if not doc.greedy.text.strip():
        out.append("empty greedy answer")
    if len(doc.samples) < n_samples:
        out.append(f"only {len(doc.samples)} of {n_samples} sampled answers")
    elif doc.samples and all(not g.text.strip() for g in doc.samples):
        out.append("all sampled answers are empty")
    failed = [("greedy", doc.greedy.error)] if doc.greedy.error else []
    failed += [(f"sample {i}", g.error) for i, g in enumerate(doc.samples) if g.error]
    if failed:
        where, error = failed[0]
        more = f" (and {len(failed) - 1} more answers)" if len(failed) > 1 else ""
        out.append(f"{where}: {error}{more}")
    lp = doc.greedy.token_logprobs
    if lp is not None and len(lp) and not all(math.isfinite(float(v)) for v in lp):
        out.append("greedy answer has NaN or infinite token log-probabilities")
    bad = [
        i for i, g in enumerate(doc.samples) if g.seq_logprob is not None and not math.isfinite(g.seq_logprob)
    ]
    if bad:
        out.append(f"samples {bad[:10]} have NaN or infinite log-probabilities")
    out += [f"{op}: {note}" for op, note in doc.truncated.items()]
    return out
