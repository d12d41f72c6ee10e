"""The questions a diagnosis reads: answers from run stores, with a correctness label on every answer.

:func:`load_questions` reads run stores or run records that keep their texts with a label set of each, or labels
every answer now with ``judge=``. Every diagnostic needs the verdict on each SAMPLED answer: a store without them is
refused with the command that adds them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from semuq_eval.harness.doc import Doc
from semuq_eval.harness.label_sets import RUN_LABELS, label_docs, read_label_set
from semuq_eval.harness.record import RECORD_SUFFIX, doc_of_texts, read_record
from semuq_eval.harness.store import open_store
from semuq_eval.judges import Judge, as_label

__all__ = ["DiagnosticQuestion", "NoSampleLabelsError", "load_questions"]


class NoSampleLabelsError(ValueError):
    """A store's label set has no verdict on the sampled answers (only greedy / majority labels)."""


@dataclass
class DiagnosticQuestion:
    """A view of one question of a run store, :class:`~semuq_eval.harness.doc.Doc` ``doc``, with a label on every
    answer (1 correct, 0 incorrect, None unknown).

    ``uid`` is unique over all stores of a diagnosis (``"<store index>:<doc_id>"``). ``greedy`` and ``samples`` are
    the answers' texts, ``greedy_offsets`` the generating model's token spans in the greedy answer (None for a
    black-box model), ``greedy_hidden`` and ``sample_hidden`` their hidden vectors in float64 when the store kept them.

    Examples
    --------
    >>> doc = Doc.of_texts("Capital of France?", ["Rome", "Paris"], greedy="Paris", references=["Paris"])
    >>> q = DiagnosticQuestion("0:0", doc, 1, [0, 1])
    >>> q.samples, q.correct_samples(), q.doc.greedy.text
    (['Rome', 'Paris'], [1], 'Paris')
    """

    uid: str
    doc: Doc
    greedy_label: int | None
    sample_labels: list[int | None]

    @property
    def doc_id(self) -> int:
        return int(self.doc.doc_id)

    @property
    def question(self) -> str:
        return self.doc.question

    @functools.cached_property
    def references(self) -> list[str]:
        return [x for x in self.doc.references if isinstance(x, str)]

    @property
    def greedy(self) -> str:
        return self.doc.greedy.text

    @functools.cached_property
    def samples(self) -> list[str]:
        return [g.text for g in self.doc.samples]

    @property
    def greedy_offsets(self) -> np.ndarray | None:
        return self.doc.greedy.token_offsets

    @functools.cached_property
    def greedy_hidden(self) -> np.ndarray | None:
        hidden = self.doc.greedy.hidden
        return None if hidden is None else np.asarray(hidden, np.float64)

    @functools.cached_property
    def sample_hidden(self) -> list[np.ndarray | None] | None:
        hidden = [None if g.hidden is None else np.asarray(g.hidden, np.float64) for g in self.doc.samples]
        return hidden if any(h is not None for h in hidden) else None

    def correct_samples(self) -> list[int]:
        """Indices of the samples labelled correct."""
        return [i for i, v in enumerate(self.sample_labels) if v == 1]

    def incorrect_samples(self) -> list[int]:
        """Indices of the samples labelled incorrect."""
        return [i for i, v in enumerate(self.sample_labels) if v == 0]


def _labels_of(store: Path, docs: Sequence[Doc], labels: str, judge: Judge | None):
    if judge is not None:
        out = label_docs(judge, docs)
        return {d.doc_id: lab for d, lab in zip(docs, out, strict=True)}
    label_set = read_label_set(store, labels)
    missing = [
        d.doc_id
        for d in docs
        if d.samples and len(label_set.records.get(d.doc_id, {}).get("samples") or []) != len(d.samples)
    ]
    if missing:
        raise NoSampleLabelsError(
            f"{store}: label set {labels!r} has no verdict on the sampled answers of {len(missing)} of "
            f"{len(docs)} questions (e.g. doc {missing[0]}); the diagnostics need per-sample labels. "
            "Label them now with a judge (`--judge string`), or write a label set with `semuq-eval judge`."
        )
    return label_set.records


def _record_questions(path: Path, labels: str, judge: Judge | None, max_questions: int | None):
    """The docs of a run record that keeps its texts, and their labels (``labels``; ``"run"`` reads the record's
    own label set)."""
    record = read_record(path)
    chosen = record.get("label_set", RUN_LABELS) if labels == RUN_LABELS else labels
    lines = record.questions[: None if max_questions is None else int(max_questions)]
    if any(q.get("texts") is None for q in lines):
        raise ValueError(
            f"{path}: a run record without texts (a leaderboard's record) holds no answers to diagnose"
        )
    docs = [doc_of_texts(q) for q in lines]
    if judge is not None:
        return docs, _labels_of(path, docs, labels, judge)
    missing = [q["doc_id"] for q in lines if chosen not in q["labels"]]
    if missing:
        raise FileNotFoundError(
            f"{path}: no label set {chosen!r} for doc {missing[0]} ({len(missing)} questions)"
        )
    return docs, {q["doc_id"]: q["labels"][chosen] for q in lines}


def load_questions(
    stores: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    labels: str = RUN_LABELS,
    judge: Judge | None = None,
    max_questions: int | None = None,
) -> list[DiagnosticQuestion]:
    """The questions of one or more run stores with per-answer labels.

    ``stores``: run store folders or run records that keep their texts; ``labels``: the label set to read (``"run"``:
    the run's own); ``judge`` labels every answer now instead; ``max_questions`` keeps each store's first questions.
    Raises FileNotFoundError when a path is not a run store or the label set does not exist,
    :class:`NoSampleLabelsError` when the label set has no per-sample verdicts (and no ``judge`` was given).

    Examples
    --------
    >>> from semuq_eval.diagnose.check_values import frozen_store_path
    >>> qs = load_questions(frozen_store_path(), max_questions=3)
    >>> len(qs), len(qs[0].samples) == len(qs[0].sample_labels)
    (3, True)
    """
    if isinstance(stores, (str, os.PathLike)):
        stores = [stores]
    out: list[DiagnosticQuestion] = []
    for k, store in enumerate(stores):
        store = Path(store)
        if store.is_file() and store.name.endswith(RECORD_SUFFIX):
            docs, by_doc = _record_questions(store, labels, judge, max_questions)
        else:
            docs = open_store(store).docs()[: None if max_questions is None else int(max_questions)]
            by_doc = _labels_of(store, docs, labels, judge)
        for d in docs:
            lab = by_doc.get(d.doc_id)
            if lab is None:
                raise NoSampleLabelsError(f"{store}: label set {labels!r} has no record for doc {d.doc_id}")
            out.append(
                DiagnosticQuestion(
                    uid=f"{k}:{d.doc_id}",
                    doc=d,
                    greedy_label=as_label(lab.get("greedy")),
                    sample_labels=[as_label(v) for v in lab.get("samples") or []],
                )
            )
    return out
