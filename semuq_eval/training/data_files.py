"""Training data kept in the repository: a run store's labelled answers as one compact, text-only file.

A run store holds hidden vectors, token log-probabilities and every estimator's score (megabytes per hundred
questions), and it lives on the machine that generated it. Operator training needs none of that: only each
question, its references, its sampled answers and their verdicts. :func:`export_store` writes exactly that as
gzip JSON lines, small enough to commit (about 1 MB per 3,000 questions at N = 10), and :func:`read_training_file`
reads it back as the same :class:`~semuq_eval.training.stores.StoreData` a store gives, so ``train-operator``
takes either (``--stores out/ data/*.jsonl.gz``).

Format ``semuq-training-data/1``; line 1 is the header, every other line one question::

    {"format": "semuq-training-data/1", "provenance": {"task", "dataset", "split", "llm", "n_samples",
     "decoding", "label_set", "judge", "source", "exported", "note", ...}, "n_questions": int}
    {"doc_id": int, "question": str, "references": [str], "greedy": str, "greedy_label": 1 | 0 | null,
     "answers": [str], "labels": [1 | 0 | null]}

The file is written with a fixed gzip header (no name, mtime 0), so the same store exports to the same bytes.

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
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from semuq_eval.harness.doc import Doc
from semuq_eval.harness.label_sets import RUN_LABELS
from semuq_eval.harness.schemas import TrainingHeader, TrainingQuestion, check_line
from semuq_eval.jsonio import read_jsonl_gz, write_jsonl_gz
from semuq_eval.judges.base import as_label
from semuq_eval.training.stores import LabelledQuestion, StoreData, read_store

__all__ = [
    "TRAINING_DATA_FORMAT",
    "TRAINING_DATA_SUFFIX",
    "export_store",
    "is_training_file",
    "read_training_file",
    "write_training_file",
]

TRAINING_DATA_FORMAT = "semuq-training-data/1"
TRAINING_DATA_SUFFIX = ".jsonl.gz"


def is_training_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a training-data file (by its suffix; the content is checked when read)."""
    return str(path).endswith(TRAINING_DATA_SUFFIX) and Path(path).is_file()


def write_training_file(path: str | os.PathLike, data: StoreData) -> int:
    """Write ``data`` (questions and provenance) to ``path`` atomically; returns the number of questions."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        {
            "format": TRAINING_DATA_FORMAT,
            "provenance": dict(data.provenance),
            "n_questions": len(data.questions),
        }
    ]
    for q in data.questions:
        lines.append(
            {
                "doc_id": q.doc_id,
                "question": q.question,
                "references": list(q.references),
                "greedy": q.greedy,
                "greedy_label": as_label(q.greedy_label),
                "answers": list(q.answers),
                "labels": [as_label(v) for v in q.labels],
            }
        )
    write_jsonl_gz(path, lines)
    return len(data.questions)


def read_training_file(path: str | os.PathLike) -> StoreData:
    """The questions and provenance of a training-data file.

    Raises
    ------
    ValueError
        Naming the file and line: not gzip, not JSON, another format, or a record whose fields are missing or
        of the wrong type (``answers`` and ``labels`` of different lengths, a label other than 1 / 0 / null).
    """
    path = Path(path)
    records = read_jsonl_gz(path, "training-data file")
    number, header = next(records, (1, {}))
    check_line(TrainingHeader, header, path, number)
    data = StoreData(str(path), {**header["provenance"], "path": str(path)})
    for number, obj in records:
        data.questions.append(_question(path, number, obj))
    data.provenance["n_questions"] = len(data.questions)
    return data


def _question(path: Path, number: int, obj: Mapping[str, Any]) -> LabelledQuestion:
    check_line(TrainingQuestion, obj, path, number)
    if len(obj["labels"]) != len(obj["answers"]):
        raise ValueError(
            f"{path}:{number}: {len(obj['answers'])} answers but {len(obj['labels'])} labels (one verdict per answer)"
        )
    return LabelledQuestion(
        str(path),
        Doc.of_texts(
            obj["question"],
            tuple(obj["answers"]),
            doc_id=obj["doc_id"],
            references=tuple(obj["references"]),
            greedy=obj.get("greedy"),
        ),
        tuple(None if v is None else int(v) for v in obj["labels"]),
        greedy_label=as_label(obj.get("greedy_label")),
    )


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
    ``force`` is false, and what :func:`~semuq_eval.training.stores.read_store` raises for a bad store.
    """
    output = Path(output)
    if not str(output).endswith(TRAINING_DATA_SUFFIX):
        raise ValueError(f"--output {output}: a training-data file ends with {TRAINING_DATA_SUFFIX}")
    if output.exists() and not force:
        raise FileExistsError(f"{output} exists; choose another --output or pass --force")
    data = read_store(store, labels, llm=llm)
    provenance = {
        **{k: v for k, v in data.provenance.items() if k != "path"},
        "source": Path(store).name,
        "exported": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "note": note,
        "n_unlabelled": data.n_unlabelled,
        "n_label_mismatch": data.n_label_mismatch,
    }
    data.provenance = provenance
    write_training_file(output, data)
    return {**provenance, "n_questions": len(data.questions), "output": str(output)}
