"""Where a command may write: never over or around its own input, never through a symbolic link out of the folder a
file belongs to, never over a user's file without ``--force``, and then only over this tool's own output
(docs/safety.md). Each check raises before anything is written: :class:`ValueError` for a target that can never be
right, :class:`FileExistsError` for one ``--force`` could allow."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from semuq_eval.durable import UNFINISHED, is_temporary

__all__ = [
    "check_apart",
    "check_file_target",
    "check_folder_target",
    "check_writable",
    "json_format",
    "within",
]

FORMAT_PEEK_BYTES = 64 * 1024 * 1024
"""A file larger than this is not read to learn whether it is the tool's own output (it is taken as not)."""


def check_apart(target: str | os.PathLike, source: str | os.PathLike, flag: str) -> None:
    """Refuse a ``target`` that is ``source``, holds it or lies inside it: replacing it would destroy the input.

    Examples
    --------
    >>> check_apart("/runs/a-rescored", "/runs/a", "--store_output")
    >>> check_apart("/runs", "/runs/a", "--store_output")
    Traceback (most recent call last):
    ...
    ValueError: --store_output /runs holds the input /runs/a; choose a folder apart from it
    """
    t, s = Path(target).resolve(), Path(source).resolve()
    if t == s:
        relation = "is"
    elif s.is_relative_to(t):
        relation = "holds"
    elif t.is_relative_to(s):
        relation = "lies inside"
    else:
        return
    raise ValueError(f"{flag} {target} {relation} the input {source}; choose a folder apart from it")


def within(folder: str | os.PathLike, path: str | os.PathLike) -> Path:
    """``path`` when it resolves inside ``folder``; ValueError when a symbolic link leads it out.

    Examples
    --------
    >>> within("/store", "/store/labels/x.jsonl")
    PosixPath('/store/labels/x.jsonl')
    """
    path = Path(path)
    if not path.resolve().is_relative_to(Path(folder).resolve()):
        raise ValueError(f"{path} leads outside {folder} (a symbolic link); refusing to write through it")
    return path


def json_format(path: str | os.PathLike) -> str | None:
    """The ``format`` field of a JSON object file (how this tool marks what it wrote), else None."""
    path = Path(path)
    try:
        if path.stat().st_size > FORMAT_PEEK_BYTES:
            return None
        document = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    value = document.get("format") if isinstance(document, dict) else None
    return value if isinstance(value, str) else None


def check_file_target(path: str | os.PathLike, *, ours: str, force: bool, flag: str) -> None:
    """Refuse to replace an existing file that is not this tool's output of format ``ours`` unless ``force``; a
    symbolic link or a folder is never replaced."""
    path = Path(path)
    if path.is_symlink():
        raise ValueError(f"{flag} {path} is a symbolic link; give the file itself")
    if path.is_dir():
        raise FileExistsError(f"{flag} {path} is a folder; give a file name")
    if path.exists() and not force and json_format(path) != ours:
        raise FileExistsError(
            f"{flag} {path} exists and is not a {ours} file this tool wrote; choose another path or pass --force"
        )


def check_folder_target(
    folder: str | os.PathLike, *, ours: Callable[[Path], bool], what: str, force: bool, flag: str
) -> None:
    """Refuse a non-empty ``folder`` unless ``force``, and even then unless ``ours(folder)`` says this tool wrote
    it (``what`` names such a folder); a symbolic link or a file is never replaced."""
    folder = Path(folder)
    if folder.is_symlink():
        raise ValueError(f"{flag} {folder} is a symbolic link; give the folder itself")
    if not folder.exists():
        return
    if not folder.is_dir():
        raise FileExistsError(f"{flag} {folder} is a file, not a folder; choose another path")
    if all(is_temporary(p) for p in folder.iterdir()):
        return  # empty, or only what a killed writer of this tool left
    if (folder / UNFINISHED).exists() and ours(folder):
        return  # this tool's own output, left unfinished by a killed writer: completed without --force
    if not force:
        raise FileExistsError(f"{flag} {folder} exists and is not empty; give another folder or --force")
    if not ours(folder):
        raise FileExistsError(
            f"{flag} {folder} holds files that are not {what}; --force replaces only {what}: choose another folder"
        )


def check_writable(folder: str | os.PathLike, what: str) -> None:
    """ValueError when ``folder`` cannot be created or written (its nearest existing ancestor is a file, or refuses
    a new file), raised before long work; nothing is left behind.

    Examples
    --------
    >>> check_writable(tempfile.gettempdir() + "/semuq-new/out", "--output_path")
    >>> import pathlib
    >>> f = pathlib.Path(tempfile.mkstemp()[1])
    >>> check_writable(f / "out", "--output_path")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --output_path .../out: ... is a file, not a folder
    """
    folder = Path(folder)
    existing = folder.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"{what} {folder}: {existing} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise ValueError(f"{what} {folder}: cannot write in {existing} ({err.strerror or err})") from None
