"""The headline: one row per LLM, one column per task plus the mean, for the board's reference estimator.

It reads one **reference estimator**, fixed before the LLMs are looked at (each LLM's best cell would reward luck):
:attr:`LeaderboardConfig.reference <semuq_eval.leaderboard.compute.LeaderboardConfig>` (``--reference``; default
:data:`REFERENCE`: the paper's trained question-conditioned operator ``enc`` with the fixed ``kle_heat``
aggregator). :func:`headline` gives one table per label strategy (:func:`~semuq_eval.judges.label_strategy_names`,
:data:`STRATEGY` first), each ranked on its own labels, under each judge of the board, the run's first (keys
``greedy``, ``majority``, then ``greedy:llm``, ...). A column is a task's section (:func:`columns`); a cell is the
board's own figure, nothing recomputed, with its LLM rank interval (:func:`~.ranks.rank_intervals`). The mean
column averages the LLM's task figures resample by resample on the sections' shared bootstraps, giving its CI and
a rank interval among the LLMs with every task; rows are sorted by it (an LLM without one last). :func:`best_rows`
gives each LLM's best estimator per task, biased upward, so labelled **optimistic**."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from semuq_eval.harness.reliability import MIN_VALID_SHARE
from semuq_eval.jsonio import finite_or_none
from semuq_eval.judges import label_strategy_names
from semuq_eval.leaderboard.board import REFERENCE
from semuq_eval.leaderboard.ranks import rank_intervals

if TYPE_CHECKING:
    from semuq_eval.leaderboard.board import Leaderboard
    from semuq_eval.leaderboard.runs import Section
    from semuq_eval.metrics import Bootstrap

__all__ = [
    "REFERENCE",
    "RULE",
    "STRATEGY",
    "best_rows",
    "cell_summary",
    "columns",
    "headline",
    "metric_label",
]


STRATEGY = "greedy"
"""The first headline's label strategy: the greedy answer's correctness (its accuracy is the LLM's accuracy);
the headline's pictures (:mod:`.curves`) are drawn under it."""

RULE = (
    "each cell is the {label} of the reference estimator {reference}, set in the board's settings before the "
    "LLMs are ranked (`--reference`; the same estimator for every LLM and task, never each LLM's best cell), "
    "under {strategy} labels, with its 95% CI; rows sorted by the mean over the tasks"
)
"""The reference-estimator rule, as the Markdown and the page state it."""

_CELL = ("value", "ci_low", "ci_high", "n_correct", "n_incorrect", "accuracy", "reliable", "status", "note")


def metric_label(table: Mapping[str, Any]) -> str:
    """The name tables show for a headline table's metric (``metric`` absent: AUROC, as boards before it)."""
    from semuq_eval.metrics import get

    return get(table.get("metric", "auroc")).label


def _cell(cell: Mapping[str, Any] | None, reference: str) -> dict[str, Any]:
    if cell is None:
        return {**dict.fromkeys(_CELL), "status": "not_run", "note": f"no {reference} cell"}
    return {k: cell.get(k) for k in _CELL}


def _mean_cell(
    cells: Sequence[Mapping[str, Any]],
    resampled: Sequence[np.ndarray | None],
    bootstrap: Bootstrap,
    label: str = "AUROC",
) -> tuple[dict[str, Any], np.ndarray | None]:
    """The mean column's cell over an LLM's task cells, and its resampled means (None without resamples)."""
    values = [c["value"] for c in cells if c["value"] is not None]
    if not values or len(values) < len(cells):
        missing = len(cells) - len(values)
        note = f"no reference {label} on {missing} of {len(cells)} tasks" if cells else "no task"
        return {**dict.fromkeys(_CELL), "status": "undefined", "note": note}, None
    means = None
    low = high = None
    notes = []
    if all(r is not None for r in resampled):
        means = np.mean(np.vstack(resampled), axis=0)  # NaN where any task's resample had no value
        low, high = bootstrap.interval(means)
        valid = int(np.isfinite(means).sum())
        if valid < MIN_VALID_SHARE * means.size:  # the cells' rule (harness.reliability), on the means
            notes.append(f"{valid} of {means.size} resamples gave a value")
    else:
        notes.append("no CI: a task's run has no per-question scores (breakdown only)")
    flagged = [c for c in cells if not c["reliable"]]
    if flagged:
        notes.insert(0, f"{len(flagged)} of {len(cells)} task cells flagged (small sample)")
    return {
        "value": float(np.mean(values)),
        "ci_low": finite_or_none(low),
        "ci_high": finite_or_none(high),
        "n_correct": sum(int(c["n_correct"] or 0) for c in cells),
        "n_incorrect": sum(int(c["n_incorrect"] or 0) for c in cells),
        "accuracy": finite_or_none(
            float(np.mean([c["accuracy"] for c in cells if c["accuracy"] is not None] or [math.nan]))
        ),
        "reliable": not notes,
        "status": "ok",
        "note": "; ".join(notes) or None,
    }, means


def columns(sections: Sequence[Section]) -> list[Section]:
    """The headline's columns: one section per task where the task has one, or its ``#common`` section when its
    LLMs ran different question sets (``--common-questions also``: there they are compared on the same
    questions); otherwise each of the task's sections (LLMs that did not share questions are not ranked).

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> board = [S(id="a#1", task="a", repeats=False), S(id="a#2", task="a", repeats=False),
    ...          S(id="a#common", task="a", repeats=True), S(id="b", task="b", repeats=False)]
    >>> [s.id for s in columns(board)]
    ['a#common', 'b']
    """
    out = []
    for task in dict.fromkeys(s.task for s in sections):
        own = [s for s in sections if s.task == task and not s.repeats]
        common = [s for s in sections if s.task == task and s.repeats]
        out += common if common and len(own) > 1 else own
    return out


def headline(
    board: Leaderboard, resampled: Mapping[tuple[str, str], Mapping[tuple[str, str], tuple]]
) -> dict[str, dict[str, Any]]:
    """The headline tables of a computed board (module docstring): ``leaderboard.json``'s ``headline``, one
    table per label strategy (greedy first).

    ``board``: cells and LLM rank intervals filled (:func:`~semuq_eval.leaderboard.compute.compute` calls this last).
    ``resampled``: ``{(section id, llm): {(strategy, estimator): (point, resampled values, mask)}}``, each paired
    run's AUROC on the section's shared resamples (those the rank intervals came from). Returns ``{strategy:
    {"reference", "strategy", "rule", "columns", "rows", "best"}}`` (:mod:`.schema`).

    Examples
    --------
    >>> from semuq_eval.leaderboard.compute import compute, LeaderboardConfig
    >>> from semuq_eval.leaderboard.runs import Run
    >>> from semuq_eval.leaderboard.sections import group_sections
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 80).astype(float)
    >>> def run(llm, skill):
    ...     bd = {"format": "semuq-breakdown/1", "task": "t", "n_samples": 5, "n_docs": 80, "results": {},
    ...           "labels": {}, "settings": {"min_minority": 20}}
    ...     return Run(path=llm, task="t", llm=llm, breakdown=bd, settings=bd["settings"], doc_ids=np.arange(80),
    ...                scores={"kle_heat@enc": rng.normal(size=80) + skill * (1 - y)},
    ...                labels={"greedy": y, "majority": 1 - y})
    >>> board = compute(group_sections([run("a", 0.2), run("b", 2.0)]), LeaderboardConfig(n_resamples=200))
    >>> [(s, [(row["llm"], round(row["mean"]["value"], 3)) for row in h["rows"]]) for s, h in board.headline.items()]
    [('greedy', [('b', 0.905), ('a', 0.599)]), ('majority', [('a', 0.401), ('b', 0.095)])]
    """
    label_sets = sorted({s.label_set for s in columns(board.sections)}, key=lambda name: name != "run")
    if len(label_sets) <= 1:
        return {strategy: _table(board, resampled, strategy) for strategy in label_strategy_names()}
    return {  # one headline per judge: the run's first, then each other label set's
        (strategy if i == 0 else f"{strategy}:{label_set}"): {
            **_table(board, resampled, strategy, label_set),
            "label_set": label_set,
        }
        for i, label_set in enumerate(label_sets)
        for strategy in label_strategy_names()
    }


def _section_ranks(
    sections: Sequence[Section], resampled: Mapping, reference: str, strategy: str, sign: float
) -> dict[tuple[str, str], dict[str, Any]]:
    """Each LLM's rank interval per section from the headline metric's resamples (``sign`` -1: lower is
    better); AUROC's come from the board's LLM ranks instead."""
    out = {}
    for s in sections:
        have = [llm for llm in s.llms if (strategy, reference) in resampled.get((s.id, llm), {})]
        if len(have) < 2:
            continue
        entries = [resampled[(s.id, llm)][(strategy, reference)] for llm in have]
        points = sign * np.array([e[0] for e in entries])
        point, low, high, _ = rank_intervals(sign * np.vstack([e[1] for e in entries]), points)
        for i, llm in enumerate(have):
            finite = np.isfinite([point[i], low[i], high[i]])
            out[(s.id, llm)] = {
                "rank": int(point[i]) if finite[0] else None,
                "rank_low": int(low[i]) if finite[1] else None,
                "rank_high": int(high[i]) if finite[2] else None,
                "n_ranked": len(have),
            }
    return out


def _table(
    board: Leaderboard,
    resampled: Mapping[tuple[str, str], Mapping[tuple[str, str], tuple]],
    strategy: str,
    label_set: str | None = None,
) -> dict[str, Any]:
    """One headline table: the reference estimator's figure of the headline metric under ``strategy`` labels, on
    the sections of ``label_set`` (every section when None) (:func:`headline`)."""
    from semuq_eval.metrics import get

    config = board.config
    reference, bootstrap, metric = config.reference, config.bootstrap, config.headline_metric
    sign = 1.0 if get(metric).higher_is_better else -1.0
    label = get(metric).label
    sections = [s for s in columns(board.sections) if label_set is None or s.label_set == label_set]
    ids = [s.id for s in sections]
    llms = list(dict.fromkeys(r.llm for s in sections for r in s.runs))
    at = {
        (c["section"], c["llm"]): c
        for c in board.cells
        if c["estimator"] == reference and c["strategy"] == strategy and c["metric"] == metric
    }
    if metric == "auroc":
        ranks = {
            (r["section"], r["llm"]): r
            for r in board.llm_ranks
            if r["estimator"] == reference and r["strategy"] == strategy
        }
    else:
        ranks = _section_ranks(sections, resampled, reference, strategy, sign)
    rows, means = [], {}
    for llm in llms:
        cells, draws = {}, []
        for s in sections:
            if llm not in s.llms:
                continue
            cell = _cell(at.get((s.id, llm)), reference)
            rank = ranks.get((s.id, llm)) or {}
            cell.update({k: rank.get(k) for k in ("rank", "rank_low", "rank_high", "n_ranked")})
            cells[s.id] = cell
            figure = resampled.get((s.id, llm), {}).get((strategy, reference))
            draws.append(None if figure is None else figure[1])
        mean, means[llm] = _mean_cell(list(cells.values()), draws, bootstrap, label)
        mean["n_tasks"] = len(cells)
        if mean["value"] is not None and len(cells) < len(ids):
            mean["note"] = "; ".join(
                filter(None, [f"mean over {len(cells)} of {len(ids)} tasks", mean["note"]])
            )
        rows.append({"llm": llm, "cells": cells, "mean": mean})
    by_llm = {row["llm"]: row["mean"] for row in rows}
    complete = [llm for llm, mean in by_llm.items() if mean["n_tasks"] == len(ids) and means[llm] is not None]
    for mean in by_llm.values():
        mean.update(rank=None, rank_low=None, rank_high=None, n_ranked=len(complete))
    if len(complete) > 1:
        points = sign * np.array([by_llm[llm]["value"] for llm in complete])
        point, low, high, _ = rank_intervals(sign * np.vstack([means[llm] for llm in complete]), points)
        for i, llm in enumerate(complete):
            by_llm[llm].update(rank=int(point[i]), rank_low=int(low[i]), rank_high=int(high[i]))
    rows.sort(key=lambda r: (r["mean"]["value"] is None, -sign * (r["mean"]["value"] or 0.0)))
    return {
        "reference": reference,
        **({"metric": metric} if metric != "auroc" else {}),
        "strategy": strategy,
        "rule": RULE.format(label=label, reference=reference, strategy=strategy),
        "columns": ids,
        "rows": rows,
        "best": best_rows(board.cells, [r["llm"] for r in rows], ids, strategy, metric, sign),
    }


def best_rows(
    cells: Sequence[Mapping[str, Any]],
    llms: Sequence[str],
    ids: Sequence[str],
    strategy: str = STRATEGY,
    metric: str = "auroc",
    sign: float = 1.0,
) -> list[dict]:
    """Each LLM's best estimator per task (``metric`` under ``strategy`` labels, ``sign`` -1 when lower is better;
    optimistic: the best of many noisy cells). Rows follow ``llms`` (the headline's order); a cell is the best
    estimator's AUROC cell, with its name.

    Examples
    --------
    >>> cells = [{"section": "t", "llm": "a", "estimator": e, "strategy": "greedy", "metric": "auroc",
    ...           "status": "ok", "value": v, "ci_low": v - 0.1, "ci_high": v + 0.1, "n_correct": 30,
    ...           "n_incorrect": 30, "accuracy": 0.5, "reliable": True, "note": None}
    ...          for e, v in (("se@nli", 0.7), ("cos@enc", 0.8))]
    >>> best_rows(cells, ["a"], ["t"])[0]["cells"]["t"]["estimator"]
    'cos@enc'
    """
    best: dict[tuple[str, str], Mapping[str, Any]] = {}
    for c in cells:
        if c["strategy"] == strategy and c["metric"] == metric and c["status"] == "ok":
            key = (c["section"], c["llm"])
            if key not in best or sign * c["value"] > sign * best[key]["value"]:
                best[key] = c
    return [
        {
            "llm": llm,
            "cells": {
                sid: {"estimator": best[(sid, llm)]["estimator"], **_cell(best[(sid, llm)], "")}
                for sid in ids
                if (sid, llm) in best
            },
        }
        for llm in llms
    ]


def cell_summary(cell: Mapping[str, Any] | None) -> str:
    """A headline cell as one line of text, the same in the Markdown and the page: AUROC [CI] (correct /
    incorrect), ``!`` when flagged, then the accuracy under the table's labels and the rank interval.

    Examples
    --------
    >>> cell_summary({"value": 0.8, "ci_low": 0.7, "ci_high": 0.9, "n_correct": 30, "n_incorrect": 18,
    ...               "accuracy": 0.625, "reliable": False, "status": "ok", "rank": 1, "rank_low": 1,
    ...               "rank_high": 2, "n_ranked": 3})
    '0.800 [0.700, 0.900] (30/18) ! · acc 0.625 · rank 1 (1-2 of 3)'
    >>> cell_summary({"status": "undefined", "note": "undefined: one class only (0 correct / 100 incorrect)"})
    'undefined: one class only (0 correct / 100 incorrect)'
    >>> cell_summary({"status": "undefined", "note": "no reference AUROC on 1 of 2 tasks"})
    'undefined: no reference AUROC on 1 of 2 tasks'
    """
    from semuq_eval.cell_text import cell_text

    if cell is None:
        return "-"
    if cell.get("status") != "ok":  # no figure: say why
        status, note = str(cell.get("status") or "-"), cell.get("note")
        if not note:
            return status
        return str(note) if str(note).startswith(status) else f"{status}: {note}"
    text = cell_text(
        cell["value"],
        cell.get("ci_low"),
        cell.get("ci_high"),
        reliable=bool(cell.get("reliable")),
        count=f"{cell.get('n_correct')}/{cell.get('n_incorrect')}",
    )
    if isinstance(cell.get("accuracy"), float):
        text += f" · acc {cell['accuracy']:.3f}"
    if cell.get("rank") is not None:
        text += f" · rank {cell['rank']} ({cell.get('rank_low')}-{cell.get('rank_high')} of {cell.get('n_ranked')})"
    return text
