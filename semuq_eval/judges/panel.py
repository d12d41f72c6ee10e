"""Panels: one label from two judges' labels on the same answer, by a rule.

``both``: correct only when both judges say so; ``either``: when one does. A missing label makes the panel's label
missing unless the other decides alone (``both`` with a 0, ``either`` with a 1). ``semuq-eval judge --panel A,B
--rule R`` builds a panel label set of a store, or a panel verdict set of a validation set
(:mod:`semuq_eval.judges.validation`).

Example
-------
>>> [combine(a, b, "both") for a, b in [(1, 1), (1, 0), (None, 1), (None, 0)]]
[1, 0, None, 0]
>>> [combine(a, b, "either") for a, b in [(0, 0), (1, 0), (None, 1), (None, 0)]]
[0, 1, 1, None]
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["PANEL_RULES", "check_panel", "combine"]

PANEL_RULES = ("both", "either")


def combine(a: int | bool | None, b: int | bool | None, rule: str) -> int | None:
    """The panel's label of one answer from the two judges' labels (module docstring)."""
    x, y = (None if v is None else int(v) for v in (a, b))
    if rule == "both":
        return 0 if 0 in (x, y) else (None if None in (x, y) else 1)
    if rule == "either":
        return 1 if 1 in (x, y) else (None if None in (x, y) else 0)
    raise ValueError(f"panel rule {rule!r}: choose one of {', '.join(PANEL_RULES)}")


def check_panel(members: Sequence[str], rule: str) -> tuple[str, str]:
    """The two member names of a panel, checked with its rule (ValueError in one line otherwise)."""
    if rule not in PANEL_RULES:
        raise ValueError(f"panel rule {rule!r}: choose one of {', '.join(PANEL_RULES)}")
    names = [m.strip() for m in members if m.strip()]
    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(f"a panel has two different members, got {', '.join(names) or 'none'}")
    return names[0], names[1]
