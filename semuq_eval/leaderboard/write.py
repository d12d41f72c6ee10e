"""Write a leaderboard's data: ``leaderboard.json`` (:mod:`.schema`) and ``leaderboard.csv`` (one row per cell);
``leaderboard.md`` is :mod:`.markdown`'s, the page :mod:`.html`'s. Every writer reads the
:class:`~semuq_eval.leaderboard.compute.Leaderboard` only; the page and the plots read the same document
(:func:`to_document`: records, as :func:`~.schema.read_document` reads them back)."""

from __future__ import annotations

import csv
import io
import math
import platform
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from semuq_eval.durable import replace_file
from semuq_eval.jsonio import json_safe, write_json
from semuq_eval.judges import label_strategy_names
from semuq_eval.leaderboard.cells import label_summary
from semuq_eval.leaderboard.compute import Leaderboard
from semuq_eval.leaderboard.schema import (
    CELL_FIELDS,
    FORMAT,
    HEADLINE_FIELDS,
    RUN_TABLES,
    SCHEMA_DOC,
    encode,
    headline_records,
)

__all__ = ["to_document", "write_csv", "write_headline_csv", "write_json_document"]


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("semuq-eval", "numpy", "scipy", "lm-eval"):
        try:
            out[name.replace("-", "_")] = version(name)
        except PackageNotFoundError:
            out[name.replace("-", "_")] = None
    return out


def to_document(
    board: Leaderboard,
    *,
    inputs: Sequence[str] = (),
    created: str | None = None,
    relative_to: str | Path | None = None,
    skipped: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """The leaderboard as the JSON-safe ``leaderboard.json`` document (:mod:`.schema`).

    ``inputs``: the paths / globs the board was built from (recorded as given); ``created``: ISO time (default now,
    UTC); ``relative_to``: write run paths relative to this folder (e.g. the output), so a committed leaderboard
    carries no machine's absolute paths; ``skipped``: stores left out (``{"path", "reason"}``: unfinished runs a glob
    matched), listed in the document."""

    def where(path: Path) -> str:
        if relative_to is None:
            return str(path)
        try:
            import os

            return os.path.relpath(Path(path).resolve(), Path(relative_to).resolve())
        except ValueError:
            return str(path)

    runs = []
    for section in board.sections:
        for run in section.runs:
            provenance = dict(run.provenance)
            if provenance.get("results_file"):
                provenance["results_file"] = where(Path(provenance["results_file"]))
            runs.append(
                {
                    "section": section.id,
                    "llm": run.llm,
                    "task": run.task,
                    "label_set": run.label_set,
                    "path": where(run.path),
                    "source": "record" if run.question_set_hash else "store" if run.paired else "breakdown",
                    "labels": {
                        s: _label_counts(board, section.id, run.llm, s) for s in label_strategy_names()
                    },
                    "provenance": provenance,
                }
            )
    document = {
        "format": FORMAT,
        "schema": SCHEMA_DOC,
        "created": created or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "generator": _versions(),
        "settings": {**board.config.as_dict(), "inputs": list(inputs)},
        "sections": [
            {
                "id": s.id,
                "task": s.task,
                "label_set": s.label_set,
                "n_questions": s.n_questions,
                "question_set": s.question_set,
                "n_samples": s.n_samples,
                "judge": s.judge,
                "operators": s.operators,
                "paired": s.paired,
                "llms": s.llms,
                "estimators": s.estimators,
                "notes": s.notes,
                "repeats": s.repeats,
            }
            for s in board.sections
        ],
        "runs": runs,
        "skipped": [{"path": where(Path(e["path"])), "reason": e["reason"]} for e in skipped],
        "cells": [{k: c.get(k) for k in CELL_FIELDS} for c in board.cells],
        "comparisons": {
            "sets": {
                k: {"description": text, "pairs": [list(p) for p in pairs]}
                for k, (text, pairs) in board.pair_sets.items()
            },
            "rows": board.comparisons,
            "summary": board.comparison_summary,
        },
        "llm_pairs": board.llm_pairs,
        "ranks": {"llms": board.llm_ranks, "estimators": board.estimator_ranks},
        "heatmap": board.heatmap,
        "headline": board.headline,
        "curves": board.curves,
        **({"across_judges": board.across_judges} if board.across_judges else {}),
    }
    return json_safe(document)


def _label_counts(board: Leaderboard, section: str, llm: str, strategy: str) -> dict[str, Any]:
    for s in board.sections:
        if s.id == section:
            for run in s.runs:
                if run.llm == llm:
                    return label_summary(run, strategy)
    return {}


def write_json_document(document: Mapping[str, Any], path: str | Path) -> Path:
    """``leaderboard.json``: the document in the file's shape (:func:`~.schema.encode`: run tables), indented,
    one line per run-table row, NaN as null."""
    return write_json(path, encode(document), indent=1, flat=[(*path, "rows") for path in RUN_TABLES])


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_value(value: Any) -> Any:
    """A cell of the CSV: numbers as written, undefined as empty, and a text that a spreadsheet would read as a
    formula (starting with ``= + - @``, a tab or a carriage return; ``-`` alone, "no operator", is text) prefixed
    with ``'`` (OWASP's CSV-injection rule), so opening the file never runs anything.

    Examples
    --------
    >>> [_csv_value(v) for v in (None, -0.25, float("nan"), "=1+1", "-", "enc")]
    ['', '-0.25', '', "'=1+1", '-', 'enc']
    """
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and value != "-":  # "-": no operator
        return "'" + value
    return value


def write_csv(document: Mapping[str, Any], path: str | Path) -> Path:
    """``leaderboard.csv``: tidy, one row per cell (:data:`~.schema.CELL_FIELDS`); empty = undefined."""
    rows = ([_csv_value(cell.get(k)) for k in CELL_FIELDS] for cell in document["cells"])
    return _write_rows(path, CELL_FIELDS, rows)


def write_headline_csv(document: Mapping[str, Any], path: str | Path) -> Path:
    """``headline.csv``: the headline tables of every label strategy, one row per (table, strategy, LLM, column)
    (:data:`~.schema.HEADLINE_FIELDS`)."""
    rows = (
        [_csv_value(r.get(k)) for k in HEADLINE_FIELDS]
        for r in headline_records(document.get("headline") or {})
    )
    return _write_rows(path, HEADLINE_FIELDS, rows)


def _write_rows(path: str | Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    """A CSV file of ``header`` and ``rows``, replaced whole (:func:`~semuq_eval.durable.replace_file`)."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return replace_file(path, buffer.getvalue())
