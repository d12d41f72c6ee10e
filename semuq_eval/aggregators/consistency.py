"""Greedy-anchored consistency and CoCoA: how far the samples drift from the greedy answer.

Vashurin et al. (2025), "Uncertainty Quantification for LLMs through Minimum Bayes Risk: Bridging Confidence
and Consistency": the operator s compares the greedy answer y* with each sample y_i (``greedy_similarities``).
``consistency``: U = 1 - (1/N) sum_i s(y*, y_i); ``cocoa``: u(y*) times that, u = -log p(y* | x) (``"msp"``,
CoCoA_MSP, default) or the mean negative token log-probability (``"perplexity"``, CoCoA_PPL). Similarities are
used as given (cosines may be negative), as LM-Polygraph's ``CocoaMSP`` / ``CocoaPPL`` do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from semuq_eval.aggregators.base import as_ragged, as_vector_stack, register, unstack
from semuq_eval.aggregators.baseline import msp, perplexity

Confidence = Literal["msp", "perplexity"]
CONFIDENCES = {"msp": msp, "perplexity": perplexity}
"""The confidence terms u(y*) of :func:`cocoa`, each the registered single-answer baseline."""


def _dissimilarity(greedy_similarities: np.ndarray | Sequence[float]) -> tuple[np.ndarray, bool]:
    sims, single = as_vector_stack(greedy_similarities, name="greedy_similarities")
    if sims.shape[-1] == 0:
        raise ValueError("greedy_similarities is empty: consistency needs at least one sample")
    return 1.0 - sims.mean(axis=-1), single


@register(
    "consistency",
    matrix=None,
    inputs=("greedy_similarities",),
    equation="consistency term of CoCoA (Vashurin et al., 2025)",
)
def consistency(greedy_similarities: np.ndarray | Sequence[float]) -> float | np.ndarray:
    """U = 1 - (1/N) sum_i s(y*, y_i): mean dissimilarity of the greedy answer to the N samples.

    Takes (N,) similarities or a (B, N) stack. N = 0 raises ValueError; N = 1 is that one comparison.

    Examples
    --------
    >>> round(consistency([1.0, 0.5, 0.0]), 6)
    0.5
    """
    values, single = _dissimilarity(greedy_similarities)
    return unstack(values, single)


@register(
    "cocoa",
    matrix=None,
    inputs=("greedy_similarities", "token_logprobs"),
    equation="CoCoA (Vashurin et al., 2025)",
)
def cocoa(
    greedy_similarities: np.ndarray | Sequence[float],
    token_logprobs: np.ndarray | Sequence[Sequence[float]],
    *,
    confidence: Confidence = "msp",
) -> float | np.ndarray:
    """U_CoCoA = u(y*) * (1 - (1/N) sum_i s(y*, y_i)), u the greedy answer's ``confidence`` term.

    ``token_logprobs``: the greedy answer's (T,) token log-probabilities, or one sequence per row of a
    (B, N) ``greedy_similarities`` stack. A greedy answer with no tokens gives NaN (as ``msp``).

    Examples
    --------
    >>> round(cocoa([1.0, 0.5, 0.0], [-1.0, -2.0]), 6)
    1.5
    >>> round(cocoa([1.0, 0.5, 0.0], [-1.0, -2.0], confidence="perplexity"), 6)
    0.75
    """
    if confidence not in CONFIDENCES:
        raise ValueError(f"cocoa: confidence must be one of {sorted(CONFIDENCES)}, got {confidence!r}")
    values, single = _dissimilarity(greedy_similarities)
    rows, single_lp = as_ragged(token_logprobs, name="token_logprobs")
    if single != single_lp or len(rows) != len(values):
        raise ValueError(
            f"greedy_similarities and token_logprobs must have the same batch size; got {len(values)} "
            f"and {len(rows)}"
        )
    u = np.array([CONFIDENCES[confidence](row) for row in rows])
    return unstack(u * values, single)
