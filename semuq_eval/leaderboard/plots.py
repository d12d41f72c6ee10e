"""PNG plots of a leaderboard (matplotlib, Agg): the headline's pictures (a forest plot of the headline cells;
per section, the accuracy-vs-rejection curves and the reliability diagrams of the reference estimator, one line
per LLM); per section, AUROC with 95% CIs per estimator per LLM and the LLM rank intervals; over all sections,
the mean AUROC heatmap operator x aggregator. Unreliable figures (the run's small-sample flag) are drawn hollow,
undefined ones left out and counted in the title. Every function reads the ``leaderboard.json`` document
(:func:`~.write.to_document`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from semuq_eval.durable import replace_file
from semuq_eval.jsonio import read_json, write_json
from semuq_eval.leaderboard.headline import STRATEGY

__all__ = [
    "HEADLINE_PLOTS",
    "plot_all",
    "plot_auroc",
    "plot_forest",
    "plot_heatmap",
    "plot_ranks",
    "plot_rejection",
    "plot_reliability",
]

HEADLINE_PLOTS = ("headline_forest.png", "rejection_*.png", "reliability_*.png")
"""The file patterns of the headline's pictures (the page shows them beside the headline)."""


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


def plot_auroc(document: Mapping[str, Any], section: Mapping[str, Any], path: str | Path) -> Path:
    """AUROC with its 95% CI for every estimator (rows) and LLM (markers), one panel per label strategy.

    Estimators are sorted by mean AUROC over the LLMs (greedy labels). Returns ``path``."""
    plt = _plt()
    import numpy as np

    sid, llms = section["id"], section["llms"]
    cells = [c for c in document["cells"] if c["section"] == sid and c["metric"] == "auroc"]
    strategies = sorted({c["strategy"] for c in cells}, key=lambda s: (s != "greedy", s)) or ["greedy"]
    at = {(c["strategy"], c["estimator"], c["llm"]): c for c in cells}

    def mean(name: str) -> float:
        values = [
            c["value"] for llm in llms if (c := at.get((strategies[0], name, llm))) and c["value"] is not None
        ]
        return sum(values) / len(values) if values else -1.0

    names = sorted(section["estimators"], key=mean)
    height = 0.2 * max(len(names), 1) * max(1.0, 0.25 * len(llms)) + 1.8
    fig, axes = plt.subplots(
        1, len(strategies), figsize=(6.5 * len(strategies), min(height, 36)), squeeze=False
    )
    colors = plt.get_cmap("tab10")
    step = 0.8 / max(len(llms), 1)
    for ax, strategy in zip(axes[0], strategies, strict=True):
        undefined = 0
        for j, llm in enumerate(llms):
            points = {True: [], False: []}  # reliable -> [(y, value, low, high)]
            for i, name in enumerate(names):
                c = at.get((strategy, name, llm))
                if c is None or c["value"] is None:
                    undefined += c is not None and c["status"] == "undefined"
                    continue
                low = c["ci_low"] if c["ci_low"] is not None else c["value"]
                high = c["ci_high"] if c["ci_high"] is not None else c["value"]
                points[bool(c["reliable"])].append((i - 0.4 + step * (j + 0.5), c["value"], low, high))
            color = colors(j % 10)
            for reliable, rows in points.items():
                if not rows:
                    continue
                y, v, lo, hi = (np.array(col) for col in zip(*rows, strict=True))
                ax.errorbar(
                    v, y, xerr=[v - lo, hi - v], fmt="o", ms=3.5, lw=1, capsize=1.5, color=color,
                    mfc=color if reliable else "white", label=llm if reliable or not points[True] else None,
                )  # fmt: skip
        ax.axvline(0.5, color="grey", linestyle="--", linewidth=0.8)
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names, fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"AUROC ({strategy} labels), 95% CI; hollow = unreliable")
        ax.set_title(
            f"{strategy} labels" + (f" ({undefined} undefined, one class)" if undefined else ""), fontsize=9
        )
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(len(llms), 5), fontsize=7, frameon=False)
    fig.suptitle(f"{sid}: {section['question_set']}, N = {section['n_samples']}", fontsize=10)
    fig.tight_layout(rect=(0, 0.04 + 0.01 * (len(llms) // 5), 1, 0.97))
    path = Path(path)
    replace_file(path, lambda fh: fig.savefig(fh, format="png", dpi=80))
    plt.close(fig)
    return path


def plot_forest(document: Mapping[str, Any], path: str | Path) -> Path | None:
    """The greedy headline's cells as a forest plot: per LLM (headline order) and column (tasks, then the mean),
    the reference estimator's AUROC with its 95% CI; hollow = flagged (small sample). None without a headline."""
    plt = _plt()
    headline = (document.get("headline") or {}).get(STRATEGY) or {}
    entries = []  # (label, cell)
    for row in headline.get("rows", []):
        for column in [*headline["columns"], "mean"]:
            cell = row["mean"] if column == "mean" else row["cells"].get(column)
            if cell is not None and cell.get("value") is not None:
                entries.append((f"{row['llm']} / {column}", cell))
    if not entries:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 1.0 + 0.3 * len(entries)))
    for i, (_, c) in enumerate(entries):
        low = c["ci_low"] if c["ci_low"] is not None else c["value"]
        high = c["ci_high"] if c["ci_high"] is not None else c["value"]
        color = "#c44e52" if _is_mean(entries[i][0]) else "#4c72b0"
        ax.errorbar(c["value"], i, xerr=[[c["value"] - low], [high - c["value"]]], fmt="o", ms=4, capsize=2,
                    color=color, mfc=color if c["reliable"] else "white")  # fmt: skip
    ax.axvline(0.5, color="grey", linestyle="--", linewidth=0.8)
    ax.set_yticks(range(len(entries)))
    ax.set_yticklabels([label for label, _ in entries], fontsize=7)
    ax.set_ylim(len(entries) - 0.5, -0.5)  # first row on top, no empty margin
    ax.set_xlim(0, 1)
    ax.set_xlabel(
        f"AUROC of {headline['reference']} ({headline['strategy']} labels), 95% CI; hollow = small sample"
    )
    ax.set_title("Headline: the reference estimator per LLM and task", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    replace_file(path, lambda fh: fig.savefig(fh, format="png", dpi=90))
    plt.close(fig)
    return path


def _is_mean(label: str) -> bool:
    return label.endswith(" / mean")


def _aurac_label(document: Mapping[str, Any], curve: Mapping[str, Any]) -> str:
    """``llm: AURAC 0.712 [0.650, 0.770]``: the ``auarc`` cell's CI when the board has that metric."""
    from semuq_eval.cell_text import cell_text

    cell = next(
        (
            c
            for c in document["cells"]
            if c["metric"] == "auarc"
            and (c["section"], c["llm"], c["estimator"], c["strategy"])
            == (curve["section"], curve["llm"], curve["estimator"], curve["strategy"])
        ),
        {},
    )
    low, high = cell.get("ci_low"), cell.get("ci_high")
    return f"{curve['llm']}: AURAC {cell_text(curve['aurac'], low, high)}"


def plot_rejection(document: Mapping[str, Any], section: Mapping[str, Any], path: str | Path) -> Path | None:
    """Accuracy of the kept answers against the share of the most uncertain rejected, one line per LLM, for
    the reference estimator (``curves``); the legend gives each AURAC (the curve's mean). None without curves."""
    plt = _plt()
    import numpy as np

    entries = [c for c in document.get("curves", []) if c["section"] == section["id"]]
    if not entries:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 4.0))
    for curve in entries:
        kept = np.asarray(curve["accuracy_kept"], dtype=float)
        ax.plot(np.arange(len(kept)) / len(kept), kept, lw=1.4, label=_aurac_label(document, curve))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("share of answers rejected (most uncertain first)")
    ax.set_ylabel("accuracy of the kept answers")
    ax.set_title(f"{section['id']}: accuracy vs rejection\n{entries[0]['estimator']}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = Path(path)
    replace_file(path, lambda fh: fig.savefig(fh, format="png", dpi=90))
    plt.close(fig)
    return path


def plot_reliability(
    document: Mapping[str, Any], section: Mapping[str, Any], path: str | Path
) -> Path | None:
    """The reliability diagram of the calibrated confidence (ECE's calibrator and bins), one line per LLM,
    marker area by the bin's share of answers. None without curves."""
    plt = _plt()
    entries = [c for c in document.get("curves", []) if c["section"] == section["id"]]
    if not entries:
        return None
    fig, ax = plt.subplots(figsize=(5.0, 4.5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=0.8, label="perfect calibration")
    for curve in entries:
        bins = curve["reliability"]
        total = sum(b["n"] for b in bins)
        line = ax.plot([b["confidence"] for b in bins], [b["accuracy"] for b in bins], lw=1,
                       label=f"{curve['llm']}: ECE {curve['ece']:.3f}")[0]  # fmt: skip
        ax.scatter([b["confidence"] for b in bins], [b["accuracy"] for b in bins],
                   s=[8 + 200 * b["n"] / total for b in bins], color=line.get_color())  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("calibrated confidence (held-out isotonic, as ECE)")
    ax.set_ylabel("accuracy in the bin")
    ax.set_title(f"{section['id']}: reliability\n{entries[0]['estimator']}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    path = Path(path)
    replace_file(path, lambda fh: fig.savefig(fh, format="png", dpi=90))
    plt.close(fig)
    return path


def plot_heatmap(document: Mapping[str, Any], path: str | Path) -> Path:
    """Mean AUROC over every (task, LLM) cell, operator (columns) x aggregator (rows), one panel per strategy."""
    plt = _plt()
    import numpy as np

    entries = document["heatmap"]
    strategies = sorted({e["strategy"] for e in entries}, key=lambda s: (s != "greedy", s)) or ["greedy"]
    aggs = sorted({e["aggregator"] for e in entries})
    ops = sorted({e["operator"] for e in entries}, key=lambda o: (o == "-", o))
    fig, axes = plt.subplots(
        1, len(strategies), figsize=(1.0 + 1.1 * max(len(ops), 1) * len(strategies), 1.2 + 0.42 * max(len(aggs), 1)),
        squeeze=False,
    )  # fmt: skip
    for ax, strategy in zip(axes[0], strategies, strict=True):
        grid = np.full((len(aggs), len(ops)), np.nan)
        for e in entries:
            if e["strategy"] == strategy and e["mean_auroc"] is not None:
                grid[aggs.index(e["aggregator"]), ops.index(e["operator"])] = e["mean_auroc"]
        image = ax.imshow(grid, cmap="viridis", vmin=0.5, vmax=0.85, aspect="auto")
        for i in range(len(aggs)):
            for j in range(len(ops)):
                if np.isfinite(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.3f}", ha="center", va="center", fontsize=7,
                            color="white" if grid[i, j] < 0.68 else "black")  # fmt: skip
        ax.set_xticks(range(len(ops)))
        ax.set_xticklabels(ops, fontsize=8, rotation=30)
        ax.set_yticks(range(len(aggs)))
        ax.set_yticklabels(aggs, fontsize=8)
        ax.set_title(f"mean AUROC, {strategy} labels", fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    path = Path(path)
    replace_file(path, lambda fh: fig.savefig(fh, format="png", dpi=100))
    plt.close(fig)
    return path


def plot_ranks(document: Mapping[str, Any], section: Mapping[str, Any], path: str | Path) -> Path | None:
    """Rank intervals of the LLMs for the estimators of the LLM-vs-LLM tests (None when nothing to rank)."""
    plt = _plt()
    sid = section["id"]
    chosen = {(p["strategy"], p["estimator"]) for p in document["llm_pairs"] if p["section"] == sid}
    rows = [
        r
        for r in document["ranks"]["llms"]
        if r["section"] == sid and (r["strategy"], r["estimator"]) in chosen
    ]
    rows = [r for r in rows if r["rank"] is not None]
    if not rows:
        return None
    rows.sort(key=lambda r: (r["strategy"], r["estimator"], -r["rank"]))
    fig, ax = plt.subplots(figsize=(6.5, 0.9 + 0.28 * len(rows)))
    labels = []
    for i, r in enumerate(rows):
        width = r["rank_high"] - r["rank_low"] + 0.8  # each rank a box 0.8 wide: one-rank intervals show
        ax.barh(i, width, left=r["rank_low"] - 0.4, height=0.5, color="#a9c1e6", edgecolor="#4c72b0")
        ax.plot(r["rank"], i, "o", color="black", ms=4)
        labels.append(f"{r['llm']} ({r['estimator']}, {r['strategy']})")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    n = max(r["n_ranked"] for r in rows)
    ax.set_xlim(0.5, n + 0.5)
    ax.set_xticks(range(1, n + 1))
    ax.invert_xaxis()
    ax.set_xlabel("rank of the LLM (1 = best AUROC); bar = 95% of bootstrap resamples")
    ax.set_title(f"{sid}: LLM rank intervals", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    replace_file(path, lambda fh: fig.savefig(fh, format="png", dpi=100))
    plt.close(fig)
    return path


WRITTEN = ".semuq-plots.json"
"""The list of the plots a build wrote into ``plots/`` (the next build replaces these and nothing else)."""


def plot_all(document: Mapping[str, Any], folder: str | Path) -> list[str]:
    """Every plot into ``folder/plots/``; returns their paths relative to ``folder`` (for the page)."""
    folder = Path(folder)
    out = folder / "plots"
    out.mkdir(parents=True, exist_ok=True)
    for old in _written_before(out):  # only the plots an earlier build wrote; any other file stays
        old.unlink(missing_ok=True)
    written = []
    forest = plot_forest(document, out / "headline_forest.png")
    if forest is not None:
        written.append(forest)
    for section in document["sections"]:
        for kind, plot in (("rejection", plot_rejection), ("reliability", plot_reliability)):
            figure = plot(document, section, out / f"{kind}_{_slug(section['id'])}.png")
            if figure is not None:
                written.append(figure)
    if document["heatmap"]:
        written.append(plot_heatmap(document, out / "heatmap_operator_x_aggregator.png"))
    for section in document["sections"]:
        if any(c["section"] == section["id"] and c["value"] is not None for c in document["cells"]):
            written.append(plot_auroc(document, section, out / f"auroc_{_slug(section['id'])}.png"))
        ranks = plot_ranks(document, section, out / f"ranks_{_slug(section['id'])}.png")
        if ranks is not None:
            written.append(ranks)
    write_json(out / WRITTEN, {"plots": [p.name for p in written]})
    return [str(p.relative_to(folder)) for p in written]


def _written_before(out: Path) -> list[Path]:
    """The plots the previous build listed; without a list (an output folder that holds none), the files named as
    builds name them."""
    try:
        names = read_json(out / WRITTEN).get("plots") or []
        return [out / Path(str(n)).name for n in names]
    except (OSError, ValueError, AttributeError):
        patterns = ("heatmap_operator_x_aggregator.png", "auroc_*.png", "ranks_*.png", *HEADLINE_PLOTS)
        return [p for pattern in patterns for p in out.glob(pattern)]
