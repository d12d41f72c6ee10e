"""Training data kept in the repository: a run store's labelled answers as a run record that keeps its texts.

Training needs only each question, its references, its sampled answers and their verdicts: :func:`export_store`
writes exactly that as a run record (:mod:`semuq_eval.harness.record`) with ``texts``, small enough to commit, and
:func:`read_training_file` reads it back as the :class:`~semuq_eval.training.stores.StoreData` a store gives, so
``train-operator`` takes either. Files of the former format are read through :func:`convert_training_file`.

Examples
--------
>>> import tempfile, os
>>> from semuq_eval.training.stores import LabelledQuestion, StoreData
>>> from semuq_eval.harness.doc import Doc
>>> doc = Doc.of_texts("Capital of France?", ("Paris", "Lyon"), doc_id=3, references=("Paris",))
>>> q = LabelledQuestion("s", doc, (1, 0))
>>> path = os.path.join(tempfile.mkdtemp(), "x.jsonl.gz")
>>> write_training_file(path, StoreData("s", {"task": "semuq_nqopen_train"}, [q]))
1
>>> read_training_file(path).questions[0].references
('Paris',)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from semuq_eval.harness.label_sets import RUN_LABELS
from semuq_eval.harness.record import (
    RECORD_FORMAT,
    RunRecord,
    doc_of_texts,
    question_hash,
    question_set_hash,
    read_record,
    record_texts,
    write_record,
)
from semuq_eval.harness.schemas import TrainingHeader, TrainingLine, check_line
from semuq_eval.jsonio import json_safe, read_jsonl_gz
from semuq_eval.judges.base import as_label
from semuq_eval.options import Options, option
from semuq_eval.training.stores import LabelledQuestion, StoreData, read_store

__all__ = [
    "TRAINING_DATA_FORMAT",
    "TRAINING_DATA_SUFFIX",
    "ExportOptions",
    "StatsOptions",
    "convert_training_file",
    "export_store",
    "is_training_file",
    "read_training_file",
    "training_record",
    "write_training_file",
]

TRAINING_DATA_FORMAT = "semuq-training-data/1"
"""The former format of training-data files, read through :func:`convert_training_file`."""
TRAINING_DATA_SUFFIX = ".jsonl.gz"


class ExportOptions(Options):
    """``semuq-eval train-data export``'s options (:func:`export_store`; docs/training-data.md's table)."""

    stores: list[str] = option(..., "run store folders", flag="stores", parse="many")
    output: str = option(..., "a .jsonl.gz file (one store) or a folder (several)")
    labels: str = option(RUN_LABELS, "label set with per-sample verdicts")
    llm: str | None = option(None, "name of the generating LLM, when the store cannot tell")
    note: str | None = option(None, "free text kept in the file's header (e.g. which chunk of questions)")
    force: bool = option(False, "replace an existing output file")


class StatsOptions(Options):
    """``semuq-eval train-data stats``'s options (docs/training-data.md's table)."""

    inputs: list[str] = option(..., "training-data files or run store folders", flag="inputs", parse="many")
    labels: str = option(RUN_LABELS, "label set of the stores")


def is_training_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a training-data file (by its suffix; the content is checked when read)."""
    return str(path).endswith(TRAINING_DATA_SUFFIX) and Path(path).is_file()


def training_record(data: StoreData) -> RunRecord:
    """The run record of ``data``: its questions' texts and verdicts under its label set, its provenance."""
    provenance = {k: v for k, v in data.provenance.items() if k != "path"}
    label_set = str(provenance.get("label_set") or RUN_LABELS)
    questions = [
        {
            "doc_id": q.doc_id,
            "id": None,
            "question_hash": question_hash(q.question),
            "scores": [],
            "labels": {
                label_set: {"greedy": as_label(q.greedy_label), "samples": [as_label(v) for v in q.labels]}
            },
            "texts": record_texts(q.doc),
        }
        for q in data.questions
    ]
    header = {
        "format": RECORD_FORMAT,
        "task": str(provenance.get("task") or ""),
        "llm": str(provenance.get("llm") or ""),
        "model": {},
        "n_samples": max([int(provenance.get("n_samples") or 0), *(len(q.labels) for q in data.questions)]),
        "n_questions": len(questions),
        "question_set": question_set_hash(questions),
        "estimators": [],
        "label_sets": {label_set: dict(provenance.get("judge") or {})},
        "operators": {},
        "label_set": label_set,
        "provenance": provenance,
    }
    return RunRecord(json_safe(header), json_safe(questions))


def write_training_file(path: str | os.PathLike, data: StoreData) -> int:
    """Write ``data`` (questions and provenance) to ``path`` as a run record, atomically; returns the number of
    questions."""
    write_record(path, training_record(data))
    return len(data.questions)


def read_training_file(path: str | os.PathLike) -> StoreData:
    """The questions and provenance of a training-data file (a run record with texts, or the former format).

    Raises ValueError, naming the file and line, for a file not gzip or not JSON, another format, a record with
    fields missing or of the wrong type (answers and labels of different lengths, a label other than 1 / 0 / null),
    or a run record without texts (a leaderboard's record: training needs the answers)."""
    path = Path(path)
    _, header = next(read_jsonl_gz(path, "training-data file"), (1, {}))
    old = isinstance(header, Mapping) and header.get("format") == TRAINING_DATA_FORMAT
    record = convert_training_file(path) if old else read_record(path)
    own = record.get("label_set", RUN_LABELS)
    data = StoreData(str(path), {**(record.get("provenance") or {}), "path": str(path)})
    for number, q in enumerate(record.questions, start=2):
        if q.get("texts") is None:
            raise ValueError(
                f"{path}:{number}: record {record['task']}/{record['llm']}: field 'texts' is missing: training "
                "reads the answers' texts (export a store with `semuq-eval train-data`)"
            )
        labels = q["labels"][own]
        data.questions.append(_labelled(path, doc_of_texts(q), labels["samples"], labels.get("greedy")))
    data.provenance["n_questions"] = len(data.questions)
    return data


def convert_training_file(path: str | os.PathLike) -> RunRecord:
    """The run record of a file of the former format ``semuq-training-data/1``, checked line by line.

    Raises ValueError naming the file and line, as :func:`read_training_file`."""
    path = Path(path)
    lines = read_jsonl_gz(path, "training-data file")
    number, header = next(lines, (1, {}))
    check_line(TrainingHeader, header, path, number)
    data = StoreData(str(path), dict(header["provenance"]))
    for number, obj in lines:
        check_line(TrainingLine, obj, path, number)
        if len(obj["labels"]) != len(obj["answers"]):
            raise ValueError(
                f"{path}:{number}: {len(obj['answers'])} answers but {len(obj['labels'])} labels (one verdict per "
                "answer)"
            )
        doc = doc_of_texts({"doc_id": obj["doc_id"], "texts": obj})  # the former line holds the same texts
        data.questions.append(_labelled(path, doc, obj["labels"], obj.get("greedy_label")))
    return training_record(data)


def _labelled(path: Path, doc: Any, samples: Iterable[Any], greedy: Any) -> LabelledQuestion:
    """A question of the file at ``path``, its verdicts read as labels (1 / 0 / None)."""
    return LabelledQuestion(str(path), doc, tuple(map(as_label, samples)), greedy_label=as_label(greedy))


def export_store(
    store: str | os.PathLike,
    output: str | os.PathLike,
    *,
    labels: str = RUN_LABELS,
    llm: str | None = None,
    note: str | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Export a run store's labelled answers (label set ``labels``) to the training-data file ``output``.

    Returns the header's provenance with the counts. Raises ``FileExistsError`` when ``output`` exists and
    ``force`` is false, and what :func:`~semuq_eval.training.stores.read_store` raises for a bad store."""
    output = Path(output)
    if not str(output).endswith(TRAINING_DATA_SUFFIX):
        raise ValueError(f"--output {output}: a training-data file ends with {TRAINING_DATA_SUFFIX}")
    if output.exists() and not force:
        raise FileExistsError(f"{output} exists; choose another --output or pass --force")
    data = read_store(store, labels, llm=llm)
    data.provenance = {
        **{k: v for k, v in data.provenance.items() if k != "path"},
        "source": Path(store).name,
        "exported": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "note": note,
        "n_unlabelled": data.n_unlabelled,
        "n_label_mismatch": data.n_label_mismatch,
    }
    write_training_file(output, data)
    return {**data.provenance, "n_questions": len(data.questions), "output": str(output)}
