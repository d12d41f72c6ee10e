"""Comparison operators: a question and its N answers -> an N x N matrix S (paper Eq. operator_S).

``get(name, **options)``, ``names()`` and ``register`` work the registry (also fed by the entry-point group
``semuq_eval.operators``). A **named variant** (:func:`resolve`) runs a registered operator under a name and
options of its own, e.g. a trained ``enc`` beside the untrained backbone, its estimators called
``cae@<variant>`` etc. Built-ins register lazily ("module:Class"): importing this package loads neither torch
nor transformers.

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

import re
from collections.abc import Mapping
from typing import Any

from semuq_eval import signals
from semuq_eval.operators.base import Cost, Operator, OperatorOutput, normalize_answer
from semuq_eval.registry import Registry

__all__ = [
    "Cost",
    "Operator",
    "OperatorOutput",
    "VARIANT_KEY",
    "UnknownOperatorError",
    "get",
    "names",
    "normalize_answer",
    "register",
    "registry",
    "resolve",
]


def _check(name: str, obj: object) -> type[Operator]:
    """A loaded operator must be an :class:`Operator` subclass whose extras are declared operator signals."""
    if not (isinstance(obj, type) and issubclass(obj, Operator)):
        raise TypeError(f"operator {name!r}: {obj!r} is not a subclass of semuq_eval.operators.Operator")
    yielded = signals.names(origin="pass") + signals.names(origin="tokens")
    undeclared = [x for x in obj.extras if x not in yielded]
    if undeclared:
        raise TypeError(
            f"operator {name!r}: extras {undeclared} are not declared operator signals ({yielded}); declare each "
            "first with semuq_eval.signals.declare(name, description, origin='tokens')"
        )
    return obj


registry: Registry[type[Operator]] = Registry("operator", group="semuq_eval.operators", check=_check)

for _name, _target in {
    "nli": "semuq_eval.operators.nli:NLIOperator",
    "nli_soft": "semuq_eval.operators.nli:NLISoftOperator",
    "cos_ext": "semuq_eval.operators.encoder:ExternalCosineOperator",
    "cos_int": "semuq_eval.operators.hidden:HiddenStateCosineOperator",
    "enc": "semuq_eval.operators.encoder:EncoderOperator",
    "lexical": "semuq_eval.operators.lexical:LexicalOperator",
}.items():
    registry.register(_name, _target)


def register(name: str):
    """Class decorator: register an :class:`Operator` subclass under ``name`` (the name users type).

    Examples
    --------
    See ``tests/examples/word_overlap_operator.py`` and CONTRIBUTING.md ("Adding an operator").
    """

    def decorate(cls: type[Operator]) -> type[Operator]:
        registry.register(name, _check(name, cls))
        return cls

    return decorate


class UnknownOperatorError(KeyError, ValueError):
    """An operator name that is neither registered nor a named variant: a KeyError (as the registry's lookups
    raise) and a ValueError (as settings errors are), with a plain message."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


VARIANT_KEY = "operator"
"""The option that makes an operator name a named variant of the registered operator it gives."""

_VARIANT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def resolve(name: str, options: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """The registered operator behind ``name`` and its keyword options.

    ``name`` is a registered operator, or a named variant whose ``options`` give the registered one under
    ``"operator"`` (the rest are its options). Raises ValueError naming what is wrong.

    Examples
    --------
    >>> resolve("lexical")
    ('lexical', {})
    >>> resolve("enc_nq", {"operator": "enc", "model": "ops/enc-nq"})
    ('enc', {'model': 'ops/enc-nq'})
    """
    options = dict(options or {})
    base = options.pop(VARIANT_KEY, None)
    known = names()
    if base is None:
        if name not in known:
            raise UnknownOperatorError(
                f"Unknown operator {name!r}; known: {known} (a named variant needs the option "
                f'{{"{VARIANT_KEY}": <one of them>}})'
            )
        return name, options
    if base not in known:
        raise ValueError(
            f"operator variant {name!r}: {VARIANT_KEY}={base!r} is not registered; known: {known}"
        )
    if name in known and name != base:
        raise ValueError(f"operator variant {name!r} shadows the registered operator of that name")
    if not _VARIANT_NAME.fullmatch(name):
        raise ValueError(
            f"operator variant name {name!r}: use letters, digits and underscores, starting with a letter"
        )
    return base, options


def get(name: str, **options) -> Operator:
    """Instantiate operator ``name`` (registered, or a named variant: :func:`resolve`) with ``options``
    (no model loads yet)."""
    base, kwargs = resolve(name, options)
    return registry.get(base)(**kwargs)


names = registry.names
"""Every registered operator name, sorted (installed packages' included; named variants are not)."""
