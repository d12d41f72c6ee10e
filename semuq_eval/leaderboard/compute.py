"""Every figure of a leaderboard, on one shared seeded bootstrap per section.

In a section every run holds the same questions in doc-id order, so :meth:`Bootstrap.counts` draws the same
resamples for every LLM and estimator, which makes paired figures valid: the cells (:mod:`.cells`, run by run in
worker processes by :mod:`.run_cells`), paired differences (:mod:`.differences`) and rank intervals (:mod:`.ranks`);
then the "improves in X of Y cells" summaries and the heatmap (here), the headline (:mod:`.headline`) and its curves
(:mod:`.curves`). A question missing a run's label keeps its place with no score (NaN, weight 0), so the resamples
stay shared."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from semuq_eval.harness.reliability import MIN_MINORITY
from semuq_eval.jsonio import finite_or_none
from semuq_eval.judges import label_strategy_names
from semuq_eval.leaderboard.across_judges import across_judges
from semuq_eval.leaderboard.baselines import PAIR_SETS, PAIRS, operator_pairs
from semuq_eval.leaderboard.board import Leaderboard, LeaderboardConfig
from semuq_eval.leaderboard.cells import cell_rows
from semuq_eval.leaderboard.curves import curves
from semuq_eval.leaderboard.differences import comparisons, llm_pairs
from semuq_eval.leaderboard.headline import headline
from semuq_eval.leaderboard.ranks import estimator_ranks, llm_ranks
from semuq_eval.leaderboard.run_cells import RunJob, reusable, run_cells
from semuq_eval.leaderboard.runs import Run, Section
from semuq_eval.metrics import DEFAULT_METRICS, check_metrics

__all__ = ["Leaderboard", "LeaderboardConfig", "compute"]


def _run_metrics(sections: Sequence[Section]) -> tuple[str, ...]:
    """``auroc``, then every other metric of the runs' ``metrics`` settings, in their order."""
    names = ["auroc"]
    for run in (run for section in sections for run in section.runs):
        names += [m for m in run.settings.get("metrics", DEFAULT_METRICS) if m not in names]
    return check_metrics(names)


def compute(sections: Sequence[Section], config: LeaderboardConfig | None = None) -> Leaderboard:
    """Compute every figure of a leaderboard of ``sections`` (module docstring).

    ``sections`` come from :func:`semuq_eval.leaderboard.sections.group_sections`; returns a :class:`Leaderboard`.

    Examples
    --------
    >>> import numpy as np
    >>> from semuq_eval.leaderboard.runs import Run
    >>> from semuq_eval.leaderboard.sections import group_sections
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 80).astype(float)
    >>> def run(llm):
    ...     bd = {"format": "semuq-breakdown/1", "task": "t", "n_samples": 5, "n_docs": 80, "results": {},
    ...           "labels": {}, "settings": {"min_minority": 20}}
    ...     return Run(path=llm, task="t", llm=llm, breakdown=bd, settings=bd["settings"],
    ...                doc_ids=np.arange(80), scores={"u@enc": rng.normal(size=80) + (1 - y)},
    ...                labels={"greedy": y, "majority": y})
    >>> board = compute(group_sections([run("a"), run("b")]), LeaderboardConfig(n_resamples=200))
    >>> cell = board.cells[0]
    >>> cell["llm"], cell["estimator"], cell["metric"], cell["status"], round(cell["value"], 3)
    ('a', 'u@enc', 'auroc', 'ok', 0.776)
    >>> [(r["llm"], r["rank"]) for r in board.llm_ranks if r["strategy"] == "greedy"]
    [('a', 1), ('b', 2)]
    """
    config = config or LeaderboardConfig()
    if config.metrics is None:
        config = replace(config, metrics=_run_metrics(sections))
    if config.headline_metric not in config.metrics:
        config = replace(config, metrics=(*config.metrics, config.headline_metric))
    bootstrap, protocol = config.bootstrap, config.protocol
    board = Leaderboard(config=config, sections=list(sections))
    board.pair_sets = {name: (PAIR_SETS[name], pairs) for name, pairs in PAIRS.items()}
    every = [name for section in board.sections for name in section.estimators]
    for operator, bases in config.compare:
        board.pair_sets.update(operator_pairs(operator, bases, every))
    jobs: list[tuple[Section, Run, RunJob | None]] = []
    for section in board.sections:
        for run in section.runs:
            job = None
            if run.paired:
                job = RunJob(
                    estimators=section.estimators,
                    scores=run.scores,
                    labels=run.labels,
                    reusable=reusable(run, config, len(run.doc_ids)),
                    config=config,
                    min_minority=int(run.settings.get("min_minority", MIN_MINORITY)),
                )
            jobs.append((section, run, job))
    todo = [j for _, _, j in jobs if j is not None]
    if config.jobs > 1 and len(todo) > 1:
        import multiprocessing

        context = multiprocessing.get_context(
            "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        )
        with ProcessPoolExecutor(max_workers=config.jobs, mp_context=context) as pool:
            results = list(pool.map(run_cells, todo, chunksize=max(1, len(todo) // (4 * config.jobs))))
    else:
        results = [run_cells(j) for j in todo]
    figures: dict[tuple[str, str], dict] = {}
    it = iter(results)
    for section, run, job in jobs:
        fig = next(it) if job is not None else None
        if fig is not None:
            figures[(section.id, run.llm)] = fig
        board.cells.extend(cell_rows(section, run, fig, config))
    for section in board.sections:
        if not section.paired:
            continue
        comparisons(board, section, figures, bootstrap, protocol)
        llm_ranks(board, section, figures)
        llm_pairs(board, section, figures, bootstrap, protocol)
        estimator_ranks(board, section, figures)
    _summaries(board)
    headline_figures = {key: fig["headline"] for key, fig in figures.items()}
    board.headline = headline(board, headline_figures)
    board.across_judges = across_judges(board, figures, headline_figures)
    board.curves = curves(board)
    return board


def _counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The "improves in X of Y cells" counts of some comparison rows, and their mean difference."""
    return {
        "n_cells": len(rows),
        "n_improved": sum(c["improved"] for c in rows),
        "n_improved_significant": sum(c["improved"] and c["significant"] for c in rows),
        "n_worse_significant": sum((not c["improved"]) and c["significant"] for c in rows),
        "mean_difference": finite_or_none(float(np.mean([c["difference"] for c in rows]))) if rows else None,
    }


def _summaries(board: Leaderboard) -> None:
    """The "improves in X of Y cells" counts, and the mean AUROC heatmap (operator x aggregator), over the
    sections that do not repeat questions."""
    repeated = {s.id for s in board.sections if s.repeats}
    for pair_set in board.pair_sets:
        for strategy in label_strategy_names():
            rows = [
                c
                for c in board.comparisons
                if c["set"] == pair_set and c["strategy"] == strategy and c["section"] not in repeated
            ]
            done = [c for c in rows if c["status"] == "ok"]
            board.comparison_summary.append(
                {
                    "set": pair_set,
                    "strategy": strategy,
                    **_counts(done),
                    "n_unavailable": len(rows) - len(done),
                    "reliable": _counts([c for c in done if c["reliable"]]),
                }
            )
    sums: dict[tuple[str, str, str], list[float]] = {}
    for c in board.cells:
        if c["metric"] == "auroc" and c["value"] is not None and c["section"] not in repeated:
            sums.setdefault((c["strategy"], c["aggregator"], c["operator"]), []).append(c["value"])
    for (strategy, aggregator, operator), values in sorted(sums.items()):
        board.heatmap.append(
            {
                "strategy": strategy,
                "aggregator": aggregator,
                "operator": operator,
                "mean_auroc": float(np.mean(values)),
                "n_cells": len(values),
            }
        )
