"""SAR (Duan et al., 2024, "Shifting Attention to Relevance: Towards the Predictive Uncertainty
Quantification of Free-Form Large Language Models"): relevance shifting at the sentence and the token level.

**SentenceSAR**: each sample's probability is enlarged by those of the samples relevant to it, relevance being
the operator's similarity (negative ones clipped to 0; a directed matrix read row-wise, as LM-Polygraph):

    E_S(y_j) = -log( p(y_j | x) + (1/t) sum_{k != j} s(y_j, y_k) p(y_k | x) ),   U = (1/N) sum_j E_S(y_j),

with the paper's temperature ``t`` (default 0.001, as LM-Polygraph), in log space. **TokenSAR**: the greedy
answer's token log-likelihoods weighted by relevance R(z_t) = 1 - |s(y, y without z_t)|:

    U = -sum_t R~(z_t) log p(z_t | x, z_<t),   R~(z_t) = R(z_t) / sum_t' R(z_t').

s is the operator's ``token_similarity`` (the paper uses a cross-encoder); ``relevance="signed"`` is
LM-Polygraph's R = 1 - s. No relevant token gives NaN; a one-token answer cut to nothing has s = 0, as in
LM-Polygraph."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp

from semuq_eval.aggregators.base import as_matrix_stack, as_ragged, as_vector_stack, register, unstack

RELEVANCE = ("abs", "signed")
"""TokenSAR's relevance 1 - |s| (the paper) or 1 - s (LM-Polygraph)."""


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


@register(
    "token_sar",
    matrix=None,
    inputs=("token_logprobs", "token_similarity"),
    equation="TokenSAR (Duan et al., 2024)",
)
def token_sar(
    token_logprobs: np.ndarray | Sequence[Sequence[float]],
    token_similarity: np.ndarray | Sequence[Sequence[float]],
    *,
    relevance: str = "abs",
) -> float | np.ndarray:
    """U = -sum_t R~_t log p(z_t | x, z_<t), R~ = R / sum R, R_t = 1 - |s_t| (see the module).

    ``token_logprobs``: the greedy answer's (T,) token log-probabilities, or a ragged batch; ``token_similarity``:
    the (T,) similarities s_t of the answer with token t removed, aligned with them. ``relevance="signed"`` is
    LM-Polygraph's R_t = 1 - s_t. NaN when no token is relevant.

    Examples
    --------
    Two tokens of probability 0.5 and 0.25; removing the second changes the meaning more:

    >>> round(token_sar(np.log([0.5, 0.25]), np.array([0.9, 0.7])), 6)  # (0.1 log 2 + 0.3 log 4) / 0.4
    1.213008
    """
    if relevance not in RELEVANCE:
        raise ValueError(f"token_sar: relevance must be one of {RELEVANCE}, got {relevance!r}")
    rows_lp, single = as_ragged(token_logprobs, name="token_logprobs")
    rows_s, single_s = as_ragged(token_similarity, name="token_similarity")
    if single != single_s or len(rows_lp) != len(rows_s):
        raise ValueError(
            f"token_logprobs and token_similarity must have the same batch size; got {len(rows_lp)} and "
            f"{len(rows_s)}"
        )
    out = np.full(len(rows_lp), np.nan)
    for b, (lp, sim) in enumerate(zip(rows_lp, rows_s, strict=True)):
        if lp.shape != sim.shape:
            raise ValueError(
                f"sequence {b}: {lp.shape[0]} token log-probabilities but {sim.shape[0]} similarities"
            )
        if np.any(lp > 0):
            raise ValueError(f"sequence {b}: token_logprobs must be <= 0 (log-probabilities)")
        r = 1.0 - (np.abs(sim) if relevance == "abs" else sim)
        if np.any(r < -1e-9):
            raise ValueError(f"sequence {b}: similarities above 1 give a negative relevance")
        r = np.clip(r, 0.0, None)
        total = r.sum()
        if total > 0:
            out[b] = -(r / total) @ lp
    return unstack(out, single)
