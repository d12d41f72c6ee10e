"""Judges: correctness labels for generated answers, from the question's reference answers.

``get_judge(name, **options)`` builds the judge registered under ``name``; ``names()`` lists them.
:func:`label_answers` turns one judge's verdicts into the greedy and majority labels of App. D.

=========  ======================================================================================
name       judge
=========  ======================================================================================
string     SQuAD-normalized string match (``mode``: contains | em | f1)
hf         a local transformers causal LM; the verdict from its next-token yes/no probabilities
openai     any OpenAI-compatible server (vLLM, llama.cpp, TGI, OpenAI); yes/no log-probabilities
           when returned, else the reply parsed strictly
=========  ======================================================================================

The LLM judges share prompts (:mod:`~semuq_eval.judges.prompts`), a persistent verdict cache
(:mod:`~semuq_eval.judges.cache`) and de-duplication (:mod:`~semuq_eval.judges.prompted`).
"""

from __future__ import annotations

from semuq_eval.judges.base import Judge, Verdict, as_verdict, get_judge, judge_registry, register_judge
from semuq_eval.judges.hf import HFJudge
from semuq_eval.judges.openai import OpenAIJudge
from semuq_eval.judges.strategies import LABEL_STRATEGIES, label_answers, majority_label
from semuq_eval.judges.string import MODES, StringJudge, normalize, token_f1


def names() -> list[str]:
    """The registered judge names."""
    return sorted(judge_registry.keys())


__all__ = [
    "LABEL_STRATEGIES",
    "MODES",
    "HFJudge",
    "Judge",
    "OpenAIJudge",
    "StringJudge",
    "Verdict",
    "as_verdict",
    "get_judge",
    "judge_registry",
    "label_answers",
    "majority_label",
    "names",
    "normalize",
    "register_judge",
    "token_f1",
]
