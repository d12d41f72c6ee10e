"""Expected calibration error under the paper's protocol (Sec. 5.1, "Metrics"): the confidences of the
calibration protocol (:mod:`~semuq_eval.metrics.calibrators`) in ``n_bins`` equal-width bins,
|accuracy - confidence| weighted by bin mass."""

from __future__ import annotations

import warnings

import numpy as np

from semuq_eval.metrics.base import register
from semuq_eval.metrics.calibrators import CalibrationProtocol, calibrate

__all__ = ["ece", "ece_weighted"]


def ece_weighted(
    confidence: np.ndarray, correct: np.ndarray, counts: np.ndarray, n_bins: int = 10
) -> np.ndarray:
    """Binned ECE of confidences against correctness, for each row of ``counts``.

    ECE = sum_b (n_b / n) |acc_b - conf_b| = sum_b |sum_{i in b} (y_i - c_i)| / n over ``n_bins`` equal-width
    bins on [0, 1]. ``confidence`` is (n,), or (R, n) when the calibrator is refitted per resample
    (:func:`calibrate_resamples`); ``counts`` (R, n) weights each question in each row (bootstrap
    multiplicities; NaN confidences must have count 0). Returns (R,), NaN for rows with no weight.

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


@register("ece", weighted=ece_weighted, higher_is_better=False, calibrated=True)
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
