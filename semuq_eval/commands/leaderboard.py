"""``semuq-eval leaderboard``: merge run stores of many LLMs x tasks into one folder.

::

    semuq-eval leaderboard 'out/**/semuq/*/*' --output leaderboards/mine
    semuq-eval leaderboard runs/a/semuq/semuq_nqopen/llm1 runs/b/semuq/semuq_nqopen/llm2 --labels run,gpt-judge
    semuq-eval leaderboard 'leaderboards/mine/records/*.jsonl.gz' --add new.jsonl.gz --output leaderboards/mine

writes ``leaderboard.md``/``.csv``/``.json``, ``headline.csv``, ``index.html`` and ``plots/*.png`` into
``--output`` (quote globs; ``**`` recurses). Runs not comparable question by question go to separate sections
(``--strict`` refuses them); two runs of one LLM in a section need ``--on-duplicate latest``. An unreadable
record, or an ``--add`` record fitting no section, is left out with a one-line reason and exit status 1."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from semuq_eval.commands.arguments import CommandParser, whole
from semuq_eval.durable import WriteFailed, WriterBusy, writer_lock
from semuq_eval.harness.record import RECORD_SUFFIX
from semuq_eval.leaderboard.build import BuildOptions, build
from semuq_eval.leaderboard.headline import REFERENCE
from semuq_eval.metrics.bootstrap import MAX_RESAMPLES
from semuq_eval.metrics.calibrators import MAX_BINS
from semuq_eval.options import add_options, parse_options

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = CommandParser(
        prog="semuq-eval leaderboard",
        description="Merge run stores of many LLMs x tasks into leaderboard.md / .csv / .json, index.html and "
        "PNG plots: AUROC / ECE / PRR / AUARC with 95% CIs per cell, Enc vs base and LLM vs LLM paired "
        "differences, rank intervals.",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        help="run store dirs, breakdown JSON files, run records (*.jsonl.gz), or quoted globs ('out/**/semuq/*/*')",
    )
    p.add_argument(
        "--add",
        action="append",
        default=[],
        metavar="RECORD",
        help="a run record (or glob) that must join a section of the inputs (repeatable): one that differs in "
        "question set, N, judge, decoding or an operator is left out, named with the field (as is a record "
        "that cannot be read), and the exit status is 1",
    )
    p.add_argument("--output", "-o", required=True, help="the folder to write")
    p.add_argument(
        "--bootstrap", type=whole(1, MAX_RESAMPLES), default=1000, help="bootstrap resamples (default 1000)"
    )
    p.add_argument("--seed", type=whole(0), default=0, help="bootstrap seed (default 0, as runs)")
    p.add_argument(
        "--metrics",
        help="cell metrics, AUROC first (default: auroc, then the runs' `metrics` settings, auroc,ece,prr,auarc "
        "unless a run names others); metrics a run's breakdown lacks are computed from its scores (the slow "
        "part of a large board)",
    )
    p.add_argument("--ece-bins", type=whole(1, MAX_BINS), default=10)
    p.add_argument("--ece-refit", choices=("once", "per_resample"), default="once")
    p.add_argument(
        "--estimator",
        action="append",
        default=[],
        help="estimator for the LLM-vs-LLM tests (repeatable); default: the best mean AUROC per section",
    )
    p.add_argument(
        "--reference",
        default=REFERENCE,
        help=f"the headline's reference estimator, the same for every LLM and task (default {REFERENCE})",
    )
    p.add_argument(
        "--headline-metric",
        default="auroc",
        help="the metric the headline shows and ranks by (default auroc); e.g. coverage_at_risk, the share "
        "answered at a certified error rate (see --coverage-at-risk)",
    )
    p.add_argument(
        "--coverage-at-risk",
        metavar="ALPHA,DELTA",
        help="the levels of coverage_at_risk where --metrics or --headline-metric names it: the share answered "
        "at a certified error rate ALPHA with probability 1 - DELTA (default 0.1,0.1; docs/decisions.md)",
    )
    p.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="OP:BASE[,BASE...]",
        help="also compare operator OP with each BASE aggregator by aggregator (repeatable), e.g. a trained "
        "variant: --compare enc_nq:enc,cos_ext,lexical,cos_int",
    )
    p.add_argument("--jobs", "-j", type=whole(1), default=1, help="worker processes (default 1)")
    add_options(p, BuildOptions)
    return p


def _metrics(args: argparse.Namespace) -> tuple[tuple[str, ...] | None, str]:
    """``--metrics`` and ``--headline-metric``, with ``coverage_at_risk`` at the ``--coverage-at-risk`` levels."""
    from semuq_eval.metrics.risk import coverage_metric

    named = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    coverage = "coverage_at_risk"
    if args.coverage_at_risk:
        if "coverage_at_risk" not in [*(named or []), args.headline_metric]:
            raise ValueError("--coverage-at-risk: name coverage_at_risk in --metrics or --headline-metric")
        parts = args.coverage_at_risk.split(",")
        try:
            alpha, delta = (float(x) for x in parts)
        except ValueError:
            raise ValueError(
                f"--coverage-at-risk: expected ALPHA,DELTA, got {args.coverage_at_risk!r}"
            ) from None
        coverage = coverage_metric(alpha, delta)

    def rename(m: str) -> str:
        return coverage if m == "coverage_at_risk" else m

    return (None if named is None else tuple(map(rename, named))), rename(args.headline_metric)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``semuq-eval leaderboard`` (module docstring); returns the exit status."""
    from semuq_eval.leaderboard.baselines import parse_compare
    from semuq_eval.leaderboard.compute import LeaderboardConfig
    from semuq_eval.leaderboard.runs import LeaderboardInputError

    args = _parser().parse_args(argv)
    try:
        options = parse_options(BuildOptions, args)
    except ValueError as err:
        print(f"semuq-eval leaderboard: {err}", file=sys.stderr)
        return 2
    if options.header.startswith("@"):
        try:
            options.header = Path(options.header[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            print(f"semuq-eval leaderboard: --header {args.header}: cannot read it ({err})", file=sys.stderr)
            return 2
    options.command = "semuq-eval leaderboard " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[2:])
    )
    try:
        metrics, headline_metric = _metrics(args)
        config = LeaderboardConfig(
            n_resamples=args.bootstrap,
            seed=args.seed,
            ece_bins=args.ece_bins,
            ece_refit=args.ece_refit,
            metrics=metrics,
            llm_estimators=tuple(args.estimator),
            jobs=args.jobs,
            compare=tuple(parse_compare(spec) for spec in args.compare),
            reference=args.reference,
            headline_metric=headline_metric,
        )
        start = time.perf_counter()
        with writer_lock(args.output, "leaderboard"):  # one writer per board folder
            if (Path(args.output) / "leaderboard.json").is_file():
                print(f"semuq-eval leaderboard: replacing the leaderboard in {args.output}")
            document = build(args.inputs, args.output, options, add=args.add, config=config)
    except (WriteFailed, WriterBusy):
        raise  # one line and exit 1 at the `semuq-eval` boundary
    except (LeaderboardInputError, ValueError, KeyError, FileExistsError, OSError) as err:
        print(f"semuq-eval leaderboard: {err}", file=sys.stderr)
        return 2
    n_runs, n_cells = len(document["runs"]), len(document["cells"])
    print(
        f"semuq-eval leaderboard: {n_runs} runs in {len(document['sections'])} sections, {n_cells} cells, "
        f"{time.perf_counter() - start:.1f} s -> {args.output}/index.html"
    )
    for entry in document["skipped"]:
        print(f"  skipped {entry['path']}: {entry['reason']}")
    refused = [e for e in document["skipped"] if e["path"].endswith(RECORD_SUFFIX)]
    for section in document["sections"]:
        for note in section["notes"]:
            print(f"  {section['id']}: {note}")
    for s in document["comparisons"]["summary"]:
        print(
            f"  {s['set']} pairs, {s['strategy']} labels: improves in {s['n_improved']} of {s['n_cells']} cells "
            f"({s['n_improved_significant']} significant; {s['n_worse_significant']} significantly worse; "
            f"{s['n_unavailable']} unavailable; reliable cells only: improves in {s['reliable']['n_improved']} of "
            f"{s['reliable']['n_cells']}, {s['reliable']['n_improved_significant']} significant, "
            f"{s['reliable']['n_worse_significant']} significantly worse)"
        )
    return 1 if refused else 0
