"""Rank intervals: the rank (1 = best AUROC) of every LLM for an estimator, and of every estimator for an LLM.

In every resample of the section's shared bootstrap the figures are ranked; the interval is the 2.5% and 97.5%
quantiles of those ranks (``inverted_cdf``: whole ranks), so overlapping intervals show ties. A resample where a
figure is undefined (one class drawn) ranks the others only."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import scipy.stats

from semuq_eval.jsonio import finite_or_none
from semuq_eval.judges import label_strategy_names

if TYPE_CHECKING:
    from semuq_eval.leaderboard.board import Leaderboard
    from semuq_eval.leaderboard.runs import Section

__all__ = ["estimator_ranks", "llm_ranks", "rank_intervals"]


def rank_intervals(
    matrix: np.ndarray, points: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Point ranks, per-row rank interval (low, high) and the number of resamples each was ranked in.

    ``matrix`` is (k, R) resampled AUROCs, ``points`` (k,); rank 1 = highest AUROC, ties share the lower
    (``min``) rank; NaN entries are left out of that resample's ranking."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ranked = scipy.stats.rankdata(-matrix, axis=0, method="min", nan_policy="omit")
        point = scipy.stats.rankdata(-points, method="min", nan_policy="omit")
    used = np.isfinite(ranked).sum(axis=1)
    low, high = np.full(matrix.shape[0], np.nan), np.full(matrix.shape[0], np.nan)
    some = used > 0
    if some.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low[some], high[some] = np.nanquantile(
                ranked[some], [0.025, 0.975], axis=1, method="inverted_cdf"
            )
    return point, low, high, used


def llm_ranks(board: Leaderboard, section: Section, figures: Mapping) -> None:
    """The rank interval of every LLM of ``section`` for every estimator and label strategy."""
    runs = section.runs
    for strategy in label_strategy_names():
        for name in section.estimators:
            have = [r for r in runs if (strategy, name) in figures[(section.id, r.llm)]["resampled"]]
            if len(have) < 2:
                continue
            entries = [figures[(section.id, r.llm)]["resampled"][(strategy, name)] for r in have]
            points = np.array([e[0] for e in entries])
            matrix = np.vstack([e[1] for e in entries])
            point, low, high, used = rank_intervals(matrix, points)
            for i, r in enumerate(have):
                board.llm_ranks.append(
                    {
                        "section": section.id,
                        "task": section.task,
                        "label_set": section.label_set,
                        "strategy": strategy,
                        "estimator": name,
                        "llm": r.llm,
                        "auroc": finite_or_none(points[i]),
                        "rank": int(point[i]) if np.isfinite(point[i]) else None,
                        "rank_low": int(low[i]) if np.isfinite(low[i]) else None,
                        "rank_high": int(high[i]) if np.isfinite(high[i]) else None,
                        "n_ranked": len(have),
                        "n_resamples": int(used[i]),
                    }
                )


def estimator_ranks(board: Leaderboard, section: Section, figures: Mapping) -> None:
    """The rank interval of every estimator within each run of ``section`` (ranked in the run's worker)."""
    for run in section.runs:
        ranked = figures[(section.id, run.llm)]["estimator_ranks"]
        for strategy in label_strategy_names():
            if strategy not in ranked:
                continue
            names, points, point, low, high, used = ranked[strategy]
            for i, name in enumerate(names):
                board.estimator_ranks.append(
                    {
                        "section": section.id,
                        "task": section.task,
                        "label_set": section.label_set,
                        "llm": run.llm,
                        "strategy": strategy,
                        "estimator": name,
                        "auroc": finite_or_none(points[i]),
                        "rank": int(point[i]) if np.isfinite(point[i]) else None,
                        "rank_low": int(low[i]) if np.isfinite(low[i]) else None,
                        "rank_high": int(high[i]) if np.isfinite(high[i]) else None,
                        "n_ranked": len(names),
                        "n_resamples": int(used[i]),
                    }
                )
