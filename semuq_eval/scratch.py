"""Scratch folders named after the process that made them, so a later run can remove a killed run's.

A folder ``<prefix><pid>-<random>`` tells a dead run's (no such process) from a live one's. The asset cache's downloads
use it; the trainer's checkpoints (:mod:`semuq_eval.training.checkpoints`) use :func:`process_gone`."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["make_scratch", "process_gone", "remove_stale"]


def process_gone(pid: int) -> bool:
    """Whether no process ``pid`` exists (a live process of another user counts as existing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: another user's live process
        return False
    return False


def remove_stale(parent: Path, prefix: str = "") -> list[Path]:
    """Remove every ``<prefix><pid>-*`` entry of ``parent`` whose process no longer exists; return them.
    Entries of this process, of live processes and names without a pid are left alone.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / ".ckpt-999999999-x").mkdir()  # above any pid_max: a process that cannot exist
    >>> [p.name for p in remove_stale(root, ".ckpt-")]
    ['.ckpt-999999999-x']
    """
    removed = []
    for entry in parent.iterdir():  # not glob: an output's name may hold glob characters
        if not entry.name.startswith(prefix):
            continue
        pid = entry.name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or not process_gone(int(pid)):
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def make_scratch(parent: Path, prefix: str = "") -> Path:
    """A fresh folder ``<parent>/<prefix><pid>-<random>``, after removing the stale ones of killed runs."""
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale(parent, prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
