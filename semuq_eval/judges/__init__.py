"""Judges: correctness labels for generated answers, from the question's reference answers.

``get(name, **options)`` builds the judge registered under ``name``; ``names()`` lists them; ``register`` adds
one, and an installed package adds one through the entry-point group ``semuq_eval.judges``
(:mod:`semuq_eval.registry`). :func:`label_answers` turns one judge's verdicts into a label per label strategy
(:mod:`~semuq_eval.judges.strategies`, a registry of its own: the greedy and majority labels of App. D and any
registered further).

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

from semuq_eval.judges.base import (
    Judge,
    Verdict,
    as_label,
    as_verdict,
    check_options,
    get,
    names,
    register,
    registry,
)
from semuq_eval.judges.strategies import LABEL_STRATEGIES, label_answers, label_strategy_names, majority_label
from semuq_eval.judges.string import MODES, StringJudge, normalize, token_f1

__all__ = [
    "LABEL_STRATEGIES",
    "MODES",
    "Judge",
    "StringJudge",
    "Verdict",
    "as_label",
    "as_verdict",
    "check_options",
    "get",
    "label_answers",
    "label_strategy_names",
    "majority_label",
    "names",
    "normalize",
    "register",
    "registry",
    "token_f1",
]
