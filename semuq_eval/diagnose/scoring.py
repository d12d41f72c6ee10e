"""Scoring pairs with an operator, and the mean similarity with a bootstrap interval over questions.

:func:`score_pairs` scores every pair of every diagnostic in ONE batched operator call (per question, the distinct
texts of its pairs form one answer list). :func:`mean_with_ci` is the mean over pairs with a percentile bootstrap over
QUESTIONS (pairs of one question resampled together). :func:`paired_comparisons` gives the paired differences between
operators of one diagnosis (a trained operator minus its untrained backbone) on the same pairs and answers.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
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
    "paired_comparisons",
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
        mean, low, high = (math.nan if d[k] is None else float(d[k]) for k in ("mean", "ci_low", "ci_high"))
        return cls(
            mean,
            low,
            high,
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
    if np.size(values) != len(groups):
        raise ValueError(f"got {np.size(values)} values but {len(groups)} groups")
    v, groups = _finite(values, groups)
    n = int(v.size)
    if n == 0:
        return MeanCI(math.nan, math.nan, math.nan, 0, 0, True, f"no {what}")
    _, index = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)
    n_groups = int(index.max()) + 1
    low, high = bootstrap.interval(_resampled_means(bootstrap.counts(n_groups), index, v))
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
    (va, ga), (vb, gb) = _finite(a, groups_a), _finite(b, groups_b)
    if va.size == 0 or vb.size == 0:
        return {"difference": None, "ci_low": None, "ci_high": None}
    names = {g: i for i, g in enumerate(dict.fromkeys([*map(str, ga), *map(str, gb)]))}
    ia, ib = np.array([names[str(g)] for g in ga]), np.array([names[str(g)] for g in gb])
    draws = bootstrap.counts(len(names))
    low, high = bootstrap.interval(_resampled_means(draws, ia, va) - _resampled_means(draws, ib, vb))
    return {"difference": float(va.mean() - vb.mean()), "ci_low": low, "ci_high": high}


def _finite(values: Sequence[float], groups: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """The finite values (float64) and their groups."""
    v = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(v)
    return v[keep], [g for g, k in zip(groups, keep, strict=True) if k]


def _resampled_means(draws: np.ndarray, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each resample's mean over the values of the groups it draws (``index``: each value's group; NaN when a
    resample draws none of them)."""
    n = draws.shape[1]
    sums = np.bincount(index, weights=values, minlength=n)
    counts = np.bincount(index, minlength=n).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (draws @ sums) / (draws @ counts)


def score_pairs(
    operator: Any, pair_sets: Mapping[str, Sequence[Pair]]
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The operator's similarity of every pair, per diagnostic (NaN: unavailable), and the reasons.

    ``operator`` is a built operator (``semuq_eval.operators.get(name, **options)``). Returns ``(similarities,
    unavailable)``: ``similarities[name]`` is a float array aligned with ``pair_sets[name]``; ``unavailable``
    counts the pairs left unscored, by reason."""
    needs_hidden = "hidden_states" in getattr(operator, "needs", frozenset())
    keys: dict[str, dict[str, int]] = {}  # per question: text key -> row of its answer list
    answers: dict[str, list[tuple[str, np.ndarray | None]]] = {}  # per question: (text, hidden vector)
    questions: dict[str, str] = {}
    where: dict[str, list[tuple[str, int, int] | None]] = {}
    unavailable: Counter[str] = Counter()
    for name, pairs in pair_sets.items():
        slots = where[name] = []
        for p in pairs:
            if needs_hidden and (p.hidden_a is None or p.hidden_b is None):
                unavailable[f"{operator.name} needs the generating model's hidden state of both answers"] += 1
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
                    answers.setdefault(p.uid, []).append((text, h))
                ids.append(index[key])
            slots.append((p.uid, ids[0], ids[1]))
    uids = list(questions)
    matrices = {}
    if uids:
        hidden_states = None
        if needs_hidden:
            hidden_states = [
                np.stack([np.asarray(h, dtype=np.float64) for _, h in answers[uid]]) for uid in uids
            ]
        texts = [[t for t, _ in answers[uid]] for uid in uids]
        result = operator([questions[uid] for uid in uids], texts, hidden_states=hidden_states)
        matrices = dict(zip(uids, result.matrices, strict=True))
    out = {
        name: np.array(
            [np.nan if s is None else float(matrices[s[0]][s[1], s[2]]) for s in slots], dtype=np.float64
        )
        for name, slots in where.items()
    }
    return out, dict(unavailable)


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
    token_extras: Collection[str] = (),
) -> tuple[dict[str, np.ndarray], dict[str, int], list[Any]]:
    """Every pair's similarity under operator ``name``, with each question's sample matrix computed ONCE.

    The sampled answers go through the pipeline's operator pass
    (:func:`~semuq_eval.harness.operator_runs.compute_operators`) and pairs of two samples read that matrix; the other
    pairs go through one more batched call (:func:`score_pairs`). ``token_extras``: the token extras the returned docs
    carry for estimators (none by default: ``token_similarity`` costs one encoder pass per greedy-answer token).
    Returns ``(similarities, unavailable, docs)``; raises :class:`OperatorUnavailable` when the operator cannot run.
    """
    from semuq_eval.harness.operator_runs import compute_operators, get_operator

    docs = question_docs(questions)
    run = compute_operators(docs, [name], {name: dict(options or {})}, token_extras=token_extras)[name]
    if run.status == "unavailable" and any(q.samples for q in questions):
        reasons = "; ".join(run.reasons) or "unknown reason"
        raise OperatorUnavailable(f"operator {name} is unavailable: {reasons}")
    by_uid = {q.uid: d for q, d in zip(questions, docs, strict=True)}
    sims = {k: np.full(len(v), np.nan) for k, v in pair_sets.items()}
    unavailable: Counter[str] = Counter()
    extra_at: dict[str, list[int]] = {}  # per pair set: the pairs not of two samples
    for key, pairs in pair_sets.items():
        for k, p in enumerate(pairs):
            if p.sample_a is None or p.sample_b is None:
                extra_at.setdefault(key, []).append(k)
                continue
            doc = by_uid[p.uid]
            matrix = doc.matrices.get(name)
            if matrix is None:
                unavailable[doc.unavailable.get(name, f"{name} did not run")] += 1
            else:
                sims[key][k] = float(matrix[p.sample_a, p.sample_b])
    if extra_at:
        extra = {key: [pair_sets[key][k] for k in at] for key, at in extra_at.items()}
        more, why = score_pairs(get_operator(name, dict(options or {})), extra)
        for key, values in more.items():
            sims[key][extra_at[key]] = values
        unavailable.update(why)
    return sims, dict(unavailable), docs


def paired_comparisons(
    compare: Sequence[tuple[str, str]],
    pair_sets: Mapping[str, Sequence[Any]],
    scored: Mapping[str, Mapping[str, np.ndarray]],
    located: Mapping[str, Any],
    *,
    bootstrap: Bootstrap,
) -> dict[str, dict[str, Any]]:
    """``a`` minus ``b`` for each pair of ``compare``: the mean similarity of every pair set (``trap:<name>``,
    ``cluster:<group>``) over the pairs both operators scored, and the localization hit rate over the answers both
    localized; a percentile bootstrap over questions resamples both operators' values with the same draw.

    ``scored`` maps an operator to its similarities per set (as :func:`score_diagnostics` returns them), ``located``
    to its :class:`~semuq_eval.diagnose.localization.Localization`; an operator that did not run gets ``unavailable``.

    Examples
    --------
    >>> from types import SimpleNamespace as P
    >>> pairs = {"trap:context": [P(uid="q1"), P(uid="q1"), P(uid="q2")]}
    >>> sims = {"a": {"trap:context": np.array([0.5, 0.6, 0.4])}, "b": {"trap:context": np.array([0.7, 0.8, 0.6])}}
    >>> out = paired_comparisons([("a", "b")], pairs, sims, {}, bootstrap=Bootstrap(100))
    >>> row = out["a vs b"]["trap:context"]
    >>> round(row["difference"], 3), row["n_pairs"], row["ci_high"] < 0
    (-0.2, 3, True)
    """
    out: dict[str, dict[str, Any]] = {}
    for a, b in compare:
        key = f"{a} vs {b}"
        if a not in scored or b not in scored:
            out[key] = {"unavailable": f"{a if a not in scored else b} did not run"}
            continue
        row: dict[str, Any] = {}
        for name, pairs in pair_sets.items():
            sa, sb = (
                np.asarray(scored[a][name], dtype=np.float64),
                np.asarray(scored[b][name], dtype=np.float64),
            )
            both = np.isfinite(sa) & np.isfinite(sb)
            uids = [str(p.uid) for p, keep in zip(pairs, both, strict=True) if keep]
            d = difference_with_ci(sa[both], uids, sb[both], uids, bootstrap=bootstrap)
            row[name] = {**d, "n_pairs": int(both.sum()), "n_questions": len(set(uids))}
        if a in located and b in located:
            # one localized answer per question (its greedy answer); an answer without tokens is left out by both
            hits_b = dict(zip(located[b].uids, located[b].hits, strict=True))
            common = [(u, h) for u, h in zip(located[a].uids, located[a].hits, strict=True) if u in hits_b]
            uids = [u for u, _ in common]
            d = difference_with_ci(
                [h for _, h in common], uids, [hits_b[u] for u in uids], uids, bootstrap=bootstrap
            )
            row["localization"] = {**d, "n_answers": len(common), "n_questions": len(set(uids))}
        out[key] = row
    return out
