"""The calibration protocol of ECE (Sec. 5.1, "Metrics"): each uncertainty score mapped to a confidence
P(correct | u) by a monotone calibrator fitted on held-out questions, identically for every method.

Calibrators: ``"isotonic"`` (default; decreasing in u, clipped to [0, 1]) or ``"platt"`` (unpenalized logistic
regression). Splits: ``"crossfit"`` (default; each of ``n_folds`` seeded folds is scored by a calibrator
fitted on the others, so none by one that saw it) or ``"holdout"``; folds depend only on n and the seed, so
every estimator shares them. ``refit`` changes only ECE's bootstrap interval (docs/api.md, "ECE intervals"):
``"once"`` resamples the calibrated pairs, ``"per_resample"`` refits in every resample (vectorized here),
wider and conservative."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.optimize
from scipy.special import expit
from sklearn.isotonic import IsotonicRegression, isotonic_regression
from sklearn.linear_model import LogisticRegression

from semuq_eval.metrics.base import check_inputs

MAX_BINS = 10_000
"""The most ECE bins: far beyond what any question set can fill, far below what would exhaust memory."""


@dataclass(frozen=True)
class CalibrationProtocol:
    """How uncertainties become confidences before ECE, and how ECE's bootstrap treats the calibrator.

    ``calibrator``, ``split``, ``n_folds``, ``holdout_fraction`` (the share that fits under ``"holdout"``) and
    ``seed`` (of the folds) define the protocol (module docstring); ``n_bins``: ECE's equal-width bins;
    ``refit``: how a calibrated metric's bootstrap interval is computed, never its value
    (:meth:`resample_folds`, :func:`calibrate_resamples`).

    Examples
    --------
    >>> from semuq_eval.metrics import CalibrationProtocol
    >>> CalibrationProtocol().folds(6)
    array([0, 1, 1, 0, 1, 0])
    >>> CalibrationProtocol(refit="per_resample").refit
    'per_resample'
    """

    calibrator: Literal["isotonic", "platt"] = "isotonic"
    split: Literal["crossfit", "holdout"] = "crossfit"
    n_folds: int = 2
    holdout_fraction: float = 0.5
    n_bins: int = 10
    seed: int = 0
    refit: Literal["once", "per_resample"] = "once"

    def __post_init__(self):
        if self.calibrator not in ("isotonic", "platt"):
            raise ValueError(f"calibrator must be 'isotonic' or 'platt', got {self.calibrator!r}")
        if self.split not in ("crossfit", "holdout"):
            raise ValueError(f"split must be 'crossfit' or 'holdout', got {self.split!r}")
        if self.n_folds < 2:
            raise ValueError(f"n_folds must be at least 2, got {self.n_folds}")
        if not 0 < self.holdout_fraction < 1:
            raise ValueError(f"holdout_fraction must be in (0, 1), got {self.holdout_fraction}")
        if not 1 <= self.n_bins <= MAX_BINS:
            raise ValueError(
                f"n_bins must be in 1..{MAX_BINS:,} (bins beyond the questions stay empty), got {self.n_bins}"
            )
        if self.refit not in ("once", "per_resample"):
            raise ValueError(f"refit must be 'once' or 'per_resample', got {self.refit!r}")

    def folds(self, n: int) -> np.ndarray:
        """Fold id per question (crossfit), or 0 = calibration / 1 = scored (holdout)."""
        perm = np.random.default_rng(self.seed).permutation(n)
        fold = np.empty(n, dtype=np.int64)
        if self.split == "crossfit":
            fold[perm] = np.arange(n) % self.n_folds
        else:
            fold[perm] = (np.arange(n) >= round(self.holdout_fraction * n)).astype(np.int64)
        return fold

    def resample_folds(self, counts: np.ndarray, seed: int = 0) -> np.ndarray:
        """Fold id of every question in every bootstrap resample, for ``refit="per_resample"``.

        Each resample is split like :meth:`folds`, over the **distinct** questions it drew: all copies of a
        question share a fold, so no calibrator scores a question it was fitted on. Crossfit folds hold equal
        numbers of distinct questions (+-1); holdout fits on ``round(holdout_fraction * d)`` of the ``d``.
        ``counts`` (R, n) are multiplicities (:meth:`Bootstrap.counts`); ``seed`` is mixed with :attr:`seed`
        (:func:`evaluate` passes the bootstrap's). Returns (R, n) int8 fold ids
        (holdout: 0 = fit, 1 = scored), -1 where the question was not drawn.

        Examples
        --------
        >>> import numpy as np
        >>> counts = np.array([[2.0, 0.0, 1.0, 1.0]])
        >>> folds = CalibrationProtocol().resample_folds(counts)
        >>> bool(folds[0, 1] == -1), sorted(folds[0, [0, 2, 3]].tolist()) in ([0, 0, 1], [0, 1, 1])
        (True, True)
        """
        counts = np.asarray(counts)
        n_resamples, n = counts.shape
        drawn = counts > 0
        keys = np.random.default_rng([self.seed, seed]).random((n_resamples, n))
        keys[~drawn] = 2.0  # not drawn: ranked after every drawn question
        rank = np.empty((n_resamples, n), dtype=np.int64)
        np.put_along_axis(rank, np.argsort(keys, axis=1), np.arange(n)[None], axis=1)
        if self.split == "crossfit":
            fold = rank % self.n_folds
        else:
            n_fit = np.round(self.holdout_fraction * drawn.sum(axis=1))
            fold = (rank >= n_fit[:, None]).astype(np.int64)
        return np.where(drawn, fold, -1).astype(np.int8)


def _fit_predict(calibrator: str, u_fit: np.ndarray, y_fit: np.ndarray, u_new: np.ndarray) -> np.ndarray:
    if len(u_fit) == 0:
        return np.full(len(u_new), np.nan)
    if calibrator == "isotonic":
        model = IsotonicRegression(increasing=False, y_min=0.0, y_max=1.0, out_of_bounds="clip")
        return model.fit(u_fit, y_fit).predict(u_new)
    if np.all(y_fit == y_fit[0]):  # one class: the best monotone map is the constant base rate
        return np.full(len(u_new), float(y_fit[0]))
    center, scale = u_fit.mean(), u_fit.std() or 1.0
    model = LogisticRegression(C=np.inf).fit(((u_fit - center) / scale)[:, None], y_fit)
    return model.predict_proba(((u_new - center) / scale)[:, None])[:, 1]


def calibrate(
    uncertainty: np.ndarray, correct: np.ndarray, protocol: CalibrationProtocol | None = None
) -> np.ndarray:
    """Confidences P(correct | u) from held-out calibrators; NaN for questions not scored.

    Questions with a NaN uncertainty are neither fitted on nor scored."""
    protocol = protocol or CalibrationProtocol()
    u, y, valid = check_inputs(uncertainty, correct)
    fold = protocol.folds(len(u))
    confidence = np.full(len(u), np.nan)
    scored_folds = range(protocol.n_folds) if protocol.split == "crossfit" else [1]
    for k in scored_folds:
        fit = valid & (fold != k)
        score = valid & (fold == k)
        if score.any():
            confidence[score] = _fit_predict(protocol.calibrator, u[fit], y[fit], u[score])
    return confidence


def _pava_decreasing(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted non-increasing isotonic fit of y: the PAVA that scikit-learn's IsotonicRegression runs."""
    if hasattr(scipy.optimize, "isotonic_regression"):  # scipy >= 1.12, which scikit-learn calls too
        return scipy.optimize.isotonic_regression(y, weights=w, increasing=False).x
    return isotonic_regression(y, sample_weight=w, increasing=False)  # pragma: no cover


@dataclass
class _Entries:
    """Ragged per-row entries: row r owns ``[bounds[r], bounds[r + 1])``, sorted by x within a row."""

    bounds: np.ndarray
    x: np.ndarray
    w: np.ndarray | None = None
    s: np.ndarray | None = None


def _row_bounds(rows: np.ndarray, n_rows: int) -> np.ndarray:
    return np.r_[0, np.cumsum(np.bincount(rows, minlength=n_rows))]


def _isotonic_flat(fit: _Entries, query: _Entries) -> np.ndarray:
    """Confidences at the query entries from a per-row isotonic fit to the fit entries.

    As IsotonicRegression on the expanded multiset (ties merged by the caller, PAVA, clipped to [0, 1],
    interpolated), one PAVA call per row; NaN for rows without fit entries."""
    out = np.full(len(query.x), np.nan)
    ybar = fit.s / fit.w
    for r in np.flatnonzero((np.diff(query.bounds) > 0) & (np.diff(fit.bounds) > 0)):
        a, b = fit.bounds[r], fit.bounds[r + 1]
        qa, qb = query.bounds[r], query.bounds[r + 1]
        fitted = np.clip(_pava_decreasing(ybar[a:b], fit.w[a:b]), 0.0, 1.0)
        out[qa:qb] = np.interp(query.x[qa:qb], fit.x[a:b], fitted)
    return out


def _platt_flat(fit: _Entries, query: _Entries, max_iter: int = 100) -> np.ndarray:
    """Confidences at the query entries from a per-row weighted logistic regression on the fit entries.

    Newton's method with step halving on the weighted (expanded-multiset) likelihood for all rows at once,
    unpenalized like :func:`_fit_predict`; converged rows leave the working set. One class gives its base
    rate, no fit entries NaN; separable rows stop after ``max_iter`` accepted steps at near 0/1 confidences,
    as scikit-learn's lbfgs does."""
    n_rows = len(fit.bounds) - 1
    sizes = np.diff(fit.bounds)
    starts = fit.bounds[:-1][sizes > 0]
    total, positive = np.zeros(n_rows), np.zeros(n_rows)
    total[sizes > 0], positive[sizes > 0] = np.add.reduceat(fit.w, starts), np.add.reduceat(fit.s, starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        base = positive / total  # NaN without fit entries
    both = (positive > 0) & (positive < total)
    a, b = np.zeros(n_rows), np.zeros(n_rows)  # accepted point of every row
    a[both] = np.log(base[both] / (1 - base[both]))
    held = np.flatnonzero(both)  # rows still iterating, and their entries
    on = np.repeat(both, sizes)
    z, w, s = fit.x[on], fit.w[on], fit.s[on]
    local = np.repeat(np.arange(len(held)), sizes[held])
    first = np.r_[0, np.cumsum(sizes[held])[:-1]]
    da, db = np.zeros(len(held)), np.zeros(len(held))
    best = np.full(len(held), -np.inf)
    accepted, halvings = np.zeros(len(held), dtype=np.int64), np.zeros(len(held), dtype=np.int64)
    active = np.ones(len(held), dtype=bool)
    while held.size:
        ta, tb = a[held] + da, b[held] + db
        eta = ta[local] + tb[local] * z
        p = expit(eta)
        resid, h = s - w * p, w * p * (1 - p)
        terms = (s * eta - w * np.logaddexp(0.0, eta), resid, resid * z, h, h * z, h * z * z)
        loglik, g0, g1, h00, h01, h11 = (np.add.reduceat(t, first) for t in terms)
        tol = 1e-12 * (1 + np.abs(loglik))  # rounding noise of the sums: a flat step is not a worse one
        worse = loglik < best - tol
        halvings = np.where(worse, halvings + 1, 0)
        ok = ~worse
        gain = np.where(ok, loglik - best, 0.0)
        step = np.maximum(np.abs(da), np.abs(db))
        a[held[ok]], b[held[ok]] = ta[ok], tb[ok]
        best = np.where(ok, loglik, best)
        accepted += ok
        ridge = 1e-9 * (h00 + h11) + 1e-300  # invertible when only one tied value is unsaturated
        h00, h11 = h00 + ridge, h11 + ridge
        det = h00 * h11 - h01 * h01
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            na, nb = np.nan_to_num((h11 * g0 - h01 * g1) / det), np.nan_to_num((h00 * g1 - h01 * g0) / det)
        da, db = np.where(ok, na, da / 2), np.where(ok, nb, db / 2)
        done = ok & (accepted > 1) & ((step <= 1e-10) | (gain <= tol))
        active = ~done & (accepted <= max_iter) & (halvings <= 40)
        if not active.all():  # drop finished rows and their entries
            keep = active[local]
            z, w, s = z[keep], w[keep], s[keep]
            held, da, db, best = held[active], da[active], db[active], best[active]
            accepted, halvings = accepted[active], halvings[active]
            local = np.repeat(np.arange(len(held)), sizes[held])
            first = np.r_[0, np.cumsum(sizes[held])[:-1]]
    qrow = np.repeat(np.arange(n_rows), np.diff(query.bounds))
    return np.where(both[qrow], expit(a[qrow] + b[qrow] * query.x), base[qrow])


def _refit_entries(u: np.ndarray, y: np.ndarray, counts: np.ndarray, folds: np.ndarray, protocol, size: int):
    """Yield ``(lo, row, question, confidence, weight)`` per block of resamples and scored fold.

    Resample ``lo + row`` scores ``question`` (an index into u, finite u only) with ``confidence`` (NaN: its
    fold had no fitting data) and multiplicity ``weight``."""
    cols = np.flatnonzero(np.isfinite(u))
    if cols.size == 0:
        return
    cols = cols[np.argsort(u[cols], kind="stable")]
    x, ys = u[cols], y[cols]
    new_value = np.r_[True, x[1:] != x[:-1]]
    group = np.cumsum(new_value) - 1
    ties = not new_value.all()
    if protocol.calibrator == "isotonic":
        fit_predict = _isotonic_flat
    else:  # Platt: standardized scores, for the solver's conditioning (no penalty: same fit)
        fit_predict, x = _platt_flat, (x - x.mean()) / (x.std() or 1.0)
    xs = x[new_value]
    n_ids = protocol.n_folds if protocol.split == "crossfit" else 2
    scored_folds = range(protocol.n_folds) if protocol.split == "crossfit" else (1,)
    m = len(cols)
    for lo in range(0, counts.shape[0], size):
        c = counts[lo : lo + size][:, cols].ravel()  # (rows, m) flattened row-major
        f = folds[lo : lo + size][:, cols].ravel()
        n_rows = len(c) // m
        in_fold = [np.flatnonzero(f == k) for k in range(n_ids)]  # entries (row * m + column), sorted
        for k in scored_folds:
            # fit on the resample's other folds (holdout: k = 1, so fold 0 fits)
            fit_at = in_fold[1 - k] if n_ids == 2 else np.flatnonzero((f >= 0) & (f != k))
            rr = fit_at // m
            jj = fit_at - rr * m
            w = c[fit_at].astype(np.float64)
            s, g = w * ys[jj], group[jj]
            if ties:  # merge tied values of a row into one point with their summed weight (as sklearn)
                first = np.flatnonzero(np.r_[True, (rr[1:] != rr[:-1]) | (g[1:] != g[:-1])])
                w, s, rr, g = np.add.reduceat(w, first), np.add.reduceat(s, first), rr[first], g[first]
            fit = _Entries(_row_bounds(rr, n_rows), xs[g], w, s)
            rq = in_fold[k] // m
            jq = in_fold[k] - rq * m
            query = _Entries(_row_bounds(rq, n_rows), x[jq])
            yield lo, rq, cols[jq], fit_predict(fit, query), c[in_fold[k]].astype(np.float64)


def calibrate_resamples(
    uncertainty: np.ndarray,
    correct: np.ndarray,
    counts: np.ndarray,
    folds: np.ndarray,
    protocol: CalibrationProtocol | None = None,
) -> np.ndarray:
    """Confidences with the calibrators refitted inside every bootstrap resample.

    Resample r is a question set in which question i appears ``counts[r, i]`` times: its distinct questions
    are split by ``folds[r]`` (:meth:`CalibrationProtocol.resample_folds`) and each scored fold is calibrated
    on the others with the multiplicities as sample weights (the same as fitting the expanded multiset).
    Returns (R, n) P(correct | u); NaN where not drawn, unscored, in the holdout's fitting fold, or in a fold
    without fitting data.

    Examples
    --------
    >>> import numpy as np
    >>> from semuq_eval.metrics import Bootstrap, CalibrationProtocol
    >>> rng = np.random.default_rng(0)
    >>> u = rng.normal(size=50)
    >>> y = (rng.random(50) < 1 / (1 + np.exp(2 * u))).astype(int)
    >>> counts = Bootstrap(n_resamples=3).counts(50)
    >>> folds = CalibrationProtocol().resample_folds(counts)
    >>> conf = calibrate_resamples(u, y, counts, folds)
    >>> conf.shape, bool(np.all(np.isfinite(conf) == (counts > 0)))
    ((3, 50), True)
    """
    protocol = protocol or CalibrationProtocol()
    u, y, _ = check_inputs(uncertainty, correct)
    counts, folds = np.asarray(counts), np.asarray(folds)
    if counts.shape != folds.shape or counts.ndim != 2 or counts.shape[1] != len(u):
        raise ValueError(f"counts {counts.shape} and folds {folds.shape} must both be (R, {len(u)})")
    out = np.full(counts.shape, np.nan)
    size = max(1, (1 << 21) // len(u))  # bounds the temporaries to a few (size, n) arrays
    for lo, row, question, confidence, _ in _refit_entries(u, y, counts, folds, protocol, size):
        out[lo + row, question] = confidence
    return out
