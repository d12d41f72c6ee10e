"""Bootstrap confidence intervals and paired comparisons on shared resamples.

One seeded :class:`Bootstrap` draws its resampled index sets once per number of questions and every estimator
of a run is scored on them, so a paired difference (two estimators, or two LLMs on the same questions) is
computed resample by resample, which makes its interval and p-value meaningful. ECE's point estimate uses the
calibrator cross-fitted on all questions; its interval follows ``CalibrationProtocol.refit``: ``"once"``
resamples the calibrated pairs, ``"per_resample"`` recalibrates every resample, a wider, conservative interval
(docs/api.md, "ECE intervals"). :class:`MetricResult` states which in ``calibration_refit`` and ``ci_method``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from semuq_eval.metrics.base import DEFAULT_METRICS, Metric, check_inputs, registry
from semuq_eval.metrics.calibration import ece_weighted
from semuq_eval.metrics.calibrators import CalibrationProtocol, _refit_entries, calibrate, calibrate_resamples

MAX_RESAMPLES = 100_000
"""The most bootstrap resamples: intervals stop moving long before; their (resamples, questions) counts must fit
in memory."""


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


@lru_cache(maxsize=8)
def _compact_counts(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """The counts as C-ordered small integers: row gathers for the per-resample refit stay cheap."""
    counts = _resample_counts(n, n_resamples, seed)
    compact = np.ascontiguousarray(counts, dtype=np.uint8 if counts.max() < 256 else np.float64)
    compact.flags.writeable = False
    return compact


@dataclass(frozen=True)
class Bootstrap:
    """Percentile bootstrap over questions: ``n_resamples`` seeded resamples with replacement."""

    n_resamples: int = 1000
    seed: int = 0
    confidence_level: float = 0.95

    def __post_init__(self):
        if not 1 <= self.n_resamples <= MAX_RESAMPLES:
            raise ValueError(f"n_resamples must be in 1..{MAX_RESAMPLES:,}, got {self.n_resamples}")
        if not 0 < self.confidence_level < 1:
            raise ValueError(f"confidence_level must be in (0, 1), got {self.confidence_level}")

    def counts(self, n: int) -> np.ndarray:
        """(n_resamples, n) multiplicities of each question in each resample; the same for every call."""
        return _resample_counts(n, self.n_resamples, self.seed)

    def folds(self, n: int, protocol: CalibrationProtocol) -> np.ndarray:
        """(n_resamples, n) calibration folds of each resample's distinct questions (-1 = not drawn).

        The split of ``refit="per_resample"`` (:meth:`CalibrationProtocol.resample_folds`), the same for every
        estimator."""
        return _resample_folds(protocol, n, self.n_resamples, self.seed)

    def describe(self, metric: Metric | None = None, protocol: CalibrationProtocol | None = None) -> str:
        """How an interval of ``metric`` is computed, in words (``MetricResult.ci_method``).

        Examples
        --------
        >>> from semuq_eval.metrics import Bootstrap, CalibrationProtocol, get
        >>> Bootstrap().describe(get("auroc"))
        'percentile bootstrap, 1000 resamples, 95%'
        >>> Bootstrap().describe(get("ece"), CalibrationProtocol(refit="per_resample"))
        'percentile bootstrap, 1000 resamples, 95%; isotonic calibrator refitted in every resample (crossfit, 2 folds)'
        >>> Bootstrap().describe(get("ece"))
        'percentile bootstrap, 1000 resamples, 95%; isotonic calibrator fitted once (crossfit, 2 folds), calibrated pairs resampled'
        """
        text = f"percentile bootstrap, {self.n_resamples} resamples, {self.confidence_level:.0%}"
        if metric is None or not metric.calibrated:
            return text
        protocol = protocol or CalibrationProtocol()
        split = f"crossfit, {protocol.n_folds} folds" if protocol.split == "crossfit" else "holdout"
        if protocol.refit == "per_resample":
            return f"{text}; {protocol.calibrator} calibrator refitted in every resample ({split})"
        return f"{text}; {protocol.calibrator} calibrator fitted once ({split}), calibrated pairs resampled"

    def interval(self, values: np.ndarray) -> tuple[float, float]:
        """Percentile interval of resampled values, ignoring NaN resamples (e.g. one class drawn)."""
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            return float("nan"), float("nan")
        alpha = (1 - self.confidence_level) / 2
        low, high = np.quantile(finite, [alpha, 1 - alpha])
        return float(low), float(high)

    def paired(
        self, point_a: float, point_b: float, resampled_a: np.ndarray, resampled_b: np.ndarray
    ) -> tuple[float, float, float, float]:
        """``(difference, low, high, p_value)`` of a - b from their values on the same resamples: the percentile
        interval of the resampled differences and the shifted-bootstrap two-sided p-value
        (:func:`paired_difference`).

        Examples
        --------
        >>> b = Bootstrap(n_resamples=4)
        >>> diff, low, high, p = b.paired(0.75, 0.5, np.array([0.75, 1.0, 0.5, 0.75]), np.full(4, 0.5))
        >>> diff, round(low, 3), round(high, 3), p
        (0.25, 0.019, 0.481, 0.6)
        """
        diff = point_a - point_b
        deltas = resampled_a - resampled_b
        deltas = deltas[np.isfinite(deltas)]
        low, high = self.interval(deltas)
        if deltas.size == 0 or not np.isfinite(diff):
            return diff, low, high, float("nan")
        return diff, low, high, float((1 + np.sum(np.abs(deltas - diff) >= abs(diff))) / (1 + deltas.size))


@dataclass(frozen=True)
class MetricResult:
    """A metric's point estimate on all questions, its bootstrap interval, and what it was computed on.

    ``value`` is the estimate on all scored questions, ``ci_low``/``ci_high`` its percentile interval (NaN
    resamples left out); ``n``, ``n_correct`` and ``n_incorrect`` count the questions used, ``n_missing``
    those without a score. ``n_valid_resamples`` counts the resamples that gave a value (one drawn class gives
    none for AUROC/PRR, and for ECE under ``refit="per_resample"``). ``calibration_refit`` is the refit mode
    for calibrated metrics (None otherwise); ``ci_method`` states the interval's method
    (:meth:`Bootstrap.describe`)."""

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
    metric: Metric, u: np.ndarray, plan: tuple[np.ndarray, np.ndarray], *, y: np.ndarray, protocol
) -> np.ndarray:
    """(R,) values of a calibrated metric with the calibrator refitted in every resample.

    ``plan`` is (counts, folds); ``u`` is NaN for questions left out. A resample whose scored questions hold
    one class gives NaN (its ECE would be a trivial 0). ECE accumulates the scored entries directly; other
    metrics get (R, n) confidences in blocks of resamples."""
    counts, folds = plan
    n_resamples = counts.shape[0]
    size = max(1, (1 << 21) // max(int(np.isfinite(u).sum()), 1))  # bounds the temporaries
    total, n_correct = np.zeros(n_resamples), np.zeros(n_resamples)
    if metric.weighted is ece_weighted:
        n_bins = protocol.n_bins
        gap = np.zeros(n_resamples * n_bins)
        for lo, row, question, confidence, weight in _refit_entries(u, y, counts, folds, protocol, size):
            scored = np.isfinite(confidence)
            r, conf, w, yq = lo + row[scored], confidence[scored], weight[scored], y[question[scored]]
            bins = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
            gap += np.bincount(r * n_bins + bins, w * (yq - conf), minlength=n_resamples * n_bins)
            total += np.bincount(r, w, minlength=n_resamples)
            n_correct += np.bincount(r, w * yq, minlength=n_resamples)
        with np.errstate(invalid="ignore", divide="ignore"):
            values = np.abs(gap.reshape(n_resamples, n_bins)).sum(axis=1) / total
    else:
        values = np.empty(n_resamples)
        for lo in range(0, n_resamples, size):
            c = np.asarray(counts[lo : lo + size], dtype=np.float64)
            confidence = calibrate_resamples(u, y, c, folds[lo : lo + size], protocol)
            weights = np.where(np.isfinite(confidence), c, 0.0)
            values[lo : lo + size] = metric.weighted(confidence, y, weights, n_bins=protocol.n_bins)
            total[lo : lo + size], n_correct[lo : lo + size] = weights.sum(axis=1), weights @ y
    return np.where((n_correct > 0) & (n_correct < total), values, np.nan)


def _score(
    metric: Metric,
    values: np.ndarray,
    y: np.ndarray,
    mask: np.ndarray,
    counts: np.ndarray,
    protocol: CalibrationProtocol,
    refit: tuple[np.ndarray, tuple[np.ndarray, np.ndarray]] | None = None,
    memo: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> tuple[float, np.ndarray]:
    """Point estimate (all masked-in questions once) and the (R,) resampled values.

    With ``refit=(u, plan)`` (a calibrated metric, ``refit="per_resample"``) the resampled values refit the
    calibrator on ``u`` (NaN = left out) in ``plan``'s resamples; otherwise they reweight ``values``.
    ``memo``: :func:`_weighted`."""
    filled = np.where(mask, values, 0.0)
    if metric.calibrated:
        kwargs = {"n_bins": protocol.n_bins}
        point = metric.weighted(filled, y, mask[None].astype(np.float64), **kwargs)[0]
        if refit is not None:
            return float(point), _refit_resampled(metric, *refit, y=y, protocol=protocol)
        return float(point), metric.weighted(filled, y, counts if mask.all() else counts * mask, **kwargs)
    point, resampled = _weighted(metric, filled, y, mask, counts, {} if memo is None else memo)
    return float(point[0]), resampled


def _weighted(
    metric: Metric,
    filled: np.ndarray,
    y: np.ndarray,
    mask: np.ndarray,
    counts: np.ndarray,
    memo: dict[str, tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray]:
    """A metric's weighted values on all questions once and on every resample; a derived metric is computed from
    its base's, each computed once per ``memo`` (one score's metrics: PRR reads AUARC's)."""
    if metric.name not in memo:
        weights = (mask[None].astype(np.float64), counts if mask.all() else counts * mask)
        if metric.derived is None:
            memo[metric.name] = (
                metric.weighted(filled, y, weights[0]),
                metric.weighted(filled, y, weights[1]),
            )
        else:
            base, function = metric.derived
            base_values = _weighted(registry.get(base), filled, y, mask, counts, memo)
            memo[metric.name] = tuple(function(v, y, w) for v, w in zip(base_values, weights, strict=True))
    return memo[metric.name]


def _refit_plan(
    chosen: Iterable[Metric], bootstrap: Bootstrap, protocol: CalibrationProtocol, n: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """(counts, folds) for refitting per resample, or None when no metric needs it."""
    if protocol.refit == "per_resample" and any(m.calibrated for m in chosen):
        return _compact_counts(n, bootstrap.n_resamples, bootstrap.seed), bootstrap.folds(n, protocol)
    return None


@dataclass(frozen=True)
class Resampled:
    """A metric on all questions and on every bootstrap resample, for paired comparisons and ranks.

    ``values`` (n_resamples,) holds the metric per resample (NaN where undefined); resample r draws the same
    questions for every estimator and LLM scored with the same :class:`Bootstrap` on as many questions.
    ``mask`` (n,) marks the questions scored (finite score, and finite confidence for a calibrated metric)."""

    result: MetricResult
    values: np.ndarray
    mask: np.ndarray


def resample(
    metric: str,
    uncertainty: Iterable[float],
    correct: Iterable[float],
    *,
    bootstrap: Bootstrap | None = None,
    protocol: CalibrationProtocol | None = None,
) -> Resampled:
    """One metric of one score on all questions and on every shared bootstrap resample.

    :func:`evaluate` is this for every estimator and metric; callers that compare or rank resample by resample
    (the leaderboard) keep :attr:`Resampled.values`. ``uncertainty`` is (n,) scores (NaN = no score),
    ``correct`` (n,) binary labels; ``bootstrap`` and ``protocol`` as in :func:`evaluate`.

    Examples
    --------
    >>> import numpy as np
    >>> from semuq_eval.metrics import Bootstrap, resample
    >>> r = resample("auroc", [0.1, 0.4, 0.35, 0.8], [1, 1, 0, 0], bootstrap=Bootstrap(n_resamples=50))
    >>> r.result.value, r.values.shape, int(r.mask.sum())
    (0.75, (50,), 4)
    """
    return _resample(
        registry.get(metric),
        uncertainty,
        correct,
        bootstrap or Bootstrap(),
        protocol or CalibrationProtocol(),
    )


def _resample(
    m: Metric,
    uncertainty: Iterable[float],
    correct: Iterable[float],
    bootstrap: Bootstrap,
    protocol: CalibrationProtocol,
    memo: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> Resampled:
    """:func:`resample` of the metric ``m``; ``memo`` shares weighted values between the metrics of one score."""
    u, y, valid = check_inputs(uncertainty, correct)
    values = _metric_values(m, u, y, protocol)
    mask = valid & np.isfinite(values)
    counts = bootstrap.counts(len(y))
    plan = _refit_plan([m], bootstrap, protocol, len(y))
    point, resampled = _score(m, values, y, mask, counts, protocol, None if plan is None else (u, plan), memo)
    low, high = bootstrap.interval(resampled)
    result = MetricResult(
        metric=m.name,
        value=point,
        ci_low=low,
        ci_high=high,
        n=int(mask.sum()),
        n_correct=int(y[mask].sum()),
        n_incorrect=int((1 - y[mask]).sum()),
        n_missing=int((~valid).sum()),
        n_valid_resamples=int(np.isfinite(resampled).sum()),
        calibration_refit=protocol.refit if m.calibrated else None,
        ci_method=bootstrap.describe(m, protocol),
    )
    return Resampled(result, resampled, mask)


def evaluate(
    scores: Mapping[str, Iterable[float]],
    correct: Iterable[float],
    *,
    metrics: Iterable[str] = DEFAULT_METRICS,
    bootstrap: Bootstrap | None = None,
    protocol: CalibrationProtocol | None = None,
) -> dict[str, dict[str, MetricResult]]:
    """Score every estimator with every metric, with bootstrap CIs on shared resamples.

    ``scores`` maps estimator names (e.g. ``"kle_heat@enc"``) to (n,) uncertainties (NaN = no score);
    ``correct``: binary labels. ``bootstrap`` (default 1000 seeded resamples, 95%) is shared by every
    estimator; ``protocol`` calibrates ECE, its ``refit`` picking ECE's interval (module docstring), never its
    value. A single-class label set gives NaN for the class-dependent metrics with a warning. Returns
    ``{estimator: {metric: MetricResult}}``.

    Examples
    --------
    >>> import numpy as np
    >>> from semuq_eval.metrics import Bootstrap, CalibrationProtocol, evaluate
    >>> rng = np.random.default_rng(0)
    >>> correct = rng.integers(0, 2, 200)
    >>> u = rng.normal(size=200) + (1 - correct)
    >>> r = evaluate({"u": u}, correct, bootstrap=Bootstrap(n_resamples=100))["u"]["ece"]
    >>> bool(r.ci_low <= r.value <= r.ci_high), r.calibration_refit
    (True, 'once')
    >>> wide = CalibrationProtocol(refit="per_resample")
    >>> r = evaluate({"u": u}, correct, bootstrap=Bootstrap(n_resamples=100), protocol=wide)["u"]["ece"]
    >>> r.ci_method
    'percentile bootstrap, 100 resamples, 95%; isotonic calibrator refitted in every resample (crossfit, 2 folds)'
    >>> r.n_valid_resamples
    100
    """
    bootstrap = bootstrap or Bootstrap()
    protocol = protocol or CalibrationProtocol()
    chosen = [registry.get(m) for m in metrics]
    y = check_inputs(np.zeros(len(np.asarray(correct))), correct)[1]
    results: dict[str, dict[str, MetricResult]] = {}
    for name, raw in scores.items():
        valid = check_inputs(raw, y)[2]
        n_correct, n_incorrect = int(y[valid].sum()), int((1 - y[valid]).sum())
        if n_correct == 0 or n_incorrect == 0:
            warnings.warn(
                f"{name}: labels hold a single class (n_correct={n_correct}, n_incorrect={n_incorrect}); "
                "AUROC and PRR are NaN",
                RuntimeWarning,
                stacklevel=2,
            )
        memo: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # one score: PRR reads AUARC's values
        results[name] = {m.name: _resample(m, raw, y, bootstrap, protocol, memo).result for m in chosen}
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

    Two estimators of one run share ``correct``; two LLMs on the same questions pass ``correct`` for a and
    ``correct_b`` for b. Questions where either score is NaN are left out of both.
    p = (1 + #{|d*_r - d| >= |d|}) / (1 + R), the shifted bootstrap. For ECE under ``refit="per_resample"``
    both calibrators are refitted on the same resampled splits."""
    bootstrap = bootstrap or Bootstrap()
    protocol = protocol or CalibrationProtocol()
    m = registry.get(metric)
    if len(u_a) != len(u_b):
        raise ValueError(
            f"u_a has {len(u_a)} questions but u_b has {len(u_b)}: a paired test needs the same ones"
        )
    ua, ya, valid_a = check_inputs(u_a, correct)
    ub, yb, valid_b = check_inputs(u_b, correct if correct_b is None else correct_b)
    va, vb = _metric_values(m, ua, ya, protocol), _metric_values(m, ub, yb, protocol)
    mask = valid_a & valid_b & np.isfinite(va) & np.isfinite(vb)
    counts = bootstrap.counts(len(ua))
    plan = _refit_plan([m], bootstrap, protocol, len(ua))
    both = valid_a & valid_b
    refit_a = None if plan is None else (np.where(both, ua, np.nan), plan)
    refit_b = None if plan is None else (np.where(both, ub, np.nan), plan)
    point_a, res_a = _score(m, va, ya, mask, counts, protocol, refit_a)
    point_b, res_b = _score(m, vb, yb, mask, counts, protocol, refit_b)
    diff, low, high, p_value = bootstrap.paired(point_a, point_b, res_a, res_b)
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
