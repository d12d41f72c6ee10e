"""The per-question pictures of the headline: accuracy-vs-rejection curves and reliability diagrams.

Both use the cells' definitions on a run's per-question scores (a breakdown-only run gets none):
``rejection_curve(u, y).mean() == auarc(u, y)`` (:func:`semuq_eval.metrics.auarc`), and :func:`reliability_bins`
bins ECE's held-out calibrated confidences into ECE's bins, so their weighted gaps sum to ECE."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from semuq_eval.leaderboard.headline import STRATEGY, columns
from semuq_eval.metrics import CalibrationProtocol, auarc, calibrate

if TYPE_CHECKING:
    from semuq_eval.leaderboard.board import Leaderboard

__all__ = ["curves", "rejection_curve", "reliability_bins"]


def _known(uncertainty: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The questions with both a score and a label (NaN marks either missing)."""
    u, y = np.asarray(uncertainty, dtype=np.float64), np.asarray(correct, dtype=np.float64)
    if u.shape != y.shape or u.ndim != 1:
        raise ValueError(f"uncertainty {u.shape} and correct {y.shape} must both be (n,)")
    keep = np.isfinite(u) & np.isfinite(y)
    return u[keep], y[keep]


def rejection_curve(uncertainty: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """Accuracy of the kept answers when the ``i`` most uncertain are rejected, for ``i = 0 .. n-1``.

    Questions without a score or a label (NaN) are left out first; ties in uncertainty are rejected in expectation over
    their orders (each counts as the tie group's mean correctness), as :func:`~semuq_eval.metrics.auarc` does, so the
    curve's mean is AURAC. Returns (m,) for the m questions left: ``out[i]`` is the accuracy of the ``m - i`` most
    confident answers (``out[0]``: nothing rejected).

    Examples
    --------
    >>> rejection_curve(np.array([0.1, 0.9, 0.5, 0.7]), np.array([1, 0, 1, 0]))
    array([0.5       , 0.66666667, 1.        , 1.        ])
    """
    u, y = _known(uncertainty, correct)
    order = np.argsort(u, kind="stable")
    u, y = u[order], y[order]
    _, group = np.unique(u, return_inverse=True)  # u sorted: groups are consecutive
    y = (np.bincount(group, y) / np.bincount(group))[group]
    kept = np.cumsum(y) / np.arange(1, len(y) + 1)  # kept[k - 1]: accuracy of the k most confident
    return kept[::-1].copy()


def reliability_bins(
    uncertainty: np.ndarray, correct: np.ndarray, protocol: CalibrationProtocol | None = None
) -> list[dict[str, float | int]]:
    """The reliability diagram of the calibrated confidence: per ECE bin, its mass, mean confidence and accuracy.

    The confidence is :func:`~semuq_eval.metrics.calibrate`'s under ``protocol`` (ECE's: the board's ``ece``
    settings), binned into ``protocol.n_bins`` equal-width bins on [0, 1] as ECE bins it, so
    ``sum(n * |accuracy - confidence|) / sum(n)`` over the bins is ECE. NaN in ``uncertainty`` or ``correct`` leaves
    the question out. Returns ``{"low", "high", "n", "confidence", "accuracy"}`` per non-empty bin, in order.

    Examples
    --------
    >>> u = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9])
    >>> y = np.array([1, 1, 1, 0, 1, 0, 0, 0])
    >>> [(b["n"], round(b["confidence"], 2)) for b in reliability_bins(u, y, CalibrationProtocol(n_bins=4))]
    [(3, 0.0), (1, 0.5), (4, 1.0)]
    """
    protocol = protocol or CalibrationProtocol()
    u, y = _known(uncertainty, correct)
    confidence = calibrate(u, y, protocol)
    scored = np.isfinite(confidence)
    confidence, y = confidence[scored], y[scored]
    n_bins = protocol.n_bins
    bins = np.minimum((confidence * n_bins).astype(np.int64), n_bins - 1)  # as ece_weighted bins
    out = []
    for b in range(n_bins):
        inside = bins == b
        if inside.any():
            out.append(
                {
                    "low": b / n_bins,
                    "high": (b + 1) / n_bins,
                    "n": int(inside.sum()),
                    "confidence": float(confidence[inside].mean()),
                    "accuracy": float(y[inside].mean()),
                }
            )
    return out


def curves(board: Leaderboard) -> list[dict[str, Any]]:
    """The headline's pictures: per headline cell (LLM x headline column, the reference estimator, greedy labels)
    of a run with per-question scores, its rejection curve and reliability bins (``leaderboard.json``'s ``curves``).
    ``aurac`` and ``ece`` are the same point figures as the cells' ``auarc`` and ``ece``."""
    reference, protocol = board.config.reference, board.config.protocol
    out = []
    for section in columns(board.sections):
        for run in section.runs:
            if not run.paired or reference not in run.scores:
                continue
            u, y = run.scores[reference], run.labels[STRATEGY]
            known = np.isfinite(u) & np.isfinite(y)
            if known.sum() < 2 or np.unique(y[known]).size < 2:
                continue  # one class: no curve to draw (its AUROC cell says undefined)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                bins = reliability_bins(u, y, protocol)
            scored = sum(b["n"] for b in bins)
            out.append(
                {
                    "section": section.id,
                    "task": section.task,
                    "llm": run.llm,
                    "estimator": reference,
                    "strategy": STRATEGY,
                    "n": int(known.sum()),
                    "accuracy_kept": [round(float(a), 6) for a in rejection_curve(u, y)],
                    "aurac": float(auarc(u[known], y[known])),
                    "reliability": bins,
                    "ece": sum(b["n"] * abs(b["accuracy"] - b["confidence"]) for b in bins) / scored,
                }
            )
    return out
