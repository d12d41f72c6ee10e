"""Single-answer baselines: what the greedy answer's own tokens say, with no sampling and no operator.

The floor an operator x aggregator estimator must beat, from the greedy answer's token log-probabilities
(white-box only): ``msp``, U = -log p(y | x) (Fomicheva et al., 2020, "Unsupervised Quality Estimation for
Neural Machine Translation"; LM-Polygraph's MaximumSequenceProbability, Fadeeva et al., 2023); ``perplexity``,
U = -(1/T) sum_t log p(y_t | x, y_<t) (the log of LM-Polygraph's "Perplexity"); ``length``, U = T (Santilli et
al., 2025, "Revisiting Uncertainty Quantification Evaluation in Language Models: Spurious Interactions with
Response Length Bias Results": it rivals semantic entropy under some judges). No tokens: msp and perplexity
are NaN, length 0."""

from __future__ import annotations

import numpy as np

from semuq_eval.aggregators.base import register


def _logprobs(token_logprobs: np.ndarray) -> np.ndarray:
    lp = np.asarray(token_logprobs, dtype=np.float64)
    if lp.ndim != 1:
        raise ValueError(f"token_logprobs must be one sequence (T,), got shape {lp.shape}")
    if not np.all(np.isfinite(lp)):
        raise ValueError("token_logprobs has NaN or infinite values")
    if np.any(lp > 0):
        raise ValueError("token_logprobs must be <= 0 (log-probabilities)")
    return lp


@register("msp", matrix=None, inputs=("token_logprobs",), equation="MSP (Fomicheva et al., 2020)")
def msp(token_logprobs: np.ndarray) -> float:
    """Maximum sequence probability: U = -sum_t log p(y_t | x, y_<t) of the greedy answer (NaN if T = 0).

    Examples
    --------
    >>> round(msp([-0.5, -1.0]), 6)
    1.5
    """
    lp = _logprobs(token_logprobs)
    return float(-lp.sum()) if lp.size else float("nan")


@register("perplexity", matrix=None, inputs=("token_logprobs",), equation="log-perplexity (LM-Polygraph)")
def perplexity(token_logprobs: np.ndarray) -> float:
    """Mean negative token log-probability of the greedy answer, -(1/T) sum_t log p(y_t | ...) (NaN if T = 0).

    Examples
    --------
    >>> round(perplexity([-0.5, -1.0]), 6)
    0.75
    """
    lp = _logprobs(token_logprobs)
    return float(-lp.mean()) if lp.size else float("nan")


@register("length", matrix=None, inputs=("token_ids",), equation="length (Santilli et al., 2025)")
def length(token_ids: np.ndarray) -> float:
    """The greedy answer's length in tokens, U = T.

    Examples
    --------
    >>> length([5, 17, 2])
    3.0
    """
    ids = np.asarray(token_ids)
    if ids.ndim != 1:
        raise ValueError(f"token_ids must be one sequence (T,), got shape {ids.shape}")
    return float(ids.size)
