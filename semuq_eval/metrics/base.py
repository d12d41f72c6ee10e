"""The metric registry and the input checks shared by every metric."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from lm_eval.api.registry import Registry


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    ``func(uncertainty, correct) -> float`` is the point estimate; ``weighted(values,
    correct, counts) -> (R,)`` scores R weightings (bootstrap resamples) of the same
    questions at once. ``calibrated`` metrics read confidences, which the evaluation maps
    from uncertainties with a held-out calibrator before calling ``weighted``; under
    ``CalibrationProtocol(refit="per_resample")`` the calibrator differs per resample, so
    ``weighted`` then receives (R, n) confidences (row r for ``counts[r]``; NaN entries have
    count 0) and the keyword ``n_bins``.
    """

    name: str
    func: Callable[..., float]
    weighted: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    higher_is_better: bool
    calibrated: bool = False

    def __call__(self, *args, **kwargs) -> float:
        return self.func(*args, **kwargs)


metric_registry: Registry[Metric] = Registry("metric")


def register_metric(
    name: str,
    *,
    weighted: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    higher_is_better: bool,
    calibrated: bool = False,
) -> Callable[[Callable], Callable]:
    """Decorator: register a point-estimate function and its weighted core under ``name``."""

    def decorate(func: Callable) -> Callable:
        metric_registry.register(name, target=Metric(name, func, weighted, higher_is_better, calibrated))
        return func

    return decorate


def check_inputs(uncertainty, correct) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate (n,) scores and binary labels; return floats and the mask of finite scores.

    Labels must be 0/1 or boolean with no missing values; NaN scores are allowed (a
    documented "no score" for that question) and are left out of every metric.
    """
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
