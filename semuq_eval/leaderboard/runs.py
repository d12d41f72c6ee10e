"""The runs of a leaderboard and the sections that compare them.

A **run** is one LLM on one task: a run store directory ``<out>/semuq/<task>/<run_id>/`` holding
``manifest.json``, ``scores.jsonl`` (one item per question: ``doc_id``, ``scores``, ``labels`` {greedy,
majority}) and ``breakdown.json`` (:mod:`semuq_eval.harness.breakdown`), or its run record
(:mod:`semuq_eval.harness.record`). A breakdown JSON file given on its own (no ``scores.jsonl`` beside it) is a
*breakdown-only* run: its AUROC / ECE figures are shown as the run computed them, but nothing is paired with it.

A **section** holds the runs that can be compared question by question (:mod:`~.sections`). Errors in a board's
inputs are :class:`LeaderboardInputError`, naming the file and what to do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["LeaderboardInputError", "Run", "Section", "operator_identity"]


class LeaderboardInputError(ValueError):
    """An input the leaderboard cannot use: the message names the file and the fix."""


@dataclass
class Run:
    """One LLM on one task, as read from its store (or a breakdown alone).

    Attributes
    ----------
    path : Path
        The store directory (or the breakdown file of a breakdown-only run).
    task, llm : str
        The task and the LLM's name (the store's run id: the model's slug unless the run set ``run_id``).
    breakdown : dict
        The run's ``breakdown.json``.
    doc_ids : numpy.ndarray or None
        (n,) doc ids in ascending order; None for a breakdown-only run.
    question_ids : list of str or None
        The questions' own ids (``id``) in doc order, when the items carry them.
    scores : dict of str to numpy.ndarray
        Estimator -> (n,) uncertainties, NaN where the run gave no score.
    labels : dict of str to numpy.ndarray
        Label strategy -> (n,) 0/1 labels, NaN where the judge gave none.
    provenance : dict
        Model, revision, task, N, seed, operators and their model ids, judge, package versions
        (null when the run did not record them, with ``notes`` saying so).
    """

    path: Path
    task: str
    llm: str
    breakdown: dict[str, Any]
    settings: dict[str, Any]
    doc_ids: np.ndarray | None = None
    question_ids: list[str] | None = None
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    labels: dict[str, np.ndarray] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    label_set: str = "run"
    judge_info: dict[str, Any] | None = None
    #: the record's ``question_set`` (hash of the questions' texts), for a run read from a run record
    question_set_hash: str | None = None

    @property
    def paired(self) -> bool:
        """True when the run has per-question scores (it can be paired with other runs)."""
        return self.doc_ids is not None

    @property
    def n_samples(self) -> int | None:
        return self.breakdown.get("n_samples", self.settings.get("n_samples"))

    @property
    def operators(self) -> dict[str, dict[str, Any]]:
        """Operator name -> identity (:func:`operator_identity`), for the operators the run ran."""
        return {
            name: operator_identity(entry)
            for name, entry in (self.breakdown.get("operators") or {}).items()
            if isinstance(entry, Mapping)
        }

    @property
    def judge(self) -> dict[str, Any]:
        """The identity of the judge behind the labels (the label set's judge)."""
        if self.judge_info is not None:
            return dict(self.judge_info)
        return dict(self.breakdown.get("judge") or {"judge": self.settings.get("judge")})

    @property
    def created(self) -> str:
        return str(self.breakdown.get("created") or "")

    @property
    def estimators(self) -> list[str]:
        """Every estimator the run names: scored, or listed unavailable (with its reason)."""
        names = list(self.scores) if self.paired else []
        for per in (self.breakdown.get("results") or {}).values():
            names.extend(n for n in per if n not in names)
        names.extend(n for n in (self.breakdown.get("unavailable") or {}) if n not in names)
        return names


@dataclass
class Section:
    """Runs comparable question by question (module docstring); ``key`` says what they share."""

    id: str
    task: str
    runs: list[Run]
    n_questions: int
    question_set: str
    n_samples: int | None
    judge: dict[str, Any]
    operators: dict[str, dict[str, Any]]
    paired: bool
    label_set: str = "run"
    notes: list[str] = field(default_factory=list)
    #: its questions are also in the task's other sections (``--common-questions also``): shown, but left out of
    #: the "improves in X of Y" counts and the heatmap, which would count them twice
    repeats: bool = False

    @property
    def llms(self) -> list[str]:
        return [r.llm for r in self.runs]

    @property
    def estimators(self) -> list[str]:
        names: list[str] = []
        for run in self.runs:
            names.extend(n for n in run.estimators if n not in names)
        return sorted(names)


def operator_identity(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What identifies an operator's matrices: its declared ``info`` (model, revision, rule, pooling, ...).

    A local model path is reduced to its last folder name, so that the same prepared model on two machines
    (``/root/.cache/.../all-minilm-l6-v2`` and ``/home/me/.cache/.../all-minilm-l6-v2``) is one identity.

    Examples
    --------
    >>> operator_identity({"kind": "gram", "info": {"operator": "enc", "model": "/x/models/all-minilm-l6-v2/"}})
    {'operator': 'enc', 'model': 'all-minilm-l6-v2'}
    """
    info = dict(entry.get("info") or {"kind": entry.get("kind")})
    model = info.get("model")
    if isinstance(model, str) and (os.path.isabs(model) or model.startswith((".", "~"))):
        info["model"] = Path(model.rstrip("/\\")).name
    return info
