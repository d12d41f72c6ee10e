"""Which figures of a breakdown can be trusted: small samples and one-class labels flagged, with the reason.

A figure is **unreliable** when the minority label class (among the questions scored) holds fewer than ``min_minority``
questions (default :data:`MIN_MINORITY` = 20): its value can come from one lucky ordering and its bootstrap interval is
too optimistic; when fewer than :data:`MIN_VALID_SHARE` (95%) of the bootstrap resamples gave a value (a one-class
resample has no AUROC); or when it is undefined (one class only). The breakdown keeps every figure with ``reliable`` and
``note`` beside it; tables mark unreliable figures, plots grey them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["MIN_MINORITY", "MIN_VALID_SHARE", "assess", "label_warning"]

MIN_MINORITY = 20
"""Fewest questions of the minority label class for a figure to count as reliable."""

MIN_VALID_SHARE = 0.95
"""Smallest share of bootstrap resamples that must give a value for the interval to count as reliable."""


def assess(result: Mapping[str, Any], n_resamples: int, min_minority: int = MIN_MINORITY) -> dict[str, Any]:
    """``{"reliable": bool, "note": str | None}`` for one metric result (``MetricResult.as_dict()``).

    Examples
    --------
    >>> assess({"value": 0.9, "n_correct": 1, "n_incorrect": 19, "n_valid_resamples": 659}, 1000)["note"]
    'small sample: 1 correct / 19 incorrect (minority < 20); 659 of 1000 resamples gave a value'
    >>> assess({"value": float("nan"), "n_correct": 0, "n_incorrect": 20, "n_valid_resamples": 0}, 1000)["note"]
    'undefined: one class only (0 correct / 20 incorrect)'
    """
    n_correct, n_incorrect = int(result.get("n_correct", 0)), int(result.get("n_incorrect", 0))
    counts = f"{n_correct} correct / {n_incorrect} incorrect"
    value = result.get("value")
    if n_correct == 0 or n_incorrect == 0:
        if value is None or not math.isfinite(value):
            return {"reliable": False, "note": f"undefined: one class only ({counts})"}
        return {"reliable": False, "note": f"one class only ({counts})"}
    notes = []
    if min(n_correct, n_incorrect) < min_minority:
        notes.append(f"small sample: {counts} (minority < {min_minority})")
    valid = int(result.get("n_valid_resamples", n_resamples))
    if n_resamples and valid < MIN_VALID_SHARE * n_resamples:
        notes.append(f"{valid} of {n_resamples} resamples gave a value")
    return {"reliable": not notes, "note": "; ".join(notes) or None}


def label_warning(strategy: str, n_correct: int, n: int, min_minority: int = MIN_MINORITY) -> str | None:
    """A console warning for a label strategy whose classes are too small, or None.

    Examples
    --------
    >>> label_warning("greedy", 1, 40)
    'greedy labels: 1 correct / 39 incorrect answers: AUROC / ECE under these labels are unreliable (minority class < 20)'
    """
    n_incorrect = n - n_correct
    if n == 0:
        return None
    if n_correct == 0 or n_incorrect == 0:
        return (
            f"{strategy} labels: {n_correct} correct / {n_incorrect} incorrect answers: one class only, "
            "AUROC is undefined (NaN) under these labels"
        )
    if min(n_correct, n_incorrect) < min_minority:
        return (
            f"{strategy} labels: {n_correct} correct / {n_incorrect} incorrect answers: AUROC / ECE under these "
            f"labels are unreliable (minority class < {min_minority})"
        )
    return None
