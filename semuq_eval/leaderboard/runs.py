"""The runs of a leaderboard and the sections that compare them.

A **run** is one LLM on one task: a run store ``<out>/semuq/<task>/<run_id>/`` (``manifest.json``, per-question
``scores.jsonl``, ``breakdown.json``) or its run record (:mod:`semuq_eval.harness.record`); a breakdown JSON file
alone is a *breakdown-only* run, shown as the run computed it and paired with nothing. A **section** holds the runs
comparable question by question (:mod:`~.sections`). Input errors are :class:`LeaderboardInputError`."""

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

    ``path``: the store directory (or a breakdown-only run's file); ``task``, ``llm``: the task and the LLM's name
    (the store's run id: the model's slug unless the run set ``run_id``); ``breakdown``: its ``breakdown.json``;
    ``doc_ids``: (n,) ascending, None for a breakdown-only run; ``question_ids``: the questions' own ids (``id``) in
    doc order, when the items carry them; ``scores``: estimator -> (n,) uncertainties, NaN where the run gave no
    score; ``labels``: label strategy -> (n,) 0/1 labels, NaN where the judge gave none; ``provenance``: model,
    revision, task, N, seed, operators and their model ids, judge, package versions (null when the run did not
    record them, with ``notes`` saying so)."""

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

    A local model path is reduced to its last folder name, so one prepared model on two machines is one identity.

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
