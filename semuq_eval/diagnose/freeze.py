"""Freeze a real run store into the small, text-only run record that ``check-operator`` reads.

Per question, the record keeps the question, its references, the answers' texts, the greedy answer's token spans and
one label set's labels; hidden vectors, log-probabilities, scores and the breakdown are dropped. The header's
``provenance`` lets ``tools/freeze_store.py`` reproduce it byte for byte. A store that was itself frozen keeps its
provenance and fingerprint (``former_store_fingerprint``), so a baseline recorded on it still matches the record.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from semuq_eval.harness.label_sets import RUN_LABELS, read_label_set
from semuq_eval.harness.record import (
    RECORD_FORMAT,
    RunRecord,
    question_hash,
    question_set_hash,
    record_texts,
    write_record,
)
from semuq_eval.harness.store import StoreReader, open_store
from semuq_eval.jsonio import json_safe

__all__ = ["freeze_store"]


def _question(d: Any, lab: dict[str, Any], labels: str) -> dict[str, Any]:
    return {
        "doc_id": int(d.doc_id),
        "id": d.key,
        "question_hash": question_hash(d.question),
        "scores": [],
        "labels": {
            labels: {"greedy": lab["greedy"], "majority": lab["majority"], "samples": list(lab["samples"])}
        },
        "texts": record_texts(d, offsets=True),
    }


def _provenance(
    reader: StoreReader, source: Path, labels: str, judge: Any, questions: list, name: str | None
):
    from semuq_eval import __version__

    former = reader.manifest.get("frozen")
    if isinstance(former, dict):  # a store frozen before: its provenance, and the fingerprint baselines hold
        return {**former, "former_store_fingerprint": reader.fingerprint()}
    return {
        "source": name or str(source),
        "task": reader.manifest.get("task"),
        "run_id": source.name,
        "decoding": (reader.breakdown() or {}).get("decoding"),
        "label_set": labels,
        "judge": judge,
        "n_questions": len(questions),
        "doc_ids": [questions[0]["doc_id"], questions[-1]["doc_id"]] if questions else [],
        "n_samples": (reader.manifest.get("settings") or {}).get("n_samples"),
        "kept": "question, references, answer texts, the greedy answer's token offsets, labels",
        "semuq_eval_version": __version__,
    }


def freeze_store(
    source: str | os.PathLike,
    dest: str | os.PathLike,
    *,
    max_questions: int | None = None,
    labels: str = RUN_LABELS,
    source_name: str | None = None,
) -> dict[str, Any]:
    """Write the frozen record of run store ``source`` to ``dest`` (a ``.jsonl.gz`` file); returns its provenance.

    ``source`` is a finished run store with per-sample labels; ``max_questions`` keeps the first questions;
    ``labels`` is the label set to freeze (default: the run's own); ``source_name`` names the source in the
    provenance (default: its path). Raises ValueError when the label set lacks per-sample verdicts.
    """
    source = Path(source)
    reader = open_store(source)
    docs = reader.docs(hidden=False)[: None if max_questions is None else int(max_questions)]
    label_set = read_label_set(source, labels)
    questions = []
    for d in docs:
        lab = label_set.records.get(d.doc_id)
        if lab is None or len(lab.get("samples") or []) != len(d.samples):
            raise ValueError(
                f"{source}: label set {labels!r} has no per-sample verdicts for doc {d.doc_id}; "
                "freeze a store written with per-sample labels (or write a label set with `semuq-eval judge`)"
            )
        questions.append(_question(d, lab, labels))
    provenance = _provenance(reader, source, labels, label_set.judge, questions, source_name)
    n_samples = reader.manifest["settings"].get("n_samples")
    header = {
        "format": RECORD_FORMAT,
        "task": str(reader.manifest.get("task") or ""),
        "llm": str(provenance.get("run_id") or source.name),
        "model": {},
        "n_samples": int(n_samples or max((len(q["texts"]["answers"]) for q in questions), default=0)),
        "n_questions": len(questions),
        "question_set": question_set_hash(questions),
        "estimators": [],
        "label_sets": {labels: label_set.judge},
        "operators": {},
        "label_set": labels,
        "provenance": provenance,
    }
    write_record(dest, RunRecord(json_safe(header), json_safe(questions)))
    return provenance
