"""Every figure of a leaderboard, on one shared seeded bootstrap per section.

Within a section (:mod:`semuq_eval.leaderboard.alignment`) every run holds the same questions in doc-id order,
so :meth:`Bootstrap.counts` gives every LLM and every estimator the **same** resampled question sets:
resample r draws the same questions for every LLM. That makes three things valid:

- **cells**: per (task, LLM, estimator, label strategy) every metric (AUROC, ECE, PRR and AUARC by default) with
  95% CIs, n, the correct / incorrect counts, the LLM's accuracy, and the run's own small-sample flag
  (:func:`semuq_eval.harness.reliability.assess` with the run's ``min_minority``);
- **paired differences** (AUROC): each ``@enc`` estimator against its base (:mod:`.baselines`), and LLM
  against LLM for chosen estimators (each LLM with its own labels), exactly as
  :func:`semuq_eval.metrics.paired_difference` computes them (same resamples, same interval and p-value);
- **rank intervals**: the rank (1 = best AUROC) of every LLM for an estimator, and of every estimator for an
  LLM, in every resample, summarized by its 2.5% and 97.5% quantiles (``inverted_cdf``: whole ranks), so
  overlapping intervals show ties. A resample where a figure is undefined (one class drawn) ranks the
  others only.

A question whose label is missing for a run keeps its place with no score (NaN, weight 0), so the resamples
stay shared. The metric cores are the project's (:mod:`semuq_eval.metrics`): AUROC's resampled values come
from :func:`~semuq_eval.metrics.resample`, which ``evaluate`` is built on (its point estimate and interval are
``evaluate``'s), and the other metrics (the runs' ``metrics`` settings unless ``LeaderboardConfig.metrics``
names them) come from ``evaluate`` itself, or from the run's own breakdown when
the run used the same bootstrap (resamples, seed), ECE protocol and questions with no missing label, and its
AUROC equals the one recomputed from ``scores.jsonl`` (the same scores), in which case the figures are the
same numbers and are not computed again (``source`` says which).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any

import numpy as np
import scipy.stats

from semuq_eval.harness.reliability import MIN_MINORITY, assess
from semuq_eval.jsonio import finite_or_none
from semuq_eval.judges import LABEL_STRATEGIES
from semuq_eval.leaderboard.baselines import PAIR_SETS, PAIRS, operator_pairs
from semuq_eval.leaderboard.curves import curves
from semuq_eval.leaderboard.headline import REFERENCE, headline
from semuq_eval.leaderboard.runs import Run, Section
from semuq_eval.metrics import (
    DEFAULT_METRICS,
    Bootstrap,
    CalibrationProtocol,
    MetricResult,
    check_metrics,
    evaluate,
    paired_difference,
    resample,
)

__all__ = ["Leaderboard", "LeaderboardConfig", "compute", "rank_intervals"]


@dataclass(frozen=True)
class LeaderboardConfig:
    """How the leaderboard computes.

    Parameters
    ----------
    n_resamples, seed, confidence_level
        The shared bootstrap (:class:`~semuq_eval.metrics.Bootstrap`).
    ece_bins, ece_refit
        ECE's protocol (:class:`~semuq_eval.metrics.CalibrationProtocol`).
    metrics : tuple of str, optional
        Cell metrics; must start with ``auroc`` (it drives the paired tests and ranks). None: ``auroc``, then
        every other metric of the runs' ``metrics`` settings in their order (:data:`DEFAULT_METRICS` for a
        run without one), resolved by :func:`compute`.
    llm_estimators : tuple of str
        Estimators for the LLM-vs-LLM paired tests; empty: per section and label strategy, the estimator with
        the best mean AUROC among those every LLM of the section scored.
    jobs : int
        Worker processes for the per-run figures (1: in this process).
    compare : tuple of (operator, bases)
        Extra pair sets, one per base: ``agg@operator`` vs ``agg@base`` for every aggregator both have
        (:func:`~semuq_eval.leaderboard.baselines.operator_pairs`; ``--compare OP:BASE,...``).
    reference : str
        The headline's reference estimator (:mod:`.headline`; ``--reference``), fixed before the LLMs are
        looked at: the same estimator for every LLM and task.
    """

    n_resamples: int = 1000
    seed: int = 0
    confidence_level: float = 0.95
    ece_bins: int = 10
    ece_refit: str = "once"
    metrics: tuple[str, ...] | None = None
    llm_estimators: tuple[str, ...] = ()
    jobs: int = 1
    compare: tuple[tuple[str, tuple[str, ...]], ...] = ()
    reference: str = REFERENCE

    def __post_init__(self):
        if self.metrics is not None:
            check_metrics(self.metrics)
            if self.metrics[0] != "auroc":
                raise ValueError(f"metrics must start with 'auroc', got {self.metrics}")
        if self.jobs < 1:
            raise ValueError(f"jobs must be >= 1, got {self.jobs}")

    @property
    def bootstrap(self) -> Bootstrap:
        return Bootstrap(self.n_resamples, self.seed, self.confidence_level)

    @property
    def protocol(self) -> CalibrationProtocol:
        return CalibrationProtocol(n_bins=self.ece_bins, refit=self.ece_refit)

    def as_dict(self) -> dict[str, Any]:
        return {
            "bootstrap": {
                "n_resamples": self.n_resamples,
                "seed": self.seed,
                "confidence_level": self.confidence_level,
                "method": self.bootstrap.describe(),
            },
            "ece": {"bins": self.ece_bins, "refit": self.ece_refit},
            "metrics": list(self.metrics),
            "llm_estimators": list(self.llm_estimators),
            "compare": {operator: list(bases) for operator, bases in self.compare},
            "reference": self.reference,
            "significance": f"the {self.confidence_level:.0%} paired bootstrap interval excludes 0",
        }


@dataclass
class Leaderboard:
    """Everything a leaderboard shows (written by :mod:`semuq_eval.leaderboard.write`)."""

    config: LeaderboardConfig
    sections: list[Section]
    cells: list[dict[str, Any]] = field(default_factory=list)
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    comparison_summary: list[dict[str, Any]] = field(default_factory=list)
    llm_pairs: list[dict[str, Any]] = field(default_factory=list)
    llm_ranks: list[dict[str, Any]] = field(default_factory=list)
    estimator_ranks: list[dict[str, Any]] = field(default_factory=list)
    heatmap: list[dict[str, Any]] = field(default_factory=list)
    #: the headline table (:func:`.headline.headline`) and its per-question pictures (:func:`.curves.curves`)
    headline: dict[str, Any] = field(default_factory=dict)
    curves: list[dict[str, Any]] = field(default_factory=list)
    #: comparison set -> (description, (estimator, base) pairs): the paper's, the offline ones, ``compare``'s
    pair_sets: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = field(default_factory=dict)

    @property
    def runs(self) -> list[Run]:
        return [run for section in self.sections for run in section.runs]


def split_estimator(name: str) -> tuple[str, str]:
    """``(aggregator, operator)``; estimators without an operator (``te``, ``msp``) get ``"-"``.

    Examples
    --------
    >>> split_estimator("kle_heat@enc"), split_estimator("te")
    (('kle_heat', 'enc'), ('te', '-'))
    """
    aggregator, _, operator = name.partition("@")
    return aggregator, operator or "-"


# -- per run (a worker's job) ---------------------------------------------------------------------------


@dataclass
class _Job:
    estimators: list[str]
    scores: dict[str, np.ndarray]
    labels: dict[str, np.ndarray]
    reusable: dict[str, dict[str, dict[str, Any]]]
    config: LeaderboardConfig
    min_minority: int


def _reusable(run: Run, config: LeaderboardConfig, n: int) -> dict[str, dict[str, dict[str, Any]]]:
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


def _result_dict(result: MetricResult | Mapping[str, Any], n_resamples: int, min_minority: int) -> dict:
    d = result.as_dict() if isinstance(result, MetricResult) else dict(result)
    d.update(assess(d, n_resamples, min_minority))
    return d


def _run_figures(job: _Job) -> dict[str, Any]:
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
                if m in reuse and reuse[m].get("n") == result.n:
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
    ranks = {}  # the estimators' rank intervals within this run, here in the worker
    for strategy in job.labels:
        names = [n for n in job.estimators if (strategy, n) in resampled]
        if names:
            points = np.array([resampled[(strategy, n)][0] for n in names])
            matrix = np.vstack([resampled[(strategy, n)][1] for n in names])
            ranks[strategy] = (names, points, *rank_intervals(matrix, points))
    return {"cells": cells, "resampled": resampled, "estimator_ranks": ranks}


# -- the whole board --------------------------------------------------------------------------------------


def _label_summary(run: Run, strategy: str) -> dict[str, Any]:
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
    labels = _label_summary(run, strategy)
    if labels.get("n", 0) == 0:
        return "undefined", f"no {strategy} labels"
    return "unavailable", "no score on any labelled question"


def _cell_rows(section: Section, run: Run, figures: Mapping | None, config: LeaderboardConfig) -> list[dict]:
    rows = []
    strategies = list(LABEL_STRATEGIES)
    for strategy in strategies:
        labels = _label_summary(run, strategy)
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


def _difference(
    a: tuple[float, np.ndarray, np.ndarray],
    b: tuple[float, np.ndarray, np.ndarray],
    bootstrap: Bootstrap,
    fallback,
) -> dict[str, Any]:
    """AUROC(a) - AUROC(b) on shared resamples, as :func:`paired_difference` gives it.

    When both were scored on the same questions, the cached resampled values are subtracted (the same
    arithmetic as ``paired_difference``); otherwise ``fallback()`` calls ``paired_difference`` itself, which
    leaves out the questions either lacks.
    """
    (point_a, res_a, mask_a), (point_b, res_b, mask_b) = a, b
    if not np.array_equal(mask_a, mask_b):
        return fallback().as_dict()
    diff = point_a - point_b
    deltas = res_a - res_b
    deltas = deltas[np.isfinite(deltas)]
    low, high = bootstrap.interval(deltas)
    if deltas.size == 0 or not np.isfinite(diff):
        p_value = float("nan")
    else:
        p_value = float((1 + np.sum(np.abs(deltas - diff) >= abs(diff))) / (1 + deltas.size))
    return {
        "metric": "auroc",
        "value_a": point_a,
        "value_b": point_b,
        "difference": diff,
        "ci_low": low,
        "ci_high": high,
        "p_value": p_value,
        "n": int(mask_a.sum()),
    }


def _verdict(d: Mapping[str, Any]) -> dict[str, Any]:
    diff, low, high = d.get("difference"), d.get("ci_low"), d.get("ci_high")
    ok = diff is not None and math.isfinite(diff)
    return {
        "status": "ok" if ok else "undefined",
        "improved": bool(ok and diff > 0),
        "significant": bool(ok and low is not None and math.isfinite(low) and (low > 0 or high < 0)),
    }


def rank_intervals(
    matrix: np.ndarray, points: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Point ranks, per-row rank interval (low, high) and the number of resamples each was ranked in.

    ``matrix`` is (k, R) resampled AUROCs, ``points`` (k,); rank 1 = highest AUROC, ties share the lower
    (``min``) rank; NaN entries are left out of that resample's ranking.
    """
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


def _run_metrics(sections: Sequence[Section]) -> tuple[str, ...]:
    """``auroc``, then every other metric of the runs' ``metrics`` settings, in their order."""
    names = ["auroc"]
    for run in (run for section in sections for run in section.runs):
        names += [m for m in run.settings.get("metrics", DEFAULT_METRICS) if m not in names]
    return check_metrics(names)


def compute(sections: Sequence[Section], config: LeaderboardConfig | None = None) -> Leaderboard:
    """Compute every figure of a leaderboard of ``sections`` (module docstring).

    Parameters
    ----------
    sections : sequence of Section
        From :func:`semuq_eval.leaderboard.alignment.group_sections`.
    config : LeaderboardConfig, optional

    Returns
    -------
    Leaderboard

    Examples
    --------
    >>> import numpy as np
    >>> from semuq_eval.leaderboard.runs import Run
    >>> from semuq_eval.leaderboard.alignment import group_sections
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
    bootstrap, protocol = config.bootstrap, config.protocol
    board = Leaderboard(config=config, sections=list(sections))
    board.pair_sets = {name: (PAIR_SETS[name], pairs) for name, pairs in PAIRS.items()}
    every = [name for section in board.sections for name in section.estimators]
    for operator, bases in config.compare:
        board.pair_sets.update(operator_pairs(operator, bases, every))
    jobs: list[tuple[Section, Run, _Job | None]] = []
    for section in board.sections:
        for run in section.runs:
            job = None
            if run.paired:
                job = _Job(
                    estimators=section.estimators,
                    scores=run.scores,
                    labels=run.labels,
                    reusable=_reusable(run, config, len(run.doc_ids)),
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
            results = list(pool.map(_run_figures, todo, chunksize=max(1, len(todo) // (4 * config.jobs))))
    else:
        results = [_run_figures(j) for j in todo]
    figures: dict[tuple[str, str], dict] = {}
    it = iter(results)
    for section, run, job in jobs:
        fig = next(it) if job is not None else None
        if fig is not None:
            figures[(section.id, run.llm)] = fig
        board.cells.extend(_cell_rows(section, run, fig, config))
    for section in board.sections:
        if not section.paired:
            continue
        _comparisons(board, section, figures, bootstrap, protocol)
        _llm_figures(board, section, figures, bootstrap, protocol)
        _estimator_ranks(board, section, figures)
    _summaries(board)
    board.headline = headline(board, {key: fig["resampled"] for key, fig in figures.items()})
    board.curves = curves(board)
    return board


def _comparisons(board, section, figures, bootstrap, protocol) -> None:
    reliable = {
        (c["llm"], c["strategy"], c["estimator"]): c["reliable"]
        for c in board.cells
        if c["section"] == section.id and c["metric"] == "auroc"
    }
    for run in section.runs:
        cached = figures[(section.id, run.llm)]["resampled"]
        for strategy in LABEL_STRATEGIES:
            for pair_set, (_, pairs) in board.pair_sets.items():
                for name, base in pairs:
                    row = {
                        "set": pair_set,
                        "section": section.id,
                        "task": section.task,
                        "label_set": section.label_set,
                        "llm": run.llm,
                        "strategy": strategy,
                        "estimator": name,
                        "base": base,
                    }
                    a, b = cached.get((strategy, name)), cached.get((strategy, base))
                    if a is None or b is None:
                        lacking = [x for x, c in ((name, a), (base, b)) if c is None]
                        row.update(status="unavailable", note=f"no AUROC for {', '.join(lacking)}")
                        row.update(improved=None, significant=None, reliable=None)
                        board.comparisons.append(row)
                        continue
                    y = np.nan_to_num(run.labels[strategy])
                    miss = ~np.isfinite(run.labels[strategy])

                    def fallback(name=name, base=base, y=y, miss=miss, run=run):
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", RuntimeWarning)
                            return paired_difference(
                                np.where(miss, np.nan, run.scores[name]),
                                np.where(miss, np.nan, run.scores[base]),
                                y,
                                bootstrap=bootstrap,
                                protocol=protocol,
                            )

                    d = _difference(a, b, bootstrap, fallback)
                    _fill_difference(row, d)
                    # both AUROCs without the small-sample flag (the cells' `reliable`)
                    row["reliable"] = all(reliable.get((run.llm, strategy, x)) for x in (name, base))
                    board.comparisons.append(row)


def _fill_difference(row: dict[str, Any], d: Mapping[str, Any]) -> None:
    """Copy a paired difference's figures and verdict into a comparison row."""
    row.update({k: d[k] for k in ("value_a", "value_b", "difference", "ci_low", "ci_high", "p_value", "n")})
    row.update(_verdict(d), note="")


def _llm_figures(board, section, figures, bootstrap, protocol) -> None:
    runs = section.runs
    for strategy in LABEL_STRATEGIES:
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
        chosen = list(board.config.llm_estimators)
        if not chosen:
            common = [
                n
                for n in section.estimators
                if all((strategy, n) in figures[(section.id, r.llm)]["resampled"] for r in runs)
            ]
            means = {
                n: np.mean([figures[(section.id, r.llm)]["resampled"][(strategy, n)][0] for r in runs])
                for n in common
            }
            means = {n: v for n, v in means.items() if np.isfinite(v)}
            chosen = [max(means, key=means.get)] if means and len(runs) > 1 else []
        for name in chosen:
            for ra, rb in combinations(runs, 2):
                a = figures[(section.id, ra.llm)]["resampled"].get((strategy, name))
                b = figures[(section.id, rb.llm)]["resampled"].get((strategy, name))
                row = {
                    "section": section.id,
                    "task": section.task,
                    "label_set": section.label_set,
                    "strategy": strategy,
                    "estimator": name,
                    "llm_a": ra.llm,
                    "llm_b": rb.llm,
                    "chosen": "given" if board.config.llm_estimators else "best mean AUROC in the section",
                }
                if a is None or b is None:
                    row.update(status="unavailable", note=f"{name} has no AUROC for one of the two LLMs")
                    board.llm_pairs.append(row)
                    continue

                def fallback(ra=ra, rb=rb, name=name, strategy=strategy):
                    la, lb = ra.labels[strategy], rb.labels[strategy]
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        return paired_difference(
                            np.where(np.isfinite(la), ra.scores[name], np.nan),
                            np.where(np.isfinite(lb), rb.scores[name], np.nan),
                            np.nan_to_num(la),
                            correct_b=np.nan_to_num(lb),
                            bootstrap=bootstrap,
                            protocol=protocol,
                        )

                d = _difference(a, b, bootstrap, fallback)
                _fill_difference(row, d)
                board.llm_pairs.append(row)


def _estimator_ranks(board, section, figures) -> None:
    for run in section.runs:
        ranked = figures[(section.id, run.llm)]["estimator_ranks"]
        for strategy in LABEL_STRATEGIES:
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
        for strategy in LABEL_STRATEGIES:
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
