"""Triplets from the generating LLM's own answers, exactly as App. C of the paper.

For each question the sampled answers split by their verdicts into a correct set P and an incorrect set N (unknown
verdicts and empty answers are in neither); a question is kept only when ``|P| >= 2`` and ``|N| >= 1``. Every
epoch, each kept training question contributes ONE triplet, drawn anew:

    anchor ~ P,   positive ~ P \\ {anchor},   negative ~ N        (same question for all three)

The question is prepended to each text by ``enc``'s own formatting (:func:`semuq_eval.operators.encoder.format_input`,
passed as ``format_fn``). Ablations (App. A, Tab. "Hard negatives matter"): ``negatives="random"`` draws the
negative from ANOTHER training question's answers (still with the anchor's question); ``negatives="none"`` yields
(anchor, positive) pairs for a cosine-similarity loss with target 1. The validation split is by question (all
stores' copies of one question on the same side); validation triplets are drawn once, with hard negatives whatever
the ablation, so every ablation is selected on the same metric.

Examples
--------
>>> from semuq_eval.harness.doc import Doc
>>> qs = [LabelledQuestion("s", Doc.of_texts(f"q{i}?", ("a", "b", "c"), doc_id=i), (1, 1, 0)) for i in range(4)]
>>> kept, counts = filter_questions(qs)
>>> counts["kept"], len(kept[0].positives), len(kept[0].negatives)
(4, 2, 1)
>>> sampler = TripletSampler(kept, seed=0, format_fn=lambda q, a: f"{q} | {a}")
>>> sampler.epoch_rows(0)[0]["negative"]
'q0? | c'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from semuq_eval.training.mining import style_of
from semuq_eval.training.stores import LabelledQuestion

__all__ = [
    "NEGATIVES",
    "Drawn",
    "FormatFn",
    "TrainingQuestion",
    "TripletSampler",
    "filter_questions",
    "split_by_question",
    "validation_triplets",
]

NEGATIVES = ("hard", "random", "none")
"""Where negatives come from: the same question's incorrect answers (the paper), another question's answers,
or no negatives at all (positive pairs only)."""

FormatFn = Callable[[str, str], str]
"""(question, answer) -> the encoder input text."""


@dataclass(frozen=True)
class TrainingQuestion:
    """A kept question: the indices (into ``source.answers``) of its correct and incorrect samples."""

    source: LabelledQuestion
    positives: tuple[int, ...]
    negatives: tuple[int, ...]

    def style(self, index: int) -> str:
        """The style of answer ``index`` (:func:`semuq_eval.training.mining.style_of` of its origin)."""
        return style_of(self.source.origin(index))

    @property
    def one_style(self) -> bool:
        """Whether every answer reads alike (App. C's samples only): no style matching is needed."""
        return len({self.style(i) for i in (*self.positives, *self.negatives)}) <= 1

    def matchable(self) -> tuple[int, ...]:
        """The positives that have a negative of their own style (the only ones a triplet may use as its
        positive, so that style never separates the positive from the negative)."""
        styles = {self.style(i) for i in self.negatives}
        return tuple(i for i in self.positives if self.style(i) in styles)

    @property
    def question(self) -> str:
        return self.source.question

    def answer(self, index: int) -> str:
        """The sampled answer at stored position ``index``."""
        return self.source.answers[index]


def filter_questions(questions: Sequence[LabelledQuestion]) -> tuple[list[TrainingQuestion], dict[str, int]]:
    """The questions usable for triplets (``|P| >= 2`` and ``|N| >= 1``) and the counts behind the choice.

    Counts: ``seen``, ``kept``, ``fewer_than_2_correct``, ``no_incorrect`` (with at least 2 correct),
    ``no_negative_in_style`` (mined texts only: no positive has a negative written in its style),
    ``unknown_verdicts`` and ``empty_answers`` (sampled answers left out of P and N).

    Examples
    --------
    >>> from semuq_eval.harness.doc import Doc
    >>> qs = [LabelledQuestion("s", Doc.of_texts("q?", ("a", "a", ""), doc_id=0), (1, 1, 0)),
    ...       LabelledQuestion("s", Doc.of_texts("r?", ("x", "y", "z"), doc_id=1), (1, 0, None))]
    >>> kept, counts = filter_questions(qs)
    >>> len(kept), counts["no_incorrect"], counts["fewer_than_2_correct"], counts["empty_answers"]
    (0, 1, 1, 1)
    """
    left_out = ("fewer_than_2_correct", "no_incorrect", "no_negative_in_style")
    counts = dict.fromkeys(("seen", "kept", *left_out, "unknown_verdicts", "empty_answers"), 0)
    kept = []
    for q in questions:
        counts["seen"] += 1
        pos, neg = [], []
        for i, (answer, label) in enumerate(zip(q.answers, q.labels, strict=True)):
            if not answer.strip() or label is None:
                counts["empty_answers" if not answer.strip() else "unknown_verdicts"] += 1
            else:
                (pos if label else neg).append(i)
        candidate = TrainingQuestion(q, tuple(pos), tuple(neg))
        failed = (len(pos) < 2, not neg, not candidate.matchable())  # in the order of left_out
        reason = next((r for r, fails in zip(left_out, failed, strict=True) if fails), "kept")
        counts[reason] += 1
        if reason == "kept":
            kept.append(candidate)
    return kept, counts


def split_by_question(
    questions: Sequence[TrainingQuestion], val_fraction: float, seed: int
) -> tuple[list[TrainingQuestion], list[TrainingQuestion]]:
    """(train, validation): the distinct questions (:func:`~semuq_eval.training.stores.question_key`) are
    shuffled with ``seed`` and ``round(val_fraction * n)`` of them (at least 1) go to validation, every copy
    of a question (several stores may hold it) on the same side. Order within each side follows the input.
    Raises ValueError with fewer than 2 distinct questions, or a fraction outside (0, 1).

    Examples
    --------
    >>> from semuq_eval.harness.doc import Doc
    >>> docs = [Doc.of_texts(f"q{i % 5}", ("a", "b", "c"), doc_id=i) for i in range(10)]
    >>> qs = [TrainingQuestion(LabelledQuestion("s", d, (1, 1, 0)), (0, 1), (2,)) for d in docs]
    >>> train, val = split_by_question(qs, 0.2, seed=0)
    >>> len(train), len(val), {q.source.key for q in train} & {q.source.key for q in val}
    (8, 2, set())
    """
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    keys = sorted({q.source.key for q in questions})
    if len(keys) < 2:
        raise ValueError(
            f"{len(keys)} distinct question(s): at least 2 are needed (one to train, one to validate)"
        )
    n_val = min(len(keys) - 1, max(1, round(val_fraction * len(keys))))
    order = np.random.default_rng([seed, 0x5EED]).permutation(len(keys))
    val_keys = {keys[i] for i in order[:n_val]}
    train = [q for q in questions if q.source.key not in val_keys]
    val = [q for q in questions if q.source.key in val_keys]
    return train, val


@dataclass(frozen=True)
class Drawn:
    """One drawn triplet: the question's position in the sampler, and the stored answer positions of the
    anchor, positive and negative; ``negative_question`` is the negative's question (None without negatives)."""

    question: int
    anchor: int
    positive: int
    negative: int | None
    negative_question: int | None


def _pick(rng: np.random.Generator, items: Sequence[int]) -> int:
    """One of ``items``, drawn uniformly."""
    return items[int(rng.integers(len(items)))]


def _draw_hard(q: TrainingQuestion, qi: int, rng: np.random.Generator) -> Drawn:
    """anchor ~ P, positive ~ P minus the anchor, negative ~ N (App. C). With mined texts of several styles the
    positive is drawn first among those with a negative of their style, the negative in that style, and the
    anchor among the other positives (any style)."""
    if q.one_style:
        a, p = rng.choice(len(q.positives), size=2, replace=False)
        return Drawn(qi, q.positives[a], q.positives[p], _pick(rng, q.negatives), qi)
    positive = _pick(rng, q.matchable())
    anchors = [i for i in q.positives if i != positive]
    same = [i for i in q.negatives if q.style(i) == q.style(positive)]
    return Drawn(qi, _pick(rng, anchors), positive, _pick(rng, same), qi)


class TripletSampler:
    """Per-epoch triplets of the training questions (App. C), reproducible from ``(seed, epoch)``.

    Epoch ``e`` draws with ``numpy.random.default_rng([seed, e])``; ``format_fn`` is ``enc``'s input formatting
    (:data:`FormatFn`); ``negatives`` is one of :data:`NEGATIVES` (module docstring).

    Examples
    --------
    >>> from semuq_eval.harness.doc import Doc
    >>> docs = [Doc.of_texts(f"q{i}?", ("a", "b", "c", "d"), doc_id=i) for i in range(3)]
    >>> qs = [TrainingQuestion(LabelledQuestion("s", d, (1, 1, 1, 0)), (0, 1, 2), (3,)) for d in docs]
    >>> s = TripletSampler(qs, seed=1, format_fn=lambda q, a: a)
    >>> len(s.epoch_rows(0)), sorted(s.epoch_rows(0)[0])
    (3, ['anchor', 'negative', 'positive'])
    >>> TripletSampler(qs, seed=1, format_fn=lambda q, a: a, negatives="none").epoch_rows(0)[0]["label"]
    1.0
    """

    def __init__(
        self,
        questions: Sequence[TrainingQuestion],
        *,
        seed: int,
        format_fn: FormatFn,
        negatives: Literal["hard", "random", "none"] = "hard",
    ) -> None:
        if negatives not in NEGATIVES:
            raise ValueError(f"negatives must be one of {NEGATIVES}, got {negatives!r}")
        if negatives == "random" and len({q.source.key for q in questions}) < 2:
            raise ValueError("random negatives need at least 2 distinct training questions")
        self.questions = list(questions)
        self.seed = int(seed)
        self.format_fn = format_fn
        self.negatives = negatives
        self._cache: dict[int, list[Drawn]] = {}

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns of a row, in the order the loss reads them."""
        return ("anchor", "positive", "label" if self.negatives == "none" else "negative")

    def draw(self, epoch: int) -> list[Drawn]:
        """Epoch ``epoch``'s triplets: one per training question, in question order."""
        if epoch not in self._cache:
            rng = np.random.default_rng([self.seed, int(epoch)])
            drawn = [self._draw(qi, q, rng) for qi, q in enumerate(self.questions)]
            self._cache = {epoch: drawn}  # only the current epoch is kept
        return self._cache[epoch]

    def _draw(self, qi: int, q: TrainingQuestion, rng: np.random.Generator) -> Drawn:
        """Question ``qi``'s triplet of the epoch that ``rng`` draws, as :attr:`negatives` asks."""
        if self.negatives == "hard":
            return _draw_hard(q, qi, rng)
        a, p = rng.choice(len(q.positives), size=2, replace=False)
        if self.negatives == "none":
            return Drawn(qi, q.positives[a], q.positives[p], None, None)
        other = int(rng.integers(len(self.questions) - 1))
        other += other >= qi  # uniform over the other questions
        while self.questions[other].source.key == q.source.key:  # the same question from another store
            other = int(rng.integers(len(self.questions)))
        pool = (*self.questions[other].positives, *self.questions[other].negatives)
        return Drawn(qi, q.positives[a], q.positives[p], _pick(rng, pool), other)

    def epoch_rows(self, epoch: int) -> list[dict[str, Any]]:
        """Epoch ``epoch``'s triplets as formatted rows (see :attr:`columns`)."""
        return [self.row(d) for d in self.draw(epoch)]

    def row(self, d: Drawn) -> dict[str, Any]:
        """One drawn triplet as encoder inputs; every text carries the anchor's question."""
        q = self.questions[d.question]
        texts = {"anchor": (q, d.anchor), "positive": (q, d.positive)}
        if d.negative is not None:
            texts["negative"] = (self.questions[d.negative_question], d.negative)
        row = {col: self.format_fn(q.question, of.answer(i)) for col, (of, i) in texts.items()}
        return row if d.negative is not None else {**row, "label": 1.0}


def validation_triplets(
    questions: Sequence[TrainingQuestion], *, seed: int, format_fn: FormatFn, per_question: int = 1
) -> tuple[list[str], list[str], list[str]]:
    """(anchors, positives, negatives): ``per_question`` distinct hard-negative triplets per validation
    question (fewer when it has fewer), drawn once with ``seed``, so the evaluator compares the same triplets
    after every epoch; more than one steadies early stopping when few questions are held out.

    Examples
    --------
    >>> from semuq_eval.harness.doc import Doc
    >>> q = TrainingQuestion(LabelledQuestion("s", Doc.of_texts("q?", ("a", "b", "c")), (1, 1, 0)), (0, 1), (2,))
    >>> validation_triplets([q], seed=0, format_fn=lambda q, a: a, per_question=5)
    (['b', 'a'], ['a', 'b'], ['c', 'c'])
    """
    if per_question < 1:
        raise ValueError(f"per_question must be at least 1, got {per_question}")
    rng = np.random.default_rng([seed, 0xE7A1])
    anchors, positives, negatives = [], [], []
    for qi, q in enumerate(questions):
        n_distinct = sum(
            (len(q.positives) - 1) * sum(q.style(n) == q.style(p) for n in q.negatives) for p in q.matchable()
        )
        seen: set[tuple[int, int, int]] = set()
        while len(seen) < min(per_question, n_distinct):
            d = _draw_hard(q, qi, rng)
            if (key := (d.anchor, d.positive, d.negative)) not in seen:
                seen.add(key)
                for texts, i in zip((anchors, positives, negatives), key, strict=True):
                    texts.append(format_fn(q.question, q.answer(i)))
    return anchors, positives, negatives
