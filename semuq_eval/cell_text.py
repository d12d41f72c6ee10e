"""One figure as table text, written the same way by every table: ``0.812 [0.700, 0.900] !``.

Used by the breakdown table (:mod:`semuq_eval.harness.breakdown`), the judge command's AUROC table, the leaderboard
(:mod:`semuq_eval.leaderboard.write`) and the diagnosis report (:mod:`semuq_eval.diagnose.outputs`)."""

from __future__ import annotations

import math
from numbers import Real

__all__ = ["cell_text"]


def _finite(x: object) -> bool:
    return isinstance(x, Real) and math.isfinite(x)


def cell_text(
    value: float | None,
    low: float | None = None,
    high: float | None = None,
    *,
    reliable: bool = True,
    count: int | str | None = None,
    missing: str = "n/a",
) -> str:
    """``value [low, high] (count) !``: three decimals; the interval when both bounds are finite numbers, what the
    figure rests on when ``count`` is given (e.g. the pairs behind a mean, ``"3/10"``), `` !`` when it is not
    ``reliable`` (a small minority class, too few pairs or valid resamples). A missing or non-finite ``value`` shows
    ``missing`` alone.

    Examples
    --------
    >>> cell_text(0.8123, 0.7, 0.9)
    '0.812 [0.700, 0.900]'
    >>> cell_text(0.5, 0.2, float("nan"), reliable=False, count=12)
    '0.500 (12) !'
    >>> cell_text(None), cell_text(float("nan"), 0.1, 0.2, missing="-")
    ('n/a', '-')
    """
    if not _finite(value):
        return missing
    text = f"{value:.3f}"
    if _finite(low) and _finite(high):
        text += f" [{low:.3f}, {high:.3f}]"
    if count is not None:
        text += f" ({count})"
    return text if reliable else text + " !"
