"""``semuq-eval rescore STORE``: recompute operators, estimators and AUROC/ECE from a run store, without the LLM
(:func:`semuq_eval.harness.rescore.rescore`)."""

from __future__ import annotations

import json
import sys

from semuq_eval.commands.arguments import CommandParser
from semuq_eval.harness.breakdown import breakdown_table
from semuq_eval.harness.rescore import RescoreOptions, rescore
from semuq_eval.judges import MODES
from semuq_eval.options import add_options, parse_options

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """`semuq-eval rescore STORE ...`: recompute matrices, scores and metrics from a run store."""
    parser = CommandParser(
        prog="semuq-eval rescore",
        description="Recompute operators, estimators and AUROC/ECE from a run store, without the LLM.",
    )
    parser.add_argument("store", help="a run store directory (<output_path>/semuq/<task>/<run_id>)")
    add_options(parser, RescoreOptions)
    parser.add_argument("--label_mode", choices=MODES, help="shorthand: --judge string with this mode")
    parser.add_argument("--json", action="store_true", help="print the breakdown JSON instead of the table")
    args = parser.parse_args(argv)
    try:  # bad input: one line, no traceback
        options = parse_options(RescoreOptions, args)
        if args.label_mode is not None:
            if options.judge not in (None, "string"):
                parser.error("--label_mode is an option of the string judge")
            options.judge = "string"
            options.judge_options = {**(options.judge_options or {}), "mode": args.label_mode}
        breakdown = rescore(args.store, options)
    except (FileNotFoundError, FileExistsError, ValueError) as err:
        print(f"semuq-eval rescore: {err}", file=sys.stderr)
        return 2
    print(json.dumps(breakdown, indent=1) if args.json else breakdown_table(breakdown))
    return 0
