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

from semuq_eval.commands.arguments import CommandParser
from semuq_eval.durable import WriteFailed, WriterBusy, writer_lock
from semuq_eval.harness.record import RECORD_SUFFIX
from semuq_eval.leaderboard.build import BuildOptions, LeaderboardOptions, build
from semuq_eval.options import add_options, parse_options

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = CommandParser(
        prog="semuq-eval leaderboard",
        description="Merge run stores of many LLMs x tasks into leaderboard.md / .csv / .json, index.html and "
        "PNG plots: AUROC / ECE / PRR / AUARC with 95% CIs per cell, Enc vs base and LLM vs LLM paired "
        "differences, rank intervals.",
    )
    add_options(p, LeaderboardOptions)
    add_options(p, BuildOptions)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``semuq-eval leaderboard`` (module docstring); returns the exit status."""
    from semuq_eval.leaderboard.runs import LeaderboardInputError

    args = _parser().parse_args(argv)
    try:
        board, options = parse_options(LeaderboardOptions, args), parse_options(BuildOptions, args)
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
        config, start = board.config(), time.perf_counter()
        with writer_lock(board.output, "leaderboard"):  # one writer per board folder
            if (Path(board.output) / "leaderboard.json").is_file():
                print(f"semuq-eval leaderboard: replacing the leaderboard in {board.output}")
            document = build(board.inputs, board.output, options, add=board.add, config=config)
    except (WriteFailed, WriterBusy):
        raise  # one line and exit 1 at the `semuq-eval` boundary
    except (LeaderboardInputError, ValueError, KeyError, FileExistsError, OSError) as err:
        print(f"semuq-eval leaderboard: {err}", file=sys.stderr)
        return 2
    n_runs, n_cells = len(document["runs"]), len(document["cells"])
    print(
        f"semuq-eval leaderboard: {n_runs} runs in {len(document['sections'])} sections, {n_cells} cells, "
        f"{time.perf_counter() - start:.1f} s -> {board.output}/index.html"
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
