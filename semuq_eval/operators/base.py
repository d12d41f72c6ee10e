"""The operator interface: a question and its N answers -> an N x N comparison matrix S.

An operator s fills S_ij = s(y_i, y_j | x) (paper, Eq. operator_S / Eq. S), batched over questions, and
reports its cost. Text operators (:class:`TextOperator`) score answers equal after :func:`normalize_answer`
once (S_ij = 1 between them) and never send empty answers to a model (S_ij = 1 between two empty ones, 0 with
a non-empty one: for Gram operators one extra orthogonal unit vector, so S stays PSD). N = 1 gives
``[[1.0]]``, N = 0 a (0, 0) matrix; the diagonal is exactly 1 and S symmetric. **Greedy-anchored comparisons**
(extra ``"greedy_similarities"``): one anchor per question (the greedy answer) joins the same pass as an
(N+1)-th answer, under the same rules."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from semuq_eval.aggregators.base import MatrixKind
from semuq_eval.registry import NamedByRegistry

PROGRESS_MIN_BATCHES = 5
"""A progress bar is shown (when enabled) once a call needs at least this many model batches."""


@dataclass
class Cost:
    """What one operator call cost.

    ``forward_passes``: sequences run through a model (one per NLI pair, one per distinct answer for
    encoders). ``pairs_scored``: unordered pairs of distinct non-empty answers scored (an anchor counts as an
    answer). ``duplicates_skipped``: answers not computed because a normalized-identical one was.
    ``wall_time_s``: the call's wall-clock time, model loading included."""

    forward_passes: int = 0
    pairs_scored: int = 0
    duplicates_skipped: int = 0
    wall_time_s: float = 0.0


@dataclass
class OperatorOutput:
    """One (N_b, N_b) matrix per question (float64, or bool for ``kind == "equivalence"``),
    the call's :class:`Cost`, ``info``: the operator's identity for the results file, when the call
    had anchors, ``anchored``: one (N_b,) float64 vector per question, s(anchor, y_i | x), and ``truncated``:
    per question, which answers the operator read only in part, or None (:meth:`Operator.truncations`)."""

    matrices: list[np.ndarray]
    cost: Cost
    info: dict[str, Any] = field(default_factory=dict)
    anchored: list[np.ndarray] | None = None
    truncated: list[str | None] | None = None


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


NEEDS: dict[str, str] = {
    "question": "the question text",
    "answers": "the N sampled answers' text",
    "hidden_states": "the generating model's hidden state at each answer's last token (white-box only)",
    "images": "the question's images (multimodal tasks)",
}
"""What an operator can declare it needs (``Operator.needs``); the harness checks them per question and
reports the operator unavailable for a question that lacks one, with the reason."""


class Operator(NamedByRegistry, ABC):
    """Base class: ``op(questions, answers, *, hidden_states=None) -> OperatorOutput``.

    Subclasses declare ``kind`` (which ``aggregator@operator`` pairs are valid), ``needs`` (from
    :data:`NEEDS`) and ``extras`` (signals of origin ``pass`` or ``tokens``, :mod:`semuq_eval.signals`) and
    implement :meth:`_compute`. Operators with equal :meth:`share_key` derive their matrices from one pass
    (:func:`~semuq_eval.operators.sharing.compute_shared`), as ``nli`` and ``nli_soft`` do."""

    family_module = "semuq_eval.operators"
    kind: ClassVar[MatrixKind]
    needs: ClassVar[frozenset[str]] = frozenset({"question", "answers"})
    extras: ClassVar[tuple[str, ...]] = ()

    def __call__(
        self,
        questions: Sequence[str],
        answers: Sequence[Sequence[str]],
        *,
        hidden_states: Sequence[np.ndarray] | None = None,
        anchors: Sequence[str] | None = None,
        anchor_hidden_states: Sequence[np.ndarray] | None = None,
    ) -> OperatorOutput:
        """Compute one comparison matrix per question (Eq. operator_S), batched over questions; with
        ``anchors`` (one answer per question, e.g. the greedy one) also each anchor's similarity to the
        answers (by ``anchor_hidden_states``, one (d,) vector per question, for an operator that reads hidden
        states).

        Examples
        --------
        >>> from semuq_eval.operators.lexical import LexicalOperator
        >>> out = LexicalOperator(measure="jaccard")(["q"], [["a b", "c"]], anchors=["a"])
        >>> out.anchored[0].tolist()
        [0.5, 0.0]
        """
        from semuq_eval.operators.sharing import compute_shared

        return compute_shared(
            [self],
            questions,
            answers,
            hidden_states=hidden_states,
            anchors=anchors,
            anchor_hidden_states=anchor_hidden_states,
        )[0]

    @abstractmethod
    def _compute(
        self, questions: list[str], answers: list[list[str]], hidden_states: Sequence[np.ndarray] | None
    ) -> tuple[list[np.ndarray], Cost]:
        """Return the matrices and the cost (without wall time)."""

    def truncations(
        self, answers: Sequence[Sequence[str]], anchors: Sequence[str] | None = None
    ) -> list[str | None]:
        """Per question, which of its answers (and anchor) the operator reads only in part, or None: an operator
        whose work grows faster than an answer's length caps what it reads and says so here (default: none)."""
        return [None] * len(answers)

    def load_hint(self) -> str | None:
        """When the operator failed: how the user can fix it (e.g. which option points at a local model)."""
        return None

    def share_key(self) -> Hashable | None:
        """Operators with the same non-None key share one pass (see :func:`~semuq_eval.operators.sharing.compute_shared`); None: alone."""
        return None

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

    ``texts``: the distinct non-empty answers (first occurrence of each normalized form); ``inverse``: each
    answer's index in ``texts``, -1 for an empty answer."""

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

    Subclasses implement :meth:`_score` on every question's distinct non-empty answers; those whose model
    output serves several operators return it there and build their matrix in :meth:`_derive`."""

    extras: ClassVar[tuple[str, ...]] = ("greedy_similarities",)

    def __init__(self, *, dedup: bool = True) -> None:
        self.dedup = dedup

    def _compute(
        self, questions: list[str], answers: list[list[str]], hidden_states: Sequence[np.ndarray] | None
    ) -> tuple[list[np.ndarray], Cost]:
        groups, raw, cost = self._pass(questions, answers)
        return [g.expand(self._derive(r), self.kind) for g, r in zip(groups, raw, strict=True)], cost

    def _pass(
        self, questions: list[str], answers: list[list[str]]
    ) -> tuple[list[AnswerGroup], list[Any], Cost]:
        """Deduplicate, then run :meth:`_score` once over every question's distinct answers."""
        groups = [AnswerGroup.from_answers(group, dedup=self.dedup) for group in answers]
        cost = Cost(
            pairs_scored=sum(len(g.texts) * (len(g.texts) - 1) // 2 for g in groups),
            duplicates_skipped=sum(g.n_duplicates for g in groups),
        )
        return groups, self._score(questions, [g.texts for g in groups], cost), cost

    @abstractmethod
    def _score(self, questions: list[str], answers: list[list[str]], cost: Cost) -> list[Any]:
        """One result per question over its distinct non-empty answers: by default the symmetric (U_b, U_b)
        matrix (its diagonal is ignored and set to 1). Add the model's forward passes to ``cost``."""

    def _derive(self, scored: Any) -> np.ndarray:
        """The (U_b, U_b) matrix of one question from its :meth:`_score` result (default: that result)."""
        return scored

    def _identity(self) -> dict[str, Any]:
        return {"dedup": self.dedup}
