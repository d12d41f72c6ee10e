"""A trained operator's record, as ``enc`` reads it at load: ``semuq_training.json`` in the operator's folder.

Written by ``semuq-eval train-operator`` (format ``semuq-operator-training/1``) with its card; ``enc`` reads
the question conditioning, separator and pooling (:func:`operator_defaults`), the harness the training data
(:mod:`semuq_eval.harness.overlap`). No torch import.

Examples
--------
>>> import json, os, tempfile
>>> folder = tempfile.mkdtemp()
>>> with open(os.path.join(folder, TRAINING_RECORD_FILE), "w") as fh:
...     json.dump({"format": TRAINING_RECORD_FORMAT, "question_conditioned": False, "separator": None}, fh)
>>> operator_defaults(folder)
{'condition_on_question': False}
>>> operator_defaults("sentence-transformers/all-MiniLM-L6-v2")
{}
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from semuq_eval.jsonio import read_json

__all__ = ["TRAINING_RECORD_FILE", "TRAINING_RECORD_FORMAT", "operator_defaults", "read_training_record"]

TRAINING_RECORD_FILE = "semuq_training.json"
TRAINING_RECORD_FORMAT = "semuq-operator-training/1"


def read_training_record(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The training record of an operator folder, or None when ``folder`` is not a trained operator.

    Raises ValueError when the record exists but is not one this version understands."""
    path = Path(os.fspath(folder)).expanduser() / TRAINING_RECORD_FILE
    try:
        if not path.is_file():
            return None
    except OSError:
        return None
    record = read_json(path)
    if not isinstance(record, dict) or record.get("format", TRAINING_RECORD_FORMAT) != TRAINING_RECORD_FORMAT:
        raise ValueError(f"{path}: unknown training record format {record.get('format')!r}")
    return record


def operator_defaults(model: Any) -> dict[str, Any]:
    """The ``enc`` options a trained operator folder fixes: ``condition_on_question`` (False for an
    answer-only operator), ``separator`` (when training recorded one) and ``pooling`` (``"answer"`` when it
    was trained with answer-token pooling). ``{}`` for anything else (a hub id, an untrained folder, a loaded
    model)."""
    if not isinstance(model, (str, os.PathLike)):
        return {}
    record = read_training_record(model)
    if record is None:
        return {}
    out: dict[str, Any] = {"condition_on_question": bool(record.get("question_conditioned", True))}
    if out["condition_on_question"] and record.get("separator"):
        out["separator"] = record["separator"]
    if (record.get("hyperparameters") or {}).get("pooling") == "answer":
        out["pooling"] = "answer"
    return out
