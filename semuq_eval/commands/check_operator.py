"""``semuq-eval check-operator``: an operator's trap scores and AUROC on a frozen record vs a baseline (CI).

Examples
--------
::

    semuq-eval check-operator /path/enc --write-baseline operator-baseline.json
    semuq-eval check-operator /path/enc --baseline operator-baseline.json        # exit 1 on a regression
"""

from __future__ import annotations

import sys
from pathlib import Path

from semuq_eval.commands.arguments import CommandParser
from semuq_eval.diagnose.check import CheckOptions
from semuq_eval.options import add_options, parse_options

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """`semuq-eval check-operator MODEL --baseline B.json`: exit 1 when a tracked figure regressed."""
    p = CommandParser(
        prog="semuq-eval check-operator",
        description="Recompute an operator's trap scores, localization and estimator AUROC on a small frozen run "
        "record and compare them with a baseline: exit 0 when none regressed beyond the tolerance, 1 when one did, "
        "2 on bad input.",
    )
    p.add_argument("model", help="an enc model folder or hub id, an operator name (lexical), or name:MODEL")
    p.add_argument("--baseline", default=None, help="baseline JSON to compare with")
    p.add_argument(
        "--write-baseline", "--write_baseline", dest="write_baseline", default=None, help="record one here"
    )
    p.add_argument("--report", default=None, help="also write the report as JSON here")
    p.add_argument(
        "--force", action="store_true", help="replace an existing --write-baseline or --report file"
    )
    p.add_argument(
        "--cache",
        default=None,
        metavar="DIR",
        help="where the figures of an operator checked before are kept (default: <asset cache>/check-operator): "
        "the same weights on the same store are read back, not computed",
    )
    p.add_argument("--no_cache", action="store_true", help="compute the figures every time")
    add_options(p, CheckOptions)
    args = p.parse_args(argv)
    for flag, path in (("--write-baseline", args.write_baseline), ("--report", args.report)):
        if path and Path(path).exists() and not args.force:  # a committed baseline is the user's
            print(
                f"semuq-eval check-operator: {flag} {path} exists; pass --force to replace it",
                file=sys.stderr,
            )
            return 2
    from semuq_eval.diagnose.check import check_operator
    from semuq_eval.jsonio import write_json

    try:
        options = parse_options(CheckOptions, args)
        options.cache = False if args.no_cache else (Path(args.cache) if args.cache else True)
        report = check_operator(args.model, args.baseline, options, write_baseline=args.write_baseline)
    except (ValueError, FileNotFoundError, KeyError, RuntimeError) as err:
        print(f"semuq-eval check-operator: {err}", file=sys.stderr)
        return 2
    print(report.summary())
    if args.write_baseline:
        print(f"baseline written: {args.write_baseline}")
    if args.report:
        write_json(
            args.report,
            {
                "ok": report.ok,
                "operator": report.operator,
                "store": report.store,
                "baseline": report.baseline_path,
                "problems": report.problems,
                "rows": [{**r.__dict__, "delta": r.delta} for r in report.rows],
            },
        )
    return 0 if report.ok else 1
