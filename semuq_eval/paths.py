"""Where a run writes: the output directory shared by the tasks (run store) and the models (journal).

The output directory is, in order: an explicit value (task metadata ``output_dir``, model argument
``journal``), ``$SEMUQ_OUTPUT_DIR``, lm-eval's ``--output_path`` read from the command line, else none
(nothing is written).
"""

from __future__ import annotations

import os
import re
import sys

__all__ = ["OUTPUT_ENV", "default_output_dir", "output_path_from_argv", "safe_name"]

OUTPUT_ENV = "SEMUQ_OUTPUT_DIR"


def output_path_from_argv(argv: list[str] | None = None) -> str | None:
    """lm-eval's ``--output_path`` / ``-o`` value when the current process was started by its CLI."""
    argv = sys.argv if argv is None else argv
    for i, arg in enumerate(argv):
        for flag in ("--output_path", "-o"):
            if arg == flag and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(flag + "=") and flag.startswith("--"):
                return arg.split("=", 1)[1]
    return None


def default_output_dir(explicit: str | None = None) -> str | None:
    """``explicit`` > ``$SEMUQ_OUTPUT_DIR`` > lm-eval's ``--output_path`` > None, as a directory
    (lm-eval accepts a ``.json`` file name for ``--output_path``: its folder is used)."""
    out = explicit or os.environ.get(OUTPUT_ENV) or output_path_from_argv()
    if out and out.endswith(".json"):
        out = os.path.dirname(out) or "."
    return out


def safe_name(value: object) -> str:
    """A file-name-safe form of a model id or path (``HuggingFaceTB/SmolLM2`` -> ``HuggingFaceTB__SmolLM2``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "__", str(value)).strip("_")
