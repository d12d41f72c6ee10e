"""A run's figures, computed in one worker: every metric's cell and the AUROC resamples the board reuses.

AUROC's resamples come from :func:`~semuq_eval.metrics.resample`; other metrics from
:func:`~semuq_eval.metrics.evaluate`, or from the run's breakdown when it used the same bootstrap, ECE protocol and
questions with no missing label and its AUROC equals the recomputed one (``source`` says which). The estimators'
rank intervals within the run are computed here too, where the resamples are."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from semuq_eval.harness.reliability import assess
from semuq_eval.leaderboard.ranks import rank_intervals
from semuq_eval.leaderboard.runs import Run
from semuq_eval.metrics import MetricResult, evaluate, resample

if TYPE_CHECKING:
    from semuq_eval.leaderboard.board import LeaderboardConfig

__all__ = ["RunJob", "reusable", "run_cells"]


@dataclass
class RunJob:
    """What a worker needs to compute one run's figures (picklable)."""

    estimators: list[str]
    scores: dict[str, np.ndarray]
    labels: dict[str, np.ndarray]
    reusable: dict[str, dict[str, dict[str, Any]]]
    config: LeaderboardConfig
    min_minority: int


def reusable(run: Run, config: LeaderboardConfig, n: int) -> dict[str, dict[str, dict[str, Any]]]:
    """``{strategy: {estimator: {metric: result}}}`` of the run's breakdown that equal a recomputation."""
    s = run.settings
    same = run.label_set == run.breakdown.get("label_set", "run") and (
        int(s.get("bootstrap", -1)) == config.n_resamples
        and int(s.get("seed", -1)) == config.seed
        and int(s.get("ece_bins", 10)) == config.ece_bins
        and s.get("ece_refit", "once") == config.ece_refit
        and math.isclose(config.confidence_level, 0.95)
    )
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for strategy, per in (run.breakdown.get("results") or {}).items():
        labels = (run.breakdown.get("labels") or {}).get(strategy) or {}
        if same and labels.get("n_missing") == 0 and labels.get("n") == n:
            out[strategy] = per
    return out


def _sound(result: Any) -> bool:
    """Whether a metric result stored in a breakdown has the fields a cell reads, of their types; one that does not
    is recomputed from the scores instead of reused."""
    if not isinstance(result, Mapping):
        return False
    counts = ("n", "n_correct", "n_incorrect", "n_valid_resamples")
    numbers = ("value", "ci_low", "ci_high")
    return all(
        isinstance(result.get(k, 0), int) and not isinstance(result.get(k, 0), bool) for k in counts
    ) and all(
        result.get(k) is None or (isinstance(result[k], (int, float)) and not isinstance(result[k], bool))
        for k in numbers
    )


def _result_dict(result: MetricResult | Mapping[str, Any], n_resamples: int, min_minority: int) -> dict:
    d = result.as_dict() if isinstance(result, MetricResult) else dict(result)
    d.update(assess(d, n_resamples, min_minority))
    return d


def run_cells(job: RunJob) -> dict[str, Any]:
    """A run's cells and its AUROC resamples, per label strategy and estimator."""
    config = job.config
    bootstrap, protocol = config.bootstrap, config.protocol
    rest = [m for m in config.metrics if m != "auroc"]
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    resampled: dict[tuple[str, str], tuple[float, np.ndarray, np.ndarray]] = {}
    for strategy, raw_labels in job.labels.items():
        missing = ~np.isfinite(raw_labels)
        y = np.where(missing, 0.0, raw_labels)
        todo: dict[str, np.ndarray] = {}
        for name in job.estimators:
            if name not in job.scores:
                continue
            u = np.where(missing, np.nan, job.scores[name])
            if not np.isfinite(u).any():
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                r = resample("auroc", u, y, bootstrap=bootstrap, protocol=protocol)
            result, point, res, mask = r.result, r.result.value, r.values, r.mask
            cell = {
                "auroc": {**_result_dict(result, config.n_resamples, job.min_minority), "source": "computed"}
            }
            resampled[(strategy, name)] = (point, res, mask)
            reuse = job.reusable.get(strategy, {}).get(name, {})
            stored = (reuse.get("auroc") or {}).get("value")
            if not (stored is None and not math.isfinite(point)) and not (
                stored is not None and math.isclose(stored, point, rel_tol=0, abs_tol=1e-12)
            ):
                reuse = {}  # the breakdown's AUROC is not this one: its scores differ, reuse nothing
            for m in rest:
                if _sound(reuse.get(m)) and reuse[m].get("n") == result.n:
                    cell[m] = {
                        **_result_dict(reuse[m], config.n_resamples, job.min_minority),
                        "source": "run",
                    }
            if any(m not in cell for m in rest):
                todo[name] = u
            cells[(strategy, name)] = cell
        need = [m for m in rest if any(m not in cells[(strategy, n)] for n in todo)]
        if todo and need:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                out = evaluate(todo, y, metrics=need, bootstrap=bootstrap, protocol=protocol)
            for name, per in out.items():
                for m, result in per.items():
                    cells[(strategy, name)].setdefault(
                        m,
                        {**_result_dict(result, config.n_resamples, job.min_minority), "source": "computed"},
                    )
    ranks = _estimator_ranks(job, resampled)
    return {
        "cells": cells,
        "resampled": resampled,
        "estimator_ranks": ranks,
        "headline": _headline(job, resampled),
    }


def _headline(job: RunJob, resampled: dict) -> dict[tuple[str, str], tuple[float, np.ndarray, np.ndarray]]:
    """The reference estimator's resampled figures of the headline's metric (AUROC's are already there)."""
    config = job.config
    if config.headline_metric == "auroc":
        return resampled
    out = {}
    for strategy, raw_labels in job.labels.items():
        if (strategy, config.reference) not in resampled:
            continue
        missing = ~np.isfinite(raw_labels)
        u = np.where(missing, np.nan, job.scores[config.reference])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = resample(
                config.headline_metric,
                u,
                np.where(missing, 0.0, raw_labels),
                bootstrap=config.bootstrap,
                protocol=config.protocol,
            )
        out[(strategy, config.reference)] = (r.result.value, r.values, r.mask)
    return out


def _estimator_ranks(job: RunJob, resampled: dict) -> dict:
    ranks = {}  # the estimators' rank intervals within this run, here in the worker
    for strategy in job.labels:
        names = [n for n in job.estimators if (strategy, n) in resampled]
        if names:
            points = np.array([resampled[(strategy, n)][0] for n in names])
            matrix = np.vstack([resampled[(strategy, n)][1] for n in names])
            ranks[strategy] = (names, points, *rank_intervals(matrix, points))
    return ranks
