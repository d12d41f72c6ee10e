"""The signals an estimator reads besides its comparison matrix: one declaration each, read by the aggregators
(``inputs``), the operators (``extras``) and the pipeline. ``origin`` says where one comes from: ``"answers"``, the
generating model's answers (:meth:`semuq_eval.harness.doc.Doc.signal`); ``"pass"``, an operator's own pass
(``greedy_similarities``); ``"tokens"``, the operator's method of that name on the greedy answers' tokens, called when
an estimator reads it. A plugin declares its extra (:func:`declare`) before registering its operator.

Examples
--------
>>> SIGNALS["token_weights"].origin
'tokens'
>>> names(origin="answers")[:2]
['seq_logprobs', 'seq_lengths']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ORIGINS", "SIGNALS", "Signal", "declare", "names"]

Origin = Literal["answers", "pass", "tokens"]
ORIGINS: tuple[str, ...] = ("answers", "pass", "tokens")


@dataclass(frozen=True)
class Signal:
    """A signal: its name, what it holds and where it comes from (module docstring)."""

    name: str
    description: str
    origin: Origin


SIGNALS: dict[str, Signal] = {}
"""Every declared signal by name (the built-in ones below, then those plugins declare)."""


def declare(name: str, description: str, *, origin: Origin) -> Signal:
    """Declare signal ``name`` (again with the same description and origin is a no-op; otherwise ValueError).

    Examples
    --------
    >>> declare("my_weights", "(T,) my weights on the greedy answer's tokens", origin="tokens").origin
    'tokens'
    >>> declare("my_weights", "other", origin="pass")
    Traceback (most recent call last):
    ...
    ValueError: signal 'my_weights' is already declared as ...
    >>> del SIGNALS["my_weights"]
    """
    if origin not in ORIGINS:
        raise ValueError(f"signal {name!r}: origin must be one of {list(ORIGINS)}, got {origin!r}")
    signal = Signal(name, description, origin)
    known = SIGNALS.setdefault(name, signal)
    if known != signal:
        raise ValueError(f"signal {name!r} is already declared as {known}")
    return known


def names(*, origin: Origin | None = None) -> list[str]:
    """The declared signals (of one origin), in declaration order."""
    return [s.name for s in SIGNALS.values() if origin is None or s.origin == origin]


for _name, _description in (
    ("seq_logprobs", "(N,) sequence log-probabilities log p(y_i | x) of the sampled answers"),
    ("seq_lengths", "(N,) lengths in tokens of the sampled answers"),
    ("token_entropies", "(T,) entropies of the greedy answer's next-token distributions"),
    ("token_logprobs", "(T,) log-probabilities of the greedy answer's tokens"),
    ("token_ids", "(T,) the greedy answer's token ids"),
    (
        "p_true_logprobs",
        "(2,) log mass of the True-ish and False-ish first tokens of the P(True) follow-up (setting reflexive; "
        "-inf: no mass)",
    ),
    (
        "verbalized_confidence",
        "the confidence c in [0, 100] stated in the verbalized follow-up (setting reflexive)",
    ),
):
    declare(_name, _description, origin="answers")
declare(
    "greedy_similarities",
    "(N,) s(greedy, y_i | x): the greedy answer compared with each sample, in the operator's pass "
    "(``op(questions, answers, anchors=greedy_answers)``)",
    origin="pass",
)
declare(
    "token_weights",
    "(T,) weights on the greedy answer's tokens (``token_weights(questions, answers, offsets)``)",
    origin="tokens",
)
declare(
    "token_similarity",
    "(T,) s(y, y without token t) of the greedy answer with each of its tokens cut out "
    "(``token_similarity(questions, answers, offsets)``; TokenSAR's relevance)",
    origin="tokens",
)
