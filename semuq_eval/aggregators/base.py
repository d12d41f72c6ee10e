"""The aggregator registry and the input checks every aggregator shares.

An aggregator F turns one question's comparison matrix S (or a stack) into a scalar uncertainty U = F(S)
(paper, Eq. common_operator_aggregator); each declares what it consumes, so the harness knows which
``aggregator@operator`` pairs are valid."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from semuq_eval.registry import Registry
from semuq_eval.signals import SIGNALS

MatrixKind = Literal["equivalence", "graded", "gram"]
"""What an aggregator needs from its matrix.

- ``equivalence``: a boolean equivalence relation; graded matrices are thresholded with
  :func:`semuq_eval.aggregators.to_equivalence` (S_ij > tau).
- ``graded``: any similarity matrix with weights in [0, 1] (a boolean matrix is a graded one).
- ``gram``: a positive semidefinite Gram matrix of normalized embeddings (cosine operators).
"""

ACCEPTS: dict[str, frozenset[str]] = {
    "equivalence": frozenset({"equivalence", "graded", "gram"}),
    "graded": frozenset({"equivalence", "graded", "gram"}),
    "gram": frozenset({"gram"}),
}
"""Which operator kinds each aggregator matrix kind accepts: graded and Gram matrices are thresholded for
equivalence aggregators, a boolean matrix is a graded one, and only a Gram matrix is positive semidefinite."""

OPTIONS: dict[str, str] = {
    "tau": "threshold of the equivalence rule S_ij > tau (run setting ``tau``)",
}
"""Run-level options an aggregator can declare; the harness passes the run's value to those that do."""


@dataclass(frozen=True)
class Aggregator:
    """A registered aggregator: the function plus what it consumes.

    ``func(S?, *inputs, **options)`` takes the matrix first when ``matrix`` is set (a kind of :data:`ACCEPTS`;
    None: no matrix, e.g. token entropy), then the declared ``inputs`` positionally: signals of
    :mod:`semuq_eval.signals`, the generating model's or an operator's (which makes ``aggregator@operator`` an
    estimator even without a matrix, e.g. ``te_enc@enc``). ``options`` are run-level keywords from
    :data:`OPTIONS`; ``equation`` says where the paper (or the cited work) defines it. Higher outputs always
    mean more uncertain."""

    name: str
    func: Callable[..., float | np.ndarray]
    matrix: MatrixKind | None
    inputs: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    equation: str = ""

    def __post_init__(self) -> None:
        if self.matrix is not None and self.matrix not in ACCEPTS:
            raise ValueError(
                f"aggregator {self.name}: unknown matrix kind {self.matrix!r}; use one of {list(ACCEPTS)}"
            )
        for what, declared, known in (("input", self.inputs, SIGNALS), ("option", self.options, OPTIONS)):
            unknown = [x for x in declared if x not in known]
            if unknown:
                raise ValueError(
                    f"aggregator {self.name}: unknown {what}(s) {unknown}; known: {sorted(known)}"
                )

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.func.__doc__


def _check(name: str, obj: object) -> Aggregator:
    """A loaded aggregator must be an :class:`Aggregator` (what :func:`register` makes of a function)."""
    if not isinstance(obj, Aggregator):
        raise TypeError(
            f"aggregator {name!r}: {obj!r} is not a registered aggregator; decorate the function with "
            f"semuq_eval.aggregators.register({name!r}, matrix=...)"
        )
    return obj


registry: Registry[Aggregator] = Registry("aggregator", group="semuq_eval.aggregators", check=_check)


def register(
    name: str,
    *,
    matrix: MatrixKind | None,
    inputs: tuple[str, ...] = (),
    options: tuple[str, ...] = (),
    equation: str = "",
) -> Callable[[Callable], Callable]:
    """Decorator: register ``func`` as aggregator ``name`` (see :class:`Aggregator`) and return it unchanged.

    Examples
    --------
    The registration of a new aggregator (the harness then scores ``mean_sim@<op>`` for every operator)::

        @register("mean_sim", matrix="graded", equation="example")
        def mean_sim(S):
            return 1.0 - float(np.mean(S))
    """

    def decorate(func: Callable) -> Callable:
        target = Aggregator(name, func, matrix, tuple(inputs), tuple(options), equation)
        registry.register(name, target)
        return func

    return decorate


def as_matrix_stack(S: np.ndarray, *, name: str = "S") -> tuple[np.ndarray, bool]:
    """Validate a matrix or stack of matrices; return it as float (B, N, N) and whether it was 2-D.

    Raises ValueError naming the problem for non-square input, NaN/inf entries or an empty stack; N = 1 is
    allowed."""
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


def as_vector_stack(values: np.ndarray | Sequence[float], *, name: str) -> tuple[np.ndarray, bool]:
    """Validate one vector (N,) or a stack (B, N); return it as float (B, N) and whether it was 1-D.

    Raises ValueError naming ``name`` for another shape, an empty stack or NaN/inf entries."""
    arr = np.asarray(values, dtype=np.float64)
    single = arr.ndim == 1
    if single:
        arr = arr[None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (N,) or (B, N); got {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is an empty stack (B = 0)")
    if not np.all(np.isfinite(arr)):
        bad = np.unique(np.nonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name} has NaN or infinite entries in rows {bad.tolist()[:10]}")
    return arr, single


def as_ragged(values: np.ndarray | Sequence[Sequence[float]], *, name: str) -> tuple[list[np.ndarray], bool]:
    """One 1-D sequence (single=True) or a batch of possibly ragged sequences, as finite float arrays.

    Raises ValueError naming ``name`` for a bad shape, an empty batch or NaN/inf values."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except ValueError:  # ragged batch
        arr = None
    if arr is not None and arr.ndim == 1:
        rows, single = [arr], True
    elif arr is not None and arr.ndim != 2:
        raise ValueError(f"{name} must be one sequence or a batch of sequences; got shape {arr.shape}")
    else:
        rows, single = [np.asarray(row, dtype=np.float64) for row in values], False
    if not rows:
        raise ValueError(f"{name} is an empty batch")
    for b, row in enumerate(rows):
        if row.ndim != 1:
            raise ValueError(f"{name}[{b}] must be a 1-D sequence; got shape {row.shape}")
        if not np.all(np.isfinite(row)):
            where = name if single else f"{name}[{b}]"
            raise ValueError(f"{where} has NaN or infinite values")
    return rows, single


def unstack(values: np.ndarray, single: bool) -> float | np.ndarray:
    """Return a float for a single matrix, else the (B,) array."""
    return float(values[0]) if single else values


def shannon_entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """Shannon entropy -sum p log p along ``axis`` with 0 log 0 = 0 (natural log), never below 0."""
    p = np.clip(p, 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return np.maximum(-terms.sum(axis=axis), 0.0)  # entropy >= 0: clamp round-off (and -0.0)
