"""From scores to decisions: saved calibrators, abstention thresholds with finite-sample guarantees, and a
cross-fitted combination of estimators. All take arrays (uncertainties, 0/1 labels) so commands, leaderboard and
users' code share them; reading runs is the caller's business."""

from semuq_eval.decisions.abstention import (
    AbstentionResult,
    HeldOut,
    abstention_threshold,
    held_out,
    split_questions,
)
from semuq_eval.decisions.calibrator import (
    CALIBRATOR_FORMAT,
    SavedCalibrator,
    fit_calibrator,
    load_calibrator,
)
from semuq_eval.decisions.combination import Combination, complete_estimators, cross_fitted_combination

__all__ = [
    "CALIBRATOR_FORMAT",
    "AbstentionResult",
    "Combination",
    "HeldOut",
    "SavedCalibrator",
    "abstention_threshold",
    "complete_estimators",
    "cross_fitted_combination",
    "fit_calibrator",
    "held_out",
    "load_calibrator",
    "split_questions",
]
