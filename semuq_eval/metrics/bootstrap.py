"""Bootstrap confidence intervals and paired comparisons on shared resamples.

One :class:`Bootstrap` draws its resampled index sets once per number of questions (seeded),
and every estimator of a run is scored on those same sets. A paired difference between two
estimators, or between two LLMs answering the same questions, is therefore computed
resample by resample, which is what makes its interval and p-value meaningful.

ECE's point estimate uses the calibrator cross-fitted on all questions. Its interval depends on
``CalibrationProtocol.refit``: ``"per_resample"`` (default) splits and calibrates every resample
again (the same resampled splits for every estimator), so the calibrator's own variability is in
the interval; ``"once"`` resamples the (confidence, label) pairs of the single fit, which is
cheaper but too narrow. Every :class:`MetricResult` says which in ``calibration_refit`` and
``ci_method``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from semuq_eval.metrics.base import Metric, check_inputs, metric_registry
from semuq_eval.metrics.calibration import CalibrationProtocol, calibrate, calibrate_resamples

DEFAULT_METRICS = ("auroc", "ece", "prr", "auarc")


@lru_cache(maxsize=8)
def _resample_counts(n: int, n_resamples: int, seed: int) -> np.ndarray:
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    offsets = (np.arange(n_resamples) * n)[:, None]
    counts = np.bincount((idx + offsets).ravel(), minlength=n_resamples * n).reshape(n_resamples, n)
    counts = np.asfortranarray(counts, dtype=np.float64)  # column gathers (sorting questions) stay fast
    counts.flags.writeable = False
    return counts


@lru_cache(maxsize=8)
def _resample_folds(protocol: CalibrationProtocol, n: int, n_resamples: int, seed: int) -> np.ndarray:
    folds = protocol.resample_folds(_resample_counts(n, n_resamples, seed), seed)
    folds.flags.writeable = False
    return folds


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

    def folds(self, n: int, protocol: CalibrationProtocol) -> np.ndarray:
        """(n_resamples, n) calibration folds of each resample's distinct questions (-1 = not drawn).

        What ``refit="per_resample"`` splits each resample by (:meth:`CalibrationProtocol.resample_folds`
        seeded with the protocol's and this bootstrap's seeds); the same for every call and estimator.
        """
        return _resample_folds(protocol, n, self.n_resamples, self.seed)

    def describe(self, metric: Metric | None = None, protocol: CalibrationProtocol | None = None) -> str:
        """How an interval of ``metric`` is computed, in words (``MetricResult.ci_method``).

        Examples
        --------
        >>> from semuq_eval.metrics import Bootstrap, CalibrationProtocol, get
        >>> Bootstrap().describe(get("auroc"))
        'percentile bootstrap, 1000 resamples, 95%'
        >>> Bootstrap().describe(get("ece"), CalibrationProtocol())
        'percentile bootstrap, 1000 resamples, 95%; isotonic calibrator refitted in every resample (crossfit, 2 folds)'
        """
        text = f"percentile bootstrap, {self.n_resamples} resamples, {self.confidence_level:.0%}"
        if metric is None or not metric.calibrated:
            return text
        protocol = protocol or CalibrationProtocol()
        split = f"crossfit, {protocol.n_folds} folds" if protocol.split == "crossfit" else "holdout"
        if protocol.refit == "per_resample":
            return f"{text}; {protocol.calibrator} calibrator refitted in every resample ({split})"
        return (
            f"{text}; {protocol.calibrator} calibrator fitted once ({split}), calibrated pairs resampled "
            "(interval omits the calibrator's variability)"
        )

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
    """A metric's point estimate on all questions, its bootstrap interval, and what it was computed on.

    Attributes
    ----------
    metric : str
    value : float
        Point estimate on all scored questions.
    ci_low, ci_high : float
        Percentile bootstrap interval (NaN resamples left out).
    n, n_correct, n_incorrect : int
        Questions the point estimate used, by label.
    n_missing : int
        Questions without a score (NaN).
    n_valid_resamples : int
        Resamples that gave a value (a resample drawing one class only gives none for AUROC/PRR,
        and for ECE with ``refit="per_resample"``).
    calibration_refit : {"per_resample", "once"} or None
        For calibrated metrics (ECE), whether the interval refitted the calibrator in every resample;
        None for the others.
    ci_method : str
        The interval's method in words (:meth:`Bootstrap.describe`), for a breakdown to state.
    """

    metric: str
    value: float
    ci_low: float
    ci_high: float
    n: int
    n_correct: int
    n_incorrect: int
    n_missing: int = 0
    n_valid_resamples: int = 0
    calibration_refit: str | None = None
    ci_method: str = ""

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
    calibration_refit: str | None = None
    ci_method: str = ""

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


def _refit_resampled(
    metric: Metric,
    u: np.ndarray,
    y: np.ndarray,
    counts: np.ndarray,
    folds: np.ndarray,
    protocol: CalibrationProtocol,
) -> np.ndarray:
    """(R,) values of a calibrated metric with the calibrator refitted in every resample.

    ``u`` is NaN for questions left out. A resample whose drawn (scored) questions hold one class
    only gives NaN: its refitted calibrator is the constant 0 or 1 and its ECE a trivial 0.
    """
    valid = np.isfinite(u)
    out = np.empty(counts.shape[0])
    chunk = max(1, (1 << 21) // max(int(valid.sum()), 1))  # bounds the (chunk, n) temporaries
    for lo in range(0, counts.shape[0], chunk):
        c, f = counts[lo : lo + chunk], folds[lo : lo + chunk]
        confidence = calibrate_resamples(u, y, c, f, protocol)
        weights = np.where(np.isfinite(confidence), c, 0.0)
        values = metric.weighted(confidence, y, weights, n_bins=protocol.n_bins)
        drawn_correct, drawn = weights @ y, weights.sum(axis=1)
        out[lo : lo + chunk] = np.where((drawn_correct > 0) & (drawn_correct < drawn), values, np.nan)
    return out


def _score(
    metric: Metric,
    values: np.ndarray,
    y: np.ndarray,
    mask: np.ndarray,
    counts: np.ndarray,
    protocol: CalibrationProtocol,
    u: np.ndarray | None = None,
    folds: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """Point estimate (all masked-in questions once) and the (R,) resampled values.

    With ``folds`` (a calibrated metric under ``refit="per_resample"``) the resampled values
    refit the calibrator on ``u`` (NaN = left out); otherwise they reweight ``values``.
    """
    filled = np.where(mask, values, 0.0)
    kwargs = {"n_bins": protocol.n_bins} if metric.calibrated else {}
    point = metric.weighted(filled, y, mask[None].astype(np.float64), **kwargs)[0]
    if folds is not None and metric.calibrated:
        return float(point), _refit_resampled(metric, u, y, counts, folds, protocol)
    resampled = metric.weighted(filled, y, counts if mask.all() else counts * mask, **kwargs)
    return float(point), resampled


def _refit_folds(
    chosen: Iterable[Metric], bootstrap: Bootstrap, protocol: CalibrationProtocol, n: int
) -> np.ndarray | None:
    if protocol.refit == "per_resample" and any(m.calibrated for m in chosen):
        return bootstrap.folds(n, protocol)
    return None


def evaluate(
    scores: Mapping[str, Iterable[float]],
    correct: Iterable[float],
    *,
    metrics: Iterable[str] = DEFAULT_METRICS,
    bootstrap: Bootstrap | None = None,
    protocol: CalibrationProtocol | None = None,
) -> dict[str, dict[str, MetricResult]]:
    """Score every estimator with every metric, with bootstrap CIs on shared resamples.

    A single-class label set gives NaN for the class-dependent metrics with a warning, never
    an exception.

    Parameters
    ----------
    scores : mapping of str to array-like of shape (n,)
        Estimator name (e.g. ``"kle_heat@enc"``) to its uncertainties (NaN = no score for that
        question).
    correct : array-like of shape (n,)
        Binary labels (1 = the answer is correct).
    metrics : iterable of str, default=DEFAULT_METRICS
        Registered metric names.
    bootstrap : Bootstrap, optional
        Resampling; default ``Bootstrap()`` (1000 seeded resamples, 95% percentile intervals).
        Every estimator is scored on the same resamples.
    protocol : CalibrationProtocol, optional
        Calibration of ECE; default ``CalibrationProtocol()``. Its ``refit`` decides ECE's interval:
        ``"per_resample"`` (default) refits the calibrator in every resample (each resample's
        distinct questions split again, copies in one fold, multiplicities as sample weights;
        resamples drawing one class only give NaN and are left out of the interval), ``"once"``
        resamples the pairs calibrated on all questions (cheaper, too narrow). The point estimate
        is the same either way.

    Returns
    -------
    results : dict of str to dict of str to MetricResult
        ``{estimator: {metric: MetricResult}}``; ``MetricResult.ci_method`` states how the interval
        was computed.

    Examples
    --------
    >>> import numpy as np
    >>> from semuq_eval.metrics import Bootstrap, evaluate
    >>> rng = np.random.default_rng(0)
    >>> correct = rng.integers(0, 2, 200)
    >>> u = rng.normal(size=200) + (1 - correct)
    >>> r = evaluate({"u": u}, correct, bootstrap=Bootstrap(n_resamples=100))["u"]["ece"]
    >>> bool(r.ci_low <= r.value <= r.ci_high), r.calibration_refit
    (True, 'per_resample')
    """
    bootstrap = bootstrap or Bootstrap()
    protocol = protocol or CalibrationProtocol()
    chosen = [metric_registry.get(m) for m in metrics]
    y = check_inputs(np.zeros(len(np.asarray(correct))), correct)[1]
    counts = bootstrap.counts(len(y))
    folds = _refit_folds(chosen, bootstrap, protocol, len(y))
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
            point, resampled = _score(metric, values, y, mask, counts, protocol, u, folds)
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
                calibration_refit=protocol.refit if metric.calibrated else None,
                ci_method=bootstrap.describe(metric, protocol),
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
    the resampled differences to the null: p = (1 + #{|d*_r - d| >= |d|}) / (1 + R). For ECE
    under ``protocol.refit="per_resample"`` both calibrators are refitted on the same resampled
    splits, resample by resample.
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
    folds = _refit_folds([m], bootstrap, protocol, len(ua))
    both = valid_a & valid_b
    point_a, res_a = _score(m, va, ya, mask, counts, protocol, np.where(both, ua, np.nan), folds)
    point_b, res_b = _score(m, vb, yb, mask, counts, protocol, np.where(both, ub, np.nan), folds)
    diff = point_a - point_b
    deltas = res_a - res_b
    deltas = deltas[np.isfinite(deltas)]
    low, high = bootstrap.interval(deltas)
    if deltas.size == 0 or not np.isfinite(diff):
        p_value = float("nan")
    else:
        p_value = float((1 + np.sum(np.abs(deltas - diff) >= abs(diff))) / (1 + deltas.size))
    return PairedDifference(
        metric,
        point_a,
        point_b,
        diff,
        low,
        high,
        p_value,
        int(mask.sum()),
        calibration_refit=protocol.refit if m.calibrated else None,
        ci_method=bootstrap.describe(m, protocol),
    )
