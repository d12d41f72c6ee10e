"""A persistent cache of judge verdicts (SQLite, standard library): a re-run costs nothing.

The key of a verdict is the sha256 of (the judge's identity: backend, model and revision, decoding; the
prompt's sha256; the question; the references; the answer), so a change of any of them is a miss. Only
verdicts the judge actually reached are stored, unreadable replies included (the same judge would repeat
them); a request that failed (server down, timeout after its retries) is not, so the next run asks again
and a run killed or cut off by a failing server resumes from the cache when the server is back.

Default location: ``<semuq-eval cache dir>/judge-cache.sqlite`` (``SEMUQ_EVAL_CACHE`` or
``~/.cache/semuq-eval``); judges take ``cache=PATH`` or ``cache=none``. Several processes may share one file
(WAL journal, busy timeout).

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

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from semuq_eval.judges.base import Verdict

__all__ = ["JudgeCache", "default_cache_path", "verdict_key"]

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


class JudgeCache:
    """Verdicts by key in one SQLite file, safe to share between threads and processes.

    Parameters
    ----------
    path : path-like
        The database file (created with its folder).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
            columns = [row[1] for row in self._db.execute("PRAGMA table_info(verdicts)")]  # before any write
            if not columns:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(_SCHEMA)
                self._db.commit()
                columns = _COLUMNS
        except sqlite3.DatabaseError as exc:
            raise ValueError(
                f"judge cache {self.path} cannot be used ({exc}); delete the file or pass cache=none"
            ) from exc
        if columns != _COLUMNS:
            self._db.close()
            raise ValueError(
                f"judge cache {self.path} is an SQLite file of another schema (table verdicts has columns "
                f"{columns}, expected {_COLUMNS}); delete the file, point cache= elsewhere or pass cache=none"
            )

    def get(self, keys: Iterable[str]) -> dict[str, Verdict]:
        """The cached verdicts among ``keys``."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, Verdict] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, label, p_correct, reply, error FROM verdicts WHERE key IN ({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
                for key, label, p, reply, error in rows:
                    found[key] = Verdict(None if label is None else bool(label), p, reply, error)
        return found

    def put(self, verdicts: Mapping[str, Verdict], *, judge: str) -> None:
        """Store ``verdicts`` (replacing the same keys)."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        rows = [
            (k, None if v.label is None else int(v.label), v.p_correct, v.reply, v.error, judge, now)
            for k, v in verdicts.items()
        ]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
