"""JSON and JSON-lines files: the one reader and writer every semuq-eval file format goes through.

Three rules, kept here once: what is written is JSON-safe (NaN / inf become ``null``, :func:`finite_or_none`; numpy
values become Python ones, :func:`json_safe`); a JSON document is replaced atomically (:func:`write_json`), even when
several ranks write one manifest; a malformed JSON line is an error naming file and line, unless the file may end in a
line torn by a killed process (``on_error="skip"``: skipped with a warning). The formats meant to be committed (training
data, run records) are gzip JSON lines with a fixed header (no name, mtime 0), so the same content gives the same bytes
(:func:`write_jsonl_gz`, :func:`read_jsonl_gz`)."""

from __future__ import annotations

import contextlib
import gzip
import io
import itertools
import json
import logging
import math
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from semuq_eval.durable import WriteFailed, replace_file

__all__ = [
    "MAX_ID",
    "append_jsonl",
    "finite_or_none",
    "is_id",
    "json_object",
    "json_safe",
    "json_value",
    "loads",
    "parse_jsonl",
    "read_json",
    "read_jsonl",
    "read_jsonl_gz",
    "write_json",
    "write_jsonl",
    "write_jsonl_gz",
]

log = logging.getLogger(__name__)


TEXT_ERRORS = "backslashreplace"
"""How JSON text is encoded: a lone surrogate (text that is not valid Unicode, e.g. from a damaged QA set) inside a
JSON string is written as its escape ``\\udXXX``, which reads back as the same string, instead of failing the
write."""
MAX_ID = 2**53
"""The largest id (``doc_id``) a file may hold: every id up to it is exact as a float and fits an int64."""
MAX_GZIP_BYTES = 1 << 30
MAX_GZIP_RATIO = 1000
"""A gzip file may inflate to at most ``MAX_GZIP_RATIO`` times its size (64 MiB at least) and ``MAX_GZIP_BYTES``
in all: JSON lines compress about 5-20 times, a compression bomb thousands of times."""
MAX_LINE_BYTES = 8 << 20
"""The longest line a gzip JSON-lines file may hold (a question with its answers takes kilobytes)."""


def is_id(value: Any) -> bool:
    """Whether ``value`` is an id this tool reads: an int (not a bool) in ``0..MAX_ID``.

    Examples
    --------
    >>> is_id(7), is_id(True), is_id(-1), is_id(2**70), is_id(3.0)
    (True, False, False, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ID


def loads(text: str | bytes) -> Any:
    """``json.loads`` with nesting too deep to read reported as a JSON error (not a RecursionError): every JSON
    this tool reads goes through it.

    Examples
    --------
    >>> loads("[" * 100_000)
    Traceback (most recent call last):
    ...
    json.decoder.JSONDecodeError: nested too deep: line 1 column 1 (char 0)
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deep", "", 0) from None


def finite_or_none(x: float | None) -> float | None:
    """``x`` as a float, or None when it is None, NaN or infinite (what JSON keeps of a number).

    Examples
    --------
    >>> finite_or_none(np.float32(0.5)), finite_or_none(float("nan")), finite_or_none(None)
    (0.5, None, None)
    """
    return float(x) if x is not None and math.isfinite(x) else None


def json_safe(obj: Any) -> Any:
    """``obj`` with NaN / inf replaced by None and numpy values by Python values, recursively.

    Examples
    --------
    >>> json_safe({"a": float("nan"), "b": np.arange(2)})
    {'a': None, 'b': [0, 1]}
    """
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        return finite_or_none(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def _line(obj: Any) -> str:
    return json.dumps(json_safe(obj), ensure_ascii=False, allow_nan=False) + "\n"


def _replace_atomically(path: str | os.PathLike, chunks: Iterable[str] | bytes) -> Path:
    """Write ``chunks`` (text, or bytes) to ``path`` whole or not at all (:func:`semuq_eval.durable.replace_file`:
    a per-process temporary file beside it, fsynced, renamed over it; ranks writing one file never clash)."""
    if isinstance(chunks, bytes):
        return replace_file(path, chunks)

    def write(fh) -> None:
        for chunk in chunks:
            fh.write(chunk.encode("utf-8", TEXT_ERRORS))

    return replace_file(path, write)


def write_json(
    path: str | os.PathLike, obj: Any, *, indent: int | None = 1, flat: Iterable[tuple[str, ...]] = ()
) -> Path:
    """Write ``obj`` (made JSON-safe) to ``path`` atomically; returns the path.

    ``flat`` names lists (by key path) written one compact element per line, so a table takes a line per row, not per
    value.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "x.json"
    >>> print(write_json(p, {"t": {"rows": [[1, 2], [3, None]]}}, flat=[("t", "rows")]).read_text())
    {
     "t": {
      "rows": [
    [1,2],
    [3,null]
    ]
     }
    }
    """
    obj = json_safe(obj)
    lists = {}
    for key_path in flat:
        parent = obj
        for key in key_path[:-1]:
            parent = parent[key]
        mark = f"flat-{os.urandom(8).hex()}"  # a random placeholder, replaced below
        lists[json.dumps(mark)], parent[key_path[-1]] = parent[key_path[-1]], mark
    text = json.dumps(obj, indent=indent, allow_nan=False, ensure_ascii=False)
    for mark, items in lists.items():
        lines = (json.dumps(x, allow_nan=False, ensure_ascii=False, separators=(",", ":")) for x in items)
        text = text.replace(mark, "[\n" + ",\n".join(lines) + "\n]" if items else "[]", 1)
    return _replace_atomically(path, [text])


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document at ``path``; ValueError naming the file when it is not JSON."""
    path = Path(path)
    try:
        return loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not a JSON document ({err.msg} at line {err.lineno})") from None


def parse_jsonl(
    lines: Iterable[str], source: str, *, on_error: Literal["raise", "skip"] = "raise"
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank JSON-lines line of ``lines``.

    ``source`` names the lines' origin in errors (``source:line``). A line that is not a JSON object raises ValueError
    (``on_error="raise"``) or is skipped with a warning (``"skip"``: files appended to by a process that may have been
    killed).

    Examples
    --------
    >>> [obj for _, obj in parse_jsonl(['{"a": 1}', "", '{"a": 2}'], "x")]
    [{'a': 1}, {'a': 2}]
    >>> list(parse_jsonl(["[1]"], "x"))
    Traceback (most recent call last):
    ...
    ValueError: x:1: expected a JSON object, got list
    """
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = loads(line)
            problem = None if isinstance(obj, dict) else f"expected a JSON object, got {type(obj).__name__}"
        except json.JSONDecodeError as err:
            problem = f"malformed JSON line ({err.msg})"
        if problem is None:
            yield number, obj
        elif on_error == "skip":
            log.warning(
                "%s:%d: unreadable line skipped (%s; a run killed while writing?)", source, number, problem
            )
        else:
            raise ValueError(f"{source}:{number}: {problem}")


def read_jsonl(
    path: str | os.PathLike, *, on_error: Literal["raise", "skip"] = "raise"
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line of a JSON-lines file (see :func:`parse_jsonl`).

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "x.jsonl"
    >>> write_jsonl(p, [{"a": 1}, {"a": 2}])
    >>> [obj["a"] for _, obj in read_jsonl(p)]
    [1, 2]
    """
    with open(path, "rb") as fh:
        yield from parse_jsonl(_utf8_lines(fh, str(path)), str(path), on_error=on_error)


def _utf8_lines(raw: Iterable[bytes], source: str) -> Iterator[str]:
    """The lines of a binary file as text; ValueError naming ``source:line`` for one that is not UTF-8."""
    for number, line in enumerate(raw, 1):
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(
                f"{source}:{number}: not UTF-8 text ({err.reason} at byte {err.start})"
            ) from None


def write_jsonl(path: str | os.PathLike, records: Iterable[Any]) -> None:
    """Write ``records`` (made JSON-safe) to ``path``, one per line, replacing the file atomically: the lines go
    to a temporary file renamed over ``path``, so a killed writer leaves the old file whole."""
    _replace_atomically(path, (_line(r) for r in records))


def write_jsonl_gz(path: str | os.PathLike, records: Iterable[Any]) -> Path:
    """Write ``records`` (made JSON-safe) as gzip JSON lines with a fixed gzip header (no name, mtime 0,
    level 9), atomically: the same records always give the same bytes. Returns the path.

    Examples
    --------
    >>> import tempfile
    >>> a, b = (Path(tempfile.mkdtemp()) / "x.jsonl.gz" for _ in range(2))
    >>> _ = write_jsonl_gz(a, [{"a": 1}]), write_jsonl_gz(b, [{"a": 1}])
    >>> a.read_bytes() == b.read_bytes(), [obj for _, obj in read_jsonl_gz(a, "test file")]
    (True, [{'a': 1}])
    """
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as gz:
        gz.write("".join(_line(r) for r in records).encode("utf-8", TEXT_ERRORS))
    return _replace_atomically(path, buffer.getvalue())


def read_jsonl_gz(path: str | os.PathLike, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line of the gzip JSON-lines file ``path``, inflated and
    parsed line by line (memory holds one line of at most ``MAX_LINE_BYTES``). Raises ValueError ``"<path>: not a
    gzip-compressed <what> (...)"`` when it is not gzip or a compression bomb (beyond ``MAX_GZIP_RATIO`` or a line over
    ``MAX_LINE_BYTES``), and what :func:`parse_jsonl` raises (naming ``path:line``)."""
    limit = min(MAX_GZIP_BYTES, max(64 << 20, MAX_GZIP_RATIO * Path(path).stat().st_size))
    source = str(path)
    yield from parse_jsonl(_utf8_lines(_gzip_lines(path, what, limit), source), source)


def _gzip_lines(path: str | os.PathLike, what: str, limit: int) -> Iterator[bytes]:
    """The lines of a gzip file as bytes, refused as a bomb once they pass ``limit`` bytes in all or one line
    passes ``MAX_LINE_BYTES``."""
    total = 0
    try:
        with gzip.open(path, "rb") as fh:
            for number in itertools.count(1):
                line = fh.readline(MAX_LINE_BYTES + 1)
                if not line:
                    return
                total += len(line)
                if len(line) > MAX_LINE_BYTES:
                    raise ValueError(
                        f"{path}:{number}: a line longer than {MAX_LINE_BYTES:,} bytes; refusing it as a "
                        "compression bomb"
                    )
                if total > limit:
                    raise ValueError(
                        f"{path}: inflates to more than {limit:,} bytes; refusing it as a compression bomb"
                    )
                yield line
    except (OSError, EOFError, zlib.error) as err:
        raise ValueError(f"{path}: not a gzip-compressed {what} ({err})") from None


def append_jsonl(path: str | os.PathLike, records: Iterable[Any], *, durable: bool = False) -> None:
    """Append ``records`` to ``path``; ``durable=True`` flushes and fsyncs, so they survive a kill.
    A last line torn by a killed writer gets a line break first, so it stays alone (and is skipped when read). A failed
    append (a full disk) is cut back to the old end and raises :class:`~semuq_eval.durable.WriteFailed`."""
    lines = [_line(r) for r in records]
    if not lines:
        return
    path = Path(path)
    size = path.stat().st_size if path.is_file() else 0
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if size:
            with open(path, "rb") as fh:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    lines.insert(0, "\n")
        with open(path, "a", encoding="utf-8", errors=TEXT_ERRORS, newline="\n") as fh:
            fh.writelines(lines)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
    except OSError as err:
        with contextlib.suppress(OSError):
            os.truncate(path, size)
        raise WriteFailed(path, err) from None


_KINDS = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true or false"}


def json_value(text: str, what: str) -> Any:
    """The JSON value given as option ``what``; a one-line ValueError naming the option when it is not JSON
    (nesting too deep to read included).

    Examples
    --------
    >>> json_value("[1, 2]", "--x")
    [1, 2]
    >>> json_value("[" * 100_000, "--x")
    Traceback (most recent call last):
    ...
    ValueError: --x is not valid JSON (nested too deep): '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[...'
    """
    try:
        return loads(text)
    except json.JSONDecodeError as err:
        shown = text if len(text) <= 40 else f"{text[:40]}..."
        raise ValueError(f"{what} is not valid JSON ({err.msg}): {shown!r}") from None


def json_object(text: str | None, what: str, of: str | None = None) -> dict[str, Any]:
    """The JSON object given as option ``what`` (``{}`` when not given); a ValueError naming the option otherwise.
    ``of`` says what the object maps, in the error (``"operator name -> options"``).

    Examples
    --------
    >>> json_object('{"batch_size": 16}', "--operator_options")
    {'batch_size': 16}
    >>> json_object("[1]", "--operator_options", "operator name -> options")
    Traceback (most recent call last):
    ...
    ValueError: --operator_options must be a JSON object of operator name -> options, got a list
    """
    if not text:
        return {}
    value = json_value(text, what)
    if not isinstance(value, dict):
        kind = _KINDS.get(type(value), "null")
        raise ValueError(f"{what} must be a JSON object{f' of {of}' if of else ''}, got {kind}")
    return value
