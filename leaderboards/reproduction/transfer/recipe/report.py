"""The transfer test's report (../PLAN.md), generated from committed run records: for each comparison of the plan,
over the reliable cells both operators have, "higher in X of Y, Z significantly higher, W significantly lower; mean
AUROC a vs b, difference d [95% CI]", for the test LLM and, beside it, for SmolLM2's records of the same questions;
then the verdicts of T1-T3 (and T4 when a diagnosis is given).

    .venv/bin/python leaderboards/reproduction/transfer/recipe/report.py \\
        --test 'leaderboards/reproduction/transfer/records/*.jsonl.gz' \\
        --beside 'leaderboards/reproduction/confirmation-2/test/records/*.jsonl.gz' \\
        [--diagnosis leaderboards/reproduction/transfer/diagnosis/diagnosis.json]

A cell is one of the plan's ten aggregators on one run (set) under one label strategy; it is reliable when at least
20 answers of each class have scores from both operators. Every AUROC and its 1,000 resamples come from
`semuq_eval.metrics.resample` with the leaderboard's bootstrap (1,000 resamples, seed 0): the resamples of a run's
questions are the same for every estimator, so differences are paired; a cell is significantly higher (lower)
when the 95% percentile interval of its difference lies above (below) 0; the interval of the mean difference
averages the cell differences resample by resample (runs resampled independently).
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from semuq_eval.harness.record import read_record
from semuq_eval.metrics import Bootstrap
from semuq_eval.metrics.bootstrap import resample

AGGREGATORS = ("se", "cae", "kle_heat", "kle_matern", "cos", "numsets", "eigv", "deg", "ecc", "te_enc")
STRATEGIES = ("greedy", "majority")
MIN_CLASS = 20
BOOTSTRAP = Bootstrap(n_resamples=1000, seed=0)
OPERATORS = {  # role -> the operator's name in each LLM's records
    "shipped": {"default": "enc", "smollm2-135m-instruct": "enc_trained_guided_ap_auroc"},
    "base": {"default": "enc_untrained", "smollm2-135m-instruct": "enc_answer_pooling"},
    "cos_ext": {"default": "cos_ext"},
    "lexical": {"default": "lexical"},
}
COMPARISONS = (
    ("T1", "base", "its untrained answer-pooled base", "mean above and higher in more than half"),
    ("T2", "cos_ext", "`cos_ext`", "mean difference <= 0"),
    ("T3", "lexical", "`lexical`", "mean above"),
)


@dataclass
class Cell:
    run: str
    strategy: str
    aggregator: str
    a: float
    b: float
    diffs: np.ndarray  # per resample, NaN where undefined


def name(role: str, llm: str) -> str:
    names = OPERATORS[role]
    return names.get(llm, names["default"])


def cells(record, a_role: str, b_role: str) -> list[Cell]:
    """The reliable cells of one record for the pair of operators, with their resampled differences."""
    llm, task = record["llm"], record["task"]
    index = {e: i for i, e in enumerate(record["estimators"])}
    out = []
    for strategy in STRATEGIES:
        y = np.array([_label(q, strategy) for q in record.questions], dtype=float)
        for agg in AGGREGATORS:
            ea, eb = f"{agg}@{name(a_role, llm)}", f"{agg}@{name(b_role, llm)}"
            if ea not in index or eb not in index:
                continue
            ua = np.array([_score(q, index[ea]) for q in record.questions])
            ub = np.array([_score(q, index[eb]) for q in record.questions])
            keep = np.isfinite(ua) & np.isfinite(ub) & np.isfinite(y)
            n_correct = int(y[keep].sum())
            if min(n_correct, int(keep.sum()) - n_correct) < MIN_CLASS:
                continue
            ra = resample("auroc", np.where(keep, ua, np.nan), np.where(keep, y, 0), bootstrap=BOOTSTRAP)
            rb = resample("auroc", np.where(keep, ub, np.nan), np.where(keep, y, 0), bootstrap=BOOTSTRAP)
            out.append(Cell(task, strategy, agg, ra.result.value, rb.result.value, ra.values - rb.values))
    return out


def _label(question: Mapping, strategy: str) -> float:
    value = (question["labels"].get("run") or {}).get(strategy)
    return np.nan if value is None else float(value)


def _score(question: Mapping, i: int) -> float:
    value = question["scores"][i]
    return np.nan if value is None else float(value)


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
        "ci": [float(x) for x in np.percentile(means, [2.5, 97.5])],
        "resamples": int(means.size),
    }


def verdict(test: str, s: Mapping) -> str:
    if not s.get("cells"):
        return "no reliable cell"
    d = s["difference"]
    held = {"T1": d > 0 and 2 * s["higher"] > s["cells"], "T2": d <= 0, "T3": d > 0}[test]
    return "held" if held else "**not held**"


def row(s: Mapping) -> str:
    if not s.get("cells"):
        return "0 | | | |"
    return (
        f"{s['cells']} | higher in {s['higher']}, {s['up']} significantly, {s['down']} significantly lower | "
        f"{s['mean_a']:.3f} vs {s['mean_b']:.3f} | {s['difference']:+.3f} [{s['ci'][0]:.3f}, {s['ci'][1]:.3f}]"
    )


def load(pattern: str) -> list:
    paths = sorted(glob.glob(pattern))
    if not paths:
        raise ValueError(f"no run record matches {pattern!r}")
    return [read_record(p) for p in paths]


def diagnosis_lines(path: str | None) -> list[str]:
    """T4 from a diagnosis (``comparisons["enc vs enc_untrained"]``), or why there is none."""
    if not path:
        return ["T4 (context trap lower, localization higher than the base): no diagnosis given yet."]
    row_ = (json.loads(Path(path).read_text()).get("comparisons") or {}).get("enc vs enc_untrained") or {}
    lines = [
        "| T4 part | shipped minus base [95% CI] | pairs / answers | holds if | verdict |",
        "|---|---|---|---|---|",
    ]
    for key, title, lower in (
        ("trap:context", "context trap", True),
        ("localization", "token localization", False),
    ):
        d = row_.get(key) or {}
        if d.get("difference") is None:
            lines.append(f"| {title} | n/a | | | no data |")
            continue
        held = d["ci_high"] < 0 if lower else d["ci_low"] > 0
        lines.append(
            f"| {title} | {d['difference']:+.3f} [{d['ci_low']:.3f}, {d['ci_high']:.3f}] | "
            f"{d.get('n_pairs', d.get('n_answers'))} | {'below' if lower else 'above'} 0 | "
            f"{'held' if held else '**not held**'} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", required=True, help="glob of the test LLM's run records")
    parser.add_argument("--beside", help="glob of SmolLM2's records of the same questions")
    parser.add_argument("--diagnosis", help="the diagnosis of the test stores (diagnosis.json), for T4")
    args = parser.parse_args(argv)
    try:
        test = load(args.test)
        beside = load(args.beside) if args.beside else []
    except (OSError, ValueError) as err:
        print(f"report.py: {err}", file=sys.stderr)
        return 2
    llm = test[0]["llm"]
    print(f"# Transfer test: the shipped `enc` on {llm}'s answers\n")
    print(
        "Generated by `recipe/report.py` from the committed run records (the plan: ../PLAN.md). Counts per run"
    )
    print("and label strategy (correct / incorrect answers):\n")
    for record in test + beside:
        counts = []
        for strategy in STRATEGIES:
            y = [_label(q, strategy) for q in record.questions]
            n1 = sum(v == 1 for v in y)
            counts.append(f"{strategy} {n1} / {sum(v == 0 for v in y)}")
        print(f"- {record['llm']}, {record['task']}: " + ", ".join(counts))
    print(
        "\n| test | comparison | LLM | reliable cells | cells | mean AUROC | mean difference [95% CI] | verdict |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for test_name, other, shown_name, rule in COMPARISONS:
        for records in (test, beside):
            if not records:
                continue
            found = [c for r in records for c in cells(r, "shipped", other)]
            s = summary(found)
            who = records[0]["llm"]
            shown = verdict(test_name, s) if records is test else "(beside)"
            print(
                f"| {test_name} | shipped `enc` vs {shown_name} (holds if: {rule}) | {who} | {row(s)} | {shown} |"
            )
    print()
    print("\n".join(diagnosis_lines(args.diagnosis)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
