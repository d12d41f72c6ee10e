"""Figures of a breakdown: AUROC per estimator with its 95% CI, one panel per label strategy.

Unreliable figures (:mod:`semuq_eval.harness.reliability`) are grey and hatched, undefined ones listed instead of drawn;
each panel's title gives the correct / incorrect counts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from semuq_eval.durable import replace_file
from semuq_eval.judges import strategies as label_strategies

__all__ = ["plot_auroc"]

RELIABLE, UNRELIABLE = "#4c72b0", "#bbbbbb"


def _rows(per_estimator: Mapping[str, Any]) -> tuple[list[tuple], list[str]]:
    rows, undefined = [], []
    for name, per in per_estimator.items():
        r = per.get("auroc") or {}
        value = r.get("value")
        if value is None or not math.isfinite(value):
            undefined.append(name)
        else:
            rows.append((name, value, r.get("ci_low"), r.get("ci_high"), r.get("reliable", True)))
    rows.sort(key=lambda row: row[1])
    return rows, undefined


def plot_auroc(breakdown: Mapping[str, Any], path: str | Path) -> Path:
    """Write horizontal AUROC bars with CI whiskers, one panel per label strategy, to ``path`` (PNG).

    ``breakdown`` is a breakdown (``breakdown.json``) as a run or ``rescore`` writes it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    results = breakdown.get("results", {})
    strategies = [s for s in label_strategies.label_strategy_names() if s in results] or ["greedy"]
    panels = [_rows(results.get(s, {})) for s in strategies]
    height = 0.28 * max((len(rows) for rows, _ in panels), default=1) + 2.0
    fig, axes = plt.subplots(1, len(strategies), figsize=(7 * len(strategies), height), squeeze=False)
    for ax, strategy, (rows, undefined) in zip(axes[0], strategies, panels, strict=True):
        labels = breakdown.get("labels", {}).get(strategy, {})
        n, n_correct = labels.get("n", 0), labels.get("n_correct", 0)
        if rows:
            names, values, lows, highs, reliable = zip(*rows, strict=True)
            err = [
                [v - lo if lo is not None else 0 for v, lo in zip(values, lows, strict=True)],
                [hi - v if hi is not None else 0 for v, hi in zip(values, highs, strict=True)],
            ]
            colors = [RELIABLE if ok else UNRELIABLE for ok in reliable]
            bars = ax.barh(names, values, xerr=err, color=colors, ecolor="#333333", capsize=2)
            for bar, ok in zip(bars, reliable, strict=True):
                if not ok:
                    bar.set_hatch("//")
        else:
            ax.text(0.5, 0.5, "no AUROC defined", ha="center", va="center", transform=ax.transAxes)
        if undefined:
            ax.text(
                0.01, -0.08 - 0.0, f"undefined (NaN): {len(undefined)} estimator(s), one class only",
                transform=ax.transAxes, fontsize=8, color="#aa0000", va="top",
            )  # fmt: skip
        ax.axvline(0.5, color="grey", linestyle="--", linewidth=1)
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"AUROC ({strategy} labels), 95% bootstrap CI")
        ax.set_title(f"{strategy} labels: {n_correct} correct / {n - n_correct} incorrect", fontsize=10)
    threshold = breakdown.get("settings", {}).get("min_minority", 20)
    fig.legend(
        handles=[
            Patch(color=RELIABLE, label="reliable"),
            Patch(facecolor=UNRELIABLE, hatch="//", label=f"unreliable (minority class < {threshold} or few valid resamples)"),
        ],
        loc="lower center", ncol=2, fontsize=8, frameon=False,
    )  # fmt: skip
    fig.suptitle(
        f"{breakdown.get('task', '')}: {breakdown.get('n_docs', '?')} questions, N = {breakdown.get('n_samples', '?')}"
    )
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    path = Path(path)
    replace_file(path, lambda fh: fig.savefig(fh, format="png", dpi=110))
    plt.close(fig)
    return path
