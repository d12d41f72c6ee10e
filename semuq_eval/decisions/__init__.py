"""From scores to decisions: saved calibrators, abstention thresholds with finite-sample guarantees, and a
cross-fitted combination of estimators.

Every function here takes arrays (an estimator's uncertainties, 0/1 correctness labels), so the commands, the
leaderboard and users' own code call the same functions; reading runs is the caller's business.
"""

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
