"""The questions a decision can learn from: those with a finite score and a known 0/1 label."""

from __future__ import annotations

import numpy as np

__all__ = ["scored_pairs"]


def scored_pairs(uncertainty, correct) -> tuple[np.ndarray, np.ndarray]:
    """The (uncertainty, label) pairs of the questions with a finite score and a known label (labels as ints);
    ValueError for arrays of other shapes or labels other than 0, 1 and NaN (unknown).

    Examples
    --------
    >>> scored_pairs([0.1, float("nan"), 0.3], [1, 0, float("nan")])
    (array([0.1]), array([1]))
    """
    u = np.asarray(uncertainty, dtype=float)
    y = np.asarray(correct, dtype=float)
    if u.shape != y.shape or u.ndim != 1:
        raise ValueError(f"uncertainty and correct must be 1-d of one length, got {u.shape} and {y.shape}")
    keep = np.isfinite(u) & np.isfinite(y)
    if not np.isin(y[keep], (0.0, 1.0)).all():
        raise ValueError("correct must hold 0/1 labels (NaN for unknown)")
    return u[keep], y[keep].astype(int)
