"""Per-question scoring: every valid estimator ``aggregator@operator`` on one question's matrices.

Validity follows from what each aggregator consumes (:class:`semuq_eval.aggregators.Aggregator`)
and what each operator produces (``Operator.kind``):

- ``matrix == "gram"`` aggregators (``cos``) need a Gram operator (``cos_ext``, ``cos_int``, ``enc``);
- ``matrix in {"equivalence", "graded"}`` aggregators accept every operator (graded matrices are
  thresholded at ``tau`` for equivalence aggregators, :func:`semuq_eval.aggregators.to_equivalence`);
- ``te`` reads no matrix: the greedy answer's token entropies (white-box models only); named ``te``;
- ``te_enc`` reads the greedy answer's token entropies and the ``enc`` operator's token weights:
  named ``te_enc@enc``;
- ``se`` also needs the samples' sequence log-probabilities.

An estimator whose inputs are missing (a black-box model gives no log-probs, an operator could not
run, a generation has NaN log-probs) is **unavailable** for that question: its score is NaN and the
reason is recorded. Nothing is ever filled with zeros, and one bad question never raises.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semuq_eval import aggregators as agg_registry
from semuq_eval.models.generation import Generation

__all__ = ["DocInputs", "Estimator", "estimators", "score_doc"]

TOKEN_AGGREGATORS = ("te", "te_enc")


@dataclass(frozen=True)
class Estimator:
    """``aggregator@operator`` (or just ``te``)."""

    name: str
    aggregator: str
    operator: str | None


def _valid(aggregator, kind: str) -> bool:
    if aggregator.matrix == "gram":
        return kind == "gram"
    return aggregator.matrix in ("equivalence", "graded")


def estimators(
    operator_kinds: Mapping[str, str], aggregator_names: Iterable[str] | None = None
) -> list[Estimator]:
    """All valid estimators for the given operators (``{name: kind}``) and aggregators (default: all)."""
    names = list(aggregator_names) if aggregator_names is not None else agg_registry.names()
    out: list[Estimator] = []
    for name in names:
        aggregator = agg_registry.get(name)
        if name == "te":
            out.append(Estimator("te", "te", None))
        elif name == "te_enc":
            if "enc" in operator_kinds:
                out.append(Estimator("te_enc@enc", "te_enc", "enc"))
        elif aggregator.matrix is not None:
            out.extend(
                Estimator(f"{name}@{op}", name, op)
                for op, kind in operator_kinds.items()
                if _valid(aggregator, kind)
            )
    return out


@dataclass
class DocInputs:
    """What one question's scoring reads; built by the filter.

    ``matrices[op]``: the (N, N) matrix of each operator that ran for this question;
    ``unavailable_operators[op]``: why an operator has no matrix here.
    ``token_weights``: enc weights on the greedy answer's tokens (None: unavailable, see
    ``token_weights_reason``).
    """

    question: str
    greedy: Generation
    samples: Sequence[Generation]
    matrices: dict[str, np.ndarray] = field(default_factory=dict)
    unavailable_operators: dict[str, str] = field(default_factory=dict)
    token_weights: np.ndarray | None = None
    token_weights_reason: str | None = None
    doc_id: int = -1
    references: list[str] = field(default_factory=list)
    n_extra_responses: int = 0


def _accepts(func, key: str) -> bool:
    try:
        return key in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def _token_entropies(g: Generation) -> tuple[np.ndarray | None, str | None]:
    if g.token_entropies is None:
        return None, "the model returned no token entropies (black-box model)"
    h = np.asarray(g.token_entropies, dtype=np.float64)
    if h.size == 0:
        return None, "the greedy answer has no tokens"
    if not np.all(np.isfinite(h)):
        return None, "the greedy answer has NaN or infinite token entropies"
    return h, None


def _seq_logprobs(samples: Sequence[Generation]) -> tuple[np.ndarray | None, str | None]:
    missing = [i for i, g in enumerate(samples) if g.seq_logprob is None]
    if missing:
        return None, "the model returned no sequence log-probabilities (black-box model)"
    lp = np.array([g.seq_logprob for g in samples], dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(lp))
    if bad.size:
        return None, f"samples {bad.tolist()[:10]} have NaN or infinite log-probabilities"
    return lp, None


def score_doc(
    inputs: DocInputs,
    estimator_list: Sequence[Estimator],
    *,
    tau: float = 0.5,
    aggregator_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[dict[str, float], dict[str, str]]:
    """Scores ``{estimator: U}`` (NaN when unavailable) and reasons ``{estimator: why}`` for one question."""
    aggregator_options = aggregator_options or {}
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}
    n = len(inputs.samples)
    entropies, entropy_reason = _token_entropies(inputs.greedy)
    seq_lp, seq_reason = (None, None)
    for est in estimator_list:
        value, why = math.nan, None
        aggregator = agg_registry.get(est.aggregator)
        opts = dict(aggregator_options.get(est.aggregator, {}))
        try:
            if est.aggregator == "te":
                if entropies is None:
                    why = entropy_reason
                else:
                    value = float(aggregator(entropies, **opts))
            elif est.aggregator == "te_enc":
                if entropies is None:
                    why = entropy_reason
                elif inputs.token_weights is None:
                    why = inputs.token_weights_reason or "no enc token weights"
                else:
                    value = float(
                        aggregator(entropies, np.asarray(inputs.token_weights, dtype=np.float64), **opts)
                    )
            elif est.operator not in inputs.matrices:
                why = inputs.unavailable_operators.get(est.operator, f"operator {est.operator} did not run")
            elif n == 0:
                why = "no sampled answers"
            else:
                S = inputs.matrices[est.operator]
                if _accepts(aggregator.func, "tau"):
                    opts.setdefault("tau", tau)
                if "seq_logprobs" in aggregator.inputs:
                    if seq_lp is None and seq_reason is None:
                        seq_lp, seq_reason = _seq_logprobs(inputs.samples)
                    if seq_lp is None:
                        why = seq_reason
                    else:
                        value = float(aggregator(S, seq_lp, **opts))
                else:
                    value = float(aggregator(S, **opts))
        except Exception as err:  # one bad question never aborts the run: record why
            value, why = math.nan, f"{type(err).__name__}: {err}"
        if why is None and not math.isfinite(value):
            why = "the aggregator returned NaN"
        if why is not None:
            value = math.nan
            reasons[est.name] = why
        scores[est.name] = value
    return scores, reasons
