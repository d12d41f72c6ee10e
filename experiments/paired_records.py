"""Two runs of the same questions compared estimator by estimator: paired AUROC differences from their run records.

For two runs that differ in one setting (the LLM's dtype, its decoding, a judge), each estimator's AUROC in run A
minus its AUROC in run B, with the percentile-bootstrap 95% CI of the paired difference (the same resampled
questions for both runs, each scored against its own run's labels: the answers, and so the labels, can differ)
and the correct / incorrect counts behind each side. The records must hold the same question set
(``question_set``); a question without a verdict in either run is left out of that label's rows.

    .venv/bin/python -m experiments.paired_records A.jsonl.gz B.jsonl.gz --estimators te,kle_heat@enc

Used for the demo in float32 against bfloat16 (docs/speed.md); the records are committed in
``leaderboards/demo/fp32-vs-bf16/``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence

import numpy as np

from semuq_eval.harness.record import RunRecord, read_record
from semuq_eval.metrics import paired_difference

LABELS = ("greedy", "majority")
MIN_MINORITY = 20
"""Fewer answers than this in either class of either run: the cell is flagged as a small sample (``!``)."""


def _column(record: RunRecord, name: str) -> np.ndarray:
    k = record["estimators"].index(name)
    return np.array([math.nan if q["scores"][k] is None else q["scores"][k] for q in record.questions], float)


def _labels(record: RunRecord, label: str) -> np.ndarray:
    run = record["label_set"]
    return np.array(
        [math.nan if (v := q["labels"].get(run, {}).get(label)) is None else v for q in record.questions],
        float,
    )


def compare(a: RunRecord, b: RunRecord, estimators: Sequence[str]) -> list[dict]:
    """One row per estimator and label: AUROC in each run, the paired difference a - b and its CI, the counts."""
    if a["question_set"] != b["question_set"]:
        raise ValueError("the records hold different question sets (field question_set): nothing to pair")
    rows = []
    for label in LABELS:
        ya, yb = _labels(a, label), _labels(b, label)
        known = ~np.isnan(ya) & ~np.isnan(yb)  # a question without a verdict in either run cannot be paired
        ya, yb = ya[known], yb[known]
        for name in estimators:
            d = paired_difference(
                _column(a, name)[known], _column(b, name)[known], ya, correct_b=yb
            ).as_dict()
            rows.append(
                {
                    "estimator": name,
                    "label": label,
                    "counts_a": (int(ya.sum()), int(np.sum(ya == 0))),
                    "counts_b": (int(yb.sum()), int(np.sum(yb == 0))),
                    **d,
                }
            )
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="run record A (.jsonl.gz)")
    parser.add_argument("b", help="run record B, the same questions")
    parser.add_argument("--estimators", help="comma-separated (default: every estimator both records have)")
    args = parser.parse_args(argv)
    try:
        a, b = read_record(args.a), read_record(args.b)
    except (OSError, ValueError) as err:
        parser.error(str(err))
    shared = [e for e in a["estimators"] if e in set(b["estimators"])]
    names = [e.strip() for e in args.estimators.split(",")] if args.estimators else shared
    missing = [e for e in names if e not in shared]
    if missing:
        parser.error(f"--estimators: not in both records: {missing}")
    print(
        "| estimator | labels | A: AUROC (correct / incorrect) | B: AUROC (correct / incorrect) | A - B [95% CI] |"
    )
    print("|---|---|---|---|---|")
    try:
        rows = compare(a, b, names)
    except ValueError as err:
        parser.error(f"{args.a} and {args.b}: {err}")
    for r in rows:
        mark = " *" if r["ci_low"] > 0 or r["ci_high"] < 0 else ""
        if min(*r["counts_a"], *r["counts_b"]) < MIN_MINORITY:
            mark += " !"
        print(
            f"| `{r['estimator']}` | {r['label']} | {r['value_a']:.3f} ({r['counts_a'][0]} / {r['counts_a'][1]}) | "
            f"{r['value_b']:.3f} ({r['counts_b'][0]} / {r['counts_b'][1]}) | "
            f"{r['difference']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]{mark} |"
        )
    print(
        f"\n* the interval excludes 0; ! fewer than {MIN_MINORITY} answers of a class in a run (small sample)"
    )


if __name__ == "__main__":
    main()
