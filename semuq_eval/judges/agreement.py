"""Agreement between two sets of labels: Cohen's kappa and the 2 x 2 confusion matrix.

Compares judges (string vs LLM) and label strategies (greedy vs majority) on the same questions. Pairs with a
missing label are left out and counted; kappa is None (with a note) when both label sets are constant.

Example
-------
>>> a = agreement([1, 1, 0, 0, None], [1, 0, 0, 0, 1])
>>> a["n"], a["n_skipped"], a["confusion"], round(a["kappa"], 3)
(4, 1, [[2, 0], [1, 1]], 0.5)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["agreement", "agreement_table"]


def agreement(a: Sequence[int | bool | None], b: Sequence[int | bool | None]) -> dict[str, Any]:
    """Agreement of two aligned label sequences (1 / 0 / None).

    Returns ``n`` (pairs with both labels), ``n_skipped`` (pairs with a missing label), ``confusion``
    (``[[a=0 & b=0, a=0 & b=1], [a=1 & b=0, a=1 & b=1]]``), ``observed`` (share of equal labels), ``kappa``
    (scikit-learn's ``cohen_kappa_score``; None when undefined) and ``note``."""
    if len(a) != len(b):
        raise ValueError(f"label sequences of different lengths: {len(a)} and {len(b)}")
    pairs = [
        (int(bool(x)), int(bool(y))) for x, y in zip(a, b, strict=True) if x is not None and y is not None
    ]
    n = len(pairs)
    out: dict[str, Any] = {"n": n, "n_skipped": len(a) - n, "confusion": [[0, 0], [0, 0]]}
    if not n:
        return {**out, "observed": None, "kappa": None, "note": "no pair with both labels"}
    x, y = np.array(pairs).T
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    out["confusion"] = confusion_matrix(x, y, labels=[0, 1]).tolist()
    out["observed"] = float(np.mean(x == y))
    expected = float(np.mean(x) * np.mean(y) + (1 - np.mean(x)) * (1 - np.mean(y)))
    if expected >= 1.0:
        return {**out, "kappa": None, "note": "both label sets are constant: kappa is undefined"}
    out["kappa"] = float(cohen_kappa_score(x, y, labels=[0, 1]))
    out["note"] = "" if n >= 50 else f"only {n} pairs: kappa is imprecise"
    return out


def agreement_table(rows: dict[str, dict[str, Any]]) -> str:
    """A plain-text table of several agreements (``{row name: agreement(...)}``)."""
    lines = [f"{'':<28} {'n':>6} {'agree':>7} {'kappa':>7}   confusion [[0/0, 0/1], [1/0, 1/1]]"]
    for name, a in rows.items():
        agree = "-" if a["observed"] is None else f"{a['observed']:.3f}"
        kappa = "-" if a["kappa"] is None else f"{a['kappa']:.3f}"
        note = f"  ({a['note']})" if a.get("note") else ""
        lines.append(f"{name:<28} {a['n']:>6} {agree:>7} {kappa:>7}   {a['confusion']}{note}")
    return "\n".join(lines)
