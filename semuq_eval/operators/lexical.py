"""``lexical``: word overlap between answers, no model (a cheap baseline).

ROUGE-L F-measure (``rouge_score``) or Jaccard similarity of word sets. Words are runs of Unicode
word characters, casefolded, so non-Latin scripts are compared too. Both measures are symmetric
and lie in [0, 1]; answers with no word in common (or no word at all) score 0.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from rouge_score import rouge_scorer

from semuq_eval.operators.base import Cost, TextOperator

MEASURES = ("rouge_l", "jaccard")


class _WordTokenizer:
    """Unicode-aware tokenizer for ``rouge_score`` (its default drops non-ASCII characters)."""

    def tokenize(self, text: str) -> list[str]:
        return re.findall(r"\w+", text.casefold())


class LexicalOperator(TextOperator):
    """S_ij = ROUGE-L F(y_i, y_j) (default) or Jaccard(words(y_i), words(y_j))."""

    kind = "graded"
    needs = frozenset({"answers"})

    def __init__(self, *, measure: str = "rouge_l", dedup: bool = True) -> None:
        if measure not in MEASURES:
            raise ValueError(f"unknown lexical measure {measure!r}; choose one of {list(MEASURES)}")
        super().__init__(dedup=dedup)
        self.measure = measure
        self._tokenizer = _WordTokenizer()
        self._rouge = rouge_scorer.RougeScorer(["rougeL"], tokenizer=self._tokenizer)

    def _pair_score(self, a: str, b: str) -> float:
        if self.measure == "rouge_l":
            return self._rouge.score(a, b)["rougeL"].fmeasure
        words_a, words_b = set(self._tokenizer.tokenize(a)), set(self._tokenizer.tokenize(b))
        union = words_a | words_b
        return len(words_a & words_b) / len(union) if union else 0.0

    def _score(self, questions: list[str], answers: list[list[str]], cost: Cost) -> list[np.ndarray]:
        out = []
        for group in answers:
            s = np.eye(len(group))
            for i in range(len(group)):
                for j in range(i + 1, len(group)):
                    s[i, j] = s[j, i] = self._pair_score(group[i], group[j])
            out.append(s)
        return out

    def _identity(self) -> dict[str, Any]:
        return {"measure": self.measure, **super()._identity()}
