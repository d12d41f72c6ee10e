"""The judge registry: who decides whether a generated answer matches the question's reference answers.

A judge compares an answer with the references (the ground truth); it never grades the answer on its own
opinion of the truth (App. D). Every judge implements :class:`Judge` and is registered under the name users
type in the run setting ``judge`` (``--metadata '{"judge": "string", "judge_options": {"mode": "em"}}'``).
A verdict is True (correct), False (incorrect) or None (the judge could not decide: the label is missing,
counted, and left out of the metrics, never taken as incorrect).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from lm_eval.api.registry import Registry

__all__ = ["Judge", "get_judge", "judge_registry", "register_judge"]


@runtime_checkable
class Judge(Protocol):
    """Decides whether answers match their references, in batches.

    ``batch(questions, answers, references)`` gets one question, one answer and that question's reference
    aliases per position, and returns one verdict (True / False / None) per position. ``info`` is the
    judge's identity (name, model, prompt, mode, ...) written into every breakdown.
    """

    name: str

    def batch(
        self, questions: Sequence[str], answers: Sequence[str], references: Sequence[Sequence[str]]
    ) -> list[bool | None]: ...

    @property
    def info(self) -> dict[str, Any]: ...


judge_registry: Registry[Any] = Registry("judge")


def register_judge(name: str) -> Callable[[type], type]:
    """Class decorator: register a :class:`Judge` class under ``name``; ``get_judge(name, **options)`` builds it.

    Examples
    --------
    A judge that takes an answer as correct when it names the first alias verbatim::

        @register_judge("verbatim")
        class VerbatimJudge:
            name = "verbatim"
            info = {"judge": "verbatim"}

            def batch(self, questions, answers, references):
                return [bool(refs) and refs[0] in answer for answer, refs in zip(answers, references)]
    """

    def decorate(cls: type) -> type:
        judge_registry.register(name, target=cls)
        return cls

    return decorate


def get_judge(name: str, **options: Any) -> Judge:
    """The judge registered as ``name``, built with ``options`` (KeyError listing the known names)."""
    try:
        cls = judge_registry.get(name)
    except KeyError:
        raise KeyError(f"unknown judge {name!r}; known judges: {sorted(judge_registry.keys())}") from None
    return cls(**options)
