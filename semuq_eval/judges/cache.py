"""A persistent cache of judge verdicts (SQLite, standard library): a re-run costs nothing.

A verdict's key is the sha256 of the judge's identity (backend, model, revision, decoding), the prompt's sha256,
the question, the references and the answer. Only verdicts with a label are stored, so an unknown one is asked
again by the next run. Default file: ``<semuq-eval cache dir>/judge-cache.sqlite`` (``SEMUQ_EVAL_CACHE`` or
``~/.cache/semuq-eval``); judges take ``cache=PATH`` or ``cache=none``; processes may share it (WAL, busy timeout).
It never serves a label it cannot vouch for (docs/judges.md, "Cache"): a row a label set would refuse (label not
0 / 1, ``p_correct`` not in [0, 1] or null, a text field not text) is a miss, an unwritable file is used read-only,
a failed write stops the storing for the run (one warning each), and a file that cannot be opened or read is
:class:`JudgeCacheError`.

Example
-------
>>> import tempfile, os
>>> cache = JudgeCache(os.path.join(tempfile.mkdtemp(), "c.sqlite"))
>>> key = verdict_key({"judge": "hf", "model": "m"}, "p" * 64, "q", ["Paris"], "Paris")
>>> cache.put({key: Verdict(True, 0.9, "yes")}, judge="hf")
>>> cache.get([key])[key]
Verdict(label=True, p_correct=0.9, reply='yes', error=None)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from semuq_eval.judges.base import Verdict

__all__ = ["JudgeCache", "JudgeCacheError", "default_cache_path", "verdict_key"]

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    label INTEGER,
    p_correct REAL,
    reply TEXT,
    error TEXT,
    judge TEXT NOT NULL,
    created TEXT NOT NULL
)
"""


_COLUMNS = ["key", "label", "p_correct", "reply", "error", "judge", "created"]
_ADVICE = "delete the file, point cache= elsewhere or pass cache=none"


def default_cache_path() -> Path:
    """``<cache dir>/judge-cache.sqlite``, the cache dir being the assets' (``SEMUQ_EVAL_CACHE`` or ~/.cache)."""
    from semuq_eval.assets import cache_dir

    return Path(cache_dir()) / "judge-cache.sqlite"


def verdict_key(
    identity: Mapping[str, Any], prompt_sha256: str, question: str, references: Sequence[str], answer: str
) -> str:
    """The cache key of one verdict (module docstring)."""
    payload = json.dumps(
        [dict(identity), prompt_sha256, str(question), [str(r) for r in references], str(answer)],
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JudgeCacheError(ValueError):
    """The verdict cache file cannot be opened or read: one line naming it (module docstring)."""


class JudgeCache:
    """Verdicts by key in one SQLite file, safe to share between threads and processes.

    ``path``: the database file (created with its folder; one that cannot be written is used read-only).
    ``read_only``: verdicts are served, not stored; ``write_error``: why storing stopped during this run, or None."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        existed = self.path.exists()
        self.read_only = existed and not (
            os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)
        )
        self.write_error: str | None = None
        self._lock = threading.Lock()
        try:
            self._db = self._connect_read_only() if self.read_only else self._connect()
            columns = [row[1] for row in self._db.execute("PRAGMA table_info(verdicts)")]  # before any write
            if not columns and not self.read_only:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(_SCHEMA)
                self._db.commit()
                columns = _COLUMNS
        except (sqlite3.Error, OSError) as exc:
            advice = _ADVICE if existed else _ADVICE.removeprefix("delete the file, ")
            raise JudgeCacheError(
                f"judge cache {self.path} cannot be {'used' if existed else 'created'} ({exc}); {advice}"
            ) from exc
        if columns != _COLUMNS:
            self._db.close()
            raise JudgeCacheError(
                f"judge cache {self.path} is an SQLite file of another schema (table verdicts has columns "
                f"{columns}, expected {_COLUMNS}); {_ADVICE}"
            )
        if self.read_only:
            log.warning(
                "judge cache %s is read-only: its verdicts are used, new ones are not stored", self.path
            )

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)

    def _connect_read_only(self) -> sqlite3.Connection:
        """The file opened read-only; ``immutable`` where SQLite cannot open its WAL index beside it (a
        read-only folder without the ``-shm`` file)."""
        uri = self.path.resolve().as_uri()
        try:
            db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60, check_same_thread=False)
            db.execute("PRAGMA table_info(verdicts)").fetchall()
            return db
        except sqlite3.OperationalError:
            return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, check_same_thread=False)

    def get(self, keys: Iterable[str]) -> dict[str, Verdict]:
        """The cached verdicts among ``keys`` (invalid rows and unknown verdicts are misses)."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, Verdict] = {}
        invalid: list[tuple[Any, Any]] = []
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                rows = self._query(
                    f"SELECT key, label, p_correct, reply, error FROM verdicts WHERE key IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
                for key, label, p, reply, error in rows:
                    verdict = _verdict(label, p, reply, error)
                    if verdict is None:
                        invalid.append((label, p))
                    elif verdict.label is not None:
                        found[key] = verdict
        if invalid:
            log.warning(
                "judge cache %s: %d invalid row(s) ignored and asked again (first: label %r, p_correct %r)",
                self.path,
                len(invalid),
                *invalid[0],
            )
        return found

    def put(self, verdicts: Mapping[str, Verdict], *, judge: str) -> None:
        """Store the verdicts with a label (replacing the same keys); nothing when read-only or after a failed
        write (module docstring)."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        rows = [
            (k, int(v.label), v.p_correct, v.reply, v.error, judge, now)
            for k, v in verdicts.items()
            if v.label is not None
        ]
        with self._lock:
            if self.read_only or self.write_error is not None or not rows:
                return
            try:
                self._db.executemany("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
                self._db.commit()
            except sqlite3.Error as exc:
                self.write_error = str(exc)
                # a full disk can fail the rollback too: the journal undoes it
                with contextlib.suppress(sqlite3.Error):
                    self._db.rollback()
                log.warning(
                    "judge cache %s cannot be written (%s): new verdicts are not stored for the rest of this run",
                    self.path,
                    exc,
                )

    def _query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple]:
        try:
            return self._db.execute(sql, parameters).fetchall()
        except sqlite3.Error as exc:
            raise JudgeCacheError(f"judge cache {self.path} cannot be read ({exc}); {_ADVICE}") from exc

    def __len__(self) -> int:
        with self._lock:
            return int(self._query("SELECT COUNT(*) FROM verdicts")[0][0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _verdict(label: Any, p_correct: Any, reply: Any, error: Any) -> Verdict | None:
    """A stored row as a verdict, or None when it is not one a label set would accept (module docstring).

    Examples
    --------
    >>> _verdict(1, 0.9, "yes", None)
    Verdict(label=True, p_correct=0.9, reply='yes', error=None)
    >>> _verdict(7, None, None, None), _verdict(0, "abc", None, None), _verdict(1, 1.5, None, None)
    (None, None, None)
    """
    if label is not None and (type(label) is not int or label not in (0, 1)):
        return None
    if p_correct is not None and (
        type(p_correct) not in (int, float) or not (math.isfinite(p_correct) and 0.0 <= p_correct <= 1.0)
    ):
        return None
    if not all(text is None or isinstance(text, str) for text in (reply, error)):
        return None
    return Verdict(None if label is None else bool(label), p_correct, reply, error)
