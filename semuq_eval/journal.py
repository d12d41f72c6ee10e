"""The journal: the one resume mechanism of every long job (generation, training, diagnosis).

An append-only JSON-lines file of keyed entries (``{"key": ..., "value": ...}``), each flushed when its work is done, so
a killed job started again does only what is missing. A later entry for a key wins; a line torn by a kill is skipped
with a warning; one process appends at a time. Keys hash every input, so a changed input never resumes from a stale
entry.

Examples
--------
>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "job.jsonl"
>>> journal = Journal(path, "example job")
>>> journal.add([("a", {"done": 1})])
>>> Journal(path, "example job").get("a")
{'done': 1}
>>> journal.get("b") is None
True
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from semuq_eval.durable import hold_writer_lock, writer_lock
from semuq_eval.jsonio import append_jsonl, parse_jsonl

__all__ = ["Journal", "decode_array", "encode_array"]

log = logging.getLogger(__name__)


class Journal:
    """The journal at ``path`` (created on the first entry); ``what`` names the job in messages.

    ``also`` are other journals of the job to read (another rank's), never appended to; ``field`` names each line's
    value. ``hold`` keeps the writer lock for the rest of the process; without it the lock is taken per append, so
    nothing stays beside a journal a failed job leaves. Raises :class:`semuq_eval.durable.WriterBusy` when another
    process is appending to ``path``."""

    def __init__(
        self,
        path: str | os.PathLike,
        what: str,
        *,
        also: Iterable[str | os.PathLike] = (),
        field: str = "value",
        hold: bool = True,
    ) -> None:
        self.path = Path(path)
        self.what, self.field, self.hold = what, field, hold
        if hold:
            hold_writer_lock(self.path, what)  # two processes appending one journal would mix their work
        self._entries: dict[str, Any] = {}
        for other in also:
            if Path(other) != self.path:
                self._read(Path(other))
        self._read(self.path)

    def _read(self, path: Path) -> None:
        if not path.is_file():
            return
        lines = path.read_text(encoding="utf-8").splitlines()
        used = 0
        for _, entry in parse_jsonl(lines, str(path), on_error="skip"):
            if isinstance(entry.get("key"), str) and self.field in entry:
                self._entries[entry["key"]] = entry[self.field]
                used += 1
        skipped = sum(1 for line in lines if line.strip()) - used
        if skipped:
            log.warning(
                "%s: %d unreadable journal line(s) of the %s skipped (a run killed while writing?); that work is "
                "done again",
                path,
                skipped,
                self.what,
            )

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def get(self, key: str) -> Any | None:
        """The latest value kept under ``key``, or None."""
        return self._entries.get(key)

    def add(self, entries: Iterable[tuple[str, Any]]) -> None:
        """Append ``(key, value)`` entries (JSON values) and flush them to disk, so they survive a kill.
        Raises :class:`semuq_eval.durable.WriteFailed` when the disk refuses (the file is cut back to what it held)."""
        lines = [{"key": key, self.field: value} for key, value in entries]
        with contextlib.nullcontext() if self.hold else writer_lock(self.path, self.what):
            append_jsonl(self.path, lines, durable=True)
        self._entries.update((line["key"], line[self.field]) for line in lines)


def encode_array(values: Any, dtype: str = "<f8") -> str:
    """``values`` as base64 of their little-endian bytes (``dtype``): exact, NaN included, for a journal line.

    Examples
    --------
    >>> decode_array(encode_array([0.5, float("nan")])).tolist()[0]
    0.5
    """
    return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")


def decode_array(text: str, dtype: str = "<f8") -> np.ndarray:
    """The array :func:`encode_array` wrote (one dimension)."""
    return np.frombuffer(base64.b64decode(text), dtype=dtype).copy()
