"""Bootstrap confidence intervals and paired comparisons on shared resamples.

One :class:`Bootstrap` draws its resampled index sets once per number of questions (seeded),
and every estimator of a run is scored on those same sets. A paired difference between two
estimators, or between two LLMs answering the same questions, is therefore computed
resample by resample, which is what makes its interval and p-value meaningful.
ECE's calibrator is fitted once by cross-fitting on the full set; the bootstrap resamples
the calibrated (confidence, label) pairs.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from semuq_eval.metrics.base import Metric, check_inputs, metric_registry
from semuq_eval.metrics.calibration import CalibrationProtocol, calibrate

DEFAULT_METRICS = ("auroc", "ece", "prr", "auarc")


@lru_cache(maxsize=8)
def _resample_counts(n: int, n_resamples: int, seed: int) -> np.ndarray:
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    offsets = (np.arange(n_resamples) * n)[:, None]
    counts = np.bincount((idx + offsets).ravel(), minlength=n_resamples * n).reshape(n_resamples, n)
    counts = np.asfortranarray(counts, dtype=np.float64)  # column gathers (sorting questions) stay fast
    counts.flags.writeable = False
    return counts


@dataclass(frozen=True)
class Bootstrap:
    """Percentile bootstrap over questions: ``n_resamples`` seeded resamples with replacement."""

    n_resamples: int = 1000
    seed: int = 0
    confidence_level: float = 0.95

    def __post_init__(self):
        if self.n_resamples < 1:
            raise ValueError(f"n_resamples must be positive, got {self.n_resamples}")
        if not 0 < self.confidence_level < 1:
            raise ValueError(f"confidence_level must be in (0, 1), got {self.confidence_level}")

    def counts(self, n: int) -> np.ndarray:
        """(n_resamples, n) multiplicities of each question in each resample; the same for every call."""
        return _resample_counts(n, self.n_resamples, self.seed)

    def interval(self, values: np.ndarray) -> tuple[float, float]:
        """Percentile interval of resampled values, ignoring NaN resamples (e.g. one class drawn)."""
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            return float("nan"), float("nan")
        alpha = (1 - self.confidence_level) / 2
        low, high = np.quantile(finite, [alpha, 1 - alpha])
        return float(low), float(high)


@dataclass(frozen=True)
class MetricResult:
    """A metric's point estimate on all questions, its bootstrap interval, and what it was computed on."""

    metric: str
    value: float
    ci_low: float
    ci_high: float
    n: int
    n_correct: int
    n_incorrect: int
    n_missing: int = 0
    n_valid_resamples: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PairedDifference:
    """metric(a) - metric(b) on the same resamples, with its interval and a two-sided p-value."""

    metric: str
    value_a: float
    value_b: float
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int

    def as_dict(self) -> dict:
        return asdict(self)


def _metric_values(metric: Metric, u: np.ndarray, y: np.ndarray, protocol: CalibrationProtocol) -> np.ndarray:
    """What the metric's weighted core reads: confidences for calibrated metrics, else u (NaN = skip)."""
    if not metric.calibrated:
        return u
    valid = np.isfinite(u)
    confidence = np.full(len(u), np.nan)
    if valid.any():
        confidence = calibrate(u, y, protocol)
    return confidence


def _score(
    metric: Metric, values: np.ndarray, y: np.ndarray, mask: np.ndarray, counts: np.ndarray, protocol
) -> tuple[float, np.ndarray]:
    """Point estimate (all masked-in questions once) and the (R,) resampled values."""
    filled = np.where(mask, values, 0.0)
    kwargs = {"n_bins": protocol.n_bins} if metric.calibrated else {}
    point = metric.weighted(filled, y, mask[None].astype(np.float64), **kwargs)[0]
    resampled = metric.weighted(filled, y, counts if mask.all() else counts * mask, **kwargs)
    return float(point), resampled


def evaluate(
    scores: Mapping[str, Iterable[float]],
    correct: Iterable[float],
    *,
    metrics: Iterable[str] = DEFAULT_METRICS,
    bootstrap: Bootstrap | None = None,
    protocol: CalibrationProtocol | None = None,
) -> dict[str, dict[str, MetricResult]]:
    """Score every estimator with every metric, with bootstrap CIs on shared resamples.

    ``scores`` maps an estimator name (e.g. ``"kle_heat@enc"``) to its (n,) uncertainties
    (NaN = no score for that question); ``correct`` holds the n binary labels. Returns
    ``{estimator: {metric: MetricResult}}``. A single-class label set gives NaN for the
    class-dependent metrics with a warning, never an exception.
    """
    bootstrap = bootstrap or Bootstrap()
    protocol = protocol or CalibrationProtocol()
    chosen = [metric_registry.get(m) for m in metrics]
    y = check_inputs(np.zeros(len(np.asarray(correct))), correct)[1]
    counts = bootstrap.counts(len(y))
    results: dict[str, dict[str, MetricResult]] = {}
    for name, raw in scores.items():
        u, _, valid = check_inputs(raw, y)
        n_correct, n_incorrect = int(y[valid].sum()), int((1 - y[valid]).sum())
        if n_correct == 0 or n_incorrect == 0:
            warnings.warn(
                f"{name}: labels hold a single class (n_correct={n_correct}, n_incorrect={n_incorrect}); "
                "AUROC and PRR are NaN",
                RuntimeWarning,
                stacklevel=2,
            )
        per_metric = {}
        for metric in chosen:
            values = _metric_values(metric, u, y, protocol)
            mask = valid & np.isfinite(values)
            point, resampled = _score(metric, values, y, mask, counts, protocol)
            low, high = bootstrap.interval(resampled)
            per_metric[metric.name] = MetricResult(
                metric=metric.name,
                value=point,
                ci_low=low,
                ci_high=high,
                n=int(mask.sum()),
                n_correct=int(y[mask].sum()),
                n_incorrect=int((1 - y[mask]).sum()),
                n_missing=int((~valid).sum()),
                n_valid_resamples=int(np.isfinite(resampled).sum()),
            )
        results[name] = per_metric
    return results


def paired_difference(
    u_a: Iterable[float],
    u_b: Iterable[float],
    correct: Iterable[float],
    *,
    correct_b: Iterable[float] | None = None,
    metric: str = "auroc",
    bootstrap: Bootstrap | None = None,
    protocol: CalibrationProtocol | None = None,
) -> PairedDifference:
    """metric(u_a) - metric(u_b) with a bootstrap CI and two-sided p-value, on shared resamples.

    For two estimators of one run pass one label vector; for two LLMs answering the same
    questions pass each LLM's labels (``correct`` for a, ``correct_b`` for b). Questions where
    either score is NaN are left out of both. The p-value tests "no difference" by shifting
    the resampled differences to the null: p = (1 + #{|d*_r - d| >= |d|}) / (1 + R).
    """
    bootstrap = bootstrap or Bootstrap()
    protocol = protocol or CalibrationProtocol()
    m = metric_registry.get(metric)
    if len(u_a) != len(u_b):
        raise ValueError(
            f"u_a has {len(u_a)} questions but u_b has {len(u_b)}: a paired test needs the same ones"
        )
    ua, ya, valid_a = check_inputs(u_a, correct)
    ub, yb, valid_b = check_inputs(u_b, correct if correct_b is None else correct_b)
    va, vb = _metric_values(m, ua, ya, protocol), _metric_values(m, ub, yb, protocol)
    mask = valid_a & valid_b & np.isfinite(va) & np.isfinite(vb)
    counts = bootstrap.counts(len(ua))
    point_a, res_a = _score(m, va, ya, mask, counts, protocol)
    point_b, res_b = _score(m, vb, yb, mask, counts, protocol)
    diff = point_a - point_b
    deltas = res_a - res_b
    deltas = deltas[np.isfinite(deltas)]
    low, high = bootstrap.interval(deltas)
    if deltas.size == 0 or not np.isfinite(diff):
        p_value = float("nan")
    else:
        p_value = float((1 + np.sum(np.abs(deltas - diff) >= abs(diff))) / (1 + deltas.size))
    return PairedDifference(metric, point_a, point_b, diff, low, high, p_value, int(mask.sum()))
