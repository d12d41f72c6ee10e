"""A combination of estimators, honestly held out: a logistic regression on several estimators' scores, fitted by
cross-fitting so every question is scored by a model that never saw it, beside the best single estimator chosen by
the same cross-fitting (per fold, highest AUROC on the other folds), not the best in hindsight. Both are out-of-fold
uncertainties (1 - P(correct)) on one scale, so the usual metrics (AUROC, intervals, paired differences) apply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from semuq_eval.metrics.ranking import auroc

__all__ = ["Combination", "complete_estimators", "cross_fitted_combination"]


@dataclass(frozen=True)
class Combination:
    """Out-of-fold uncertainties of the combination and of the best single estimator chosen fold by fold.

    ``estimators``: the combined estimators (the features, in order); ``combined``, ``best_single``: (n,) out-of-fold
    1 - P(correct), NaN for questions left out (missing score or label); ``chosen``: each fold's single estimator,
    chosen on its training folds; ``n_folds``, ``seed``: the cross-fitting."""

    estimators: tuple[str, ...]
    combined: np.ndarray
    best_single: np.ndarray
    chosen: tuple[str, ...]
    n_folds: int
    seed: int


def complete_estimators(scores: Mapping[str, np.ndarray], correct: np.ndarray) -> list[str]:
    """The estimators that score every labelled question and are not constant there: what a combination can use
    without leaving questions out.

    Examples
    --------
    >>> complete_estimators({"a": np.array([0.1, 0.5]), "b": np.array([np.nan, 1.0]), "c": np.ones(2)}, [1, 0])
    ['a']
    """
    labelled = np.isfinite(np.asarray(correct, dtype=float))
    return [n for n, u in scores.items() if np.isfinite(u[labelled]).all() and np.ptp(u[labelled]) > 0]


def _matrix(
    scores: Mapping[str, np.ndarray], correct: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    names = list(scores)
    if len(names) < 2:
        raise ValueError(f"a combination needs at least two estimators, got {names}")
    x = np.column_stack([np.asarray(scores[n], dtype=float) for n in names])
    y = np.asarray(correct, dtype=float)
    if x.shape[0] != len(y):
        raise ValueError(f"the scores hold {x.shape[0]} questions and the labels {len(y)}")
    keep = np.isfinite(x).all(axis=1) & np.isfinite(y)
    if not np.isin(y[keep], (0.0, 1.0)).all():
        raise ValueError("correct must hold 0/1 labels (NaN for unknown)")
    return x, y, keep


def _single(u_fit: np.ndarray, y_fit: np.ndarray, u_new: np.ndarray) -> np.ndarray:
    """1 - P(correct) of a 1-d logistic fit, so that every fold's chosen estimator lands on one scale."""
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(u_fit[:, None], y_fit)
    return 1.0 - model.predict_proba(u_new[:, None])[:, 1]


def cross_fitted_combination(
    scores: Mapping[str, np.ndarray],
    correct: np.ndarray,
    *,
    n_folds: int = 5,
    seed: int = 0,
    regularization: float = 1.0,
) -> Combination:
    """Combine estimators by a standardized, L2-regularized logistic regression (``C = regularization``), scored
    out of fold over ``n_folds`` stratified seeded folds; questions missing a score or a label are left out.
    Raises ValueError when fewer than two estimators are given or a class has fewer questions than folds.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> correct = rng.integers(0, 2, 300)
    >>> a, b = rng.normal(size=300) - correct, rng.normal(size=300) - correct
    >>> c = cross_fitted_combination({"a": a, "b": b}, correct)
    >>> c.combined.shape, sorted(set(c.chosen)) <= ["a", "b"]
    ((300,), True)
    """
    x, y, keep = _matrix(scores, correct)
    names = tuple(scores)
    rows = np.flatnonzero(keep)
    counts = np.bincount(y[rows].astype(int), minlength=2)
    if counts.min() < n_folds:
        raise ValueError(
            f"{int(counts[1])} correct and {int(counts[0])} incorrect scored questions: each class needs at "
            f"least n_folds = {n_folds}"
        )
    combined = np.full(len(y), np.nan)
    best_single = np.full(len(y), np.nan)
    chosen = []
    folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    for fit, new in folds.split(rows, y[rows]):
        fit, new = rows[fit], rows[new]
        model = make_pipeline(StandardScaler(), LogisticRegression(C=regularization, max_iter=1000))
        combined[new] = 1.0 - model.fit(x[fit], y[fit]).predict_proba(x[new])[:, 1]
        best = int(np.nanargmax([auroc(x[fit, j], y[fit]) for j in range(len(names))]))
        chosen.append(names[best])
        best_single[new] = _single(x[fit, best], y[fit], x[new, best])
    return Combination(names, combined, best_single, tuple(chosen), n_folds, seed)
