"""``semuq-eval tasks-dir``: print the folder of the shipped task YAMLs (for ``--include_path``)."""

from __future__ import annotations

from semuq_eval.task_files import tasks_dir

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Print :func:`~semuq_eval.task_files.tasks_dir`."""
    print(tasks_dir())
    return 0
