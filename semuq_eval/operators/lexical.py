"""``lexical``: word overlap between answers, no model (a cheap baseline).

ROUGE-L F-measure (``rouge_score``) or Jaccard of word sets; words are casefolded runs of Unicode word
characters. Both are symmetric in [0, 1]. ROUGE-L's LCS is quadratic in length, so it reads at most
``max_words`` words per answer (:data:`MAX_WORDS`), naming answers read in part
(:meth:`LexicalOperator.truncations`); Jaccard reads all."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from rouge_score import rouge_scorer

from semuq_eval.operators.base import Cost, TextOperator

MEASURES = ("rouge_l", "jaccard")
MAX_WORDS = 512
"""The most words of an answer ROUGE-L reads (option ``max_words``; see the module docstring)."""

_WORD = re.compile(r"\w+")


class _WordTokenizer:
    """Unicode-aware tokenizer for ``rouge_score`` (its default drops non-ASCII characters): the first
    ``max_words`` words of a text (all of them when None)."""

    def __init__(self, max_words: int | None = None) -> None:
        self.max_words = max_words

    def tokenize(self, text: str) -> list[str]:
        words = (m.group() for m in _WORD.finditer(text.casefold()))
        return list(itertools.islice(words, self.max_words))


def _n_words(text: str) -> int:
    return sum(1 for _ in _WORD.finditer(text))


class LexicalOperator(TextOperator):
    """S_ij = ROUGE-L F(y_i, y_j) (default) or Jaccard(words(y_i), words(y_j)).

    ``dedup`` scores normalized-identical answers once; ``max_words`` (default :data:`MAX_WORDS`) caps the
    words ROUGE-L reads per answer and is named in the operator's identity when not the default.

    Examples
    --------
    >>> op = LexicalOperator(max_words=2)
    >>> float(op(["q"], [["a b c", "a b d"]]).matrices[0][0, 1])
    1.0
    >>> op.truncations([["a b c", "a"]], ["a b c d"])
    ['ROUGE-L read the first 2 words of answer 0, the greedy answer (4 words at most; lexical option max_words)']
    """

    kind = "graded"
    needs = frozenset({"answers"})

    def __init__(self, *, measure: str = "rouge_l", dedup: bool = True, max_words: int = MAX_WORDS) -> None:
        if measure not in MEASURES:
            raise ValueError(f"unknown lexical measure {measure!r}; choose one of {list(MEASURES)}")
        if isinstance(max_words, bool) or not isinstance(max_words, int) or max_words < 1:
            raise ValueError(f"lexical max_words must be a whole number >= 1, got {max_words!r}")
        super().__init__(dedup=dedup)
        self.measure = measure
        self.max_words = max_words
        self._tokenizer = _WordTokenizer()
        self._rouge = rouge_scorer.RougeScorer(["rougeL"], tokenizer=_WordTokenizer(max_words))

    def truncations(
        self, answers: Sequence[Sequence[str]], anchors: Sequence[str] | None = None
    ) -> list[str | None]:
        """Per question, the answers ROUGE-L reads only in part (longer than ``max_words`` words), or None."""
        if self.measure != "rouge_l":
            return super().truncations(answers, anchors)
        out: list[str | None] = []
        for b, group in enumerate(answers):
            named = [(f"answer {i}", text) for i, text in enumerate(group)]
            named += [("the greedy answer", anchors[b])] if anchors is not None else []
            # a text of at most max_words characters has at most max_words words
            long = [
                (who, n)
                for who, text in named
                if len(text) > self.max_words and (n := _n_words(text)) > self.max_words
            ]
            out.append(
                f"ROUGE-L read the first {self.max_words:,} words of {', '.join(who for who, _ in long)} "
                f"({max(n for _, n in long):,} words at most; lexical option max_words)"
                if long
                else None
            )
        return out

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
        capped = self.measure == "rouge_l" and self.max_words != MAX_WORDS
        return {
            "measure": self.measure,
            **({"max_words": self.max_words} if capped else {}),
            **super()._identity(),
        }
