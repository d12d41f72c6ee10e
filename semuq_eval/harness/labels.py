"""Correctness labels: string judges and the two label strategies of App. D (greedy, majority).

A **judge** decides whether one generated answer matches the reference answers of a question
(the reference is the ground truth; the judge never grades the answer on its own). Every judge
implements the :class:`Judge` protocol::

    judge(question, answer, references) -> bool | None          # None: the judge could not decide
    judge.batch(questions, answers, references) -> list[bool | None]

:class:`StringJudge` is the cheap, deterministic judge used during a run. An LLM judge (App. D)
plugs in later through the same protocol; its unparseable verdicts are ``None`` and count as
missing labels (never as incorrect).

Normalization (:func:`normalize`) is SQuAD's: lowercase, drop punctuation, drop the articles
a / an / the, collapse whitespace. Modes:

- ``contains`` (default): a normalized reference alias occurs in the normalized answer as whole
  words (``"paris"`` is in ``"it is paris france"``, not in ``"parisian"``);
- ``em``: a normalized alias equals the normalized answer;
- ``f1``: the best token F1 over the aliases is >= ``f1_threshold`` (default 0.5).

Label strategies (:func:`label_doc`): ``greedy`` judges the greedy answer; ``majority`` judges each
of the N sampled answers and takes the majority. Missing sample verdicts are left out of the vote;
a tie (e.g. 10 correct, 10 incorrect) is **incorrect** (strict majority needed); no verdict at all
gives a missing label.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "LABEL_STRATEGIES",
    "MODES",
    "Judge",
    "StringJudge",
    "label_doc",
    "majority_label",
    "normalize",
    "token_f1",
]

MODES = ("contains", "em", "f1")
LABEL_STRATEGIES = ("greedy", "majority")

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | {"\u2018", "\u2019", "\u201c", "\u201d", "\u2013", "\u2014"}


def normalize(text: str) -> str:
    """SQuAD answer normalization: lowercase, remove punctuation, articles and extra whitespace."""
    text = text.lower()
    text = "".join(" " if ch in _PUNCT else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1 between two normalized strings (0.0 when either is empty)."""
    pred, ref = prediction.split(), reference.split()
    if not pred or not ref:
        return 0.0
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


@runtime_checkable
class Judge(Protocol):
    """Decides whether an answer matches the references; ``None`` = no decision (label missing)."""

    name: str

    def __call__(self, question: str, answer: str, references: Sequence[str]) -> bool | None: ...

    def batch(
        self, questions: Sequence[str], answers: Sequence[str], references: Sequence[Sequence[str]]
    ) -> list[bool | None]: ...

    @property
    def info(self) -> dict: ...


@dataclass(frozen=True)
class StringJudge:
    """Deterministic string matching after SQuAD normalization (see the module docstring)."""

    mode: str = "contains"
    f1_threshold: float = 0.5

    name = "string"

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown label mode {self.mode!r}; choose one of {list(MODES)}")
        if not 0.0 <= float(self.f1_threshold) <= 1.0:
            raise ValueError(f"f1_threshold must be in [0, 1], got {self.f1_threshold}")

    def __call__(self, question: str, answer: str, references: Sequence[str]) -> bool | None:
        refs = [normalize(r) for r in references if isinstance(r, str)]
        refs = [r for r in refs if r]
        if not refs:
            return None  # nothing to compare with: missing, not incorrect
        pred = normalize(str(answer))
        if self.mode == "em":
            return pred in refs
        if self.mode == "f1":
            return max(token_f1(pred, r) for r in refs) >= self.f1_threshold
        padded = f" {pred} "
        return any(f" {r} " in padded for r in refs)

    def batch(
        self, questions: Sequence[str], answers: Sequence[str], references: Sequence[Sequence[str]]
    ) -> list[bool | None]:
        return [self(q, a, r) for q, a, r in zip(questions, answers, references, strict=True)]

    @property
    def info(self) -> dict:
        info = {"judge": self.name, "mode": self.mode, "normalization": "squad"}
        if self.mode == "f1":
            info["f1_threshold"] = self.f1_threshold
        return info


def majority_label(verdicts: Sequence[bool | None]) -> bool | None:
    """Strict majority of the non-missing verdicts; a tie is incorrect (False); none at all -> None."""
    judged = [v for v in verdicts if v is not None]
    if not judged:
        return None
    return sum(judged) * 2 > len(judged)


def label_doc(
    judge: Judge, question: str, greedy: str, samples: Sequence[str], references: Sequence[str]
) -> dict:
    """Both label strategies for one question.

    Returns ``{"greedy": bool|None, "majority": bool|None, "sample_verdicts": [...],
    "n_missing_verdicts": int}``; ``None`` labels are missing (the question is left out of the
    metrics of that strategy and counted).
    """
    verdicts = judge.batch(
        [question] * (1 + len(samples)), [greedy, *samples], [references] * (1 + len(samples))
    )
    sample_verdicts = verdicts[1:]
    return {
        "greedy": verdicts[0],
        "majority": majority_label(sample_verdicts),
        "sample_verdicts": sample_verdicts,
        "n_missing_verdicts": sum(v is None for v in verdicts),
    }
