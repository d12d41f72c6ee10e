"""Comparison operators: a question and its N answers -> an N x N matrix S (paper Eq. operator_S).

``get(name, **options)`` builds the operator registered under ``name``; ``names()`` lists them.
Registration is lazy ("module:Class" targets), so importing this package loads neither torch
nor transformers; models load on an operator's first call, once per process.

===========  ===========  ==========================================================
name         kind         matrix
===========  ===========  ==========================================================
nli          equivalence  NLI entailment in both directions (Eq. S_nli), or a named rule
nli_soft     graded       NLI entailment probability, mean of both directions
cos_ext      gram         cosine of an external sentence encoder's answer embeddings
cos_int      gram         cosine of the generating model's hidden states
enc          gram         question-conditioned bi-encoder (Eq. encoder, Eq. operator_cosine)
lexical      graded       ROUGE-L F (or Jaccard) between answers, no model
===========  ===========  ==========================================================
"""

from __future__ import annotations

from lm_eval.api.registry import Registry

from semuq_eval.operators.base import Cost, Operator, OperatorOutput, normalize_answer

__all__ = [
    "Cost",
    "Operator",
    "OperatorOutput",
    "get",
    "names",
    "normalize_answer",
    "operator_registry",
    "register_operator",
]

operator_registry: Registry[type[Operator]] = Registry("operator", base_cls=Operator)

for _name, _target in {
    "nli": "semuq_eval.operators.nli:NLIOperator",
    "nli_soft": "semuq_eval.operators.nli:NLISoftOperator",
    "cos_ext": "semuq_eval.operators.encoder:ExternalCosineOperator",
    "cos_int": "semuq_eval.operators.hidden:HiddenStateCosineOperator",
    "enc": "semuq_eval.operators.encoder:EncoderOperator",
    "lexical": "semuq_eval.operators.lexical:LexicalOperator",
}.items():
    operator_registry.register(_name, target=_target)


def register_operator(name: str):
    """Class decorator: register an :class:`Operator` subclass under ``name`` (the name users type).

    Examples
    --------
    See ``tests/examples/word_overlap_operator.py`` and CONTRIBUTING.md ("Adding an operator").
    """

    def decorate(cls: type[Operator]) -> type[Operator]:
        operator_registry.register(name, target=cls)
        return cls

    return decorate


def get(name: str, **options) -> Operator:
    """Instantiate the operator registered as ``name`` with ``options`` (no model loads yet)."""
    return operator_registry.get(name)(**options)


def names() -> list[str]:
    """The registered operator names."""
    return sorted(operator_registry.keys())
