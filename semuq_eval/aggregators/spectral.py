"""Spectral entropy of a Gram matrix (COS, Chen et al. 2024; App. A.3.4)."""

from __future__ import annotations

import numpy as np

from semuq_eval.aggregators.base import as_matrix_stack, register, shannon_entropy, unstack


@register("cos", matrix="gram", equation="F_COS (App. A.3.4)")
def cos(S: np.ndarray) -> float | np.ndarray:
    """COS spectral entropy, Eq. F_COS: entropy of the eigenvalues of S / Tr(S).

    S should be a PSD Gram matrix of normalized embeddings (trace N); it is symmetrized and round-off negative
    eigenvalues are clipped to 0. A trace that is not positive raises ValueError."""
    stack, single = as_matrix_stack(S)
    sym = (stack + np.swapaxes(stack, -1, -2)) / 2.0
    trace = np.einsum("bii->b", sym)
    if np.any(trace <= 0):
        bad = np.flatnonzero(trace <= 0)
        raise ValueError(
            f"cos needs a Gram matrix with positive trace; matrices {bad.tolist()[:10]} have trace <= 0"
        )
    lam = np.clip(np.linalg.eigvalsh(sym), 0.0, None)
    lam = lam / lam.sum(axis=-1, keepdims=True)
    return unstack(shannon_entropy(lam), single)
