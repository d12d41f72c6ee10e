"""Discrimination metrics of an uncertainty score against binary correctness: AUROC, AUARC, PRR.

Each has a weighted core ``*_weighted(u, correct, counts)`` scoring R weightings of the same n questions at
once (``counts`` (R, n): bootstrap multiplicities, 1 for a plain evaluation; NaN uncertainties get weight 0),
exact for resampling with replacement."""

from __future__ import annotations

import warnings

import numpy as np

from semuq_eval.metrics.base import check_inputs, register

TIE_TOLERANCE = 1e-12
"""Scores closer than ``TIE_TOLERANCE * max(1, |a|, |b|)`` are ties. An estimator that is 0 or 3 in exact arithmetic
comes out as 0 or -4e-16, 3 or 3 + 2e-15, depending on the CPU's summation order. Ranked as they are, the residues
order a tie group; they follow the numbers they came from, so they can even correlate with correctness (an
estimator that is 0 for most questions then reads an AUROC from its residues alone), and the same answers rescored
on a machine that sums in another order can read another AUROC. The scores' inputs (float32 similarities and
log-probabilities) carry about 7 significant digits, so no information is lost. docs/reproduction.md, "Ties at round-off", has the measurements."""


def _sorted_groups(u: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Sort order of u, start index of each tie group (None when all values differ), and
    the counts' columns in that order; neighbours within :data:`TIE_TOLERANCE` share a group (callers pass
    finite scores)."""
    order = np.argsort(u, kind="stable")
    s = u[order]
    low, high = s[:-1], s[1:]
    near = (high - low) <= TIE_TOLERANCE * np.maximum(1.0, np.maximum(np.abs(low), np.abs(high)))
    starts = np.flatnonzero(np.r_[True, ~near])
    return order, (None if len(starts) == len(u) else starts), counts[:, order]


def _per_group(values: np.ndarray, starts: np.ndarray | None) -> np.ndarray:
    return values if starts is None else np.add.reduceat(values, starts, axis=1)


def auroc_weighted(u: np.ndarray, correct: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """AUROC of ``u`` ranking incorrect answers above correct ones, for each row of ``counts``.

    AUROC = P(u_incorrect > u_correct) + P(tie) / 2 (Mann-Whitney; scores within :data:`TIE_TOLERANCE` tie).
    Rows with one class give NaN."""
    order, starts, w = _sorted_groups(u, counts)
    y = correct[order]
    neg = _per_group(w * y, starts)  # correct answers (per tie group)
    pos = _per_group(w * (1.0 - y), starts)  # incorrect answers
    neg_below = np.cumsum(neg, axis=1) - neg
    wins = (pos * (neg_below + 0.5 * neg)).sum(axis=1)
    n_pos, n_neg = pos.sum(axis=1), neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((n_pos > 0) & (n_neg > 0), wins / (n_pos * n_neg), np.nan)


def _harmonic(m: int) -> np.ndarray:
    """H[k] = sum_{j=1..k} 1/j for k = 0..m."""
    return np.r_[0.0, np.cumsum(1.0 / np.arange(1, m + 1))]


def auarc_weighted(u: np.ndarray, correct: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Area under the accuracy-rejection curve, for each row of (integer) ``counts``.

    Questions are kept from most to least confident (ascending u); AUARC = (1/n) sum_{k=1..n} a(k), a(k) the
    accuracy of the first k kept. Ties are broken in expectation (correctness in a tie group replaced by its
    mean). A question counted c times fills c positions, summed in closed form:
    sum_{j=1..c} (C + j y) / (K + j) = c y + (C - y K) (H_{K+c} - H_K), H the harmonic numbers."""
    order, starts, w = _sorted_groups(u, counts)
    y = np.broadcast_to(correct[order], w.shape)
    if starts is not None:
        group_w, group_y = _per_group(w, starts), _per_group(w * y, starts)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(group_w > 0, group_y / np.where(group_w > 0, group_w, 1.0), 0.0)
        y = np.repeat(means, np.diff(np.r_[starts, len(u)]), axis=1)
    k_before = np.cumsum(w, axis=1) - w
    c_before = np.cumsum(w * y, axis=1) - w * y
    harmonic = _harmonic(int(counts.sum(axis=1).max()))
    k_idx = k_before.astype(np.int64)
    block = w * y + (c_before - y * k_before) * (harmonic[k_idx + w.astype(np.int64)] - harmonic[k_idx])
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, block.sum(axis=1) / total, np.nan)


def prr_weighted(u: np.ndarray, correct: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Prediction rejection ratio, for each row of (integer) ``counts``.

    PRR = (AUARC(u) - AUARC_random) / (AUARC_oracle - AUARC_random): 0 random, 1 oracle
    (:func:`prr_from_auarc`); rows with one class give NaN."""
    return prr_from_auarc(auarc_weighted(u, correct, counts), correct, counts)


def prr_from_auarc(auarc: np.ndarray, correct: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """PRR of each row of ``counts`` from the score's AUARC there (:func:`auarc_weighted`): an evaluation that
    scores both computes AUARC once. AUARC_random is the accuracy A = C / n; the oracle keeps the C correct
    answers first, so AUARC_oracle = (C + C (H_n - H_C)) / n."""
    total = counts.sum(axis=1)
    n_correct = (counts * correct).sum(axis=1)
    harmonic = _harmonic(int(total.max()))
    t_idx, c_idx = total.astype(np.int64), n_correct.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = n_correct / total
        oracle = (n_correct + n_correct * (harmonic[t_idx] - harmonic[c_idx])) / total
        gap = oracle - accuracy
        return np.where(gap > 1e-12, (auarc - accuracy) / np.where(gap > 1e-12, gap, 1.0), np.nan)


def _point(core, uncertainty, correct, name: str) -> float:
    u, y, valid = check_inputs(uncertainty, correct)
    counts = valid[None].astype(np.float64)
    n_pos, n_neg = int(((1 - y) * valid).sum()), int((y * valid).sum())
    if n_pos == 0 or n_neg == 0:
        warnings.warn(
            f"{name} is undefined with a single class (n_incorrect={n_pos}, n_correct={n_neg}); returning NaN",
            RuntimeWarning,
            stacklevel=3,
        )
        return float("nan")
    return float(core(np.where(valid, u, 0.0), y, counts)[0])


@register("auroc", weighted=auroc_weighted, higher_is_better=True)
def auroc(uncertainty: np.ndarray, correct: np.ndarray) -> float:
    """AUROC of the uncertainty score for detecting incorrect answers (0.5 = random, 1 = perfect).

    One class only: NaN with a RuntimeWarning giving n_incorrect / n_correct. NaN uncertainties are left out.
    """
    return _point(auroc_weighted, uncertainty, correct, "AUROC")


@register("auarc", weighted=auarc_weighted, higher_is_better=True)
def auarc(uncertainty: np.ndarray, correct: np.ndarray) -> float:
    """Area under the accuracy-rejection curve (see :func:`auarc_weighted`); NaN uncertainties left out."""
    u, y, valid = check_inputs(uncertainty, correct)
    if not valid.any():
        return float("nan")
    return float(auarc_weighted(np.where(valid, u, 0.0), y, valid[None].astype(np.float64))[0])


@register("prr", weighted=prr_weighted, higher_is_better=True, derived=("auarc", prr_from_auarc))
def prr(uncertainty: np.ndarray, correct: np.ndarray) -> float:
    """Prediction rejection ratio (see :func:`prr_weighted`); one class only gives NaN with a warning."""
    return _point(prr_weighted, uncertainty, correct, "PRR")
