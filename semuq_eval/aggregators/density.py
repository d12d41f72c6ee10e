"""Semantic Density (Qiu & Miikkulainen, 2024, "Semantic Density: Uncertainty Quantification for Large
Language Models through Confidence Measurement in Semantic Space").

The probability-weighted density of the greedy answer y* among the N samples y_i,

    SD(y* | x) = sum_i w_i K(y*, y_i) / sum_i w_i,   U = 1 - SD,

with K = clip(s, 0, 1), the paper's Epanechnikov kernel 1 - d for d = 1 - s. Defaults as LM-Polygraph:
``length_normalized`` (w_i = p(y_i | x)^(1 / L_i), else p(y_i | x)) and ``include_greedy`` (y* is one more
term, K = 1). Every sample counts, duplicates too (LM-Polygraph keeps distinct texts); U = 1 - SD ranks as its
-SD."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp

from semuq_eval.aggregators.base import as_ragged, as_vector_stack, register, unstack


def _log_weights(logprobs: np.ndarray, lengths: np.ndarray, length_normalized: bool) -> np.ndarray:
    if np.any(logprobs > 0):
        raise ValueError("log-probabilities must be <= 0")
    return logprobs / np.maximum(lengths, 1.0) if length_normalized else logprobs


@register(
    "semantic_density",
    matrix=None,
    inputs=("greedy_similarities", "seq_logprobs", "seq_lengths", "token_logprobs"),
    equation="semantic density (Qiu & Miikkulainen, 2024)",
)
def semantic_density(
    greedy_similarities: np.ndarray | Sequence[float],
    seq_logprobs: np.ndarray | Sequence[float],
    seq_lengths: np.ndarray | Sequence[float],
    token_logprobs: np.ndarray | Sequence[Sequence[float]],
    *,
    length_normalized: bool = True,
    include_greedy: bool = True,
) -> float | np.ndarray:
    """U = 1 - sum_i w_i K(y*, y_i) / sum_i w_i over the samples (and y* with K = 1): see the module.

    ``greedy_similarities``, ``seq_logprobs``, ``seq_lengths``: (N,) or (B, N); ``token_logprobs``: the greedy
    answer's (T,) token log-probabilities (one sequence per row of a stack). Weights are in log space (no
    underflow). A greedy answer with no tokens gives NaN when ``include_greedy``; N = 1 without it gives
    1 - K(y*, y_1).

    Examples
    --------
    Two samples with probabilities 0.5 and 0.25 at similarities 1 and 0, and a greedy answer of
    probability 0.25: SD = (0.5 + 0.25) / (0.5 + 0.25 + 0.25).

    >>> lp = np.log([0.5, 0.25])
    >>> round(semantic_density([1.0, 0.0], lp, [1, 1], [np.log(0.25)]), 6)
    0.25
    """
    sims, single = as_vector_stack(greedy_similarities, name="greedy_similarities")
    lp, _ = as_vector_stack(seq_logprobs, name="seq_logprobs")
    lengths, _ = as_vector_stack(seq_lengths, name="seq_lengths")
    greedy, single_lp = as_ragged(token_logprobs, name="token_logprobs")
    if not (sims.shape == lp.shape == lengths.shape) or single != single_lp or len(greedy) != len(sims):
        raise ValueError(
            f"greedy_similarities {sims.shape}, seq_logprobs {lp.shape}, seq_lengths {lengths.shape} and "
            f"{len(greedy)} token_logprobs sequences must describe the same questions and samples"
        )
    if sims.shape[-1] == 0:
        raise ValueError("semantic_density needs at least one sample")
    log_w = _log_weights(lp, lengths, length_normalized)
    kernel = np.clip(sims, 0.0, 1.0)
    if include_greedy:
        greedy_lp = np.array([row.sum() if row.size else np.nan for row in greedy])
        greedy_len = np.array([float(row.size) for row in greedy])
        log_w = np.concatenate([log_w, _log_weights(greedy_lp, greedy_len, length_normalized)[:, None]], 1)
        kernel = np.concatenate([kernel, np.ones((len(kernel), 1))], axis=1)
    with np.errstate(divide="ignore"):
        log_density = logsumexp(log_w, b=kernel, axis=-1) - logsumexp(log_w, axis=-1)
    return unstack(1.0 - np.exp(log_density), single)
