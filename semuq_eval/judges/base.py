"""The judge registry: who decides whether a generated answer matches the question's reference answers.

A judge compares an answer with the references, never with its own opinion of the truth (App. D). Judges implement
:class:`Judge` and are chosen by the run setting ``judge`` (``--metadata '{"judge": "string", "judge_options":
{"mode": "em"}}'``). A verdict is True, False or None (undecided: the label is missing, counted and left out of the
metrics, never taken as incorrect), or a :class:`Verdict` that adds the judge's probability, reply and reason."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from semuq_eval.registry import Registry, check_keywords

__all__ = [
    "Judge",
    "Verdict",
    "as_label",
    "as_verdict",
    "check_options",
    "get",
    "names",
    "register",
    "registry",
]


@dataclass(frozen=True)
class Verdict:
    """One judged answer.

    ``label``: True, False or None (unknown: left out of the metrics and counted, never "incorrect");
    ``p_correct``: the judge's probability that the answer matches the references (e.g. from its yes/no logits);
    ``reply``: the judge's raw reply; ``error``: why the label is unknown (unreadable reply, failed request, no
    reference)."""

    label: bool | None
    p_correct: float | None = None
    reply: str | None = None
    error: str | None = None


def as_verdict(value: Verdict | bool | None) -> Verdict:
    """A judge's per-answer result as a :class:`Verdict` (a plain bool or None is shorthand for its label).

    Examples
    --------
    >>> as_verdict(True)
    Verdict(label=True, p_correct=None, reply=None, error=None)
    """
    if isinstance(value, Verdict):
        return value
    if value is None or isinstance(value, bool):
        return Verdict(value)
    import numpy as np

    if isinstance(value, np.bool_):
        return Verdict(bool(value))
    raise TypeError(
        f"a judge returned {value!r} ({type(value).__name__}); expected True, False, None or a Verdict"
    )


def as_label(value: Any) -> int | None:
    """A verdict or label (True / False / 1 / 0 / None) in its stored form: 1, 0 or None (unknown).

    Examples
    --------
    >>> as_label(True), as_label(0), as_label(None)
    (1, 0, None)
    """
    return None if value is None else int(bool(value))


@runtime_checkable
class Judge(Protocol):
    """Decides whether answers match their references, in batches.

    ``batch(questions, answers, references)`` takes a question, an answer and its reference aliases per position
    and returns one verdict per position (True / False / None or a :class:`Verdict`). ``info`` is the judge's
    identity (name, model, revision, prompt and its hash, decoding), written into every breakdown and label set."""

    name: str

    def batch(
        self, questions: Sequence[str], answers: Sequence[str], references: Sequence[Sequence[str]]
    ) -> list[Verdict | bool | None]: ...

    @property
    def info(self) -> dict[str, Any]: ...


def _check(name: str, obj: object) -> type:
    """A loaded judge must be a class whose instances have ``batch`` (:class:`Judge`)."""
    if not (isinstance(obj, type) and callable(getattr(obj, "batch", None))):
        raise TypeError(f"judge {name!r}: {obj!r} is not a judge class (a class with a batch method)")
    return obj


registry: Registry[type] = Registry("judge", group="semuq_eval.judges", check=_check)

for _name, _target in {
    "string": "semuq_eval.judges.string:StringJudge",
    "hf": "semuq_eval.judges.hf:HFJudge",
    "openai": "semuq_eval.judges.openai:OpenAIJudge",
}.items():
    registry.register(_name, _target)


def register(name: str) -> Callable[[type], type]:
    """Class decorator: register a :class:`Judge` class under ``name``; ``get(name, **options)`` builds it.

    An example judge, one file and one registration: CONTRIBUTING.md, "Adding a judge"."""

    def decorate(cls: type) -> type:
        registry.register(name, _check(name, cls))
        return cls

    return decorate


def get(name: str, **options: Any) -> Judge:
    """The judge registered as ``name``, built with ``options`` (KeyError listing the known names; ValueError
    naming an option the judge does not take)."""
    check_options(name, options)
    return registry.get(name)(**options)


def check_options(name: str, options: Mapping[str, Any]) -> None:
    """Refuse options judge ``name`` does not take, without building it (no model loads)."""
    check_keywords(f"judge {name!r}", registry.get(name), options)


names = registry.names
"""Every registered judge name, sorted (installed packages' included)."""
