"""The run record: what a leaderboard needs of a run, as one compact, text-only file small enough to commit.

Per question, its labels under every label set and every estimator's score; per run, what identifies it (LLM, task,
question set, N, decoding, judge, operators); no hidden vectors or log-probabilities. :func:`build_record` makes it,
:func:`write_record` writes it (beside every stored run's breakdown; :func:`record_from_store` for an existing store),
:func:`read_record` reads it back, checked.

Format ``semuq-run-record/1``; line 1 is the manifest, every other line one question, in doc order::

    {"format": "semuq-run-record/1", "task": str, "llm": str, "model": {...}, "n_samples": int,
     "n_questions": int, "question_set": str, "estimators": [str], "label_sets": {name: judge info},
     "judge", "label_set", "operators": {name: {"kind", "status", "info"}}, "decoding", "generation_kwargs",
     "settings", "seeds", "unavailable", "created"[, "approximate", "generator", "provenance"]}
    {"doc_id": int, "id": str | null, "question_hash": str, "scores": [float | null, ...],
     "labels": {label set: {"greedy": 1 | 0 | null, "majority": 1 | 0 | null, "samples": [1 | 0 | null]}}
     [, "texts": {"question": str, "references": [str], "greedy": str | null, "answers": [str]
                 [, "greedy_offsets": [[int, int]]]}]}

``scores`` follow ``estimators``; the manifest's ``label_set`` labels every question, others may be absent. ``texts``
are kept by training records (:mod:`semuq_eval.training.data_files`) and check-operator's frozen record
(:mod:`semuq_eval.diagnose.freeze`). Two records hold the same questions exactly when their ``question_set``
(:func:`question_set_hash`) agree. Nothing depends on the machine or the time, so the same store gives the same
bytes."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from semuq_eval.harness.doc import NO_GREEDY, Doc
from semuq_eval.harness.label_sets import RUN_LABELS, label_set_names, read_label_set
from semuq_eval.harness.schemas import RecordHeader, RecordQuestion, check_line
from semuq_eval.harness.store import BREAKDOWN, SCORES, open_store
from semuq_eval.jsonio import json_safe, read_jsonl_gz, write_jsonl_gz
from semuq_eval.judges import strategies as label_strategies

__all__ = [
    "RECORD_FORMAT",
    "RECORD_NAME",
    "RECORD_SUFFIX",
    "RunRecord",
    "build_record",
    "doc_of_texts",
    "question_hash",
    "question_set_hash",
    "read_record",
    "record_fingerprint",
    "record_from_store",
    "record_texts",
    "write_record",
]

RECORD_FORMAT = "semuq-run-record/1"
RECORD_SUFFIX = ".jsonl.gz"
RECORD_NAME = "record.jsonl.gz"
"""The record's name inside a run store (written beside ``breakdown.json``)."""

#: the breakdown's fields a record keeps as they are (what identifies the run, and what the leaderboard reads)
_KEPT = ("judge", "label_set", "decoding", "generation_kwargs", "settings", "seeds", "unavailable", "created")
#: kept too when the breakdown has them (estimators scored from estimated inputs; what generated the answers)
_KEPT_IF_PRESENT = ("approximate", "generator")


class RunRecord(dict):
    """A record as read: the manifest (this dict) and ``questions``, one dict per question in doc order."""

    def __init__(self, manifest: Mapping[str, Any], questions: list[dict[str, Any]]) -> None:
        super().__init__(manifest)
        self.questions = questions


def question_hash(question: str) -> str:
    """The first 16 hex digits of the SHA-1 of a question's text (stripped), to recognize the same question.

    A lone surrogate (invalid Unicode, e.g. a JSON ``"\\ud800"``) is hashed as its code point's bytes
    (``surrogatepass``), so no question makes hashing fail.

    Examples
    --------
    >>> question_hash(" Capital of France? ")
    'a67d3f273c88df7b'
    >>> question_hash("\\ud800?")
    '2c83d71e7f773675'
    """
    return hashlib.sha1(question.strip().encode("utf-8", "surrogatepass")).hexdigest()[:16]


def question_set_hash(questions: Sequence[Mapping[str, Any]]) -> str:
    """SHA-1 of the questions' ``(doc_id, id, question_hash)``, in doc order: equal for the same question set.

    Examples
    --------
    >>> question_set_hash([{"doc_id": 0, "id": "q0", "question_hash": "ab"}])[:12]
    '3a68bac7448a'
    """
    keys = sorted([int(q["doc_id"]), q.get("id"), q["question_hash"]] for q in questions)
    return hashlib.sha1(json.dumps(keys).encode("utf-8")).hexdigest()


def _operator(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An operator's identity as a record keeps it: kind, status and info, not its cost (time differs per run)."""
    return {k: entry.get(k) for k in ("kind", "status", "info")}


def record_from_store(store: str | os.PathLike) -> RunRecord:
    """The record of a finished run store: every label set it holds, every estimator's score.

    Raises ValueError naming the file: no finished run (``breakdown.json`` or ``scores.jsonl`` missing), what
    :func:`~semuq_eval.harness.store.open_store` refuses, or a label other than 1 / 0 / null.

    Examples
    --------
    >>> record_from_store("/nonexistent")
    Traceback (most recent call last):
    ...
    ValueError: /nonexistent/manifest.json is missing: not a run store
    """
    reader = open_store(store)
    if not reader.is_store:
        raise ValueError(f"{reader.manifest_path} is missing: not a run store")
    for name, present in ((BREAKDOWN, reader.has_breakdown), (SCORES, reader.has_scores)):
        if not present:
            raise ValueError(f"{reader.root / name} is missing: the run has not finished")
    root, manifest, breakdown = reader.root, reader.manifest, reader.breakdown()
    docs = [d for d in reader.docs(hidden=False) if d.doc_id in reader.items]
    if len(docs) != len(reader.items):
        raise ValueError(
            f"{root}: scores.jsonl scores {len(reader.items)} docs but generations.rank*.jsonl answers "
            f"{len(docs)} of them"
        )
    sets = {name: read_label_set(root, name) for name in label_set_names(root) if name != RUN_LABELS}
    return build_record(
        root.name,
        manifest,
        breakdown,
        [{**reader.items[d.doc_id], "question_hash": question_hash(d.question)} for d in docs],
        sets,
    )


def build_record(
    llm: str,
    manifest: Mapping[str, Any],
    breakdown: Mapping[str, Any],
    items: Sequence[Mapping[str, Any]],
    label_sets: Mapping[str, Any],
) -> RunRecord:
    """The record of a run from what it holds: the store's manifest, the breakdown, the items of ``scores.jsonl``
    in doc order (each with its ``question_hash``) and the label sets besides the run's own (``{name: LabelSet}``)."""
    names = list(dict.fromkeys(k for it in items for k in it["scores"]))
    questions = [_question(item, names, label_sets) for item in items]
    header = {
        "format": RECORD_FORMAT,
        "task": str(breakdown.get("task") or manifest.get("task")),
        "llm": llm,
        "model": dict(manifest.get("model") or {}),
        "n_samples": breakdown.get("n_samples"),
        "n_questions": len(questions),
        "question_set": question_set_hash(questions),
        "estimators": names,
        "label_sets": {
            RUN_LABELS: dict(breakdown.get("judge") or {}),
            **{n: s.judge for n, s in label_sets.items()},
        },
        "operators": {n: _operator(e) for n, e in (breakdown.get("operators") or {}).items()},
        **{k: breakdown.get(k) for k in _KEPT},
        **{k: breakdown[k] for k in _KEPT_IF_PRESENT if breakdown.get(k)},
    }
    return RunRecord(json_safe(header), json_safe(questions))


def _question(item: Mapping[str, Any], names: Sequence[str], label_sets: Mapping[str, Any]) -> dict[str, Any]:
    """One question's line: its scores in ``names`` order and its labels under every label set."""
    doc_id = item["doc_id"]
    labels = {
        RUN_LABELS: {
            **{s: item["labels"].get(s) for s in label_strategies.label_strategy_names()},
            "samples": item.get("sample_labels"),
        }
    }
    for name, label_set in label_sets.items():
        if (chosen := label_set.records.get(doc_id)) is not None:
            labels[name] = {**label_strategies.labels_of(chosen), "samples": chosen.get("samples")}
    # scores.jsonl and the label sets were checked against their schemas when read: 1, 0, true, false or null
    labels = {k: {**v, "samples": list(v["samples"] or [])} for k, v in labels.items()}
    return {
        "doc_id": doc_id,
        "id": item.get("id"),
        "question_hash": item["question_hash"],
        "scores": [item["scores"].get(n) for n in names],
        "labels": labels,
    }


def write_record(path: str | os.PathLike, record: RunRecord) -> Path:
    """Write ``record`` to ``path`` atomically (temporary file, then rename), with deterministic bytes.

    Examples
    --------
    >>> import tempfile
    >>> r = RunRecord({"format": RECORD_FORMAT}, [{"doc_id": 0}])
    >>> write_record(Path(tempfile.mkdtemp()) / "r.jsonl.gz", r).name
    'r.jsonl.gz'
    """
    return write_jsonl_gz(path, [dict(record), *record.questions])


def _check_question(obj: Mapping[str, Any], header: Mapping[str, Any]) -> str | None:
    """What the schema cannot say of a sound question line: one score per estimator, the record's label set, at
    most N sample labels, one label per kept answer; None when it holds."""
    n_estimators, n_samples = len(header["estimators"]), header["n_samples"]
    own = header.get("label_set", RUN_LABELS)
    if len(obj["scores"]) != n_estimators:
        return f"field 'scores' must be a list of {n_estimators} numbers or nulls (one per estimator)"
    if own not in obj["labels"]:
        return f"field 'labels' must be an object with the {own!r} label set"
    for name, per in obj["labels"].items():
        if len(per["samples"]) > n_samples:
            return (
                f"field 'labels.{name}.samples' must be a list of at most N = {n_samples} labels 1, 0 or null"
            )
    texts, n_labels = obj.get("texts"), len(obj["labels"][own]["samples"])
    if texts is not None and (n_answers := len(texts["answers"])) != n_labels:
        return f"field 'texts.answers' holds {n_answers} answers but labels.{own}.samples {n_labels} labels"
    return None


def record_texts(doc: Doc, *, offsets: bool = False) -> dict[str, Any]:
    """A question's ``texts`` as a record keeps them (the greedy answer None when the source kept none); with
    ``offsets``, the greedy answer's token spans too, where the source has them.

    Examples
    --------
    >>> record_texts(Doc.of_texts("Capital?", ("Paris",), references=("Paris",)))
    {'question': 'Capital?', 'references': ['Paris'], 'greedy': None, 'answers': ['Paris']}
    """
    greedy = None if doc.greedy.error == NO_GREEDY else str(doc.greedy.text or "")
    texts = {
        "question": str(doc.question),
        "references": [str(r) for r in doc.references],
        "greedy": greedy,
        "answers": [str(g.text or "") for g in doc.samples],
    }
    if offsets and doc.greedy.token_offsets is not None:
        texts["greedy_offsets"] = np.asarray(doc.greedy.token_offsets, dtype=np.int64).tolist()
    return texts


def doc_of_texts(question: Mapping[str, Any]) -> Doc:
    """The :class:`~semuq_eval.harness.doc.Doc` of a record's question line that keeps its ``texts``.

    Examples
    --------
    >>> line = {"doc_id": 4, "texts": {"question": "Capital?", "references": [], "answers": ["Paris"]}}
    >>> doc_of_texts(line).samples[0].text
    'Paris'
    """
    texts = question["texts"]
    doc = Doc.of_texts(
        texts["question"],
        tuple(texts["answers"]),
        doc_id=question["doc_id"],
        references=tuple(texts["references"]),
        greedy=texts.get("greedy"),
    )
    doc.key = question.get("id")
    if texts.get("greedy_offsets") is not None:
        doc.greedy.token_offsets = np.asarray(texts["greedy_offsets"], dtype=np.int64).reshape(-1, 2)
    return doc


def record_fingerprint(path: str | os.PathLike) -> str:
    """sha256 of a record file's bytes (a record's bytes are deterministic: the same content, the same digest)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_record(path: str | os.PathLike) -> RunRecord:
    """Read and check a run record (module docstring).

    Raises ValueError, one line naming ``file:line``, the record (``task/llm``) once known and the field: not gzip,
    malformed JSON, another format, a missing or mistyped field, or questions not matching the manifest's
    ``n_questions`` or ``question_set``.

    Examples
    --------
    >>> import tempfile
    >>> bad = Path(tempfile.mkdtemp()) / "r.jsonl.gz"
    >>> _ = bad.write_text("not gzip")
    >>> read_record(bad)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: .../r.jsonl.gz: not a gzip-compressed run record (Not a gzipped file (b'no'))
    """
    path = Path(path)
    parsed = read_jsonl_gz(path, "run record")
    number, header = next(parsed, (1, {}))
    check_line(RecordHeader, header, path, number)
    where = f"record {header['task']}/{header['llm']}"
    questions = []
    for number, obj in parsed:
        check_line(RecordQuestion, obj, path, number, record=where)
        problem = _check_question(obj, header)
        if problem is not None:
            raise ValueError(f"{path}:{number}: {where}: {problem}")
        questions.append(obj)
    if len(questions) != header["n_questions"]:
        raise ValueError(
            f"{path}:1: {where}: field 'n_questions' is {header['n_questions']} but the file holds "
            f"{len(questions)} questions (a truncated file?)"
        )
    if question_set_hash(questions) != header["question_set"]:
        raise ValueError(
            f"{path}:1: {where}: field 'question_set' does not match the questions the file holds (edited by hand?)"
        )
    return RunRecord(header, questions)
