"""Expected calibration error under the paper's protocol (Sec. 5.1, "Metrics").

Most uncertainty scores are unbounded, so ECE is computed after mapping each score to a
confidence P(correct | u) with a monotone calibrator fitted on held-out questions,
identically for every method:

- ``calibrator="isotonic"`` (default): scikit-learn's IsotonicRegression, decreasing in u,
  clipped to [0, 1]; ``"platt"``: an unpenalized logistic regression on u (Platt scaling).
- ``split="crossfit"`` (default): the questions are split into ``n_folds`` (2) seeded folds;
  each fold is scored by a calibrator fitted on the other folds, so every question is scored
  exactly once and none is scored by a calibrator that saw it. ``split="holdout"``: a seeded
  ``holdout_fraction`` of the questions fits one calibrator and only the rest are scored.

The fold assignment depends only on the number of questions and the seed, so every
estimator of a run is calibrated on the same splits. ECE then bins the confidences into
``n_bins`` equal-width bins and sums |accuracy - confidence| weighted by bin mass.

Bootstrap intervals (``refit``). The point estimate always uses the splits above. For its
interval, ``refit="per_resample"`` (default) repeats the whole protocol inside every bootstrap
resample: the distinct questions the resample drew are split again (:meth:`CalibrationProtocol.
resample_folds`), the calibrators are refitted with the multiplicities as sample weights
(:func:`calibrate_resamples`), and ECE is computed on that resample, so the interval includes
the calibrator's own variability. ``refit="once"`` resamples the (confidence, label) pairs of the
single fit; its intervals are narrower than they should be (README "Metrics" gives the figures).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.optimize
from scipy.special import expit
from sklearn.isotonic import IsotonicRegression, isotonic_regression
from sklearn.linear_model import LogisticRegression

from semuq_eval.metrics.base import check_inputs, register_metric


@dataclass(frozen=True)
class CalibrationProtocol:
    """How uncertainties become confidences before ECE, and how ECE's bootstrap treats the calibrator.

    Parameters
    ----------
    calibrator : {"isotonic", "platt"}, default="isotonic"
        Isotonic regression decreasing in u, or Platt scaling (unpenalized logistic regression on u).
    split : {"crossfit", "holdout"}, default="crossfit"
        ``"crossfit"``: every question is scored by a calibrator fitted on the other ``n_folds - 1``
        folds. ``"holdout"``: a ``holdout_fraction`` of the questions fits one calibrator, the rest
        are scored.
    n_folds : int, default=2
        Number of cross-fitting folds.
    holdout_fraction : float, default=0.5
        Share of the questions that fit the calibrator under ``split="holdout"``.
    n_bins : int, default=10
        Equal-width confidence bins of ECE.
    seed : int, default=0
        Seed of the fold assignment (the same for every estimator of a run).
    refit : {"per_resample", "once"}, default="per_resample"
        How the bootstrap interval of a calibrated metric (ECE) is computed; the point estimate is
        the same either way. ``"per_resample"``: in each resample the drawn questions are split and
        calibrated again (see :meth:`resample_folds` and :func:`calibrate_resamples`), so the interval
        includes the calibrator's variability. ``"once"``: the calibrator fitted on all questions is
        kept and the calibrated (confidence, label) pairs are resampled; cheaper, but its intervals
        are too narrow (about 0.6-0.8x the refitted width, see README "Metrics").

    Examples
    --------
    >>> from semuq_eval.metrics import CalibrationProtocol
    >>> CalibrationProtocol().folds(6)
    array([0, 0, 1, 1, 1, 0])
    >>> CalibrationProtocol(calibrator="platt", refit="once").refit
    'once'
    """

    calibrator: Literal["isotonic", "platt"] = "isotonic"
    split: Literal["crossfit", "holdout"] = "crossfit"
    n_folds: int = 2
    holdout_fraction: float = 0.5
    n_bins: int = 10
    seed: int = 0
    refit: Literal["per_resample", "once"] = "per_resample"

    def __post_init__(self):
        if self.calibrator not in ("isotonic", "platt"):
            raise ValueError(f"calibrator must be 'isotonic' or 'platt', got {self.calibrator!r}")
        if self.split not in ("crossfit", "holdout"):
            raise ValueError(f"split must be 'crossfit' or 'holdout', got {self.split!r}")
        if self.n_folds < 2:
            raise ValueError(f"n_folds must be at least 2, got {self.n_folds}")
        if not 0 < self.holdout_fraction < 1:
            raise ValueError(f"holdout_fraction must be in (0, 1), got {self.holdout_fraction}")
        if self.n_bins < 1:
            raise ValueError(f"n_bins must be positive, got {self.n_bins}")
        if self.refit not in ("per_resample", "once"):
            raise ValueError(f"refit must be 'per_resample' or 'once', got {self.refit!r}")

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

        Each resample is split like :meth:`folds` splits all questions, but over the **distinct**
        questions it drew: a question drawn several times sits in one fold with all its copies.
        Splitting the copies instead would let a calibrator score a question it was fitted on
        (a leak that makes the refitted ECE optimistic), so copies travel together, as they would
        if the resample were a new set of questions in which some questions are simply common.
        Crossfit folds hold equal numbers of distinct questions (+-1); holdout fits on
        ``round(holdout_fraction * d)`` of the ``d`` distinct questions.

        Parameters
        ----------
        counts : ndarray of shape (R, n)
            Multiplicity of each question in each resample (:meth:`Bootstrap.counts`).
        seed : int, default=0
            Mixed with :attr:`seed`; :func:`evaluate` passes the bootstrap's seed.

        Returns
        -------
        folds : ndarray of shape (R, n), int8
            Fold id (crossfit: ``0 .. n_folds - 1``; holdout: 0 = fit, 1 = scored), -1 where the
            question was not drawn.

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

    Questions with a NaN uncertainty are neither used for fitting nor scored.
    """
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
    """Weighted isotonic (non-increasing) fit of y: the PAVA scikit-learn's IsotonicRegression uses."""
    if hasattr(scipy.optimize, "isotonic_regression"):  # scipy >= 1.12; what scikit-learn calls too
        return scipy.optimize.isotonic_regression(y, weights=w, increasing=False).x
    return isotonic_regression(y, sample_weight=w, increasing=False)  # pragma: no cover


def _isotonic_rows(xs: np.ndarray, W: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Row r: isotonic fit to the groups with weight W[r] > 0, predicted at every xs (NaN: no weight).

    xs are the distinct sorted uncertainties, W the summed weights and S the summed weighted
    labels of each (row, value). As IsotonicRegression: zero weights dropped, tied values merged
    to their weighted mean, PAVA, fitted values clipped to [0, 1], linear interpolation between
    the fitted values and clipping outside them. One C call (PAVA) per row; rows are cheap.
    """
    out = np.full(W.shape, np.nan)
    for r in range(W.shape[0]):
        keep = W[r] > 0
        if not keep.any():
            continue
        w = W[r, keep]
        fitted = np.clip(_pava_decreasing(S[r, keep] / w, w), 0.0, 1.0)
        out[r] = np.interp(xs, xs[keep], fitted)
    return out


def _platt_rows(xs: np.ndarray, W: np.ndarray, S: np.ndarray, max_iter: int = 100) -> np.ndarray:
    """Row r: weighted unpenalized logistic regression of the labels on xs, predicted at every xs.

    All rows at once by Newton's method on the (W, S) sufficient statistics. Rows with a single
    class give the constant base rate (as :func:`_fit_predict`), rows without weight NaN. Steps
    are capped, so separable rows end, like scikit-learn's lbfgs, at near 0/1 confidences.
    """
    total, positive = W.sum(axis=1), S.sum(axis=1)
    out = np.full(W.shape, np.nan)
    constant = (total > 0) & ((positive == 0) | (positive == total))
    out[constant] = (positive[constant] / total[constant])[:, None]
    rows = np.flatnonzero((total > 0) & ~constant)
    if rows.size == 0:
        return out
    W, S = W[rows], S[rows]
    scale = xs.std() or 1.0
    z = (xs - xs.mean()) / scale
    base = positive[rows] / total[rows]
    a, b = np.log(base / (1 - base)), np.zeros(len(rows))
    active = np.arange(len(rows))
    for _ in range(max_iter):
        Wa, Sa = W[active], S[active]
        p = expit(a[active, None] + b[active, None] * z)
        resid = Sa - Wa * p
        g0, g1 = resid.sum(axis=1), resid @ z
        h = Wa * p * (1 - p)
        ridge = 1e-9 * (h.sum(axis=1) + h @ (z * z)) + 1e-300  # keeps the Hessian invertible when
        h00, h01, h11 = h.sum(axis=1) + ridge, h @ z, h @ (z * z) + ridge  # only a tie is unsaturated
        det = h00 * h11 - h01 * h01
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            da, db = (h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det
        da, db = np.clip(np.nan_to_num(da), -10, 10), np.clip(np.nan_to_num(db), -10, 10)
        a[active] += da
        b[active] += db
        active = active[np.maximum(np.abs(da), np.abs(db)) > 1e-10]
        if active.size == 0:
            break
    out[rows] = expit(a[:, None] + b[:, None] * z)
    return out


def calibrate_resamples(
    uncertainty: np.ndarray,
    correct: np.ndarray,
    counts: np.ndarray,
    folds: np.ndarray,
    protocol: CalibrationProtocol | None = None,
) -> np.ndarray:
    """Confidences with the calibrators refitted inside every bootstrap resample.

    Resample r is treated as a new set of questions in which question i appears ``counts[r, i]``
    times: its distinct questions are split by ``folds[r]`` (:meth:`CalibrationProtocol.
    resample_folds`; the copies of a question share a fold), and each scored fold gets a
    calibrator fitted on the resample's other folds with the multiplicities as sample weights.
    Weighting is exactly fitting on the expanded multiset (the isotonic fit merges tied values
    to their weighted mean; the logistic likelihood of c copies is c times that of one).

    Parameters
    ----------
    uncertainty : array-like of shape (n,)
        Scores; NaN = no score (neither fitted nor scored).
    correct : array-like of shape (n,)
        Binary labels.
    counts : ndarray of shape (R, n)
        Multiplicities (:meth:`Bootstrap.counts`).
    folds : ndarray of shape (R, n)
        Fold ids from :meth:`CalibrationProtocol.resample_folds` (-1 = not drawn).
    protocol : CalibrationProtocol, optional
        Calibrator and split; default ``CalibrationProtocol()``.

    Returns
    -------
    confidence : ndarray of shape (R, n)
        P(correct | u) from the calibrator of that resample; NaN for questions not drawn, without
        a score, in the holdout's fitting fold, or whose fold had no fitting data.

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
    u, y, valid = check_inputs(uncertainty, correct)
    counts, folds = np.asarray(counts), np.asarray(folds)
    if counts.shape != folds.shape or counts.ndim != 2 or counts.shape[1] != len(u):
        raise ValueError(f"counts {counts.shape} and folds {folds.shape} must both be (R, {len(u)})")
    confidence = np.full(counts.shape, np.nan)
    cols = np.flatnonzero(valid)
    if cols.size == 0:
        return confidence
    cols = cols[np.argsort(u[cols], kind="stable")]
    x, ys = u[cols], y[cols]
    starts = np.flatnonzero(np.r_[True, x[1:] != x[:-1]])
    group = np.cumsum(np.r_[True, x[1:] != x[:-1]]) - 1
    ties = len(starts) < len(x)
    fit_rows = _isotonic_rows if protocol.calibrator == "isotonic" else _platt_rows
    scored_folds = range(protocol.n_folds) if protocol.split == "crossfit" else (1,)
    chunk = max(1, (1 << 21) // len(cols))  # bounds the (chunk, n) temporaries to ~16 MB each
    for lo in range(0, counts.shape[0], chunk):
        c = counts[lo : lo + chunk][:, cols]
        f = folds[lo : lo + chunk][:, cols]
        out = np.full(c.shape, np.nan)
        for k in scored_folds:
            w = np.where(f != k, c, 0.0)  # holdout: k = 1, so fold 0 fits; not drawn: count 0 anyway
            W, S = w, w * ys
            if ties:
                W, S = np.add.reduceat(W, starts, axis=1), np.add.reduceat(S, starts, axis=1)
            predicted = fit_rows(x[starts], W, S)
            scored = (f == k) & (c > 0)
            out[scored] = predicted[:, group][scored]
        confidence[lo : lo + chunk, cols] = out
    return confidence


def ece_weighted(
    confidence: np.ndarray, correct: np.ndarray, counts: np.ndarray, n_bins: int = 10
) -> np.ndarray:
    """Binned ECE of confidences against correctness, for each row of ``counts``.

    ECE = sum_b (n_b / n) |acc_b - conf_b| = sum_b |sum_{i in b} (y_i - c_i)| / n, with
    ``n_bins`` equal-width bins on [0, 1]. NaN confidences must have count 0.

    Parameters
    ----------
    confidence : ndarray of shape (n,) or (R, n)
        One confidence per question, or one per question and resample (calibrator refitted in
        every resample, :func:`calibrate_resamples`).
    correct : ndarray of shape (n,)
        Binary labels.
    counts : ndarray of shape (R, n)
        Weight of each question in each row (bootstrap multiplicities; 1 = plain evaluation).
    n_bins : int, default=10
        Equal-width bins on [0, 1].

    Returns
    -------
    ece : ndarray of shape (R,)
        NaN for rows with no weight.

    Examples
    --------
    >>> import numpy as np
    >>> ece_weighted(np.array([0.95, 0.95, 0.15, 0.15]), np.array([1.0, 0, 0, 0]), np.ones((1, 4)))
    array([0.3])
    """
    if np.ndim(confidence) == 2:
        conf = np.nan_to_num(confidence)
        n_rows = conf.shape[0]
        bins = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
        bins += np.arange(n_rows)[:, None] * n_bins
        gap = np.bincount(bins.ravel(), (counts * (correct - conf)).ravel(), minlength=n_rows * n_bins)
        gap = gap.reshape(n_rows, n_bins)
    else:
        bins = np.minimum((np.nan_to_num(confidence) * n_bins).astype(np.int64), n_bins - 1)
        onehot = np.zeros((len(confidence), n_bins))
        onehot[np.arange(len(confidence)), bins] = 1.0
        gap = (counts * (correct - np.nan_to_num(confidence))) @ onehot
    total = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, np.abs(gap).sum(axis=1) / total, np.nan)


@register_metric("ece", weighted=ece_weighted, higher_is_better=False, calibrated=True)
def ece(uncertainty: np.ndarray, correct: np.ndarray, protocol: CalibrationProtocol | None = None) -> float:
    """Expected calibration error of an uncertainty score under ``protocol`` (lower is better)."""
    protocol = protocol or CalibrationProtocol()
    confidence = calibrate(uncertainty, correct, protocol)
    scored = np.isfinite(confidence)
    if not scored.any():
        warnings.warn("ECE: no question could be scored; returning NaN", RuntimeWarning, stacklevel=2)
        return float("nan")
    y = np.asarray(correct, dtype=np.float64)
    return float(ece_weighted(confidence, y, scored[None].astype(np.float64), protocol.n_bins)[0])
