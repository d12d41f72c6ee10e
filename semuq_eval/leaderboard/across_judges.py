"""Rankings across judges: where a board holds one task's questions under several label sets (the run's string
judge, an LLM judge, ...; ``--labels all``), the LLMs are ranked under each and on all together, and where judges
disagree is shown, since the correctness function changes UQ rankings (Ielanskyi et al., 2025; docs/leaderboard.md,
"Rankings across judges"). Per group of sections (one task, questions and LLMs under 2+ label sets) and strategy:
``llms`` holds the reference estimator's headline-metric rank under each label set and the mean rank over them with
its 95% interval (ranks averaged per shared resample), ``disagree`` when two label sets' rank intervals do not
overlap; ``agreement``, Kendall's tau between two label sets' LLM rankings (``estimator_agreement``: per LLM, of
their AUROC orders of the estimators); ``estimator_ranks``, per LLM, each estimator's AUROC rank per label set and
mean rank, best first; ``label_agreement``, per LLM and two label sets, Cohen's kappa and the confusion matrix of
their labels (:func:`~semuq_eval.judges.agreement.agreement`)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.stats

from semuq_eval.jsonio import finite_or_none
from semuq_eval.judges import label_strategy_names
from semuq_eval.judges.agreement import agreement as label_agreement

if TYPE_CHECKING:
    from semuq_eval.leaderboard.board import Leaderboard
    from semuq_eval.leaderboard.runs import Section

__all__ = ["across_judges", "judge_groups"]


def judge_groups(sections: Sequence[Section]) -> list[list[Section]]:
    """Sections of one task on the same questions under different label sets (two or more), in board order."""
    groups: dict[tuple, list[Section]] = {}
    for s in sections:
        if s.paired:
            groups.setdefault((s.task, s.question_set, s.repeats), []).append(s)
    return [g for g in groups.values() if len({s.label_set for s in g}) > 1]


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks along axis 0, 1 = highest, ties share the lower rank, NaN left out."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return scipy.stats.rankdata(-values, axis=0, method="min", nan_policy="omit")


def _tau(a: np.ndarray, b: np.ndarray) -> tuple[float | None, int]:
    keep = np.isfinite(a) & np.isfinite(b)
    if keep.sum() < 2:
        return None, int(keep.sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return finite_or_none(float(scipy.stats.kendalltau(a[keep], b[keep]).statistic)), int(keep.sum())


def _interval(ranks: np.ndarray) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(ranks, [0.025, 0.975])
    return float(low), float(high)


def _llm_table(llms: list[str], per: Mapping[str, tuple]) -> list[dict[str, Any]]:
    """The LLM rows of one group and strategy: ranks per label set, mean rank and interval, disagreement."""
    point = {ls: _ranks(points) for ls, (points, _) in per.items()}
    resampled = {ls: _ranks(matrix) for ls, (_, matrix) in per.items()}
    mean = np.nanmean(np.stack(list(resampled.values())), axis=0)
    rows = []
    for i, llm in enumerate(llms):
        low, high = _interval(mean[i])
        spans = [_interval(resampled[ls][i]) for ls in per]
        rows.append(
            {
                "llm": llm,
                "ranks": {ls: finite_or_none(float(point[ls][i])) for ls in per},
                "rank_intervals": {
                    ls: [finite_or_none(a), finite_or_none(b)] for ls, (a, b) in zip(per, spans, strict=True)
                },
                "mean_rank": finite_or_none(float(np.mean([point[ls][i] for ls in per]))),
                "mean_rank_low": finite_or_none(low),
                "mean_rank_high": finite_or_none(high),
                "disagree": max(a for a, _ in spans) > min(b for _, b in spans),
            }
        )
    return sorted(rows, key=lambda r: (r["mean_rank"] is None, r["mean_rank"] or 0.0))


def _estimator_aurocs(group: list[Section], llm: str, strategy: str, figures: Mapping) -> dict[str, dict]:
    """label set -> {estimator: AUROC} of one LLM under one strategy (the estimators scored under it)."""
    out = {}
    for s in group:
        resampled = figures[(s.id, llm)]["resampled"]
        out[s.label_set] = {n: resampled[(st, n)][0] for (st, n) in resampled if st == strategy}
    return out


def _estimator_agreement(
    group: list[Section], llms: list[str], figures: Mapping, strategy: str
) -> tuple[list[dict], list[dict]]:
    """Per LLM and pair of label sets, Kendall's tau between their AUROC orders of the estimators; and per LLM
    the estimators every label set scored, ranked by their mean rank over the label sets (1 = best)."""
    agreement, ranked = [], []
    for llm in llms:
        by_set = _estimator_aurocs(group, llm, strategy, figures)
        for a, b in combinations(by_set, 2):
            common = sorted(set(by_set[a]) & set(by_set[b]))
            tau, n = _tau(np.array([by_set[a][e] for e in common]), np.array([by_set[b][e] for e in common]))
            agreement.append(
                {"llm": llm, "label_set_a": a, "label_set_b": b, "kendall_tau": tau, "n_estimators": n}
            )
        common = sorted(set.intersection(*(set(v) for v in by_set.values())))
        ranks = {ls: _ranks(np.array([v[e] for e in common], dtype=float)) for ls, v in by_set.items()}
        mean = np.mean(np.stack(list(ranks.values())), axis=0) if common else np.zeros(0)
        rows = [
            {
                "llm": llm,
                "estimator": e,
                "ranks": {ls: finite_or_none(float(r[i])) for ls, r in ranks.items()},
                "mean_rank": finite_or_none(float(mean[i])),
            }
            for i, e in enumerate(common)
        ]
        ranked += sorted(rows, key=lambda r: (r["mean_rank"] is None, r["mean_rank"] or 0.0))
    return agreement, ranked


def _label_agreement(group: Sequence[Section], llms: Sequence[str], strategy: str) -> list[dict[str, Any]]:
    """Per LLM and every two label sets of ``group``: Cohen's kappa of their labels of the same answers."""
    out = []
    for llm in llms:
        by_set = {}
        for s in group:
            run = next(r for r in s.runs if r.llm == llm)
            values = run.labels.get(strategy)
            if values is not None and run.doc_ids is not None:
                by_set[s.label_set] = dict(zip(np.asarray(run.doc_ids).tolist(), values, strict=True))
        for a, b in combinations(by_set, 2):
            ids = [i for i in by_set[a] if i in by_set[b]]
            x, y = ([None if np.isnan(by_set[k][i]) else int(by_set[k][i]) for i in ids] for k in (a, b))
            row = label_agreement(x, y)
            out.append({"llm": llm, "label_set_a": a, "label_set_b": b, **row})
    return out


def across_judges(board: Leaderboard, figures: Mapping, resampled: Mapping) -> list[dict[str, Any]]:
    """The rankings across judges of a computed board (module docstring): one entry per group of sections and
    label strategy. ``figures`` are the runs' figures (AUROC resamples of every estimator), ``resampled`` the
    headline metric's resamples of the reference estimator, both keyed by (section id, LLM)."""
    reference, out = board.config.reference, []
    for group in judge_groups(board.sections):
        llms = [llm for llm in group[0].llms if all(llm in s.llms for s in group)]
        if len(llms) < 2:
            continue
        for strategy in label_strategy_names():
            per = {}
            for s in group:
                entries = [resampled.get((s.id, llm), {}).get((strategy, reference)) for llm in llms]
                if all(e is not None for e in entries):
                    per[s.label_set] = (np.array([e[0] for e in entries]), np.vstack([e[1] for e in entries]))
            if len(per) < 2:
                continue
            point = {ls: _ranks(points) for ls, (points, _) in per.items()}
            estimator_agreement, estimator_ranks = _estimator_agreement(group, llms, figures, strategy)
            agreement = []
            for a, b in combinations(per, 2):
                tau, n = _tau(point[a], point[b])
                agreement.append({"label_set_a": a, "label_set_b": b, "kendall_tau": tau, "n_llms": n})
            out.append(
                {
                    "task": group[0].task,
                    "sections": [s.id for s in group if s.label_set in per],
                    "strategy": strategy,
                    "estimator": reference,
                    "metric": board.config.headline_metric,
                    "label_sets": list(per),
                    "llms": _llm_table(llms, per),
                    "agreement": agreement,
                    "estimator_agreement": estimator_agreement,
                    "estimator_ranks": estimator_ranks,
                    "label_agreement": _label_agreement(
                        [s for s in group if s.label_set in per], llms, strategy
                    ),
                }
            )
    return out
