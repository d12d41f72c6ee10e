"""The transfer test's report (../PLAN.md), generated from committed run records: for each comparison of the plan,
over the reliable cells both operators have, "higher in X of Y, Z significantly higher, W significantly lower; mean
AUROC a vs b, difference d [95% CI]", for the test LLM and, beside it, for SmolLM2's records of the same questions;
then the verdicts of T1-T3 (and T4 when a diagnosis is given).

    .venv/bin/python leaderboards/reproduction/transfer/recipe/report.py \\
        --test 'leaderboards/reproduction/transfer/records/*.jsonl.gz' \\
        --beside 'leaderboards/reproduction/confirmation-2/test/records/*.jsonl.gz' \\
        [--diagnosis leaderboards/reproduction/transfer/diagnosis/diagnosis.json]

Under another judge's labels: ``--labels NAME`` reads that label set of the records (the common board's records
carry the second judge's, ``llm``), and ``--names role=operator,...`` names the operators in records whose names
differ (the common board's: ``shipped=enc_trained,base=enc_answer_pooling``).

The cells and the counting rule are `experiments/operator_cells.py`'s (the ten aggregators x greedy and majority
labels, reliable with at least 20 answers of each class, the leaderboard's paired bootstrap).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))  # the repository, for experiments/
from experiments.operator_cells import RULES, cells, class_counts, load, row, summary, verdict  # noqa: E402

OPERATORS = {  # role -> the operator's name in each LLM's records
    "shipped": {"default": "enc", "smollm2-135m-instruct": "enc_trained_guided_ap_auroc"},
    "base": {"default": "enc_untrained", "smollm2-135m-instruct": "enc_answer_pooling"},
    "cos_ext": {"default": "cos_ext"},
    "lexical": {"default": "lexical"},
}
COMPARISONS = (  # the plan's test, the other operator's role, how it is shown, the prediction's rule
    ("T1", "base", "its untrained answer-pooled base", "above-most"),
    ("T2", "cos_ext", "`cos_ext`", "not-above"),
    ("T3", "lexical", "`lexical`", "above"),
)


def name(role: str, llm: str) -> str:
    names = OPERATORS[role]
    return names.get(llm, names["default"])


def rename(spec: str | None) -> None:
    """Name each role's operator in ``spec`` (``role=operator,...``) for every LLM's records."""
    for part in filter(None, (spec or "").split(",")):
        role, _, operator = part.partition("=")
        if role not in OPERATORS or not operator:
            raise ValueError(f"--names: {part!r} is not ROLE=OPERATOR with a role in {', '.join(OPERATORS)}")
        OPERATORS[role] = {"default": operator}


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
    parser.add_argument(
        "--weights", help="sha256 of the shipped enc's model.safetensors that scored the records"
    )
    parser.add_argument(
        "--labels", default="run", help="the label set to count under (default: the run's judge)"
    )
    parser.add_argument("--names", help="role=operator,...: the operators' names in these records")
    parser.add_argument(
        "--strategies",
        default="greedy,majority",
        help="the label strategies whose cells count (default both)",
    )
    args = parser.parse_args(argv)
    try:
        rename(args.names)
        test = load(args.test)
        beside = load(args.beside) if args.beside else []
    except (OSError, ValueError) as err:
        print(f"report.py: {err}", file=sys.stderr)
        return 2
    llm = test[0]["llm"]
    print(f"# Transfer test: the shipped `enc` on {llm}'s answers\n")
    print("Generated by `recipe/report.py` from the committed run records (the plan: ../PLAN.md).")
    if args.labels != "run":
        judge = json.dumps(test[0]["label_sets"].get(args.labels), sort_keys=True)
        print(f"Labels: the records' label set `{args.labels}` ({judge}), not the run's string judge.")
    if args.strategies != "greedy,majority":
        print(f"Cells: the {args.strategies} labels' only.")
    if args.weights:
        print(f"The shipped `enc` built for this scoring: model.safetensors sha256 `{args.weights}`.")
    print("\nCounts per run and label strategy (correct / incorrect answers):\n")
    for record in test + beside:
        shipped = (record["operators"].get(name("shipped", record["llm"])) or {}).get("info") or {}
        print(
            f"- {record['llm']}, {record['task']}: {class_counts(record, args.labels)}; the shipped operator's weights: "
            f"`{shipped.get('revision') or 'not recorded'}`"
        )
    print(
        "\n| test | comparison | LLM | reliable cells | cells | mean AUROC | mean difference [95% CI] | verdict |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for test_name, other, shown_name, rule in COMPARISONS:
        for records in (test, beside):
            if not records:
                continue
            found = [
                c
                for r in records
                for c in cells(
                    r,
                    name("shipped", r["llm"]),
                    name(other, r["llm"]),
                    label_set=args.labels,
                    strategies=args.strategies.split(","),
                )
            ]
            s = summary(found)
            who = records[0]["llm"]
            shown = verdict(s, rule) if records is test else "(beside)"
            print(
                f"| {test_name} | shipped `enc` vs {shown_name} (holds if: {RULES[rule]}) | {who} | {row(s)} | "
                f"{shown} |"
            )
    print()
    print("\n".join(diagnosis_lines(args.diagnosis)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
