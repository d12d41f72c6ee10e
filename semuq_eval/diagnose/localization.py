"""Token localization (App. A.4): does the operator's highest-weight token fall on the reference?

Kept: correct greedy answers naming exactly ONE reference mention (:func:`~semuq_eval.diagnose.spans.alias_spans`).
The operator's token weights on the answer (``enc``'s ``token_weights``, Eq. te_enc) give the highest-weight token
(the first on ties); it is a *hit* when its character span overlaps the mention's. Chance is the share of the
answer's tokens overlapping the mention, averaged over answers. Token units: ``"generator"`` (default), the generating
model's tokens (needs the greedy answer's token offsets: a white-box run); ``"encoder"``, the encoder's own tokens and
norms ``||h_t||`` (``token_norms``), on any store, as the paper matches the span "to the encoder tokens".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semuq_eval.diagnose.questions import DiagnosticQuestion
from semuq_eval.diagnose.scoring import MeanCI, mean_with_ci
from semuq_eval.diagnose.spans import alias_spans
from semuq_eval.metrics import Bootstrap

__all__ = ["TOKEN_UNITS", "Localization", "hit_and_chance", "localization"]

TOKEN_UNITS = ("generator", "encoder")


def hit_and_chance(spans: np.ndarray, weights: np.ndarray, mention: tuple[int, int]) -> tuple[bool, float]:
    """Whether the highest-weight token overlaps ``mention`` and the share of tokens that do.

    Examples
    --------
    >>> spans = np.array([[0, 3], [4, 6], [7, 12]])          # "The is Paris" -> Paris = [7, 12)
    >>> hit_and_chance(spans, np.array([0.2, 0.1, 0.7]), (7, 12))
    (True, 0.3333333333333333)
    """
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if spans.shape[0] != w.shape[0] or w.size == 0:
        raise ValueError(
            f"got {spans.shape[0]} token spans and {w.size} weights (need as many, at least one)"
        )
    start, end = mention
    inside = (spans[:, 0] < end) & (spans[:, 1] > start)
    return bool(inside[int(np.argmax(w))]), float(inside.mean())


@dataclass
class Localization:
    """Hit rate of the highest-weight token and the uniform-chance rate, over the kept answers."""

    unit: str
    hit_rate: MeanCI
    chance_rate: MeanCI
    n_hits: int
    n_answers: int
    n_eligible: int
    skipped: dict[str, int] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)
    hits: list[float] = field(default_factory=list, repr=False)
    """Per kept answer: 1.0 when its top-weight token is inside the reference span (paired comparisons)."""
    uids: list[str] = field(default_factory=list, repr=False)
    """The question of each kept answer."""

    @property
    def ratio(self) -> float:
        """Hit rate over chance rate (NaN without answers)."""
        c = self.chance_rate.mean
        return float(self.hit_rate.mean / c) if c and np.isfinite(c) and c > 0 else float("nan")

    def as_dict(self) -> dict[str, Any]:
        ratio = self.ratio
        return {
            "unit": self.unit,
            "hit_rate": self.hit_rate.as_dict(),
            "chance_rate": self.chance_rate.as_dict(),
            "ratio_over_chance": ratio if np.isfinite(ratio) else None,
            "n_hits": self.n_hits,
            "n_answers": self.n_answers,
            "n_eligible": self.n_eligible,
            "skipped": dict(self.skipped),
            "examples": list(self.examples),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Localization:
        """The inverse of :meth:`as_dict` with the per-answer ``hits`` and ``uids`` added to it."""
        return cls(
            str(d["unit"]),
            MeanCI.from_dict(d["hit_rate"]),
            MeanCI.from_dict(d["chance_rate"]),
            int(d["n_hits"]),
            int(d["n_answers"]),
            int(d["n_eligible"]),
            {str(k): int(v) for k, v in d["skipped"].items()},
            list(d["examples"]),
            [float(h) for h in d["hits"]],
            [str(u) for u in d["uids"]],
        )


def localization(
    operator: Any,
    questions: Sequence[DiagnosticQuestion],
    *,
    unit: str = "generator",
    bootstrap: Bootstrap | None = None,
    min_answers: int = 30,
    n_examples: int = 3,
) -> Localization:
    """Token localization of ``operator`` (it must yield ``token_weights``, as ``enc`` does) on ``questions``.

    Raises ValueError for an unknown ``unit``, or an operator without token weights."""
    if unit not in TOKEN_UNITS:
        raise ValueError(f"unknown token unit {unit!r}; choose one of {list(TOKEN_UNITS)}")
    if "token_weights" not in getattr(operator, "extras", ()):
        raise ValueError(f"operator {getattr(operator, 'name', operator)!r} yields no token weights")
    skipped: Counter[str] = Counter()
    kept: list[tuple[DiagnosticQuestion, tuple[int, int]]] = []
    n_eligible = 0
    for q in questions:
        if q.greedy_label != 1:
            continue
        mentions = alias_spans(q.greedy, q.references)
        if len(mentions) != 1:
            skipped["correct greedy answer without exactly one reference mention"] += 1
            continue
        n_eligible += 1
        if unit == "generator" and (q.greedy_offsets is None or len(q.greedy_offsets) == 0):
            skipped["no token offsets of the greedy answer (black-box run: use unit 'encoder')"] += 1
            continue
        kept.append((q, (mentions[0].start, mentions[0].end)))
    hits, chances, uids, examples = [], [], [], []
    if kept:
        qs, answers = [q.question for q, _ in kept], [[q.greedy] for q, _ in kept]
        if unit == "generator":
            weights = operator.token_weights(qs, answers, [[np.asarray(q.greedy_offsets)] for q, _ in kept])
            units = [(np.asarray(q.greedy_offsets), w[0]) for (q, _), w in zip(kept, weights, strict=True)]
        else:
            norms = operator.token_norms(qs, answers)
            units = [(n[0].spans, n[0].norms) for n in norms]
        for (q, mention), (spans, w) in zip(kept, units, strict=True):
            if len(w) == 0:
                skipped["the answer has no tokens"] += 1
                continue
            hit, chance = hit_and_chance(spans, w, mention)
            hits.append(float(hit))
            chances.append(chance)
            uids.append(q.uid)
            if len(examples) < n_examples:
                top = spans[int(np.argmax(w))]
                examples.append(
                    {
                        "question": q.question,
                        "answer": q.greedy,
                        "mention": q.greedy[mention[0] : mention[1]],
                        "top_token": q.greedy[int(top[0]) : int(top[1])],
                        "hit": hit,
                    }
                )
    return Localization(
        unit,
        mean_with_ci(hits, uids, bootstrap=bootstrap, min_pairs=min_answers, what="answers"),
        mean_with_ci(chances, uids, bootstrap=bootstrap, min_pairs=min_answers, what="answers"),
        int(sum(hits)),
        len(hits),
        n_eligible,
        dict(skipped),
        examples,
        hits,
        [str(u) for u in uids],
    )
