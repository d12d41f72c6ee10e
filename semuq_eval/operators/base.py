"""The operator interface: a question and its N answers -> an N x N comparison matrix S.

An operator s fills S_ij = s(y_i, y_j | x) (paper, Eq. operator_S / Eq. S). Every operator is
batched over many questions at once (answer counts may differ) and reports what it cost.

Conventions shared by every operator on answer text (:class:`TextOperator`):

- **Duplicates.** Answers are compared after :func:`normalize_answer` (strip, collapse
  whitespace, casefold). Answers of one question that normalize identically are scored once
  (the first occurrence is the one a model reads) and are equivalent by definition: S_ij = 1.
- **Empty answers** (empty after strip) express no answer: they are never sent to a model,
  S_ij = 1 between two empty answers and 0 between an empty and a non-empty answer. For Gram
  operators this is the Gram matrix of one extra unit vector orthogonal to every answer, so S
  stays positive semidefinite.
- **N = 1** gives ``[[1.0]]``; **N = 0** gives a (0, 0) matrix.
- The diagonal is exactly 1 (``True`` for equivalence matrices) and every matrix is symmetric.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from semuq_eval.aggregators.base import MatrixKind

PROGRESS_MIN_BATCHES = 5
"""A progress bar is shown (when enabled) once a call needs at least this many model batches."""


@dataclass
class Cost:
    """What one operator call cost.

    ``forward_passes``: sequences run through a model (one per premise-hypothesis pair for NLI,
    one per distinct answer for encoders, 0 for model-free operators).
    ``pairs_scored``: unordered pairs of distinct non-empty answers whose score was computed.
    ``duplicates_skipped``: answers not computed because a normalized-identical answer of the
    same question was. ``wall_time_s``: wall-clock time of the call, model loading included.
    """

    forward_passes: int = 0
    pairs_scored: int = 0
    duplicates_skipped: int = 0
    wall_time_s: float = 0.0


@dataclass
class OperatorOutput:
    """One (N_b, N_b) matrix per question (float64, or bool for ``kind == "equivalence"``),
    the call's :class:`Cost`, and ``info``: the operator's identity for the results file."""

    matrices: list[np.ndarray]
    cost: Cost
    info: dict[str, Any] = field(default_factory=dict)


def normalize_answer(text: str) -> str:
    """The key under which answers are deduplicated: stripped, whitespace collapsed, casefolded."""
    return " ".join(text.split()).casefold()


def _describe(questions: Sequence[str], b: int) -> str:
    q = questions[b]
    text = q if isinstance(q, str) else repr(q)
    return f"question {b} ({text[:60]!r})"


def check_inputs(questions: Sequence[str], answers: Sequence[Sequence[str]]) -> None:
    """Validate the common call arguments; raise TypeError/ValueError naming the bad question."""
    for arg, value in (("questions", questions), ("answers", answers)):
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
            raise TypeError(
                f"{arg} must be a sequence with one entry per question, got {type(value).__name__}"
            )
    if len(questions) != len(answers):
        raise ValueError(f"got {len(questions)} questions but {len(answers)} answer lists")
    for b, (question, group) in enumerate(zip(questions, answers, strict=True)):
        if not isinstance(question, str):
            raise TypeError(
                f"{_describe(questions, b)}: the question must be a str, got {type(question).__name__}"
            )
        if isinstance(group, (str, bytes)) or not hasattr(group, "__len__"):
            raise TypeError(
                f"{_describe(questions, b)}: answers must be a sequence of str, got {type(group).__name__}"
            )
        for i, answer in enumerate(group):
            if not isinstance(answer, str):
                raise TypeError(
                    f"{_describe(questions, b)}: answer {i} must be a str, got {type(answer).__name__}"
                )


class Operator(ABC):
    """Base class: ``op(questions, answers, *, hidden_states=None) -> OperatorOutput``.

    Subclasses set ``name`` (the registry name) and ``kind`` (what the matrix is, which tells
    aggregators which ``aggregator@operator`` pairs are valid) and implement :meth:`_compute`.
    """

    name: ClassVar[str]
    kind: ClassVar[MatrixKind]

    def __call__(
        self,
        questions: Sequence[str],
        answers: Sequence[Sequence[str]],
        *,
        hidden_states: Sequence[np.ndarray] | None = None,
    ) -> OperatorOutput:
        """Compute one comparison matrix per question (Eq. operator_S), batched over questions."""
        check_inputs(questions, answers)
        start = time.perf_counter()
        matrices, cost = self._compute(list(questions), [list(group) for group in answers], hidden_states)
        cost.wall_time_s = time.perf_counter() - start
        return OperatorOutput(matrices, cost, self.info)

    @abstractmethod
    def _compute(
        self, questions: list[str], answers: list[list[str]], hidden_states: Sequence[np.ndarray] | None
    ) -> tuple[list[np.ndarray], Cost]:
        """Return the matrices and the cost (without wall time)."""

    @property
    def info(self) -> dict[str, Any]:
        """Identity of the operator (name, kind and the settings that change its matrices)."""
        return {"operator": self.name, "kind": self.kind, **self._identity()}

    def _identity(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v!r}" for k, v in self._identity().items())
        return f"{type(self).__name__}({settings})"


@dataclass(frozen=True)
class AnswerGroup:
    """The answers of one question as a model sees them.

    ``texts``: the distinct non-empty answers (first occurrence of each normalized form).
    ``inverse``: for each of the N answers, its index in ``texts``, or -1 for an empty answer.
    """

    texts: list[str]
    inverse: np.ndarray

    @classmethod
    def from_answers(cls, answers: Sequence[str], *, dedup: bool = True) -> AnswerGroup:
        keys = [normalize_answer(a) for a in answers]
        nonempty = np.array([i for i, key in enumerate(keys) if key], dtype=np.int64)
        inverse = np.full(len(answers), -1, dtype=np.int64)
        if nonempty.size == 0:
            return cls([], inverse)
        if dedup:
            _, first, inv = np.unique([keys[i] for i in nonempty], return_index=True, return_inverse=True)
            inverse[nonempty] = inv
            return cls([answers[nonempty[f]] for f in first], inverse)
        inverse[nonempty] = np.arange(nonempty.size)
        return cls([answers[i] for i in nonempty], inverse)

    @property
    def n_duplicates(self) -> int:
        return int(np.count_nonzero(self.inverse >= 0)) - len(self.texts)

    def expand(self, scores: np.ndarray, kind: MatrixKind) -> np.ndarray:
        """Scatter a (U, U) matrix over ``texts`` back to the (N, N) matrix over all answers."""
        n = self.inverse.size
        full = np.zeros((n, n), dtype=np.float64)
        kept = np.flatnonzero(self.inverse >= 0)
        if kept.size:
            scores = np.array(scores, dtype=np.float64)
            np.fill_diagonal(scores, 1.0)
            u = self.inverse[kept]
            full[np.ix_(kept, kept)] = scores[np.ix_(u, u)]
        empty = np.flatnonzero(self.inverse < 0)
        full[np.ix_(empty, empty)] = 1.0
        np.fill_diagonal(full, 1.0)
        return full.astype(bool) if kind == "equivalence" else full


class TextOperator(Operator):
    """An operator on answer text: deduplicates, handles empty answers, scatters back.

    Subclasses implement :meth:`_score` on the distinct non-empty answers of every question.
    """

    def __init__(self, *, dedup: bool = True) -> None:
        self.dedup = dedup

    def _compute(
        self, questions: list[str], answers: list[list[str]], hidden_states: Sequence[np.ndarray] | None
    ) -> tuple[list[np.ndarray], Cost]:
        groups = [AnswerGroup.from_answers(group, dedup=self.dedup) for group in answers]
        cost = Cost(
            pairs_scored=sum(len(g.texts) * (len(g.texts) - 1) // 2 for g in groups),
            duplicates_skipped=sum(g.n_duplicates for g in groups),
        )
        scores = self._score(questions, [g.texts for g in groups], cost)
        return [g.expand(s, self.kind) for g, s in zip(groups, scores, strict=True)], cost

    @abstractmethod
    def _score(self, questions: list[str], answers: list[list[str]], cost: Cost) -> list[np.ndarray]:
        """One symmetric (U_b, U_b) matrix per question over its distinct non-empty answers.

        The diagonal is ignored (set to 1). Add the model's forward passes to ``cost``.
        """

    def _identity(self) -> dict[str, Any]:
        return {"dedup": self.dedup}


def gram_matrix(embeddings: np.ndarray) -> np.ndarray:
    """S = Phi Phi^T of L2-normalized rows (Eq. operator_cosine), symmetric, in [-1, 1], in float64.

    Raises ValueError for a zero or non-finite row, which has no direction.
    """
    phi = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(phi, axis=1, keepdims=True)
    bad = np.flatnonzero(~np.isfinite(norms[:, 0]) | (norms[:, 0] == 0))
    if bad.size:
        raise ValueError(f"rows {bad.tolist()[:10]} are zero or not finite: they have no direction")
    phi = phi / norms
    s = phi @ phi.T
    s = np.clip((s + s.T) / 2, -1.0, 1.0)
    np.fill_diagonal(s, 1.0)
    return s
