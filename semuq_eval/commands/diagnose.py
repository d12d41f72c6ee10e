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

from semuq_eval.commands.arguments import CommandParser, json_object, whole
from semuq_eval.metrics.bootstrap import MAX_RESAMPLES

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


def _pair(spec: str) -> tuple[str, str]:
    a, sep, b = spec.partition(":")
    if not (sep and a and b):
        raise ValueError(f"--compare {spec!r}: give two diagnosed operators as A:B, e.g. enc:enc_untrained")
    return a, b


def _parser() -> CommandParser:
    p = CommandParser(
        prog="semuq-eval diagnose",
        description="The four traps (App. F), wrong-answer clustering (App. A.1) and token localization (App. A.4) "
        "of operators on run stores; writes diagnosis.json, diagnosis.md and diagnosis.png.",
    )
    p.add_argument("stores", nargs="+", help="run store folders (<output_path>/semuq/<task>/<run_id>)")
    p.add_argument("--operators", default="enc,cos_ext,lexical", help="comma-separated operators")
    p.add_argument("--operator_options", default=None, help='JSON, e.g. \'{"enc": {"model": "/path"}}\'')
    p.add_argument("--output", default="diagnosis", help="output folder (default ./diagnosis)")
    p.add_argument(
        "--force",
        action="store_true",
        help="write into an --output folder that holds other files than a diagnosis",
    )
    p.add_argument("--labels", default="run", help="label set to read (default: the run's own labels)")
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
    p.add_argument("--token_unit", default="generator", choices=["generator", "encoder"])
    p.add_argument("--max_questions", type=whole(1), default=None, help="first questions of each store only")
    p.add_argument(
        "--max_pairs_per_question",
        type=whole(1),
        default=None,
        help="clustering: judge at most this many pairs per question and class",
    )
    p.add_argument(
        "--bootstrap", type=whole(1, MAX_RESAMPLES), default=1000, help="bootstrap resamples (default 1000)"
    )
    p.add_argument("--seed", type=whole(0), default=0)
    p.add_argument("--min_pairs", type=whole(1), default=30, help="fewer questions flag a small sample")
    p.add_argument(
        "--compare",
        nargs="*",
        default=[],
        metavar="A:B",
        help="paired differences A minus B of two diagnosed operators (e.g. enc:enc_untrained)",
    )
    p.add_argument("--no_progress", action="store_true")
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
    from semuq_eval.metrics import Bootstrap

    judge = (
        judges.get(args.judge, **json_object(args.judge_options, "--judge_options")) if args.judge else None
    )
    equivalence = None
    if args.equivalence_judge:
        options = json_object(args.equivalence_judge_options, "--equivalence_judge_options")
        equivalence = judges.get(args.equivalence_judge, **options)
    result = diagnose(
        args.stores,
        args.operators,
        operator_options=json_object(args.operator_options, "--operator_options"),
        labels=args.labels,
        judge=judge,
        rewriter=_rewriter(args.rewrite, json_object(args.rewrite_options, "--rewrite_options")),
        equivalence_judge=equivalence,
        max_questions=args.max_questions,
        max_pairs_per_question=args.max_pairs_per_question,
        token_unit=args.token_unit,
        bootstrap=Bootstrap(args.bootstrap, seed=args.seed),
        min_pairs=args.min_pairs,
        progress=not args.no_progress,
        compare=[_pair(c) for c in args.compare],
        checkpoint=output / CHECKPOINT,
    )
    return result
