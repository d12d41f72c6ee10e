"""The leaderboard's two types: how it computes (:class:`LeaderboardConfig`) and what it holds (:class:`Leaderboard`).

Kept apart from :mod:`.compute` (which fills a :class:`Leaderboard`) so that the modules computing its parts read
the types without importing the module that imports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from semuq_eval.leaderboard.runs import Run, Section
from semuq_eval.metrics import Bootstrap, CalibrationProtocol, check_metrics

__all__ = ["REFERENCE", "Leaderboard", "LeaderboardConfig"]

REFERENCE = "kle_heat@enc"
"""The default reference estimator: the operator ``enc`` (the paper's trained question-conditioned bi-encoder;
which weights it runs with is the runs' choice) with the fixed aggregator ``kle_heat``."""


@dataclass(frozen=True)
class LeaderboardConfig:
    """How the leaderboard computes.

    ``n_resamples``, ``seed``, ``confidence_level``: the shared bootstrap (:class:`~semuq_eval.metrics.Bootstrap`);
    ``ece_bins``, ``ece_refit``: ECE's protocol (:class:`~semuq_eval.metrics.CalibrationProtocol`). ``metrics``: cell
    metrics, ``auroc`` first (it drives the paired tests and ranks); None: ``auroc``, then those of the runs'
    ``metrics`` settings (:data:`DEFAULT_METRICS` for a run without), resolved by :func:`compute`. ``llm_estimators``:
    for the LLM-vs-LLM paired tests; empty: per section and strategy, the best mean AUROC among those every LLM
    scored. ``jobs``: worker processes for the per-run figures (1: in this process). ``compare``: extra (operator,
    bases) pair sets (:func:`~semuq_eval.leaderboard.baselines.operator_pairs`; ``--compare OP:BASE,...``).
    ``reference``: the headline's estimator (``--reference``), fixed before the LLMs are looked at, one for every LLM
    and task. ``headline_metric``: what the headline shows and ranks by (``--headline-metric``; default ``auroc``;
    e.g. ``coverage_at_risk``, :mod:`semuq_eval.metrics.risk`), added to ``metrics`` when they lack it."""

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
    headline_metric: str = "auroc"

    def __post_init__(self):
        check_metrics([self.headline_metric])
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
            **({"headline_metric": self.headline_metric} if self.headline_metric != "auroc" else {}),
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
    #: the rankings under several label sets (:mod:`.across_judges`)
    across_judges: list[dict[str, Any]] = field(default_factory=list)
    #: comparison set -> (description, (estimator, base) pairs): the paper's, the offline ones, ``compare``'s
    pair_sets: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = field(default_factory=dict)

    @property
    def runs(self) -> list[Run]:
        return [run for section in self.sections for run in section.runs]
