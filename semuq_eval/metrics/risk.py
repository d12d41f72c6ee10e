"""Coverage at a guaranteed error rate: the share of questions an LLM answers when it abstains above the threshold
that Learn-then-Test certifies (error rate among answered questions at most ``ALPHA`` with probability at
least ``1 - DELTA``), a decision-level companion of AUROC.

The procedure of :func:`semuq_eval.decisions.abstention_threshold` (MAPIE: ``N_THRESHOLDS`` quantile
candidates, Hoeffding-Bentkus p-values, Bonferroni-Holm, the passing threshold answering the most correct
questions), vectorized over bootstrap resamples (``tests/test_decisions.py`` checks both choose the same
threshold); a resample keeps the candidates of all questions. Coverage is 0 when no threshold passes, and
in-sample: the guarantee on new questions is about the error rate, not this share (docs/decisions.md)."""

from __future__ import annotations

from functools import partial

import numpy as np
from scipy.stats import binom

from semuq_eval.metrics.base import check_inputs, register, registry

__all__ = [
    "ALPHA",
    "DELTA",
    "N_THRESHOLDS",
    "candidate_thresholds",
    "coverage_at_risk",
    "coverage_metric",
    "ltt_choice",
]

ALPHA = 0.1
"""The target error rate among answered questions of the registered metric."""
DELTA = 0.1
"""Its allowed probability of missing the target (confidence 0.9)."""
N_THRESHOLDS = 20
"""Candidate thresholds: quantiles of the uncertainties at 5% steps."""


def candidate_thresholds(u: np.ndarray, n_thresholds: int = N_THRESHOLDS) -> np.ndarray:
    """The distinct ``n_thresholds`` upper quantiles of ``u`` (finite values), ascending."""
    levels = np.linspace(0.0, 1.0, int(n_thresholds) + 1)[1:]
    return np.unique(np.quantile(u, levels, method="higher"))


def _p_values(errors: np.ndarray, answered: np.ndarray, alpha: float) -> np.ndarray:
    """Hoeffding-Bentkus p-values of "error rate > alpha" for binary losses (1 where nothing is answered), computed
    as MAPIE computes them: the rate as 1 - precision, so that a rounding up of ``answered * rate`` can count one
    error more in the Bentkus term (a slightly larger, still valid p-value)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(answered > 0, 1.0 - (answered - errors) / np.maximum(answered, 1), 1.0)
        a = np.minimum(rate, alpha)
        first = np.where(a > 0, a * np.log(a / alpha), 0.0)
        kl = first + (1 - a) * np.log((1 - a) / (1 - alpha))
        hoeffding = np.exp(-answered * kl)
        bentkus = binom.cdf(np.ceil(answered * rate), answered, alpha)
    return np.where(answered > 0, np.minimum(hoeffding, bentkus), 1.0)


def _holm(p: np.ndarray, delta: float) -> np.ndarray:
    """(R, K) rejections of Holm's step-down procedure at family-wise level ``delta``, row by row."""
    k = p.shape[1]
    order = np.argsort(p, axis=1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=1)
    passes = ranked <= delta / (k - np.arange(k))
    rejected_ranked = np.cumprod(passes, axis=1).astype(bool)
    rejected = np.zeros_like(rejected_ranked)
    np.put_along_axis(rejected, order, rejected_ranked, axis=1)
    return rejected


def ltt_choice(
    u: np.ndarray,
    correct: np.ndarray,
    counts: np.ndarray,
    *,
    alpha: float = ALPHA,
    delta: float = DELTA,
    n_thresholds: int = N_THRESHOLDS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For each row of ``counts`` (R, n) (question multiplicities; 0 leaves a question out): the index of the
    chosen candidate (-1: none passes), the weight of the questions it answers and the total weight; with the
    candidates (:func:`candidate_thresholds` of the questions some row weights)."""
    counts = np.atleast_2d(np.asarray(counts, dtype=np.float64))
    thresholds = candidate_thresholds(u[counts.sum(axis=0) > 0], n_thresholds)
    order = np.argsort(u, kind="stable")
    ends = np.searchsorted(u[order], thresholds, side="right")  # answered: the first `end` of the order
    w = counts[:, order]
    cum = np.concatenate([np.zeros((len(w), 1)), np.cumsum(w, axis=1)], axis=1)
    cum_err = np.concatenate([np.zeros((len(w), 1)), np.cumsum(w * (1 - correct[order]), axis=1)], axis=1)
    answered, errors = cum[:, ends], cum_err[:, ends]
    rejected = _holm(_p_values(errors, answered, alpha), delta)
    # MAPIE's choice among the certified: the most correct answers (recall), then the most errors (its tie-break
    # "maximizes the first risk, to be less conservative": among equal recalls, the largest answered set)
    right = np.where(rejected, answered - errors, -np.inf)
    wrong = np.where(rejected, errors, -np.inf)
    best = np.lexsort((-wrong, -right), axis=-1)[:, 0] if right.size else np.zeros(len(w), int)
    chosen = np.where(rejected.any(axis=1), best, -1)
    picked = np.take_along_axis(answered, np.maximum(chosen, 0)[:, None], axis=1)[:, 0]
    return chosen, np.where(chosen >= 0, picked, 0.0), cum[:, -1], thresholds


def coverage_at_risk_weighted(
    u: np.ndarray, correct: np.ndarray, counts: np.ndarray, *, alpha: float = ALPHA, delta: float = DELTA
) -> np.ndarray:
    """(R,) share of the (weighted) questions answered at the certified threshold; 0 when none is certified."""
    _, answered, total, _ = ltt_choice(u, correct, counts, alpha=alpha, delta=delta)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, answered / total, np.nan)


@register("coverage_at_risk", weighted=coverage_at_risk_weighted, higher_is_better=True, label="COV@10%")
def coverage_at_risk(uncertainty: np.ndarray, correct: np.ndarray) -> float:
    """Share of questions answered at the threshold certifying an error rate among answered questions of at most
    ``ALPHA`` with probability ``1 - DELTA`` (0: no threshold is certified); NaN uncertainties left out.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> u = rng.uniform(size=4000)
    >>> correct = (rng.uniform(size=4000) > u).astype(int)  # answering u <= t: error rate t / 2
    >>> 0.1 < coverage_at_risk(u, correct) <= 0.2
    True
    """
    return _coverage_point(uncertainty, correct)


def _coverage_point(uncertainty, correct, *, alpha: float = ALPHA, delta: float = DELTA) -> float:
    u, y, valid = check_inputs(uncertainty, correct)
    if not valid.any():
        return float("nan")
    counts = valid[None].astype(np.float64)
    return float(coverage_at_risk_weighted(np.where(valid, u, 0.0), y, counts, alpha=alpha, delta=delta)[0])


def coverage_metric(alpha: float = ALPHA, delta: float = DELTA) -> str:
    """The name of the coverage metric at error rate ``alpha`` and confidence ``1 - delta``, registered on first
    use (``coverage_at_risk`` at the defaults, ``coverage_at_risk_<alpha>_<delta>`` otherwise).

    Examples
    --------
    >>> coverage_metric(), coverage_metric(0.05, 0.1)
    ('coverage_at_risk', 'coverage_at_risk_0.05_0.1')
    """
    alpha, delta = float(alpha), float(delta)
    for what, value in (("alpha", alpha), ("delta", delta)):
        if not 0.0 < value < 1.0:
            raise ValueError(f"coverage at risk: {what} must be strictly between 0 and 1, got {value!r}")
    if (alpha, delta) == (ALPHA, DELTA):
        return "coverage_at_risk"
    name = f"coverage_at_risk_{alpha:g}_{delta:g}"
    if name not in registry:
        weighted = partial(coverage_at_risk_weighted, alpha=alpha, delta=delta)
        label = f"COV@{alpha:g}/{delta:g}"
        register(name, weighted=weighted, higher_is_better=True, label=label)(
            partial(_coverage_point, alpha=alpha, delta=delta)
        )
    return name
