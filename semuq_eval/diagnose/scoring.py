"""Scoring pairs with an operator, and the mean similarity with a bootstrap interval over questions.

:func:`score_pairs` scores every pair of every diagnostic in ONE batched operator call: per question, the distinct
texts of its pairs form one answer list, and each pair reads its entry of that question's matrix. An operator needing
the generating model's hidden states (``cos_int``) scores only pairs of answers with a stored hidden vector.
:func:`mean_with_ci` is the mean over pairs with a percentile bootstrap over QUESTIONS (pairs of one question
resampled together), on :class:`~semuq_eval.metrics.Bootstrap`'s shared seeded resamples.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from semuq_eval.diagnose.traps import Pair
from semuq_eval.metrics import Bootstrap
from semuq_eval.operators.base import normalize_answer

__all__ = [
    "MeanCI",
    "OperatorUnavailable",
    "difference_with_ci",
    "mean_with_ci",
    "question_docs",
    "score_diagnostics",
    "score_pairs",
]


class OperatorUnavailable(RuntimeError):
    """An operator cannot run on any question (its model does not load, inputs it needs are missing)."""


@dataclass(frozen=True)
class MeanCI:
    """A mean over pairs with its bootstrap interval (resampling questions), and what it rests on.

    ``small_sample``: fewer than ``min_pairs`` questions (the independent units) back the mean, as ``note`` says;
    an empty set gives NaN."""

    mean: float
    ci_low: float
    ci_high: float
    n_pairs: int
    n_questions: int
    small_sample: bool
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MeanCI:
        """The inverse of :meth:`as_dict` (None back to NaN)."""
        nan = float("nan")
        return cls(
            float(nan if d["mean"] is None else d["mean"]),
            float(nan if d["ci_low"] is None else d["ci_low"]),
            float(nan if d["ci_high"] is None else d["ci_high"]),
            int(d["n_pairs"]),
            int(d["n_questions"]),
            bool(d["small_sample"]),
            d.get("note"),
        )


def mean_with_ci(
    values: Sequence[float],
    groups: Sequence[str],
    *,
    bootstrap: Bootstrap | None = None,
    min_pairs: int = 30,
    what: str = "pairs",
) -> MeanCI:
    """Mean of ``values`` with a percentile bootstrap interval that resamples the ``groups`` (questions).

    Each resample draws questions with replacement; the mean over their pairs is a ratio of sums, as the estimate.

    Examples
    --------
    >>> r = mean_with_ci([0.2, 0.4, 0.9], ["q1", "q1", "q2"], bootstrap=Bootstrap(200, seed=0), min_pairs=2)
    >>> round(r.mean, 3), r.n_pairs, r.n_questions, r.small_sample
    (0.5, 3, 2, False)
    """
    bootstrap = bootstrap or Bootstrap()
    v = np.asarray(values, dtype=np.float64)
    if v.size != len(groups):
        raise ValueError(f"got {v.size} values but {len(groups)} groups")
    keep = np.isfinite(v)
    v = v[keep]
    groups = [g for g, k in zip(groups, keep, strict=True) if k]
    n = int(v.size)
    if n == 0:
        return MeanCI(math.nan, math.nan, math.nan, 0, 0, True, f"no {what}")
    _, index = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)
    n_groups = int(index.max()) + 1
    sums = np.bincount(index, weights=v, minlength=n_groups)
    counts = np.bincount(index, minlength=n_groups).astype(np.float64)
    draws = bootstrap.counts(n_groups)
    resampled = (draws @ sums) / np.maximum(draws @ counts, 1e-300)
    low, high = bootstrap.interval(resampled)
    small = n_groups < min_pairs
    note = f"small sample: {n_groups} questions, {n} {what} (< {min_pairs} questions)" if small else None
    return MeanCI(float(v.mean()), low, high, n, n_groups, small, note)


def difference_with_ci(
    a: Sequence[float],
    groups_a: Sequence[str],
    b: Sequence[float],
    groups_b: Sequence[str],
    *,
    bootstrap: Bootstrap | None = None,
) -> dict[str, float | None]:
    """mean(a) - mean(b) with a percentile interval from resampling the questions of both at once.

    Examples
    --------
    >>> d = difference_with_ci([0.9, 0.8], ["q1", "q2"], [0.5], ["q1"], bootstrap=Bootstrap(100))
    >>> round(d["difference"], 3)
    0.35
    """
    bootstrap = bootstrap or Bootstrap()
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    ka, kb = np.isfinite(va), np.isfinite(vb)
    ga = [g for g, k in zip(groups_a, ka, strict=True) if k]
    gb = [g for g, k in zip(groups_b, kb, strict=True) if k]
    va, vb = va[ka], vb[kb]
    if va.size == 0 or vb.size == 0:
        return {"difference": None, "ci_low": None, "ci_high": None}
    names = {g: i for i, g in enumerate(dict.fromkeys([*map(str, ga), *map(str, gb)]))}
    ia, ib = np.array([names[str(g)] for g in ga]), np.array([names[str(g)] for g in gb])
    n = len(names)
    draws = bootstrap.counts(n)

    def ratio(index, values):
        sums = np.bincount(index, weights=values, minlength=n)
        counts = np.bincount(index, minlength=n).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (draws @ sums) / (draws @ counts)

    low, high = bootstrap.interval(ratio(ia, va) - ratio(ib, vb))
    return {"difference": float(va.mean() - vb.mean()), "ci_low": low, "ci_high": high}


def score_pairs(
    operator: Any, pair_sets: Mapping[str, Sequence[Pair]]
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The operator's similarity of every pair, per diagnostic (NaN: unavailable), and the reasons.

    ``operator`` is a built operator (``semuq_eval.operators.get(name, **options)``). Returns ``(similarities,
    unavailable)``: ``similarities[name]`` is a float array aligned with ``pair_sets[name]``; ``unavailable``
    counts the pairs left unscored, by reason."""
    needs_hidden = "hidden_states" in getattr(operator, "needs", frozenset())
    keys: dict[str, dict[str, int]] = {}  # per question: text key -> row of its answer list
    answers: dict[str, list[str]] = {}
    hidden: dict[str, list[np.ndarray | None]] = {}
    questions: dict[str, str] = {}
    where: dict[str, list[tuple[str, int, int] | None]] = {}
    unavailable: dict[str, int] = {}
    for name, pairs in pair_sets.items():
        slots: list[tuple[str, int, int] | None] = []
        for p in pairs:
            if needs_hidden and (p.hidden_a is None or p.hidden_b is None):
                why = f"{operator.name} needs the generating model's hidden state of both answers"
                unavailable[why] = unavailable.get(why, 0) + 1
                slots.append(None)
                continue
            questions.setdefault(p.uid, p.question)
            index = keys.setdefault(p.uid, {})
            ids = []
            for text, h in ((p.a, p.hidden_a), (p.b, p.hidden_b)):
                # with hidden states, a text is one generated answer (its own vector), not its string
                key = normalize_answer(text) if not needs_hidden else f"{text}\x00{id(h)}"
                if key not in index:
                    index[key] = len(index)
                    answers.setdefault(p.uid, []).append(text)
                    hidden.setdefault(p.uid, []).append(h)
                ids.append(index[key])
            slots.append((p.uid, ids[0], ids[1]))
        where[name] = slots
    out = {name: np.full(len(slots), np.nan) for name, slots in where.items()}
    uids = list(questions)
    if not uids:
        return out, unavailable
    hidden_states = None
    if needs_hidden:
        hidden_states = [np.stack([np.asarray(h, dtype=np.float64) for h in hidden[uid]]) for uid in uids]
    result = operator(
        [questions[uid] for uid in uids], [answers[uid] for uid in uids], hidden_states=hidden_states
    )
    matrices = dict(zip(uids, result.matrices, strict=True))
    for name, slots in where.items():
        for k, slot in enumerate(slots):
            if slot is not None:
                uid, i, j = slot
                out[name][k] = float(matrices[uid][i, j])
    return out, unavailable


def question_docs(questions: Sequence[Any]) -> list[Any]:
    """Fresh copies of the diagnostic questions' own :class:`~semuq_eval.harness.doc.Doc` (no matrices yet),
    numbered in order and keyed by ``uid``, for the pipeline's operator pass."""
    return [
        dataclasses.replace(q.doc, doc_id=k, key=q.uid, matrices={}, extras={}, unavailable={})
        for k, q in enumerate(questions)
    ]


def score_diagnostics(
    name: str,
    options: Mapping[str, Any] | None,
    questions: Sequence[Any],
    pair_sets: Mapping[str, Sequence[Pair]],
    *,
    docs: list[Any] | None = None,
    token_extras: Collection[str] = (),
) -> tuple[dict[str, np.ndarray], dict[str, int], list[Any]]:
    """Every pair's similarity under operator ``name``, with each question's sample matrix computed ONCE.

    The sampled answers go through the pipeline's operator pass
    (:func:`~semuq_eval.harness.operator_runs.compute_operators`: batched, deduplicated, hidden states for
    ``cos_int``) and pairs of two samples read that matrix; the other pairs (a greedy answer, a rewrite, a reference)
    go through one more batched call (:func:`score_pairs`). ``token_extras``: the token extras the returned docs
    carry for estimators (none by default: ``token_similarity`` costs one encoder pass per greedy-answer token).
    Returns ``(similarities, unavailable, docs)`` as :func:`score_pairs`, plus the docs holding the sample
    matrices; raises :class:`OperatorUnavailable`, with the reason, when the operator cannot run at all.
    """
    from semuq_eval.harness.operator_runs import compute_operators, get_operator

    docs = question_docs(questions) if docs is None else docs
    runs = compute_operators(docs, [name], {name: dict(options or {})}, token_extras=token_extras)
    run = runs[name]
    if run.status == "unavailable" and any(q.samples for q in questions):
        reasons = "; ".join(run.reasons) or "unknown reason"
        raise OperatorUnavailable(f"operator {name} is unavailable: {reasons}")
    by_uid = {q.uid: (q, d) for q, d in zip(questions, docs, strict=True)}
    sims = {k: np.full(len(v), np.nan) for k, v in pair_sets.items()}
    unavailable: dict[str, int] = {}
    extra: dict[str, list[Pair]] = {}
    extra_at: dict[str, list[int]] = {}
    for key, pairs in pair_sets.items():
        for k, p in enumerate(pairs):
            if p.sample_a is None or p.sample_b is None:
                extra.setdefault(key, []).append(p)
                extra_at.setdefault(key, []).append(k)
                continue
            doc = by_uid[p.uid][1]
            matrix = doc.matrices.get(name)
            if matrix is None:
                why = doc.unavailable.get(name, f"{name} did not run")
                unavailable[why] = unavailable.get(why, 0) + 1
            else:
                sims[key][k] = float(matrix[p.sample_a, p.sample_b])
    if extra:
        more, why = score_pairs(get_operator(name, dict(options or {})), extra)
        for key, values in more.items():
            sims[key][extra_at[key]] = values
        for reason, n in why.items():
            unavailable[reason] = unavailable.get(reason, 0) + n
    return sims, unavailable, docs
