"""How every file is written, so that a kill, a full disk or a second writer never costs a result.

One discipline for every output (stores, records, label sets, boards and their pages, caches, assets, trained
operators), kept here once and stated for users in docs/safety.md ("Faults"):

- **a file is replaced, never rewritten in place** (:func:`replace_file`): its bytes go to a temporary file
  beside it (``.<name>.<pid>.semuq-tmp``), are flushed and fsynced, then renamed over it, and the folder is
  fsynced; a reader sees the old file or the new one, never a part. A failed write (a full disk, a read-only
  folder, an I/O error) raises :class:`WriteFailed`, which names the file being written (not the temporary one)
  and leaves nothing behind;
- **a result of several files is visible as complete only when its last file lands**: a folder being written
  holds the marker :data:`UNFINISHED` from the first file to the last (:func:`unfinished`), and its readers refuse
  it while the marker is there (:func:`check_finished`); a label set's manifest is its last file;
- **temporary files of a killed run are never the user's files**: :func:`is_temporary` tells them apart, and
  :func:`clean_temporary` removes those of processes no longer running;
- **one writer at a time** (:func:`writer_lock`): an advisory ``fcntl`` lock on ``.<name>.semuq-lock`` beside the
  target; a second writer gets :class:`WriterBusy`, one line naming the holder's PID.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "TEMP_SUFFIX",
    "UNFINISHED",
    "WriteFailed",
    "WriterBusy",
    "check_finished",
    "clean_temporary",
    "is_temporary",
    "replace_file",
    "unfinished",
    "writer_lock",
]

TEMP_SUFFIX = ".semuq-tmp"
LOCK_SUFFIX = ".semuq-lock"
UNFINISHED = ".semuq-unfinished"
"""The marker a folder holds while a multi-file result is written into it (removed after its last file)."""
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)" + re.escape(TEMP_SUFFIX) + "$")


class WriteFailed(OSError):
    """A file could not be written (disk full, read-only, no permission, I/O error): one line naming it.

    Examples
    --------
    >>> str(WriteFailed("out/board.json", OSError(errno.ENOSPC, "No space left on device")))
    'cannot write out/board.json: No space left on device'
    """

    def __init__(self, path: str | os.PathLike, err: OSError) -> None:
        super().__init__(err.errno, err.strerror or str(err))
        self.path = str(path)

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.strerror}"


class WriterBusy(BlockingIOError):
    """Another process holds the writer's lock of a target: one line naming it and its PID."""

    def __str__(self) -> str:
        return str(self.args[0])


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}{TEMP_SUFFIX}")


def is_temporary(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a temporary file of this discipline (or a lock file), never a user's file.

    Examples
    --------
    >>> is_temporary(".board.json.123.semuq-tmp"), is_temporary("board.json"), is_temporary(".x.semuq-lock")
    (True, False, True)
    """
    name = Path(path).name
    return bool(_TEMP.match(name)) or name.endswith(LOCK_SUFFIX) or name == UNFINISHED


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def replace_file(path: str | os.PathLike, write: Callable[[BinaryIO], object] | bytes | str) -> Path:
    """Write ``path`` whole or not at all: ``write`` (bytes, text, or a function given the open binary file)
    goes to a temporary file beside it, flushed and fsynced, then renamed over ``path``; returns the path.

    Raises :class:`WriteFailed` naming ``path`` when the disk or folder refuses it; the temporary file is removed.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "a" / "x.txt"
    >>> replace_file(p, "hello").read_text(), sorted(q.name for q in p.parent.iterdir())
    ('hello', ['x.txt'])
    """
    path = Path(path)
    tmp = _temporary(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            if isinstance(write, str):
                fh.write(write.encode("utf-8"))
            elif isinstance(write, (bytes, bytearray)):
                fh.write(write)
            else:
                write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(err, (WriteFailed, WriterBusy)):
            raise
        raise WriteFailed(path, err) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_temporary(folder: str | os.PathLike, *, recursive: bool = False) -> int:
    """Remove the temporary files in ``folder`` left by processes no longer running; returns how many.

    A running process's files are kept (it may be writing them); a file that cannot be removed is left."""
    folder = Path(folder)
    if not folder.is_dir():
        return 0
    removed = 0
    for path in folder.rglob("*") if recursive else folder.iterdir():
        match = _TEMP.match(path.name)
        if match and not _alive(int(match["pid"])):
            with contextlib.suppress(OSError):
                if path.is_dir():
                    import shutil

                    shutil.rmtree(path)
                else:
                    path.unlink()
                removed += 1
    return removed


@contextlib.contextmanager
def unfinished(folder: str | os.PathLike) -> Iterator[Path]:
    """Mark ``folder`` unfinished while the body writes its files; the marker goes only when the body returns.

    A kill (or an error) inside the body leaves the marker, so :func:`check_finished` refuses the folder until a
    later writer completes it."""
    folder = Path(folder)
    marker = folder / UNFINISHED
    replace_file(marker, f"{os.getpid()}\n")
    yield folder
    try:
        marker.unlink(missing_ok=True)
    except OSError as err:
        raise WriteFailed(marker, err) from None
    _fsync_folder(folder)


def check_finished(folder: str | os.PathLike, what: str, how: str) -> None:
    """ValueError when ``folder`` holds the :data:`UNFINISHED` marker: one line naming it, ``what`` it is and
    ``how`` to complete it.

    Examples
    --------
    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp())
    >>> check_finished(f, "leaderboard", "rebuild it")
    >>> _ = (f / UNFINISHED).write_text("1")
    >>> check_finished(f, "leaderboard", "rebuild it")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...: an unfinished leaderboard (its writer stopped before its last file); rebuild it
    """
    if (Path(folder) / UNFINISHED).exists():
        raise ValueError(f"{folder}: an unfinished {what} (its writer stopped before its last file); {how}")


def _lock_path(target: Path) -> Path:
    return target.parent / f".{target.name}{LOCK_SUFFIX}"


@contextlib.contextmanager
def writer_lock(target: str | os.PathLike, what: str) -> Iterator[Path]:
    """Hold the one-writer lock of ``target`` (a file or folder) for the body; :class:`WriterBusy` when another
    process holds it. The lock is ``fcntl``'s, on ``.<name>.semuq-lock`` beside the target: the kernel releases it
    when its holder exits, even by a kill, so a stale lock never blocks a rerun.

    Examples
    --------
    >>> import tempfile
    >>> t = Path(tempfile.mkdtemp()) / "labels.jsonl"
    >>> with writer_lock(t, "label set"):
    ...     pass
    """
    target = Path(target)
    path = _lock_path(target)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        if err.errno in (errno.EROFS, errno.EACCES):  # a read-only place: nothing is written there anyway
            yield target
            return
        raise WriteFailed(path, err) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise WriterBusy(
                f"{target}: another semuq-eval (PID {holder}) is writing this {what}; wait for it to finish "
                "or stop it"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield target
    finally:
        os.close(fd)
