"""Judges: correctness labels for generated answers, from the question's reference answers.

``get(name, **options)`` builds a registered judge, ``names()`` lists them, and ``register`` or the entry-point group
``semuq_eval.judges`` (:mod:`semuq_eval.registry`) adds one. :func:`label_answers` turns one judge's verdicts into a
label per label strategy (:mod:`~semuq_eval.judges.strategies`: App. D's greedy and majority, and any registered).
Built in: ``string`` (SQuAD-normalized match, ``mode`` contains | em | f1), ``hf`` (a local transformers causal LM,
from its next-token yes/no probabilities) and ``openai`` (an OpenAI-compatible server: yes/no log-probabilities when
returned, else the reply parsed strictly). The LLM judges share prompts (:mod:`~semuq_eval.judges.prompts`), a
verdict cache (:mod:`~semuq_eval.judges.cache`) and de-duplication (:mod:`~semuq_eval.judges.prompted`)."""

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
