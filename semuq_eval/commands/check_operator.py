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
from semuq_eval.options import Options, add_options, option, parse_options

__all__ = ["main"]


class CheckCommandOptions(Options):
    """What ``semuq-eval check-operator`` checks and where it writes (the check's own options: CheckOptions)."""

    model: str = option(
        ..., "an enc model folder or hub id, an operator name (lexical), or name:MODEL", flag="model"
    )
    baseline: str | None = option(None, "baseline JSON to compare with")
    write_baseline: str | None = option(None, "record one here", flag="--write-baseline --write_baseline")
    report: str | None = option(None, "also write the report as JSON here")
    force: bool = option(False, "replace an existing --write-baseline or --report file")
    cache: str | None = option(
        None,
        "where the figures of an operator checked before are kept (default: <asset cache>/check-operator): the "
        "same weights on the same store are read back, not computed",
    )
    no_cache: bool = option(False, "compute the figures every time")


def main(argv: list[str]) -> int:
    """`semuq-eval check-operator MODEL --baseline B.json`: exit 1 when a tracked figure regressed."""
    p = CommandParser(
        prog="semuq-eval check-operator",
        description="Recompute an operator's trap scores, localization and estimator AUROC on a small frozen run "
        "record and compare them with a baseline: exit 0 when none regressed beyond the tolerance, 1 when one did, "
        "2 on bad input.",
    )
    add_options(p, CheckCommandOptions)
    add_options(p, CheckOptions)
    namespace = p.parse_args(argv)
    try:
        args = parse_options(CheckCommandOptions, namespace)
    except ValueError as err:
        p.error(str(err))
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
        options = parse_options(CheckOptions, namespace)
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
