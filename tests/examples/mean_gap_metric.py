"""Adding a metric: one file, one registration (CONTRIBUTING.md shows this file)."""

import numpy as np

from semuq_eval import metrics


def mean_gap_weighted(u: np.ndarray, correct: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mean uncertainty of incorrect minus correct answers under R weightings ``counts`` (R, n) -> (R,)."""
    wrong, right = counts * (1.0 - correct), counts * correct
    with np.errstate(invalid="ignore", divide="ignore"):
        return (wrong @ u) / wrong.sum(axis=1) - (right @ u) / right.sum(axis=1)


@metrics.register("mean_gap", weighted=mean_gap_weighted, higher_is_better=True)
def mean_gap(uncertainty: np.ndarray, correct: np.ndarray) -> float:
    """Mean uncertainty of the incorrect answers minus that of the correct ones (NaN with one class)."""
    u, y = np.asarray(uncertainty, dtype=float), np.asarray(correct, dtype=float)
    return float(mean_gap_weighted(u, y, np.ones((1, len(u))))[0])
