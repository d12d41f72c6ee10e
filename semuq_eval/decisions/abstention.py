"""Abstention thresholds with a finite-sample guarantee: answer when the uncertainty is at most a threshold chosen
on calibration questions so that, on new questions, the error rate among the answered ones is at most ``alpha``
with probability at least ``1 - delta``.

Learn-then-Test (Angelopoulos et al., 2021) via MAPIE's ``BinaryClassificationController`` (precision risk): each
of ``n_thresholds`` quantiles of the calibration uncertainties (labels unused) is tested with a Hoeffding-Bentkus
p-value, corrected for multiplicity (Bonferroni-Holm by default); of those that pass, the one answering most is
kept, and if none passes, answer nothing. The guarantee assumes exchangeable calibration and new questions (one
task, LLM and judge) and holds on average over new question sets, not per question (docs/decisions.md)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from semuq_eval.decisions.pairs import scored_pairs
from semuq_eval.metrics.risk import ALPHA, DELTA, N_THRESHOLDS, candidate_thresholds

__all__ = ["AbstentionResult", "HeldOut", "abstention_threshold", "held_out", "split_questions"]

FWER_METHODS = ("bonferroni", "bonferroni_holm", "fixed_sequence")


@dataclass(frozen=True)
class AbstentionResult:
    """The threshold chosen on calibration questions (None: no threshold meets the target; answer nothing).

    ``n_answered``, ``n_errors``: calibration questions answered, wrong among them; ``n_candidates``: thresholds."""

    threshold: float | None
    alpha: float
    delta: float
    n_calibration: int
    n_answered: int
    n_errors: int
    n_candidates: int
    method: str

    @property
    def answers_nothing(self) -> bool:
        return self.threshold is None


@dataclass(frozen=True)
class HeldOut:
    """What a threshold did on held-out questions: coverage (share answered) and the error rate among answered
    questions, each with its exact (Clopper-Pearson) interval; NaN where undefined (nothing answered)."""

    n: int
    n_answered: int
    n_errors: int
    coverage: float
    coverage_ci: tuple[float, float]
    error_rate: float
    error_rate_ci: tuple[float, float]


def _check_levels(alpha: float, delta: float, n_thresholds: int, method: str) -> None:
    for name, value in (("alpha", alpha), ("delta", delta)):
        if not 0.0 < float(value) < 1.0:
            raise ValueError(f"{name} must be strictly between 0 and 1, got {value!r}")
    if not 1 <= int(n_thresholds) <= 10_000:
        raise ValueError(f"n_thresholds must be a whole number in 1..10000, got {n_thresholds!r}")
    if method not in FWER_METHODS:
        raise ValueError(f"unknown multiplicity correction {method!r}; known: {list(FWER_METHODS)}")


def _confidence(u: np.ndarray) -> np.ndarray:
    """A fixed, strictly decreasing map of the real line onto (0, 1): MAPIE thresholds probabilities."""
    return 0.5 - np.arctan(u) / np.pi


def abstention_threshold(
    uncertainty: np.ndarray,
    correct: np.ndarray,
    *,
    alpha: float = ALPHA,
    delta: float = DELTA,
    n_thresholds: int = N_THRESHOLDS,
    method: str = "bonferroni_holm",
) -> AbstentionResult:
    """The largest tested threshold whose error rate among answered questions is at most ``alpha`` with
    probability ``1 - delta`` (Learn-then-Test), from calibration uncertainties and 0/1 correctness; questions
    without a score or a label are left out.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> u = rng.uniform(size=5000)
    >>> correct = (rng.uniform(size=5000) > u).astype(int)  # P(wrong | u) = u: error rate t / 2 below t
    >>> result = abstention_threshold(u, correct, alpha=0.1, delta=0.1)
    >>> 0.1 < result.threshold < 0.2  # the best possible is 0.2
    True
    >>> abstention_threshold(u[:20], correct[:20], alpha=0.01).answers_nothing
    True
    """
    from mapie.risk_control import BinaryClassificationController

    _check_levels(alpha, delta, n_thresholds, method)
    u, y = scored_pairs(uncertainty, correct)
    if len(u) == 0:
        raise ValueError("no calibration question has both a score and a label")
    candidates = candidate_thresholds(u, n_thresholds)
    confidences = _confidence(u)
    controller = BinaryClassificationController(
        predict_function=lambda x: np.column_stack([1.0 - x, x]),
        risk="precision",
        target_level=1.0 - float(alpha),
        confidence_level=1.0 - float(delta),
        list_predict_params=_confidence(candidates),
        fwer_method=method,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MAPIE warns when no threshold passes: reported as answers_nothing
        controller.calibrate(confidences, y)
    threshold = None
    if controller.best_predict_param is not None:
        threshold = float(
            candidates[np.argmin(np.abs(_confidence(candidates) - controller.best_predict_param))]
        )
    answered = u <= threshold if threshold is not None else np.zeros(len(u), bool)
    return AbstentionResult(
        threshold=threshold,
        alpha=float(alpha),
        delta=float(delta),
        n_calibration=len(u),
        n_answered=int(answered.sum()),
        n_errors=int((1 - y[answered]).sum()),
        n_candidates=len(candidates),
        method=method,
    )


def _exact_ci(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (float("nan"), float("nan"))
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return (float(ci.low), float(ci.high))


def held_out(threshold: float | None, uncertainty: np.ndarray, correct: np.ndarray) -> HeldOut:
    """Coverage and the error rate among answered questions when answering every question whose uncertainty is
    at most ``threshold`` (None: answer nothing).

    Examples
    --------
    >>> r = held_out(0.5, np.array([0.1, 0.2, 0.9, 0.4]), np.array([1, 0, 0, 1]))
    >>> r.n_answered, r.n_errors, r.coverage, round(r.error_rate, 3)
    (3, 1, 0.75, 0.333)
    """
    u, y = scored_pairs(uncertainty, correct)
    answered = u <= threshold if threshold is not None else np.zeros(len(u), bool)
    k, errors = int(answered.sum()), int((1 - y[answered]).sum())
    return HeldOut(
        n=len(u),
        n_answered=k,
        n_errors=errors,
        coverage=k / len(u) if len(u) else float("nan"),
        coverage_ci=_exact_ci(k, len(u)),
        error_rate=errors / k if k else float("nan"),
        error_rate_ci=_exact_ci(errors, k),
    )


def split_questions(
    n: int, *, calibration_fraction: float = 0.5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A seeded random split of ``n`` questions into calibration and held-out indices (both sorted).

    Examples
    --------
    >>> cal, test = split_questions(10, seed=1)
    >>> len(cal), len(test), sorted([*cal, *test]) == list(range(10))
    (5, 5, True)
    """
    if not 0.0 < calibration_fraction < 1.0:
        raise ValueError(
            f"calibration_fraction must be strictly between 0 and 1, got {calibration_fraction!r}"
        )
    order = np.random.default_rng(seed).permutation(int(n))
    cut = int(round(calibration_fraction * n))
    return np.sort(order[:cut]), np.sort(order[cut:])
