"""Kernel language entropy (KLE): von Neumann entropy of a graph kernel on S (App. A.3.3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from semuq_eval.aggregators.base import as_matrix_stack, register, shannon_entropy, unstack

KernelNormalization = Literal["trace", "diag"]


def graph_weights(S: np.ndarray) -> np.ndarray:
    """Weighted adjacency W from a (B, N, N) stack: symmetrized (S + S^T) / 2, negatives clipped to 0.

    Directed scores (soft NLI) are averaged over both directions; negative similarities (cosines) mean "no
    edge". Self-loops cancel in L = D - W."""
    return np.clip((S + np.swapaxes(S, -1, -2)) / 2.0, 0.0, None)


def _kle(
    S: np.ndarray, spectral_fn: Callable[[np.ndarray], np.ndarray], normalize: KernelNormalization
) -> float | np.ndarray:
    stack, single = as_matrix_stack(S)
    W = graph_weights(stack)
    L = np.einsum("bij->bi", W)[..., None] * np.eye(W.shape[-1]) - W  # L = D - W
    mu, V = np.linalg.eigh(L)
    mu = np.clip(mu, 0.0, None)  # L is PSD; clip round-off
    f = spectral_fn(mu)  # K = V diag(f(mu)) V^T: the true matrix function
    if normalize == "trace":
        lam = f / f.sum(axis=-1, keepdims=True)
    elif normalize == "diag":
        K = (V * f[:, None, :]) @ np.swapaxes(V, -1, -2)
        d = np.sqrt(np.clip(np.einsum("bii->bi", K), 1e-300, None))
        K_unit = K / (d[:, :, None] * d[:, None, :]) / K.shape[-1]
        lam = np.clip(np.linalg.eigvalsh(K_unit), 0.0, None)
        lam = lam / lam.sum(axis=-1, keepdims=True)
    else:
        raise ValueError(f"normalize must be 'trace' or 'diag', got {normalize!r}")
    return unstack(shannon_entropy(lam), single)


@register("kle_heat", matrix="graded", equation="F_KLE with K = exp(-tL) (App. A.3.3)")
def kle_heat(
    S: np.ndarray, *, t: float = 0.3, normalize: KernelNormalization = "trace"
) -> float | np.ndarray:
    """KLE-Heat, Eq. F_KLE: -Tr(K log K) for the heat kernel K = exp(-t L), L = D - W, W = S.

    K is the exact matrix exponential from one eigendecomposition of L (not element-wise).
    ``normalize="trace"`` (the paper) divides K by its trace; ``"diag"`` uses K_ij / sqrt(K_ii K_jj) / N as
    the KLE authors' code does; weights via :func:`graph_weights`. Default t = 0.3 (App. E.3)."""
    if t <= 0:
        raise ValueError(f"t must be positive, got {t}")
    return _kle(S, lambda mu: np.exp(-t * mu), normalize)


@register("kle_matern", matrix="graded", equation="F_KLE with K = (2nu/kappa^2 I + L)^-nu (App. A.3.3)")
def kle_matern(
    S: np.ndarray, *, kappa: float = 1.0, nu: float = 1.0, normalize: KernelNormalization = "trace"
) -> float | np.ndarray:
    """KLE-Matern, Eq. F_KLE with the Matern kernel K = (2 nu / kappa^2 I + L)^(-nu).

    A true matrix power from L's eigendecomposition; defaults kappa = 1, nu = 1 (App. E.3); ``normalize`` and
    weights as in :func:`kle_heat`."""
    if kappa <= 0 or nu <= 0:
        raise ValueError(f"kappa and nu must be positive, got kappa={kappa}, nu={nu}")
    return _kle(S, lambda mu: (2.0 * nu / kappa**2 + mu) ** (-nu), normalize)
