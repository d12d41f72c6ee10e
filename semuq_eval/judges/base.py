"""The judge registry: who decides whether a generated answer matches the question's reference answers.

A judge compares an answer with the references (the ground truth); it never grades the answer on its own
opinion of the truth (App. D). Every judge implements :class:`Judge` and is registered under the name users
type in the run setting ``judge`` (``--metadata '{"judge": "string", "judge_options": {"mode": "em"}}'``).
A verdict is True (correct), False (incorrect) or None (the judge could not decide: the label is missing,
counted, and left out of the metrics, never taken as incorrect). A judge that knows more returns
:class:`Verdict` objects instead: the label with the judge's probability that the answer is correct, its raw
reply and, for a missing label, the reason.
"""

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

    Parameters
    ----------
    label : bool or None
        Correct, incorrect, or None: unknown (left out of the metrics and counted, never "incorrect").
    p_correct : float, optional
        The judge's probability that the answer matches the references (e.g. from its yes/no logits).
    reply : str, optional
        The judge's raw reply, kept for an unreadable one.
    error : str, optional
        Why the label is unknown (unreadable reply, request failed after its retries, no reference).
    """

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

    ``batch(questions, answers, references)`` gets one question, one answer and that question's reference
    aliases per position, and returns one verdict per position: True / False / None, or a :class:`Verdict`
    carrying a probability and the raw reply. ``info`` is the judge's identity (name, model and revision,
    prompt and its hash, decoding, ...) written into every breakdown and label set.
    """

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

    Examples
    --------
    A judge that takes an answer as correct when it names the first alias verbatim::

        @register("verbatim")
        class VerbatimJudge:
            name = "verbatim"
            info = {"judge": "verbatim"}

            def batch(self, questions, answers, references):
                return [bool(refs) and refs[0] in answer for answer, refs in zip(answers, references)]
    """

    def decorate(cls: type) -> type:
        registry.register(name, _check(name, cls))
        return cls

    return decorate


def get(name: str, **options: Any) -> Judge:
    """The judge registered as ``name``, built with ``options`` (KeyError listing the known names; ValueError
    naming an option the judge does not take)."""
    cls = registry.get(name)
    check_keywords(f"judge {name!r}", cls, options)
    return cls(**options)


def check_options(name: str, options: Mapping[str, Any]) -> None:
    """Refuse options judge ``name`` does not take, without building it (no model loads)."""
    check_keywords(f"judge {name!r}", registry.get(name), options)


names = registry.names
"""Every registered judge name, sorted (installed packages' included)."""
