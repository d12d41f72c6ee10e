"""How every file is written, so that a kill, a full disk or a second writer never costs a result.

One discipline for every output, stated for users in docs/safety.md ("Faults"). A file is replaced, never rewritten in
place (:func:`replace_file`: a fsynced temporary file ``.<name>.<pid>.semuq-tmp`` renamed over it; a failed write raises
:class:`WriteFailed` and leaves nothing). A result of several files holds the marker :data:`UNFINISHED` until its last
file lands (:func:`unfinished`), and readers refuse it meanwhile (:func:`check_finished`). A killed run's temporary
files are told apart (:func:`is_temporary`) and removed later (:func:`clean_temporary`). One writer at a time
(:func:`writer_lock`: an ``fcntl`` lock on ``.<name>.semuq-lock``; another writer gets :class:`WriterBusy`)."""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import glob
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
    "hold_writer_lock",
    "is_temporary",
    "replace_file",
    "unfinished",
    "write_fault",
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
    goes to a fsynced temporary file beside it, renamed over ``path``; returns the path. Raises :class:`WriteFailed`
    naming ``path`` when the disk or folder refuses it (the temporary file is removed).

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "a" / "x.txt"
    >>> replace_file(p, "hello").read_text(), sorted(q.name for q in p.parent.iterdir())
    ('hello', ['x.txt'])
    """
    path = Path(path)
    tmp = _temporary(path)
    _clean_stale(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            if isinstance(write, str):
                fh.write(write.encode("utf-8", "backslashreplace"))
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


def write_fault(folder: str | os.PathLike, probe_bytes: int = 1 << 20) -> WriteFailed | None:
    """The :class:`WriteFailed` a write in ``folder`` meets now (a full disk, a read-only folder), or None: for
    errors from other libraries' writers (torch's checkpoints) that do not say they failed to write.

    Examples
    --------
    >>> import tempfile
    >>> write_fault(tempfile.mkdtemp()) is None
    True
    """
    probe = Path(folder) / f"write-probe{TEMP_SUFFIX}"
    try:
        replace_file(_temporary(probe), b"\0" * probe_bytes)
    except WriteFailed as err:
        return WriteFailed(folder, err)
    with contextlib.suppress(OSError):
        _temporary(probe).unlink()
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clean_stale(path: Path) -> None:
    """Remove the temporary files of ``path`` that killed writers left (this process's own are not there)."""
    if path.parent.is_dir():
        for stale in path.parent.glob(f".{glob.escape(path.name)}.*{TEMP_SUFFIX}"):
            match = _TEMP.match(stale.name)
            if match and match["name"] == path.name and not _alive(int(match["pid"])):
                with contextlib.suppress(OSError):
                    stale.unlink()


def clean_temporary(folder: str | os.PathLike) -> int:
    """Remove the temporary files in ``folder`` left by processes no longer running; returns how many.
    Files of running processes, and files that cannot be removed, are left."""
    folder = Path(folder)
    removed = 0
    for path in folder.iterdir() if folder.is_dir() else ():
        match = _TEMP.match(path.name)
        if match and path.is_file() and not _alive(int(match["pid"])):
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
    return removed


@contextlib.contextmanager
def unfinished(folder: str | os.PathLike) -> Iterator[Path]:
    """Mark ``folder`` unfinished while the body writes its files; the marker goes only when the body returns.
    After a kill (or an error) :func:`check_finished` refuses the folder until a later writer completes it."""
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


_HELD: dict[Path, list[int]] = {}
"""The locks this process holds: lock file -> [descriptor, holders] (a process never blocks itself)."""


def _acquire(target: Path, what: str) -> Path | None:
    """Take the lock of ``target`` for this process (again, when it holds it); None in a read-only place."""
    path = _lock_path(target).absolute()
    if path in _HELD:
        _HELD[path][1] += 1
        return path
    while True:
        fd = _open_lock(path)
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise WriterBusy(
                f"{target}: another semuq-eval (PID {holder}) is writing this {what}; wait for it to finish "
                "or stop it"
            ) from None
        try:  # the holder before us removes the file as it lets go: lock the file that is there now
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    with contextlib.suppress(OSError):  # the holder's PID is a note for a second writer; a full disk loses it
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _HELD[path] = [fd, 1]
    return path


def _open_lock(path: Path) -> int | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        if err.errno in (errno.EROFS, errno.EACCES):  # nothing can be written there by anyone
            return None
        raise WriteFailed(path, err) from None


def _release(path: Path | None) -> None:
    """Let go of a lock taken by :func:`_acquire`: its file is removed while still held, so no folder keeps it."""
    if path is None or path not in _HELD:
        return
    _HELD[path][1] -= 1
    if _HELD[path][1] <= 0:
        fd = _HELD.pop(path)[0]
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


@contextlib.contextmanager
def writer_lock(target: str | os.PathLike, what: str) -> Iterator[Path]:
    """Hold the one-writer lock of ``target`` (a file or folder) for the body; :class:`WriterBusy` when another
    process holds it. The kernel releases the ``fcntl`` lock when its holder exits, even by a kill, so a stale lock file
    never blocks a rerun; the same process may take it again (nested writers never block each other).

    Examples
    --------
    >>> import tempfile
    >>> t = Path(tempfile.mkdtemp()) / "labels.jsonl"
    >>> with writer_lock(t, "label set"):
    ...     with writer_lock(t, "label set"):
    ...         pass
    """
    path = _acquire(Path(target), what)
    try:
        yield Path(target)
    finally:
        _release(path)


def hold_writer_lock(target: str | os.PathLike, what: str) -> None:
    """Take the one-writer lock of ``target`` for the rest of this process (:func:`writer_lock`): for writers that
    append while the process runs (a generation journal, a run store). Released at exit, or by this process's own
    :func:`writer_lock` of it (e.g. ``rescore`` writing a new store)."""
    if _lock_path(Path(target)).absolute() in _HELD:
        return
    if _acquire(Path(target), what) is not None and not _HELD_AT_EXIT:
        _HELD_AT_EXIT.append(atexit.register(_release_all))


_HELD_AT_EXIT: list = []


def _release_all() -> None:
    for path in list(_HELD):
        _HELD[path][1] = 0
        _release(path)
