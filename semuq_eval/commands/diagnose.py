"""``semuq-eval diagnose``: the four traps, wrong-answer clustering and token localization of operators.

Examples
--------
::

    semuq-eval diagnose out/semuq/semuq_webquestions/smollm2 --operators enc,cos_ext,lexical \\
        --operator_options '{"enc": {"model": "/path/enc"}, "cos_ext": {"model": "/path/minilm"}}' --output diag/
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from semuq_eval.commands.arguments import CommandParser
from semuq_eval.diagnose.diagnosis import DiagnoseCommandOptions, DiagnoseOptions
from semuq_eval.options import add_options, parse_options

__all__ = ["main"]

CHECKPOINT = "checkpoint"
"""Subfolder of --output keeping each operator's outcome until the report is written: a killed run, started
again with the same arguments, resumes at the operator it was on."""


def _rewriter(route: str, options: dict[str, Any]):
    """The context trap's rewrite route: offline substitution, or an OpenAI-compatible server (``llm``)."""
    from semuq_eval.diagnose.rewrite import LLMRewriter, SampleSubstitution

    if route == "offline":
        return SampleSubstitution(**options)
    if "base_url" not in options or "model" not in options:
        raise ValueError(
            '--rewrite llm needs --rewrite_options \'{"base_url": "http://host:port/v1", "model": "NAME"}\''
        )
    return LLMRewriter.from_openai(**options)


def _parser() -> CommandParser:
    p = CommandParser(
        prog="semuq-eval diagnose",
        description="The four traps (App. F), wrong-answer clustering (App. A.1) and token localization (App. A.4) "
        "of operators on run stores; writes diagnosis.json, diagnosis.md and diagnosis.png.",
    )
    add_options(p, DiagnoseCommandOptions)
    add_options(p, DiagnoseOptions)
    return p


def main(argv: list[str]) -> int:
    """`semuq-eval diagnose STORE [STORE ...]`: traps, wrong-answer clustering, token localization."""
    args = _parser().parse_args(argv)
    try:
        command, options = parse_options(DiagnoseCommandOptions, args), parse_options(DiagnoseOptions, args)
    except ValueError as err:
        print(f"semuq-eval diagnose: {err}", file=sys.stderr)
        return 2
    output = Path(command.output)
    problem = _output_problem(output, command.force)
    if problem:  # checked before any work: nothing of the user's is replaced
        print(f"semuq-eval diagnose: --output {output} {problem}", file=sys.stderr)
        return 2
    from semuq_eval.diagnose.outputs import markdown, write_report

    try:
        result = _diagnose(command.stores, command, options)
    except (ValueError, FileNotFoundError, KeyError, RuntimeError) as err:
        print(f"semuq-eval diagnose: {err}", file=sys.stderr)
        return 2
    paths = write_report(result, command.output)
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


def _diagnose(stores: list[str], command: DiagnoseCommandOptions, options: DiagnoseOptions) -> Any:
    """The diagnosis of ``stores`` with the judges and rewrite route ``command`` names."""
    from semuq_eval import judges
    from semuq_eval.diagnose.diagnosis import diagnose

    judge = judges.get(command.judge, **(command.judge_options or {})) if command.judge else None
    same = command.equivalence_judge
    equivalence = judges.get(same, **(command.equivalence_judge_options or {})) if same else None
    return diagnose(
        stores,
        options,
        judge=judge,
        rewriter=_rewriter(command.rewrite, command.rewrite_options or {}),
        equivalence_judge=equivalence,
        checkpoint=Path(command.output) / CHECKPOINT,
    )
