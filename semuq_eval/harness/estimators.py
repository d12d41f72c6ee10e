"""Estimators ``aggregator@operator``: which pairs are valid, and scoring them on one question.

Validity follows from declarations: a matrix aggregator (:attr:`Aggregator.matrix`) pairs with the operators of a kind
it accepts (:data:`semuq_eval.aggregators.ACCEPTS`), a reader of an extra (e.g. ``te_enc``) with the operators yielding
it; the others (``te``, ``msp``, ...) stand alone. An estimator missing an input for a question is **unavailable** there
(NaN score and its reason; never zeros, never raised); one scored from an estimated input (``Generation.approximate``)
is named by :func:`approximations`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from semuq_eval import aggregators as agg_registry
from semuq_eval.aggregators import ACCEPTS, Aggregator
from semuq_eval.harness.doc import Doc
from semuq_eval.signals import SIGNALS

__all__ = ["Estimator", "OperatorSpec", "approximations", "score_doc", "valid_estimators"]


class OperatorSpec(NamedTuple):
    """What the estimators need to know of an operator: its matrix kind and its extras."""

    kind: str | None
    extras: tuple[str, ...] = ()


@dataclass(frozen=True)
class Estimator:
    """``aggregator@operator`` (or the aggregator's name alone when it needs no operator)."""

    name: str
    aggregator: str
    operator: str | None


def valid_estimators(
    operators: Mapping[str, OperatorSpec], aggregator_names: Iterable[str] | None = None
) -> list[Estimator]:
    """All valid estimators of the given operators (``{name: OperatorSpec}``) and aggregators (default: all).

    Examples
    --------
    >>> [e.name for e in valid_estimators({"lexical": OperatorSpec("graded")}, ["cos", "kle_heat", "te"])]
    ['kle_heat@lexical', 'te']
    """
    names = list(aggregator_names) if aggregator_names is not None else agg_registry.names()
    out: list[Estimator] = []
    for name in names:
        aggregator = agg_registry.get(name)
        wanted = [x for x in aggregator.inputs if SIGNALS[x].origin != "answers"]  # what an operator yields
        if aggregator.matrix is None and not wanted:
            out.append(Estimator(name, name, None))
            continue
        for op, spec in operators.items():
            fits = aggregator.matrix is None or (
                spec.kind is not None and spec.kind in ACCEPTS[aggregator.matrix]
            )
            if fits and all(x in spec.extras for x in wanted):
                out.append(Estimator(f"{name}@{op}", name, op))
    return out


def score_doc(
    doc: Doc,
    estimator_list: Sequence[Estimator],
    *,
    run_options: Mapping[str, Any] | None = None,
    aggregator_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[dict[str, float], dict[str, str]]:
    """Scores ``{estimator: U}`` (NaN when unavailable) and reasons ``{estimator: why}`` for one question.

    ``run_options`` (e.g. ``{"tau": 0.5}``) go to the aggregators that declare them; ``aggregator_options``
    (``{aggregator: {kwarg: value}}``) go to one aggregator and win over ``run_options``."""
    run_options, aggregator_options = run_options or {}, aggregator_options or {}
    signals: dict[str, tuple[Any, str | None]] = {}
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}
    for est in estimator_list:
        aggregator = agg_registry.get(est.aggregator)
        try:
            args, why = _arguments(doc, est, aggregator, signals)
            if why is None:
                opts = {k: run_options[k] for k in aggregator.options if k in run_options}
                value = float(aggregator(*args, **{**opts, **aggregator_options.get(est.aggregator, {})}))
        except Exception as err:  # one bad question never aborts the run: record why
            value, why = math.nan, f"{type(err).__name__}: {err}"
        if why is None and not math.isfinite(value):
            why = "the aggregator returned NaN"
        if why is not None:
            value = math.nan
            reasons[est.name] = why
        scores[est.name] = value
    return scores, reasons


def approximations(
    doc: Doc, estimator_list: Sequence[Estimator], scores: Mapping[str, float]
) -> dict[str, str]:
    """``{estimator: "input: method"}`` for the estimators scored on ``doc`` from an estimated input.

    Examples
    --------
    >>> from semuq_eval.models.generation import Generation
    >>> g = Generation("a", token_entropies=[0.5], approximate={"token_entropies": "topk_renormalized(k=5)"})
    >>> approximations(Doc(0, "q", [], g, [g]), [Estimator("te", "te", None)], {"te": 0.5})
    {'te': 'token_entropies: topk_renormalized(k=5)'}
    """
    out: dict[str, str] = {}
    for est in estimator_list:
        if not math.isfinite(scores.get(est.name, math.nan)):
            continue
        notes = [
            f"{name}: {method}"
            for name in agg_registry.get(est.aggregator).inputs
            if SIGNALS[name].origin == "answers" and (method := doc.approximation(name))
        ]
        if notes:
            out[est.name] = "; ".join(notes)
    return out


def _arguments(
    doc: Doc, est: Estimator, aggregator: Aggregator, signals: dict[str, tuple[Any, str | None]]
) -> tuple[list[Any], str | None]:
    """The positional arguments of one estimator on one question, or the reason they are missing."""
    args: list[Any] = []
    if aggregator.matrix is not None:
        if est.operator not in doc.matrices:
            return [], doc.unavailable.get(est.operator, f"operator {est.operator} did not run")
        if len(doc.samples) == 0:
            return [], "no sampled answers"
        args.append(doc.matrices[est.operator])
    for name in aggregator.inputs:
        if SIGNALS[name].origin == "answers":
            if name not in signals:
                signals[name] = doc.signal(name)
            value, why = signals[name]
        else:
            value = doc.extras.get(est.operator, {}).get(name)
            of_operator = doc.unavailable.get(est.operator, f"no {name} from {est.operator}")
            why = None if value is not None else doc.unavailable.get(f"{est.operator}.{name}", of_operator)
        if why is not None:
            return [], why
        args.append(value)
    return args, None
