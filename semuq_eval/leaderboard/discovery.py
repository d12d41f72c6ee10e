"""Finding a leaderboard's inputs: run stores, breakdown files and run records named by paths or globs."""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path

from semuq_eval.harness.record import RECORD_SUFFIX
from semuq_eval.harness.store import open_store
from semuq_eval.leaderboard.runs import LeaderboardInputError

__all__ = ["expand_inputs"]


def expand_inputs(
    patterns: Sequence[str | os.PathLike], skipped: list[dict[str, str]] | None = None
) -> list[Path]:
    """Run store directories, breakdown files or run records named by paths or globs (``**`` recurses).

    A store is a directory with ``manifest.json`` or ``breakdown.json``; a file must be a ``.json`` breakdown or a
    ``.jsonl.gz`` run record; each pattern must match one. A globbed store whose run has not finished (no
    ``breakdown.json`` yet) is left out and listed in ``skipped`` (``{"path", "reason"}``) when a list is given, else
    kept (:func:`load_run` says what is missing); a store named explicitly is always kept. Raises
    LeaderboardInputError for a pattern that matches nothing usable or a path that does not exist.

    Examples
    --------
    >>> expand_inputs(["/nonexistent/**/semuq/*/*"])
    Traceback (most recent call last):
    ...
    semuq_eval.leaderboard.runs.LeaderboardInputError: '/nonexistent/**/semuq/*/*' matches no run store (a directory with manifest.json or breakdown.json), no breakdown JSON file and no run record
    """
    found: list[Path] = []
    seen: set[Path] = set()
    for pattern in patterns:
        text = os.path.expanduser(str(pattern))
        magic = glob.has_magic(text)
        matches = sorted(glob.glob(text, recursive=True)) if magic else [text]
        usable, unfinished = [], []
        for match in matches:
            path = Path(match)
            if path.is_dir() and open_store(path).has_breakdown:
                usable.append(path)
            elif path.is_dir() and open_store(path).is_store:
                (unfinished if magic and skipped is not None else usable).append(path)
            elif path.is_file() and (path.suffix == ".json" or path.name.endswith(RECORD_SUFFIX)):
                usable.append(path)
            elif not magic:
                what = (
                    "does not exist"
                    if not path.exists()
                    else "is not a run store (no manifest.json or breakdown.json) nor a run record"
                )
                raise LeaderboardInputError(f"{path} {what}")
        if not usable and not unfinished:
            raise LeaderboardInputError(
                f"{str(pattern)!r} matches no run store (a directory with manifest.json or breakdown.json), "
                "no breakdown JSON file and no run record"
            )
        for path in unfinished:
            skipped.append(
                {"path": str(path), "reason": "unfinished run: manifest.json but no breakdown.json yet"}
            )
        for path in usable:
            if path.resolve() not in seen:
                seen.add(path.resolve())
                found.append(path)
    if not found:
        raise LeaderboardInputError(
            f"no finished run among {len(skipped or [])} store(s) matched by {[str(p) for p in patterns]}: "
            "every one lacks breakdown.json (runs still generating?)"
        )
    return found
