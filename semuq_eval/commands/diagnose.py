"""``semuq-eval diagnose``: the four traps, wrong-answer clustering and token localization of operators.

Examples
--------
::

    semuq-eval diagnose out/semuq/semuq_webquestions/smollm2 --operators enc,cos_ext,lexical \\
        --operator_options '{"enc": {"model": "/path/enc"}, "cos_ext": {"model": "/path/minilm"}}' --output diag/
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from semuq_eval.commands.arguments import CommandParser, json_object
from semuq_eval.diagnose.diagnosis import DiagnoseOptions
from semuq_eval.options import add_options, parse_options

__all__ = ["main"]

CHECKPOINT = "checkpoint"
"""Subfolder of --output keeping each operator's outcome until the report is written: a killed run, started
again with the same arguments, resumes at the operator it was on."""


def _rewriter(route: str, options: dict[str, Any]):
    from semuq_eval.diagnose.rewrite import LLMRewriter, SampleSubstitution

    if route == "offline":
        return SampleSubstitution(**options)
    if route == "llm":
        if "base_url" not in options or "model" not in options:
            raise ValueError(
                '--rewrite llm needs --rewrite_options \'{"base_url": "http://host:port/v1", "model": "NAME"}\''
            )
        return LLMRewriter.from_openai(**options)
    raise ValueError(f"unknown rewrite route {route!r}; choose offline or llm")


def _parser() -> CommandParser:
    p = CommandParser(
        prog="semuq-eval diagnose",
        description="The four traps (App. F), wrong-answer clustering (App. A.1) and token localization (App. A.4) "
        "of operators on run stores; writes diagnosis.json, diagnosis.md and diagnosis.png.",
    )
    p.add_argument("stores", nargs="+", help="run store folders (<output_path>/semuq/<task>/<run_id>)")
    p.add_argument("--output", default="diagnosis", help="output folder (default ./diagnosis)")
    p.add_argument(
        "--force",
        action="store_true",
        help="write into an --output folder that holds other files than a diagnosis",
    )
    p.add_argument(
        "--judge", default=None, help="label every answer now with this judge instead (e.g. string)"
    )
    p.add_argument("--judge_options", default=None, help="JSON options of --judge")
    p.add_argument(
        "--rewrite", default="offline", choices=["offline", "llm"], help="context-trap rewrite route"
    )
    p.add_argument(
        "--rewrite_options",
        default=None,
        help='JSON: offline {"max_words", "max_short_words", "context_slack"}; '
        'llm {"base_url", "model", "endpoint", "api_key_env", "max_tokens", "concurrency"}',
    )
    p.add_argument(
        "--equivalence_judge",
        default=None,
        help="judge deciding wrong-answer equivalence (default: string, contains); e.g. openai",
    )
    p.add_argument("--equivalence_judge_options", default=None, help="JSON options of --equivalence_judge")
    add_options(p, DiagnoseOptions)
    return p


def main(argv: list[str]) -> int:
    """`semuq-eval diagnose STORE [STORE ...]`: traps, wrong-answer clustering, token localization."""
    args = _parser().parse_args(argv)
    output = Path(args.output)
    problem = _output_problem(output, args.force)
    if problem:  # checked before any work: nothing of the user's is replaced
        print(f"semuq-eval diagnose: --output {output} {problem}", file=sys.stderr)
        return 2
    from semuq_eval.diagnose.outputs import markdown, write_report

    try:
        result = _diagnose(args, output)
    except (ValueError, FileNotFoundError, KeyError, RuntimeError) as err:
        print(f"semuq-eval diagnose: {err}", file=sys.stderr)
        return 2
    paths = write_report(result, args.output)
    shutil.rmtree(output / CHECKPOINT, ignore_errors=True)  # the report holds everything it kept
    print(markdown(result))
    print("written: " + ", ".join(str(v) for v in paths.values()))
    return 0


def _output_problem(output: Path, force: bool) -> str | None:
    """Why the diagnosis may not write into ``output`` (None: it may)."""
    if output.exists() and not output.is_dir():
        return "is a file, not a folder"
    if (
        output.is_dir()
        and any(f.name != CHECKPOINT for f in output.iterdir())
        and not (output / "diagnosis.json").is_file()
        and not force
    ):
        return "holds other files than a diagnosis; choose an empty folder or pass --force"
    return None


def _diagnose(args: argparse.Namespace, output: Path) -> Any:
    """The diagnosis the parsed arguments ask for."""
    from semuq_eval import judges
    from semuq_eval.diagnose.diagnosis import diagnose

    judge = (
        judges.get(args.judge, **json_object(args.judge_options, "--judge_options")) if args.judge else None
    )
    equivalence = None
    if args.equivalence_judge:
        options = json_object(args.equivalence_judge_options, "--equivalence_judge_options")
        equivalence = judges.get(args.equivalence_judge, **options)
    result = diagnose(
        args.stores,
        parse_options(DiagnoseOptions, args),
        judge=judge,
        rewriter=_rewriter(args.rewrite, json_object(args.rewrite_options, "--rewrite_options")),
        equivalence_judge=equivalence,
        checkpoint=output / CHECKPOINT,
    )
    return result
