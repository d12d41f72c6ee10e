"""Label strategies: a question's correctness label from one judge's verdicts on its greedy and N sampled answers.

A strategy is ``(greedy, samples) -> True | False | None`` of the verdict on the greedy answer and those on the
sampled answers (each True, False or None). App. D's two are built in: ``greedy``, the greedy answer's verdict, and
``majority``, the strict majority of the samples' verdicts (missing ones left out; a tie, e.g. 10 vs 10, is
**incorrect**; no verdict at all: missing). Runs label under every registered strategy; ``register`` or the
entry-point group ``semuq_eval.label_strategies`` (:mod:`semuq_eval.registry`) adds one. Every sample's verdict is
kept (``samples``): operator training needs them, and any strategy can be derived from them later."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from semuq_eval.judges.base import Judge, as_verdict
from semuq_eval.registry import Registry

__all__ = [
    "LABEL_STRATEGIES",
    "LabelStrategy",
    "get",
    "label_answers",
    "label_strategy_names",
    "labels_of",
    "majority_label",
    "names",
    "register",
    "registry",
]

LabelStrategy = Callable[[bool | None, Sequence[bool | None]], bool | None]
"""``strategy(greedy, samples)``: the label from the verdict on the greedy answer and those on the samples."""

LABEL_STRATEGIES = ("greedy", "majority")
"""App. D's two strategies, always registered and always listed first (:func:`label_strategy_names`)."""


def _check(name: str, obj: object) -> LabelStrategy:
    """A loaded label strategy must be callable as ``strategy(greedy, samples)``."""
    if not callable(obj) or isinstance(obj, type):
        raise TypeError(f"label strategy {name!r}: {obj!r} is not a function (greedy, samples) -> label")
    return obj


registry: Registry[LabelStrategy] = Registry(
    "label strategy", group="semuq_eval.label_strategies", check=_check
)


def register(name: str) -> Callable[[LabelStrategy], LabelStrategy]:
    """Decorator: register ``strategy(greedy, samples) -> bool | None`` under ``name`` and return it unchanged.

    An example strategy, one file and one registration: CONTRIBUTING.md, "Adding a label strategy"."""

    def decorate(strategy: LabelStrategy) -> LabelStrategy:
        registry.register(name, _check(name, strategy))
        return strategy

    return decorate


get = registry.get
"""The label strategy registered under a name (KeyError listing the known names otherwise)."""


names = registry.names
"""Every registered label strategy name, sorted (installed packages' included)."""


def label_strategy_names() -> list[str]:
    """Every registered label strategy, App. D's ``greedy`` and ``majority`` first, then the others by name: the
    order in which breakdowns, records and leaderboards list them.

    Examples
    --------
    >>> label_strategy_names()[:2]
    ['greedy', 'majority']
    """
    return [*LABEL_STRATEGIES, *(n for n in names() if n not in LABEL_STRATEGIES)]


def majority_label(verdicts: Sequence[bool | None]) -> bool | None:
    """Strict majority of the non-missing verdicts; a tie is incorrect (False); none at all gives None.

    Examples
    --------
    >>> majority_label([True, True, False, None])
    True
    >>> majority_label([True, False])
    False
    >>> majority_label([None]) is None
    True
    """
    judged = [v for v in verdicts if v is not None]
    if not judged:
        return None
    return sum(judged) * 2 > len(judged)


@register("greedy")
def greedy(greedy: bool | None, samples: Sequence[bool | None]) -> bool | None:
    """App. D's greedy label: the verdict on the greedy answer."""
    return greedy


@register("majority")
def majority(greedy: bool | None, samples: Sequence[bool | None]) -> bool | None:
    """App. D's majority label: :func:`majority_label` of the sampled answers' verdicts."""
    return majority_label(samples)


def labels_of(record: Mapping[str, Any]) -> dict[str, bool | None]:
    """Every registered strategy's label of one question's label ``record`` (as :func:`label_answers` returns
    it, or a store's label set): the record's own label where it has one, else the strategy applied to its
    verdicts (``greedy``, the verdict on the greedy answer, and ``samples``)."""
    greedy_verdict, samples = record.get("greedy"), record.get("samples", [])
    return {s: record[s] if s in record else get(s)(greedy_verdict, samples) for s in label_strategy_names()}


def label_answers(
    judge: Judge,
    questions: Sequence[str],
    greedy: Sequence[str],
    samples: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
) -> list[dict[str, Any]]:
    """Every label strategy for many questions, with ONE ``judge.batch`` call over all their answers.

    Returns per question ``{"greedy": bool|None, "majority": bool|None, <each further strategy>: bool|None,
    "samples": [bool|None, ...], "n_missing_verdicts": int}``, plus ``"p_correct": {"greedy": p, "samples": [...]}``
    when the judge gives probabilities and ``"errors": {reason: count}`` when verdicts are unknown. A None label is
    missing (left out of that strategy's metrics, counted)."""
    qs, answers, refs, spans = [], [], [], []
    for question, g, group, ref in zip(questions, greedy, samples, references, strict=True):
        start = len(answers)
        qs += [question] * (1 + len(group))
        answers += [g, *group]
        refs += [ref] * (1 + len(group))
        spans.append((start, len(answers)))
    raw = judge.batch(qs, answers, refs) if answers else []
    if len(raw) != len(answers):
        raise ValueError(f"judge {judge.name} returned {len(raw)} verdicts for {len(answers)} answers")
    verdicts = [as_verdict(v) for v in raw]
    strategies = {s: get(s) for s in names()}
    out = []
    for start, end in spans:
        own = verdicts[start:end]
        labels = [v.label for v in own]
        record: dict[str, Any] = {
            **{s: strategy(labels[0], labels[1:]) for s, strategy in strategies.items()},
            "samples": labels[1:],
            "n_missing_verdicts": sum(v is None for v in labels),
        }
        if any(v.p_correct is not None for v in own):
            record["p_correct"] = {"greedy": own[0].p_correct, "samples": [v.p_correct for v in own[1:]]}
        errors = Counter(v.error for v in own if v.label is None and v.error)
        if errors:
            record["errors"] = dict(errors)
        out.append(record)
    return out
