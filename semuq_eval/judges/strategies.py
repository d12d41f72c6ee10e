"""The two label strategies of App. D, from any judge's verdicts: ``greedy`` and ``majority``.

``greedy`` is the verdict on the greedy answer. ``majority`` is the strict majority of the verdicts on the N
sampled answers: missing verdicts are left out of the vote, a tie (e.g. 10 correct, 10 incorrect) is
**incorrect**, and no verdict at all gives a missing label. Both use the same judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from semuq_eval.judges.base import Judge

__all__ = ["LABEL_STRATEGIES", "label_answers", "majority_label"]

LABEL_STRATEGIES = ("greedy", "majority")


def majority_label(verdicts: Sequence[bool | None]) -> bool | None:
    """Strict majority of the non-missing verdicts; a tie is incorrect (False); none at all gives None.

    Examples
    --------
    >>> majority_label([True, True, False, None])
    True
    >>> majority_label([True, False])
    False
    >>> majority_label([None]) is None
    True
    """
    judged = [v for v in verdicts if v is not None]
    if not judged:
        return None
    return sum(judged) * 2 > len(judged)


def label_answers(
    judge: Judge,
    questions: Sequence[str],
    greedy: Sequence[str],
    samples: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
) -> list[dict[str, Any]]:
    """Both label strategies for many questions, with ONE ``judge.batch`` call over all their answers.

    Returns, per question, ``{"greedy": bool|None, "majority": bool|None, "sample_verdicts": [...],
    "n_missing_verdicts": int}``; a None label is missing (left out of that strategy's metrics, counted).
    """
    qs, answers, refs, spans = [], [], [], []
    for question, g, group, ref in zip(questions, greedy, samples, references, strict=True):
        start = len(answers)
        qs += [question] * (1 + len(group))
        answers += [g, *group]
        refs += [ref] * (1 + len(group))
        spans.append((start, len(answers)))
    verdicts = judge.batch(qs, answers, refs) if answers else []
    if len(verdicts) != len(answers):
        raise ValueError(f"judge {judge.name} returned {len(verdicts)} verdicts for {len(answers)} answers")
    out = []
    for start, end in spans:
        own = verdicts[start:end]
        out.append(
            {
                "greedy": own[0],
                "majority": majority_label(own[1:]),
                "sample_verdicts": own[1:],
                "n_missing_verdicts": sum(v is None for v in own),
            }
        )
    return out
