"""`semuq-eval`: lm-eval's own CLI (run / ls / validate, same flags) with this project's tasks and
models registered, plus the project's commands (`assets`, `tasks-dir`).

lm-eval 0.4.13 has no plugin discovery, so this entry point imports the plugin's models
(registering them lazily) and prepends the shipped task folder to ``--include_path``
before handing over to lm-eval's ``HarnessCLI``.
"""

from __future__ import annotations

import sys
from importlib.resources import files
from pathlib import Path

OWN_COMMANDS = ("assets", "tasks-dir")


def tasks_dir() -> Path:
    """The folder of the semuq task YAMLs (``tasks/`` in a checkout, ``semuq_eval/tasks`` in a wheel)."""
    return Path(str(files("semuq_eval.tasks")))


def _run_lm_eval(argv: list[str]) -> int:
    from lm_eval._cli import HarnessCLI
    from lm_eval.utils import setup_logging

    import semuq_eval.models  # noqa: F401  (registers semuq-hf and semuq-hf-multimodal)

    setup_logging()
    saved, sys.argv = sys.argv, ["semuq-eval", *argv]
    try:
        cli = HarnessCLI()
        args = cli.parse_args()
        if hasattr(args, "include_path"):
            extra = (
                [args.include_path] if isinstance(args.include_path, str) else list(args.include_path or [])
            )
            args.include_path = [str(tasks_dir()), *extra]
        cli.execute(args)
    finally:
        sys.argv = saved
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``semuq-eval`` console script (and ``python -m semuq_eval``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["assets"]:
        from semuq_eval.assets import main as assets_main

        return assets_main(argv[1:])
    if argv[:1] == ["tasks-dir"]:
        print(tasks_dir())
        return 0
    if argv[:1] in (["-h"], ["--help"]) or not argv:
        print(__doc__.strip() + "\n\nproject commands: assets, tasks-dir; lm-eval's help follows.\n")
    return _run_lm_eval(argv)
