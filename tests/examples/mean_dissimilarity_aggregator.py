"""Adding an aggregator: one file, one registration (CONTRIBUTING.md shows this file)."""

import numpy as np

from semuq_eval import aggregators
from semuq_eval.aggregators.base import as_matrix_stack, unstack


@aggregators.register("mean_dissimilarity", matrix="graded", equation="1 - mean off-diagonal S_ij")
def mean_dissimilarity(S: np.ndarray) -> float | np.ndarray:
    """U = 1 - mean_{i != j} S_ij: answers that resemble each other less give a higher uncertainty."""
    S, single = as_matrix_stack(S)  # (B, N, N) float, validated
    n = S.shape[-1]
    if n == 1:
        return unstack(np.zeros(S.shape[0]), single)
    off_diagonal = (S.sum(axis=(-2, -1)) - np.trace(S, axis1=-2, axis2=-1)) / (n * (n - 1))
    return unstack(1.0 - off_diagonal, single)
