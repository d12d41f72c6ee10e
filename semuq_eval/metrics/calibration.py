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
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from semuq_eval.metrics.base import check_inputs, register_metric


@dataclass(frozen=True)
class CalibrationProtocol:
    """How uncertainties become confidences before ECE; see the module docstring."""

    calibrator: Literal["isotonic", "platt"] = "isotonic"
    split: Literal["crossfit", "holdout"] = "crossfit"
    n_folds: int = 2
    holdout_fraction: float = 0.5
    n_bins: int = 10
    seed: int = 0

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

    def folds(self, n: int) -> np.ndarray:
        """Fold id per question (crossfit), or 0 = calibration / 1 = scored (holdout)."""
        perm = np.random.default_rng(self.seed).permutation(n)
        fold = np.empty(n, dtype=np.int64)
        if self.split == "crossfit":
            fold[perm] = np.arange(n) % self.n_folds
        else:
            fold[perm] = (np.arange(n) >= round(self.holdout_fraction * n)).astype(np.int64)
        return fold


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


def ece_weighted(
    confidence: np.ndarray, correct: np.ndarray, counts: np.ndarray, n_bins: int = 10
) -> np.ndarray:
    """Binned ECE of confidences against correctness, for each row of ``counts``.

    ECE = sum_b (n_b / n) |acc_b - conf_b| = sum_b |sum_{i in b} (y_i - c_i)| / n, with
    ``n_bins`` equal-width bins on [0, 1]. NaN confidences must have count 0.
    """
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
