"""Cluster-based aggregators: semantic entropy (SE), cluster-assignment entropy (CAE), NumSets."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from semuq_eval.aggregators.base import register, shannon_entropy, unstack
from semuq_eval.aggregators.clustering import cluster, cluster_sizes, to_equivalence


def _labels(S: np.ndarray, tau: float) -> tuple[np.ndarray, bool]:
    """Cluster labels (B, N) of S thresholded at tau, and whether S was a single matrix."""
    E = to_equivalence(S, tau)
    single = E.ndim == 2
    return cluster(E[None] if single else E), single


def _as_rows(values: np.ndarray, shape: tuple[int, int], name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[None] if arr.ndim == 1 else arr
    if arr.shape != shape:
        raise ValueError(
            f"{name} must have shape {shape[1:] if shape[0] == 1 else shape}; got {np.shape(values)}"
        )
    if not np.all(np.isfinite(arr)):
        bad = np.unique(np.nonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name} has NaN or infinite values in rows {bad.tolist()[:10]}")
    return arr


@register(
    "se", matrix="equivalence", inputs=("seq_logprobs",), options=("tau",), equation="F_SE (App. A.3.1)"
)
def se(
    S: np.ndarray,
    seq_logprobs: np.ndarray,
    *,
    tau: float = 0.5,
    length_normalized: bool = False,
    n_tokens: np.ndarray | None = None,
) -> float | np.ndarray:
    """Semantic entropy, Eq. F_SE: -sum_k q_k log q_k with q_k the normalized probability mass of cluster k.

    ``seq_logprobs`` (N,) or (B, N) are the answers' log p(y|x) (the paper's joint probability); normalization
    and cluster masses are computed in log space, so tiny probabilities never underflow.
    ``length_normalized=True`` uses log p(y|x) / T (the Nature-2024 reference code's choice) and needs
    ``n_tokens``. Clusters: :func:`cluster` on ``to_equivalence(S, tau)``."""
    labels, single = _labels(S, tau)
    shape = labels.shape
    logp = _as_rows(seq_logprobs, shape, "seq_logprobs")
    if length_normalized:
        if n_tokens is None:
            raise ValueError("length_normalized=True needs n_tokens (the answers' token counts)")
        lengths = _as_rows(n_tokens, shape, "n_tokens")
        if np.any(lengths <= 0):
            raise ValueError("n_tokens must be positive for length normalization")
        logp = logp / lengths
    log_norm = logp - logsumexp(logp, axis=1, keepdims=True)
    members = labels[:, None, :] == np.arange(shape[1])[None, :, None]  # (B, K, N)
    log_q = logsumexp(np.where(members, log_norm[:, None, :], -np.inf), axis=2)
    q = np.exp(log_q)  # empty cluster ids give exp(-inf) = 0
    return unstack(shannon_entropy(q), single)


@register("cae", matrix="equivalence", options=("tau",), equation="F_CAE (App. A.3.2)")
def cae(S: np.ndarray, *, tau: float = 0.5) -> float | np.ndarray:
    """Cluster-assignment entropy, Eq. F_CAE: entropy of the empirical cluster frequencies |C_k| / N."""
    labels, single = _labels(S, tau)
    freq = cluster_sizes(labels) / labels.shape[1]
    return unstack(shannon_entropy(freq), single)


@register("numsets", matrix="equivalence", options=("tau",), equation="NumSets (Lin et al. 2024)")
def numsets(S: np.ndarray, *, tau: float = 0.5) -> float | np.ndarray:
    """Number of semantic clusters K (Lin et al. 2024's NumSets), as a float."""
    labels, single = _labels(S, tau)
    return unstack((labels.max(axis=1) + 1).astype(np.float64), single)
