"""Two operators of the same runs compared cell by cell: the counting rule of the confirmations and the transfer test.

A cell is one aggregator on one run under one label strategy; it is reliable when at least 20 answers of each
class have scores from both operators. Every AUROC and its 1,000 resamples come from
`semuq_eval.metrics.resample` with the leaderboard's bootstrap (1,000 resamples, seed 0): the resamples of a run's
questions are the same for every estimator, so differences are paired; a cell is significantly higher (lower)
when the 95% percentile interval of its difference lies above (below) 0; the interval of the mean difference
averages the cell differences resample by resample (runs resampled independently). Over the reliable cells:
"higher in X of Y, Z significantly higher, W significantly lower; mean AUROC a vs b, difference d [95% CI]".

    .venv/bin/python -m experiments.operator_cells 'RECORDS/*.jsonl.gz' --compare enc:enc_full,enc_untrained
"""

from __future__ import annotations

import argparse
import glob
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from semuq_eval.harness.record import RunRecord, read_record
from semuq_eval.metrics import Bootstrap
from semuq_eval.metrics.bootstrap import resample

AGGREGATORS = ("se", "cae", "kle_heat", "kle_matern", "cos", "numsets", "eigv", "deg", "ecc", "te_enc")
"""The ten aggregators of the reproduction's plans."""
STRATEGIES = ("greedy", "majority")
MIN_CLASS = 20
BOOTSTRAP = Bootstrap(n_resamples=1000, seed=0)


@dataclass
class Cell:
    run: str
    strategy: str
    aggregator: str
    a: float
    b: float
    diffs: np.ndarray  # per resample, NaN where undefined


def cells(
    record: RunRecord,
    a: str,
    b: str,
    aggregators: Sequence[str] = AGGREGATORS,
    label_set: str = "run",
    strategies: Sequence[str] = STRATEGIES,
) -> list[Cell]:
    """The reliable cells of one record for operators ``a`` and ``b`` under ``label_set`` and ``strategies``, with
    their resampled differences."""
    index = {e: i for i, e in enumerate(record["estimators"])}
    out = []
    for strategy in strategies:
        y = labels(record, strategy, label_set)
        for agg in aggregators:
            ea, eb = f"{agg}@{a}", f"{agg}@{b}"
            if ea not in index or eb not in index:
                continue
            ua, ub = _scores(record, index[ea]), _scores(record, index[eb])
            keep = np.isfinite(ua) & np.isfinite(ub) & np.isfinite(y)
            n_correct = int(y[keep].sum())
            if min(n_correct, int(keep.sum()) - n_correct) < MIN_CLASS:
                continue
            ra = resample("auroc", np.where(keep, ua, np.nan), np.where(keep, y, 0), bootstrap=BOOTSTRAP)
            rb = resample("auroc", np.where(keep, ub, np.nan), np.where(keep, y, 0), bootstrap=BOOTSTRAP)
            out.append(
                Cell(record["task"], strategy, agg, ra.result.value, rb.result.value, ra.values - rb.values)
            )
    return out


def labels(record: RunRecord, strategy: str, label_set: str = "run") -> np.ndarray:
    """The labels of ``label_set`` (default: the run's judge) under ``strategy`` (NaN where a question has no
    verdict)."""
    if label_set not in record["label_sets"] and label_set != "run":
        raise ValueError(f"run {record['llm']} ({record['task']}) has no label set {label_set!r}")
    values = [(q["labels"].get(label_set) or {}).get(strategy) for q in record.questions]
    return np.array([np.nan if v is None else float(v) for v in values])


def _scores(record: RunRecord, i: int) -> np.ndarray:
    return np.array([np.nan if q["scores"][i] is None else float(q["scores"][i]) for q in record.questions])


def summary(found: Sequence[Cell]) -> dict:
    """The counting rule's figures over ``found``."""
    if not found:
        return {"cells": 0}
    low_high = [np.nanpercentile(c.diffs, [2.5, 97.5]) for c in found]
    stacked = np.vstack([c.diffs for c in found])
    means = stacked[:, np.isfinite(stacked).all(axis=0)].mean(axis=0)
    return {
        "cells": len(found),
        "higher": sum(c.a > c.b for c in found),
        "up": sum(lo > 0 for lo, _ in low_high),
        "down": sum(hi < 0 for _, hi in low_high),
        "mean_a": float(np.mean([c.a for c in found])),
        "mean_b": float(np.mean([c.b for c in found])),
        "difference": float(np.mean([c.a - c.b for c in found])),
        "largest": float(max(abs(c.a - c.b) for c in found)),
        "ci": [float(x) for x in np.percentile(means, [2.5, 97.5])],
        "resamples": int(means.size),
    }


RULES = {
    "above": "mean above",
    "above-most": "mean above and higher in more than half",
    "not-above": "mean difference <= 0",
}
"""The plans' prediction rules over a :func:`summary`, by name, with how the reports show them."""


def verdict(s: Mapping, rule: str) -> str:
    """Whether a :func:`summary` meets ``rule`` (a key of :data:`RULES`): ``held``, ``**not held**`` or ``no
    reliable cell``."""
    if not s.get("cells"):
        return "no reliable cell"
    d = s["difference"]
    met = {"above": d > 0, "above-most": d > 0 and 2 * s["higher"] > s["cells"], "not-above": d <= 0}[rule]
    return "held" if met else "**not held**"


def row(s: Mapping) -> str:
    """``cells | counts | mean AUROCs | difference [CI]`` of a :func:`summary` (a Markdown table's cells)."""
    if not s.get("cells"):
        return "0 | | | |"
    return (
        f"{s['cells']} | higher in {s['higher']}, {s['up']} significantly, {s['down']} significantly lower | "
        f"{s['mean_a']:.3f} vs {s['mean_b']:.3f} | {s['difference']:+.3f} [{s['ci'][0]:.3f}, {s['ci'][1]:.3f}]"
    )


def load(pattern: str) -> list[RunRecord]:
    """The run records matching ``pattern``, sorted by path; ValueError when none does."""
    paths = sorted(glob.glob(pattern))
    if not paths:
        raise ValueError(f"no run record matches {pattern!r}")
    return [read_record(p) for p in paths]


def check_operators(records: Sequence[RunRecord], names: Sequence[str]) -> None:
    """ValueError, in one line naming the run, when a record lacks one of the operators ``names``."""
    for record in records:
        have = list(record["operators"])
        missing = [name for name in names if name not in have]
        if missing:
            raise ValueError(
                f"run {record['llm']} ({record['task']}) has no operator {missing[0]!r} (it has {', '.join(have)})"
            )


def class_counts(record: RunRecord, label_set: str = "run") -> str:
    """``greedy c / i, majority c / i``: the correct and incorrect answers under each label strategy."""
    parts = []
    for strategy in STRATEGIES:
        y = labels(record, strategy, label_set)
        parts.append(f"{strategy} {int((y == 1).sum())} / {int((y == 0).sum())}")
    return ", ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", help="glob of run records of the same runs")
    parser.add_argument(
        "--compare", required=True, help="OPERATOR:OTHER[,OTHER...]: the operator against each other one"
    )
    args = parser.parse_args(argv)
    operator, _, others = args.compare.partition(":")
    if not operator or not others.strip(","):
        parser.error(f"--compare: expected OPERATOR:OTHER[,OTHER...], got {args.compare!r}")
    try:
        records = load(args.records)
    except (OSError, ValueError) as err:
        print(f"operator_cells: {err}", file=sys.stderr)
        return 2
    for record in records:
        print(f"- {record['llm']}, {record['task']}: {class_counts(record)}")
    print(
        "\n| comparison | reliable cells | cells | mean AUROC | mean difference [95% CI] | largest cell gap |"
    )
    print("|---|---|---|---|---|---|")
    for other in filter(None, others.split(",")):
        s = summary([c for r in records for c in cells(r, operator, other)])
        gap = f"{s['largest']:.3f}" if s.get("cells") else ""
        print(f"| `{operator}` vs `{other}` | {row(s)} | {gap} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
