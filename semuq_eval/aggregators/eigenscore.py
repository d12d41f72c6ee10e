"""EigenScore (Chen et al., 2024, "INSIDE: LLMs' Internal States Retain the Power of Hallucination
Detection", the EigenScore definition): the log-determinant of the samples' regularized covariance, per
sample,

    U = (1/N) log det(C + alpha I) = (1/N) sum_k log lambda_k(C + alpha I),

on a Gram operator's S of unit embeddings (``cos_int`` as the paper; ``cos_ext``, ``enc``). ``alpha``: 1e-3,
as LM-Polygraph. ``centering="none"``: C = S; ``"samples"``: C = H S H, H = I - 11^T / N. The paper's centring
over the d features needs the embeddings, not S (it equals ``"none"`` for zero-mean features)."""

from __future__ import annotations

from typing import Literal

import numpy as np

from semuq_eval.aggregators.base import as_matrix_stack, register, unstack

Centering = Literal["none", "samples"]


@register("eigenscore", matrix="gram", equation="EigenScore (Chen et al., 2024, INSIDE)")
def eigenscore(S: np.ndarray, *, alpha: float = 1e-3, centering: Centering = "none") -> float | np.ndarray:
    """U = (1/N) sum_k log lambda_k(C + alpha I), C = S or its sample-centred H S H (see the module).

    ``S``: (N, N) or (B, N, N) positive semidefinite. N = 1 gives log(S_11 + alpha) ("none") or log(alpha)
    ("samples"); N identical answers give (log(N + alpha) + (N - 1) log alpha) / N, the lowest value.

    Examples
    --------
    Two orthogonal answers: both eigenvalues are 1 + alpha.

    >>> round(eigenscore(np.eye(2), alpha=0.5), 6)
    0.405465
    """
    if not alpha > 0:
        raise ValueError(f"eigenscore: alpha must be > 0 (log det of a singular matrix), got {alpha}")
    if centering not in ("none", "samples"):
        raise ValueError(f"eigenscore: centering must be 'none' or 'samples', got {centering!r}")
    stack, single = as_matrix_stack(S)
    n = stack.shape[-1]
    if centering == "samples":
        H = np.eye(n) - 1.0 / n
        stack = H @ stack @ H
    lam = np.clip(
        np.linalg.eigvalsh((stack + np.swapaxes(stack, -1, -2)) / 2), 0.0, None
    )  # PSD: clip round-off
    return unstack(np.log(lam + alpha).mean(axis=-1), single)
