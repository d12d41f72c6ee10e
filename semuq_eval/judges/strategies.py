"""The two label strategies of App. D, from any judge's verdicts: ``greedy`` and ``majority``.

``greedy`` is the verdict on the greedy answer. ``majority`` is the strict majority of the verdicts on the N
sampled answers: missing verdicts are left out of the vote, a tie (e.g. 10 correct, 10 incorrect) is
**incorrect**, and no verdict at all gives a missing label. Both use the same judge, and the verdict on every
sampled answer is kept (``samples``): training an operator needs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from semuq_eval.judges.base import Judge, as_verdict

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

    Returns, per question, ``{"greedy": bool|None, "majority": bool|None, "samples": [bool|None, ...],
    "n_missing_verdicts": int}``, plus ``"p_correct": {"greedy": p, "samples": [...]}`` when the judge gives
    probabilities and ``"errors": {reason: count}`` when some verdicts are unknown. A None label is missing
    (left out of that strategy's metrics, counted).
    """
    qs, answers, refs, spans = [], [], [], []
    for question, g, group, ref in zip(questions, greedy, samples, references, strict=True):
        start = len(answers)
        qs += [question] * (1 + len(group))
        answers += [g, *group]
        refs += [ref] * (1 + len(group))
        spans.append((start, len(answers)))
    raw = judge.batch(qs, answers, refs) if answers else []
    if len(raw) != len(answers):
        raise ValueError(f"judge {judge.name} returned {len(raw)} verdicts for {len(answers)} answers")
    verdicts = [as_verdict(v) for v in raw]
    out = []
    for start, end in spans:
        own = verdicts[start:end]
        labels = [v.label for v in own]
        record: dict[str, Any] = {
            "greedy": labels[0],
            "majority": majority_label(labels[1:]),
            "samples": labels[1:],
            "n_missing_verdicts": sum(v is None for v in labels),
        }
        if any(v.p_correct is not None for v in own):
            record["p_correct"] = {"greedy": own[0].p_correct, "samples": [v.p_correct for v in own[1:]]}
        errors: dict[str, int] = {}
        for v in own:
            if v.label is None and v.error:
                errors[v.error] = errors.get(v.error, 0) + 1
        if errors:
            record["errors"] = errors
        out.append(record)
    return out
