"""``semuq-eval export-record STORE... --output F``: a finished run store's run record, to commit or send in.

The record (:mod:`semuq_eval.harness.record`) is what a leaderboard needs of a run, text only: per question
its labels under every label set and every estimator's score, and what identifies the run. Runs that keep a
store write it as ``record.jsonl.gz``; this command writes it for older stores or elsewhere: ``F`` (one store)
or ``F/<task>.<run id>.jsonl.gz`` (several).

Examples
--------
>>> parser().parse_args(["out/semuq/semuq_nqopen/llm", "--output", "r.jsonl.gz"]).output
'r.jsonl.gz'
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from semuq_eval.commands.arguments import CommandParser
from semuq_eval.durable import writer_lock
from semuq_eval.options import Options, add_options, option, parse_options

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    p = CommandParser(
        prog="semuq-eval export-record",
        description="Write finished run stores' run records: per-question labels and scores, text only "
        "(what a leaderboard is built from, small enough to commit).",
    )
    add_options(p, RecordExportOptions)
    return p


class RecordExportOptions(Options):
    """The options of ``semuq-eval export-record``."""

    stores: list[str] = option(
        ..., "run store folders (<output_path>/semuq/<task>/<run_id>)", flag="stores", parse="many"
    )
    output: str = option(..., "a .jsonl.gz file (one store) or a folder (several)")
    force: bool = option(False, "replace an existing output file")


def _targets(stores: list[str], output: Path) -> list[Path]:
    """The file each store's record goes to (module docstring); ValueError when two would share one."""
    from semuq_eval.harness.record import RECORD_SUFFIX

    if len(stores) == 1:
        if not str(output).endswith(RECORD_SUFFIX):
            raise ValueError(f"--output {output}: a run record's file ends with {RECORD_SUFFIX}")
        return [output]
    if str(output).endswith(RECORD_SUFFIX):
        raise ValueError(f"--output {output}: several stores export into a folder, not one file")
    # a store lies at .../semuq/<task>/<run_id>
    targets = [
        output / f"{Path(s).resolve().parent.name}.{Path(s).resolve().name}{RECORD_SUFFIX}" for s in stores
    ]
    if len(set(targets)) < len(targets):
        raise ValueError(f"two stores would export to the same file under {output}; export them one by one")
    return targets


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit code (2 for bad input, with the reason on stderr)."""
    p = parser()
    try:
        args = parse_options(RecordExportOptions, p.parse_args(sys.argv[1:] if argv is None else argv))
    except ValueError as err:
        p.error(str(err))
    with contextlib.ExitStack() as locks:  # one writer per record file: a second one gets one line
        return _export(args, locks)


def _export(args: RecordExportOptions, locks: contextlib.ExitStack) -> int:
    from semuq_eval.harness.record import record_from_store, write_record

    try:
        targets = _targets(args.stores, Path(args.output))
        for target in targets:
            locks.enter_context(writer_lock(target, "run record"))
            if target.exists() and not args.force:
                raise FileExistsError(f"{target} exists; choose another --output or pass --force")
        for store, target in zip(args.stores, targets, strict=True):
            record = record_from_store(store)
            write_record(target, record)
            print(
                f"{target}: {record['n_questions']} questions of {record['task']} ({record['llm']}, "
                f"N = {record['n_samples']}, {len(record['estimators'])} estimators, label sets "
                f"{', '.join(record['label_sets'])}), {target.stat().st_size:,} bytes"
            )
    except (FileNotFoundError, FileExistsError, ValueError) as err:
        print(f"semuq-eval export-record: {err}", file=sys.stderr)
        return 2
    return 0
