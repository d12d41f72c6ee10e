"""Judges: correctness labels for generated answers, from the question's reference answers.

``get_judge(name, **options)`` builds the judge registered under ``name``; ``names()`` lists them.
:func:`label_answers` turns one judge's verdicts into the greedy and majority labels of App. D.

=========  ======================================================================
name       judge
=========  ======================================================================
string     SQuAD-normalized string match (``mode``: contains | em | f1)
=========  ======================================================================
"""

from __future__ import annotations

from semuq_eval.judges.base import Judge, get_judge, judge_registry, register_judge
from semuq_eval.judges.strategies import LABEL_STRATEGIES, label_answers, majority_label
from semuq_eval.judges.string import MODES, StringJudge, normalize, token_f1


def names() -> list[str]:
    """The registered judge names."""
    return sorted(judge_registry.keys())


__all__ = [
    "LABEL_STRATEGIES",
    "MODES",
    "Judge",
    "StringJudge",
    "get_judge",
    "judge_registry",
    "label_answers",
    "majority_label",
    "names",
    "normalize",
    "register_judge",
    "token_f1",
]
