"""SentenceSAR (Duan et al., 2024, "Shifting Attention to Relevance: Towards the Predictive Uncertainty
Quantification of Free-Form Large Language Models", sentence-level relevance shifting).

Each sample's probability is enlarged by the probabilities of the samples it is relevant to, with the
operator's similarity as the relevance R_S(y_j, y_k) = s(y_j, y_k):

    E_S(y_j) = -log( p(y_j | x) + (1/t) sum_{k != j} s(y_j, y_k) p(y_k | x) ),   U = (1/N) sum_j E_S(y_j).

``t`` is the paper's temperature (default 0.001, as LM-Polygraph's ``SentenceSAR``). Negative
similarities (cosines) count as no relevance (clipped to 0); a directed matrix is read row-wise as
LM-Polygraph does. Computed in log space (log-sum-exp), so long answers do not underflow to -log 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp

from semuq_eval.aggregators.base import as_matrix_stack, as_vector_stack, register, unstack


@register(
    "sentence_sar",
    matrix="graded",
    inputs=("seq_logprobs",),
    equation="SentenceSAR (Duan et al., 2024)",
)
def sentence_sar(
    S: np.ndarray, seq_logprobs: np.ndarray | Sequence[float], *, t: float = 0.001
) -> float | np.ndarray:
    """U = -(1/N) sum_j log( p_j + (1/t) sum_{k != j} s_jk p_k ) with p_j = p(y_j | x) (see the module).

    ``S``: (N, N) or (B, N, N); ``seq_logprobs``: the samples' (N,) or (B, N) log p(y_j | x). N = 1 gives
    -log p(y_1 | x).

    Examples
    --------
    Two samples of probability 0.5, similarity 0.5, t = 1: each term is -log(0.5 + 0.25).

    >>> round(sentence_sar(np.array([[1.0, 0.5], [0.5, 1.0]]), np.log([0.5, 0.5]), t=1.0), 6)
    0.287682
    """
    if not t > 0:
        raise ValueError(f"sentence_sar: the temperature t must be > 0, got {t}")
    stack, single = as_matrix_stack(S)
    lp, _ = as_vector_stack(seq_logprobs, name="seq_logprobs")
    if lp.shape != stack.shape[:2]:
        raise ValueError(f"seq_logprobs has shape {lp.shape} but S has {stack.shape[0]} x {stack.shape[-1]}")
    if np.any(lp > 0):
        raise ValueError("seq_logprobs must be <= 0 (log-probabilities)")
    n = stack.shape[-1]
    relevance = np.clip(stack, 0.0, None) * (1.0 - np.eye(n)) / t
    scale = relevance + np.eye(n)  # the sample's own probability, weight 1
    return unstack(
        -logsumexp(np.broadcast_to(lp[:, None, :], stack.shape), b=scale, axis=-1).mean(-1), single
    )
