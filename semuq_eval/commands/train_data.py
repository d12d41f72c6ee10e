"""``semuq-eval train-data``: keep an operator's training data as compact files, and count what they hold.

``export STORE... --output F`` writes a run store's labelled answers (text only,
:mod:`semuq_eval.training.data_files`) to ``F`` (one store) or ``F/<task>.<run id>.jsonl.gz`` (several);
``stats FILE_OR_STORE...`` prints how many questions each holds and how many the paper's rule keeps (App. C).

Examples
--------
>>> parser().parse_args(["export", "out/s", "--output", "d.jsonl.gz"]).output
'd.jsonl.gz'
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from semuq_eval.commands.arguments import CommandParser
from semuq_eval.durable import writer_lock
from semuq_eval.options import add_options, parse_options
from semuq_eval.training.data_files import TRAINING_DATA_SUFFIX, ExportOptions, StatsOptions, export_store

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command's parser: per action its options model's arguments."""
    p = CommandParser(
        prog="semuq-eval train-data",
        description="Export run stores' labelled answers to compact training-data files; count what they hold.",
    )
    sub = p.add_subparsers(dest="action", required=True)
    e = sub.add_parser("export", help="a run store's labelled answers -> one .jsonl.gz file (text only)")
    add_options(e, ExportOptions)
    s = sub.add_parser(
        "stats", help="questions held and kept by the paper's rule (>= 2 correct, >= 1 incorrect)"
    )
    add_options(s, StatsOptions)
    return p


def _export(o: ExportOptions) -> int:
    output = Path(o.output)
    several = len(o.stores) > 1
    if several and str(output).endswith(TRAINING_DATA_SUFFIX):
        raise ValueError(f"--output {output}: several stores export into a folder, not one file")
    # several stores: <output>/<task folder>.<run id>.jsonl.gz (a store lies at .../semuq/<task>/<run_id>)
    targets = [
        output / f"{Path(s).resolve().parent.name}.{Path(s).resolve().name}{TRAINING_DATA_SUFFIX}"
        if several
        else output
        for s in o.stores
    ]
    if len(set(targets)) < len(targets):
        raise ValueError(f"two stores would export to the same file under {output}; export them one by one")
    for store, target in zip(o.stores, targets, strict=True):
        with writer_lock(target, "training-data file"):
            info = export_store(store, target, **o.model_dump(exclude={"output", "stores"}))
        print(
            f"{info['output']}: {info['n_questions']} questions of {info.get('task')} "
            f"({info.get('llm')}, N = {info.get('n_samples')}), {target.stat().st_size:,} bytes"
        )
    return 0


def _stats(o: StatsOptions) -> int:
    from semuq_eval.training.data_files import is_training_file, read_training_file
    from semuq_eval.training.stores import read_store
    from semuq_eval.training.triplets import filter_questions

    for item in o.inputs:
        data = read_training_file(item) if is_training_file(item) else read_store(item, o.labels)
        kept, counts = filter_questions(data.questions)
        answers = sum(len(q.answers) for q in data.questions)
        correct = sum(v == 1 for q in data.questions for v in q.labels)
        print(
            f"{item}: {counts['seen']} questions ({data.provenance.get('task')}, {data.provenance.get('llm')}), "
            f"{correct} of {answers} sampled answers correct; kept {counts['kept']} "
            f"(fewer than 2 correct: {counts['fewer_than_2_correct']}, no incorrect: {counts['no_incorrect']})"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit code (2 for bad input, with the reason on stderr)."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.action == "export":
            return _export(parse_options(ExportOptions, args))
        return _stats(parse_options(StatsOptions, args))
    except (FileNotFoundError, FileExistsError, ValueError) as err:
        print(f"semuq-eval train-data {args.action}: {err}", file=sys.stderr)
        return 2
