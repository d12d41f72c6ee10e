"""Gram matrices of embeddings: S = Phi Phi^T of L2-normalized rows (Eq. operator_cosine), the cosine operators'
matrix."""

from __future__ import annotations

import numpy as np

__all__ = ["gram_matrix", "unit_rows"]


def unit_rows(embeddings: np.ndarray) -> np.ndarray:
    """The rows L2-normalized, in float64.

    Raises ValueError for a zero or non-finite row, which has no direction."""
    phi = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(phi, axis=1, keepdims=True)
    bad = np.flatnonzero(~np.isfinite(norms[:, 0]) | (norms[:, 0] == 0))
    if bad.size:
        raise ValueError(f"rows {bad.tolist()[:10]} are zero or not finite: they have no direction")
    return phi / norms


def gram_matrix(embeddings: np.ndarray) -> np.ndarray:
    """S = Phi Phi^T of L2-normalized rows (Eq. operator_cosine), symmetric, in [-1, 1], in float64.

    Raises ValueError for a zero or non-finite row, which has no direction."""
    phi = unit_rows(embeddings)
    s = phi @ phi.T
    s = np.clip((s + s.T) / 2, -1.0, 1.0)
    np.fill_diagonal(s, 1.0)
    return s
