"""``semuq-eval rescore STORE``: recompute operators, estimators and AUROC/ECE from a run store, without the LLM
(:func:`semuq_eval.harness.rescore.rescore`)."""

from __future__ import annotations

import json
import sys

from semuq_eval.commands.arguments import CommandParser
from semuq_eval.harness.breakdown import breakdown_table
from semuq_eval.harness.rescore import RescoreOptions, rescore
from semuq_eval.judges.string import Mode
from semuq_eval.options import Options, add_options, option, parse_options

__all__ = ["main"]


class RescoreCommandOptions(Options):
    """The store ``semuq-eval rescore`` reads and how it prints (what it recomputes: RescoreOptions)."""

    store: str = option(..., "a run store directory (<output_path>/semuq/<task>/<run_id>)", flag="store")
    label_mode: Mode | None = option(None, "shorthand: --judge string with this mode")
    as_json: bool = option(False, "print the breakdown JSON instead of the table", flag="--json")


def main(argv: list[str]) -> int:
    """`semuq-eval rescore STORE ...`: recompute matrices, scores and metrics from a run store."""
    parser = CommandParser(
        prog="semuq-eval rescore",
        description="Recompute operators, estimators and AUROC/ECE from a run store, without the LLM.",
    )
    add_options(parser, RescoreCommandOptions)
    add_options(parser, RescoreOptions)
    namespace = parser.parse_args(argv)
    try:  # bad input: one line, no traceback
        args, options = (
            parse_options(RescoreCommandOptions, namespace),
            parse_options(RescoreOptions, namespace),
        )
        if args.label_mode is not None:
            if options.judge not in (None, "string"):
                parser.error("--label_mode is an option of the string judge")
            options.judge = "string"
            options.judge_options = {**(options.judge_options or {}), "mode": args.label_mode}
        breakdown = rescore(args.store, options)
    except (FileNotFoundError, FileExistsError, ValueError) as err:
        print(f"semuq-eval rescore: {err}", file=sys.stderr)
        return 2
    print(json.dumps(breakdown, indent=1) if args.as_json else breakdown_table(breakdown))
    return 0
