"""SNNE, semantic nearest-neighbour entropy (Nguyen, Payani & Mirzasoleiman, 2025, "Beyond Semantic
Entropy: Boosting LLM Uncertainty Quantification with Pairwise Semantic Similarity", the SNNE definition).

A soft nearest-neighbour count of each sample, U = -(1/N) sum_i log sum_{j != i} exp(s(y_i, y_j) / tau), in
log space, with the authors' defaults ``temperature`` tau = 1.0 and ``self_similarity`` False (j = i left
out)."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from semuq_eval.aggregators.base import as_matrix_stack, register, unstack


@register("snne", matrix="graded", equation="SNNE (Nguyen et al., 2025)")
def snne(S: np.ndarray, *, temperature: float = 1.0, self_similarity: bool = False) -> float | np.ndarray:
    """U = -(1/N) sum_i log sum_{j != i} exp(S_ij / tau) (``self_similarity=True``: j ranges over all).

    ``S``: (N, N) or (B, N, N). N = 1 without self-similarity has no neighbour: NaN (estimator unavailable for
    that question); with it, U = -S_11 / tau.

    Examples
    --------
    Three samples, one pair at similarity 1, the others at 0 (tau = 1):
    U = -(2 log(e + 1) + log 2) / 3.

    >>> S = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    >>> round(snne(S), 6)
    -1.106557
    """
    if not temperature > 0:
        raise ValueError(f"snne: the temperature must be > 0, got {temperature}")
    stack, single = as_matrix_stack(S)
    n = stack.shape[-1]
    if n == 1 and not self_similarity:
        return unstack(np.full(stack.shape[0], np.nan), single)
    logits = stack / temperature
    if not self_similarity:
        logits = np.where(np.eye(n, dtype=bool), -np.inf, logits)
    return unstack(-logsumexp(logits, axis=-1).mean(axis=-1), single)
