"""Graph scores of Lin et al. 2024, "Generating with Confidence": EigV, Deg, Ecc.

As LM-Polygraph implements them (EigValLaplacian, DegMat, Eccentricity), on a graded S: W = (S + S^T) / 2
clipped at 0, diagonal kept, degrees d_i = sum_j W_ij, L = I - D^-1/2 W D^-1/2
(a zero degree gets D^-1/2 = 0)."""

from __future__ import annotations

import numpy as np

from semuq_eval.aggregators.base import as_matrix_stack, register, unstack
from semuq_eval.aggregators.kernel import graph_weights


def _normalized_laplacian(W: np.ndarray) -> np.ndarray:
    degree = W.sum(axis=-1)
    inv_sqrt = np.where(degree > 0, 1.0 / np.sqrt(np.where(degree > 0, degree, 1.0)), 0.0)
    return np.eye(W.shape[-1]) - inv_sqrt[:, :, None] * W * inv_sqrt[:, None, :]


@register("eigv", matrix="graded", equation="U_EigV (Lin et al. 2024)")
def eigv(S: np.ndarray) -> float | np.ndarray:
    """U_EigV = sum_k max(0, 1 - lambda_k) over the eigenvalues of the normalized Laplacian.

    A continuous count of semantic sets: N for a graph with no edges, 1 for a complete one."""
    stack, single = as_matrix_stack(S)
    lam = np.linalg.eigvalsh(_normalized_laplacian(graph_weights(stack)))
    return unstack(np.clip(1.0 - lam, 0.0, None).sum(axis=-1), single)


@register("deg", matrix="graded", equation="U_Deg (Lin et al. 2024)")
def deg(S: np.ndarray) -> float | np.ndarray:
    """U_Deg = Tr(N I - D) / N^2: one minus the mean similarity (diagonal included)."""
    stack, single = as_matrix_stack(S)
    W = graph_weights(stack)
    n = W.shape[-1]
    return unstack((n * n - W.sum(axis=(-1, -2))) / (n * n), single)


@register("ecc", matrix="graded", equation="U_Ecc (Lin et al. 2024)")
def ecc(S: np.ndarray, *, threshold: float = 0.9) -> float | np.ndarray:
    """U_Ecc: spread of the answers' spectral embeddings around their mean.

    Each answer's coordinates in the normalized Laplacian's eigenvectors of eigenvalue below ``threshold``
    (0.9, as LM-Polygraph); the score is the Frobenius norm of the centered embedding matrix."""
    stack, single = as_matrix_stack(S)
    lam, V = np.linalg.eigh(_normalized_laplacian(graph_weights(stack)))
    V = V * (lam < threshold)[:, None, :]
    centered = V - V.mean(axis=1, keepdims=True)
    return unstack(np.sqrt((centered**2).sum(axis=(-1, -2))), single)
