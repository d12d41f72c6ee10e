"""Where a reference alias occurs in an answer: character spans under the string judge's normalization.

:func:`alias_spans` finds, in the ORIGINAL text, where the ``contains`` judge sees an alias: character spans
``[start, end)`` of consecutive words (runs of word characters, lowercased, articles skipped) equal to the alias's
normalized words. Occurrences nested inside a longer one are dropped: each span is one mention of one reference.

Examples
--------
>>> [(s.start, s.end, s.alias) for s in alias_spans("It is Paris, France.", ["Paris", "paris france"])]
[(6, 19, 'paris france')]
>>> [m.text for m in alias_spans("The Jamaican English language", ["English", "Jamaican English"])]
['Jamaican English']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from semuq_eval.judges.string import normalize

__all__ = ["AliasSpan", "alias_spans", "last_words", "word_spans"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_ARTICLES = frozenset({"a", "an", "the"})


@dataclass(frozen=True)
class AliasSpan:
    """One mention of a reference alias: ``text[start:end]`` is the mention, ``alias`` the reference string."""

    start: int
    end: int
    alias: str
    text: str


def word_spans(text: str) -> list[tuple[int, int, str]]:
    """The words of ``text`` as ``(start, end, lowercased word)``: runs of letters and digits."""
    return [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(text)]


def last_words(text: str, k: int) -> tuple[str, ...] | None:
    """The last ``k`` words of ``text`` (lowercased, punctuation ignored), or None when it has fewer."""
    words = [w for _, _, w in word_spans(text)]
    return tuple(words[-k:]) if len(words) >= k else None


def alias_spans(text: str, references: Sequence[str]) -> list[AliasSpan]:
    """Every non-nested mention of any alias in ``text`` (module docstring), sorted by position.

    ``references`` are the aliases; overlapping mentions of different aliases are both kept."""
    words = [w for w in word_spans(text) if w[2] not in _ARTICLES]
    tokens = [w for _, _, w in words]
    found: dict[tuple[int, int], str] = {}
    for alias in references:
        if not isinstance(alias, str):
            continue
        target = normalize(alias).split()
        if not target:
            continue
        k = len(target)
        for i in range(len(tokens) - k + 1):
            if tokens[i : i + k] == target:
                span = (words[i][0], words[i + k - 1][1])
                if span not in found or len(alias) > len(found[span]):
                    found[span] = alias
    spans = sorted(found, key=lambda s: (s[0], -s[1]))
    kept = [s for s in spans if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in spans)]
    return [AliasSpan(s, e, found[(s, e)], text[s:e]) for s, e in kept]
