"""``semuq-eval rescore STORE``: recompute operators, estimators and AUROC/ECE from a run store, without the LLM
(:func:`semuq_eval.harness.rescore.rescore`)."""

from __future__ import annotations

import json
import sys
from typing import Any

from semuq_eval.commands.arguments import CommandParser, json_object, number, whole
from semuq_eval.harness.breakdown import breakdown_table
from semuq_eval.harness.rescore import rescore
from semuq_eval.judges import MODES
from semuq_eval.metrics.bootstrap import MAX_RESAMPLES

__all__ = ["main"]


def _csv(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _options(text: str | None, flag: str, of: str) -> dict[str, Any] | None:
    """The JSON object of option ``flag`` (None when not given: the stored one stays)."""
    return None if text is None else json_object(text, flag, of)


def main(argv: list[str]) -> int:
    """`semuq-eval rescore STORE ...`: recompute matrices, scores and metrics from a run store."""
    parser = CommandParser(
        prog="semuq-eval rescore",
        description="Recompute operators, estimators and AUROC/ECE from a run store, without the LLM.",
    )
    parser.add_argument("store", help="a run store directory (<output_path>/semuq/<task>/<run_id>)")
    parser.add_argument(
        "--operators", type=_csv, help="comma-separated operators to (re)compute, e.g. lexical,enc"
    )
    parser.add_argument(
        "--operator_options",
        help='JSON {operator: {option: value}}; a named variant: \'{"enc_nq": {"operator": "enc", "model": "ops/enc-nq"}}\'',
    )
    parser.add_argument("--estimators", type=_csv, help="keep only these estimators, e.g. kle_heat@enc,te")
    parser.add_argument("--n_samples", type=whole(1), help="use the first k stored samples (N-ablation)")
    parser.add_argument(
        "--tau", type=number(0, 1, open_low=True), help="threshold for clustering graded matrices"
    )
    parser.add_argument("--judge", help="judge the answers again with this judge (default: stored labels)")
    parser.add_argument("--judge_options", help='the judge\'s options as JSON, e.g. \'{"mode": "em"}\'')
    parser.add_argument("--label_mode", choices=MODES, help="shorthand: --judge string with this mode")
    parser.add_argument(
        "--labels",
        help="score against this stored label set (default: run; `semuq-eval judge` writes others)",
    )
    parser.add_argument("--bootstrap", type=whole(1, MAX_RESAMPLES), help="number of bootstrap resamples")
    parser.add_argument(
        "--output", help="write the breakdown JSON here (a directory gets breakdown.rescore.json)"
    )
    parser.add_argument(
        "--store_output", help="write a complete run store there (answers copied, new scores and breakdown)"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace a run store at --store_output, or an --output file that is not a breakdown",
    )
    parser.add_argument("--json", action="store_true", help="print the breakdown JSON instead of the table")
    args = parser.parse_args(argv)
    try:  # bad input: one line, no traceback
        operator_options = _options(args.operator_options, "--operator_options", "operator name -> options")
        judge, judge_options = args.judge, _options(args.judge_options, "--judge_options", "option -> value")
        if args.label_mode is not None:
            if judge not in (None, "string"):
                parser.error("--label_mode is an option of the string judge")
            judge, judge_options = "string", {**(judge_options or {}), "mode": args.label_mode}
        breakdown = rescore(
            args.store,
            operators=args.operators,
            operator_options=operator_options,
            estimator_names=args.estimators,
            n_samples=args.n_samples,
            tau=args.tau,
            judge=judge,
            judge_options=judge_options,
            labels=args.labels,
            bootstrap=args.bootstrap,
            output=args.output,
            store_output=args.store_output,
            force=args.force,
        )
    except (FileNotFoundError, FileExistsError, ValueError) as err:
        print(f"semuq-eval rescore: {err}", file=sys.stderr)
        return 2
    print(json.dumps(breakdown, indent=1) if args.json else breakdown_table(breakdown))
    return 0
