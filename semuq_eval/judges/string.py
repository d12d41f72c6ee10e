"""The ``string`` judge: SQuAD-normalized string matching of an answer against the reference aliases.

Cheap and deterministic; a run's default judge. Normalization (:func:`normalize`) is SQuAD's: lowercase, no
punctuation, no articles a / an / the, collapsed whitespace. Modes: ``contains`` (default), a normalized alias
occurs in the normalized answer as whole words (``"paris"`` is in ``"it is paris france"``, not in
``"parisian"``); ``em``, a normalized alias equals the normalized answer; ``f1``, the best token F1 over the aliases
is >= ``f1_threshold`` (default 0.5). No reference at all gives no verdict (None), never "incorrect"."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from semuq_eval.registry import NamedByRegistry

__all__ = ["MODES", "StringJudge", "normalize", "token_f1"]

Mode = Literal["contains", "em", "f1"]
MODES: tuple[str, ...] = get_args(Mode)

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
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:  # no common token, or an empty string
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class StringJudge(NamedByRegistry):
    """Deterministic string matching after SQuAD normalization (see the module docstring).

    ``mode``: ``"contains"``, ``"em"`` or ``"f1"``; ``f1_threshold``: for ``"f1"``, the token F1 at or above which
    an answer is correct.

    Examples
    --------
    >>> StringJudge().batch(["q"], ["It is Paris, France."], [["Paris"]])
    [True]
    >>> StringJudge("em").batch(["q"], ["It is Paris."], [["Paris"]])
    [False]
    """

    family_module = "semuq_eval.judges"
    mode: str = "contains"
    f1_threshold: float = 0.5

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown label mode {self.mode!r}; choose one of {list(MODES)}")
        if not 0.0 <= float(self.f1_threshold) <= 1.0:
            raise ValueError(f"f1_threshold must be in [0, 1], got {self.f1_threshold}")

    def __call__(self, question: str, answer: str, references: Sequence[str]) -> bool | None:
        refs = [r for r in (normalize(r) for r in references if isinstance(r, str)) if r]
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
        f1 = {"f1_threshold": self.f1_threshold} if self.mode == "f1" else {}
        return {"judge": self.name, "mode": self.mode, "normalization": "squad", **f1}
