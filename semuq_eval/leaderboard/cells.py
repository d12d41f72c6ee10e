"""A leaderboard's cells: one row per (section, LLM, estimator, label strategy, metric), with its status.

A cell holds the figure with its 95% CI, n, counts, the LLM's accuracy, the small-sample flag, its ``source``
(``computed``, or ``run``: the run's breakdown) and a **status**: ``ok``, ``undefined`` (one class only, no labels),
``unavailable`` (the estimator could not score these answers), ``not_run`` or ``not_computed`` (:mod:`.schema`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from semuq_eval.jsonio import finite_or_none
from semuq_eval.judges import label_strategy_names
from semuq_eval.leaderboard.runs import Run, Section

if TYPE_CHECKING:
    from semuq_eval.leaderboard.board import LeaderboardConfig

__all__ = ["cell_rows", "label_summary", "split_estimator"]


def split_estimator(name: str) -> tuple[str, str]:
    """``(aggregator, operator)``; estimators without an operator (``te``, ``msp``) get ``"-"``.

    Examples
    --------
    >>> split_estimator("kle_heat@enc"), split_estimator("te")
    (('kle_heat', 'enc'), ('te', '-'))
    """
    aggregator, _, operator = name.partition("@")
    return aggregator, operator or "-"


def label_summary(run: Run, strategy: str) -> dict[str, Any]:
    """The counts of a run's labels under ``strategy``: n, correct, incorrect, missing and the accuracy."""
    if run.paired:
        labels = run.labels[strategy]
        known = labels[np.isfinite(labels)]
        n_correct = int(known.sum())
        return {
            "n": int(known.size),
            "n_correct": n_correct,
            "n_incorrect": int(known.size - n_correct),
            "n_missing": int(labels.size - known.size),
            "accuracy": float(known.mean()) if known.size else None,
        }
    summary = dict((run.breakdown.get("labels") or {}).get(strategy) or {})
    summary.setdefault("n_incorrect", summary.get("n", 0) - summary.get("n_correct", 0))
    return summary


def _status(
    run: Run, name: str, strategy: str, metric: str, result: Mapping[str, Any] | None
) -> tuple[str, str]:
    """``(status, note)`` of a cell: ok / undefined / unavailable / not_run / not_computed."""
    if result is not None:
        value = result.get("value")
        if value is None or not math.isfinite(value):
            return "undefined", result.get("note") or "undefined"
        return "ok", result.get("note") or ""
    unavailable = (run.breakdown.get("unavailable") or {}).get(name)
    if name not in run.estimators:
        return "not_run", "the run has no such estimator (its operator or aggregator was not run)"
    if unavailable and not (run.paired and np.isfinite(run.scores.get(name, np.array([np.nan]))).any()):
        reasons = "; ".join(f"{k} ({v} docs)" for k, v in (unavailable.get("reasons") or {}).items())
        return "unavailable", f"unavailable: {reasons}" if reasons else "unavailable"
    if not run.paired:
        return "not_computed", f"breakdown only (no scores.jsonl): {metric} not in the run's breakdown"
    labels = label_summary(run, strategy)
    if labels.get("n", 0) == 0:
        return "undefined", f"no {strategy} labels"
    return "unavailable", "no score on any labelled question"


def cell_rows(section: Section, run: Run, figures: Mapping | None, config: LeaderboardConfig) -> list[dict]:
    """Every cell of one run in its section: from its figures (:func:`.run_cells.run_cells`), or from the
    run's breakdown when it has no per-question scores (``figures`` None)."""
    rows = []
    strategies = label_strategy_names()
    for strategy in strategies:
        labels = label_summary(run, strategy)
        for name in section.estimators:
            if figures is not None:
                per = figures["cells"].get((strategy, name), {})
            else:
                per = (run.breakdown.get("results") or {}).get(strategy, {}).get(name) or {}
                per = {m: {**r, "source": "run"} for m, r in per.items() if isinstance(r, Mapping)}
            aggregator, operator = split_estimator(name)
            for metric in config.metrics:
                result = per.get(metric)
                status, note = _status(run, name, strategy, metric, result)
                r = result or {}
                rows.append(
                    {
                        "section": section.id,
                        "task": section.task,
                        "label_set": section.label_set,
                        "llm": run.llm,
                        "estimator": name,
                        "aggregator": aggregator,
                        "operator": operator,
                        "strategy": strategy,
                        "metric": metric,
                        "value": finite_or_none(r.get("value")),
                        "ci_low": finite_or_none(r.get("ci_low")),
                        "ci_high": finite_or_none(r.get("ci_high")),
                        "n": r.get("n"),
                        "n_correct": r.get("n_correct"),
                        "n_incorrect": r.get("n_incorrect"),
                        "n_missing": r.get("n_missing"),
                        "n_valid_resamples": r.get("n_valid_resamples"),
                        "accuracy": labels.get("accuracy"),
                        "reliable": bool(r.get("reliable", False)) if result else None,
                        "status": status,
                        "note": note,
                        "source": r.get("source"),
                    }
                )
    return rows
