"""The metric registry and the input checks shared by every metric."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from semuq_eval.registry import Registry


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    ``func(uncertainty, correct) -> float`` is the point estimate; ``weighted(values, correct, counts) ->
    (R,)`` scores R weightings (bootstrap resamples) of the same questions at once. ``calibrated`` metrics
    read confidences from a held-out calibrator; under ``CalibrationProtocol(refit="per_resample")``
    ``weighted`` receives (R, n) confidences (NaN entries have count 0) and the keyword ``n_bins``.
    ``higher_is_better`` orders estimators wherever they are ranked; ``label`` is the name tables show;
    ``derived``, ``(metric, function)``, computes this metric from another one's weighted values by
    ``function(values, correct, counts)`` (PRR from AUARC), so that one is computed once."""

    name: str
    func: Callable[..., float]
    weighted: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    higher_is_better: bool
    calibrated: bool = False
    label: str = ""
    derived: tuple[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] | None = None

    def __call__(self, *args, **kwargs) -> float:
        return self.func(*args, **kwargs)


def _check(name: str, obj: object) -> Metric:
    """A loaded metric must be a :class:`Metric` (what :func:`register` makes of a function)."""
    if not isinstance(obj, Metric):
        raise TypeError(
            f"metric {name!r}: {obj!r} is not a registered metric; decorate the function with "
            f"semuq_eval.metrics.register({name!r}, weighted=..., higher_is_better=...)"
        )
    return obj


registry: Registry[Metric] = Registry("metric", group="semuq_eval.metrics", check=_check)

DEFAULT_METRICS = ("auroc", "ece", "prr", "auarc")
"""A run's metrics unless its ``metrics`` setting says otherwise: AUROC and ECE (the paper's), PRR and AUARC
(LM-Polygraph's). The first ranks the estimators; the first two are lm-eval's table."""


def register(
    name: str,
    *,
    weighted: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    higher_is_better: bool,
    calibrated: bool = False,
    label: str | None = None,
    derived: tuple[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] | None = None,
) -> Callable[[Callable], Callable]:
    """Decorator: register a point-estimate function and its weighted core under ``name``.

    ``label``: the name tables show (default ``name`` in capitals); ``derived``: as in :class:`Metric`."""

    def decorate(func: Callable) -> Callable:
        metric = Metric(name, func, weighted, higher_is_better, calibrated, label or name.upper(), derived)
        registry.register(name, metric)
        return func

    return decorate


def check_metrics(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` as a tuple of registered metric names, at least one and none repeated.

    Raises ValueError naming the unknown metrics and listing the known ones.

    Examples
    --------
    >>> check_metrics(["auroc", "ece"])
    ('auroc', 'ece')
    >>> check_metrics(["auroc", "brier"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown metric(s) ['brier']; known: ['auarc', 'auroc', ...]
    """
    names = tuple(names)
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {registry.names()}")
    if not names or len(set(names)) != len(names):
        raise ValueError(f"metrics must name at least one metric, each once; got {list(names)}")
    return names


def check_inputs(uncertainty, correct) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate (n,) scores and binary labels; return floats and the mask of finite scores.

    Labels must be 0/1 or boolean with no missing values; NaN scores ("no score") are left out of every
    metric."""
    u = np.asarray(uncertainty, dtype=np.float64)
    y = np.asarray(correct)
    if u.ndim != 1 or y.ndim != 1:
        raise ValueError(f"uncertainty and correct must be 1-D; got shapes {u.shape} and {y.shape}")
    if u.shape != y.shape:
        raise ValueError(f"uncertainty has {u.shape[0]} values but correct has {y.shape[0]}")
    if u.shape[0] == 0:
        raise ValueError("no questions to score (empty arrays)")
    y = y.astype(np.float64)
    if not np.all((y == 0) | (y == 1)):
        bad = np.flatnonzero(~((y == 0) | (y == 1)))
        raise ValueError(f"correct must be 0/1 or boolean; bad values at positions {bad.tolist()[:10]}")
    if np.any(np.isinf(u)):
        raise ValueError(
            f"uncertainty has infinite values at positions {np.flatnonzero(np.isinf(u)).tolist()[:10]}"
        )
    return u, y, np.isfinite(u)
