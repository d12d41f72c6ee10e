"""The aggregator registry and the input checks every aggregator shares.

An aggregator F turns the comparison matrix S of one question (or a stack of them) into a
scalar uncertainty U = F(S) (paper, Eq. common_operator_aggregator). Aggregators are plain
numpy functions registered under the names users type (DESIGN.md), with a declaration of
what they consume so that the harness can tell which ``aggregator@operator`` pairs are valid.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from lm_eval.api.registry import Registry

MatrixKind = Literal["equivalence", "graded", "gram"]
"""What an aggregator needs from its matrix.

- ``equivalence``: a boolean equivalence relation; graded matrices are thresholded with
  :func:`semuq_eval.aggregators.to_equivalence` (S_ij > tau).
- ``graded``: any similarity matrix with weights in [0, 1] (a boolean matrix is a graded one).
- ``gram``: a positive semidefinite Gram matrix of normalized embeddings (cosine operators).
"""


@dataclass(frozen=True)
class Aggregator:
    """A registered aggregator: the function plus what it consumes.

    ``matrix`` is None for aggregators that read no comparison matrix (token entropy).
    ``inputs`` names the extra keyword inputs it requires (``seq_logprobs``,
    ``token_entropies``, ``token_weights``). Higher outputs always mean more uncertain.
    """

    name: str
    func: Callable[..., float | np.ndarray]
    matrix: MatrixKind | None
    inputs: tuple[str, ...] = ()
    equation: str = ""

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.func.__doc__


aggregator_registry: Registry[Aggregator] = Registry("aggregator")


def register_aggregator(
    name: str, *, matrix: MatrixKind | None, inputs: tuple[str, ...] = (), equation: str = ""
) -> Callable[[Callable], Callable]:
    """Decorator: register ``func`` as aggregator ``name`` and return ``func`` unchanged."""

    def decorate(func: Callable) -> Callable:
        aggregator_registry.register(name, target=Aggregator(name, func, matrix, tuple(inputs), equation))
        return func

    return decorate


def as_matrix_stack(S: np.ndarray, *, name: str = "S") -> tuple[np.ndarray, bool]:
    """Validate a matrix or stack of matrices; return it as float (B, N, N) and whether it was 2-D.

    Raises ValueError naming the problem for non-square input, NaN/inf entries, or an
    empty stack. N = 1 is allowed (every entropy is then 0).
    """
    arr = np.asarray(S)
    if arr.dtype == object:
        raise ValueError(f"{name} must be a numeric array, got dtype=object (ragged input?)")
    single = arr.ndim == 2
    if single:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[-1] != arr.shape[-2]:
        raise ValueError(f"{name} must have shape (N, N) or (B, N, N); got {np.shape(S)}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is an empty stack (B = 0)")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} has N = 0 answers")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        bad = np.unique(np.nonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name} has NaN or infinite entries in matrices {bad.tolist()[:10]}")
    return arr, single


def unstack(values: np.ndarray, single: bool) -> float | np.ndarray:
    """Return a float for a single matrix, else the (B,) array."""
    return float(values[0]) if single else values


def shannon_entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """Shannon entropy -sum p log p along ``axis`` with 0 log 0 = 0 (natural log), never below 0."""
    p = np.clip(p, 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return np.maximum(-terms.sum(axis=axis), 0.0)  # entropy >= 0: clamp round-off (and -0.0)
