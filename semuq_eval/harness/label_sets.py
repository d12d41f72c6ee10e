"""Label sets: named sets of correctness labels kept in a run store, one per judge that labelled the run.

The run's judge gives the set ``"run"`` (``scores.jsonl``); ``semuq-eval judge STORE --name NAME`` labels the stored
answers with another judge, without the LLM, into:

==============================  ==========================================================================
``labels/<name>.jsonl``         one record per question: ``{"doc_id", "greedy", "majority", "samples",
                                "n_missing_verdicts"[, "p_correct", "errors"]}`` (labels 1 / 0 / null)
``labels/<name>.json``          provenance: ``{"format", "name", "judge" (the judge's info: model and
                                revision, prompt and its hash, decoding), "created", counts,
                                "rows_sha256", ...}``, written last: a set without it, or whose rows
                                differ from ``rows_sha256``, is unfinished and refused
==============================  ==========================================================================

``rescore --labels NAME`` scores against a set (the breakdown's ``label_set``). ``samples`` are the verdicts on the
sampled answers in stored order; ``majority`` follows :func:`semuq_eval.judges.majority_label`.

Example
-------
>>> import tempfile
>>> store = tempfile.mkdtemp()
>>> _ = write_label_set(store, "llm", [{"doc_id": 0, "greedy": 1, "majority": 0, "samples": [1, 0, 0]}],
...                     {"judge": {"judge": "hf"}})
>>> read_label_set(store, "llm").records[0]["samples"]
[1, 0, 0]
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from semuq_eval.durable import is_temporary
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.schemas import LabelSetLine, check_line
from semuq_eval.harness.store import StoreReader, open_store
from semuq_eval.jsonio import read_json, read_jsonl, write_json, write_jsonl
from semuq_eval.judges import Judge, as_label, label_answers, majority_label
from semuq_eval.writes import within

__all__ = [
    "LABEL_SET_FORMAT",
    "RUN_LABELS",
    "LabelSet",
    "check_name",
    "label_docs",
    "label_set_names",
    "read_label_set",
    "slice_samples",
    "write_label_set",
]

LABEL_SET_FORMAT = "semuq-labels/1"
RUN_LABELS = "run"
"""The name of the labels a run produced with its own judge (stored in ``scores.jsonl``)."""


def label_docs(judge: Judge, docs: Sequence[Doc]) -> list[dict[str, Any]]:
    """Both label strategies for the questions of a run store (:meth:`~semuq_eval.harness.store.StoreReader.docs`),
    one ``judge.batch`` call over all their answers (:func:`~semuq_eval.judges.label_answers`), in doc order."""
    return label_answers(
        judge,
        [d.question for d in docs],
        [d.greedy.text for d in docs],
        [[g.text for g in d.samples] for d in docs],
        [d.references for d in docs],
    )


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass
class LabelSet:
    """One named label set of a store: its provenance and one label record per doc id."""

    name: str
    provenance: dict[str, Any]
    records: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def judge(self) -> dict[str, Any]:
        """The info of the judge that produced the labels."""
        return dict(self.provenance.get("judge") or {})


def _clean(record: Mapping[str, Any]) -> dict[str, Any]:
    """A label record in its stored form: verdicts as 1 / 0 / None, the count of unknown verdicts."""
    samples = [as_label(v) for v in record.get("samples") or []]
    missing = record.get("n_missing_verdicts")
    if missing is None:
        missing = sum(v is None for v in [record.get("greedy"), *samples])
    return {
        "doc_id": record["doc_id"],
        "greedy": as_label(record.get("greedy")),
        "majority": as_label(record.get("majority")),
        "samples": samples,
        "n_missing_verdicts": missing,
        **{key: record[key] for key in ("p_correct", "errors") if record.get(key)},
    }


def check_name(name: str) -> str:
    """``name`` if it is a valid label set name (letters, digits, ``_ . -``; not ``run``), else ValueError."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"label set name {name!r}: use 1-64 letters, digits, '_', '.' or '-'")
    if name == RUN_LABELS:
        raise ValueError(
            f"label set name {RUN_LABELS!r} is the run's own labels (scores.jsonl); choose another"
        )
    return name


def label_set_names(store: str | os.PathLike) -> list[str]:
    """The label sets of a store: ``"run"`` (when ``scores.jsonl`` exists) and every finished
    ``labels/<name>.jsonl`` (its manifest written); an unfinished one is replaced without ``force``."""
    names = [RUN_LABELS] if open_store(store).has_scores else []
    labels = Path(store) / "labels"
    return names + sorted(
        p.stem for p in labels.glob("*.jsonl") if not is_temporary(p) and p.with_suffix(".json").is_file()
    )


def write_label_set(
    store: str | os.PathLike,
    name: str,
    records: Iterable[Mapping[str, Any]],
    provenance: Mapping[str, Any],
) -> Path:
    """Write label set ``name`` into the store (replacing one of that name); returns the records' path."""
    check_name(name)
    labels_dir = within(store, Path(store) / "labels")
    labels_dir.mkdir(parents=True, exist_ok=True)
    path, meta_path = labels_dir / f"{name}.jsonl", labels_dir / f"{name}.json"
    for written in (path, meta_path):
        within(labels_dir, written)
    rows = sorted(
        (_checked(record, f"label set {name}", record.get("doc_id")) for record in records),
        key=lambda r: r["doc_id"],
    )
    meta = {
        "format": LABEL_SET_FORMAT,
        "name": name,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "n_docs": len(rows),
        "n_answers": sum(1 + len(r["samples"]) for r in rows),
        "n_unknown": sum(r["n_missing_verdicts"] for r in rows),
        **dict(provenance),
    }
    meta_path.unlink(missing_ok=True)  # the manifest goes last: without it the set reads as unfinished
    write_jsonl(path, rows)
    meta["rows_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    write_json(meta_path, meta)
    return path


def read_label_set(store: str | os.PathLike, name: str = RUN_LABELS) -> LabelSet:
    """Label set ``name`` of a store (``"run"``: the run's own labels from ``scores.jsonl``).

    Raises FileNotFoundError when the store has no such set (the message lists the ones it has)."""
    root = Path(store)
    if not isinstance(name, str) or not (name == RUN_LABELS or _NAME.fullmatch(name)):
        raise ValueError(
            f"label set name {name!r}: a name of 1-64 letters, digits, '_', '.' or '-' (no path)"
        )
    if name == RUN_LABELS:
        reader = open_store(root)
        if not reader.has_scores:
            raise FileNotFoundError(
                f"{root}: no scores.jsonl, so no run labels; label sets: {label_set_names(root)}"
            )
        records = {doc_id: _clean(_run_labels(item)) for doc_id, item in reader.items.items()}
        return LabelSet(RUN_LABELS, _run_provenance(reader), records)
    path = root / "labels" / f"{name}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{root}: no label set {name!r}; label sets: {label_set_names(root)}")
    checked = (_checked(raw, path, number) for number, raw in read_jsonl(path))
    return LabelSet(name, _manifest(path), {rec["doc_id"]: rec for rec in checked})


def _manifest(path: Path) -> dict[str, Any]:
    """The manifest ``<name>.json`` of the label set ``path``, written after its rows: without it, or with rows
    that differ from it, the set is unfinished (its judge was killed while writing)."""
    meta_path = path.with_suffix(".json")
    again = f"run `semuq-eval judge ... --name {path.stem}` again"
    if not meta_path.is_file():
        raise ValueError(f"{path}: an unfinished label set (no {meta_path.name}, its last file); {again}")
    provenance = read_json(meta_path)
    if not isinstance(provenance, dict) or provenance.get("format") != LABEL_SET_FORMAT:
        format_ = provenance.get("format") if isinstance(provenance, dict) else None
        raise ValueError(f"{meta_path}: field format: {format_!r}, expected {LABEL_SET_FORMAT!r}")
    pinned = provenance.get("rows_sha256")
    if pinned is not None and hashlib.sha256(path.read_bytes()).hexdigest() != pinned:
        raise ValueError(
            f"{path}: its rows are not those {meta_path.name} was written with (unfinished); {again}"
        )
    return provenance


def _checked(record: Mapping[str, Any], where: str | Path, number: int | None) -> dict[str, Any]:
    """:func:`_clean` of a line checked against :class:`~semuq_eval.harness.schemas.LabelSetLine` (a bad field
    reported as ``file:line: field ...``)."""
    check_line(LabelSetLine, record, where, number)
    return _clean(record)


def _run_labels(item: Mapping[str, Any]) -> dict[str, Any]:
    """A checked ``scores.jsonl`` item's labels as a label record."""
    labels = item.get("labels") or {}
    return {
        "doc_id": item["doc_id"],
        "greedy": labels.get("greedy"),
        "majority": labels.get("majority"),
        "samples": item.get("sample_labels", []),
        "n_missing_verdicts": item.get("n_missing_verdicts", 0),
        "p_correct": item.get("p_correct"),
        "errors": item.get("errors"),
    }


def _run_provenance(reader: StoreReader) -> dict[str, Any]:
    breakdown = reader.breakdown()
    if breakdown is not None:
        return {
            "name": RUN_LABELS,
            "judge": breakdown.get("judge") or {},
            "created": breakdown.get("created"),
        }
    settings = (reader.manifest if reader.is_store else {}).get("settings") or {}
    return {
        "name": RUN_LABELS,
        "judge": {"judge": settings.get("judge"), **(settings.get("judge_options") or {})},
    }


def slice_samples(record: Mapping[str, Any], n: int) -> dict[str, Any]:
    """A label record restricted to its first ``n`` sampled answers (the N-ablation): the majority label and
    the count of unknown verdicts are recomputed from them.

    Examples
    --------
    >>> slice_samples({"doc_id": 0, "greedy": 1, "majority": 1, "samples": [1, 1, 0, 0]}, 2)["majority"]
    1
    """
    rec = _clean(record)
    samples = rec["samples"][:n]
    majority = majority_label([None if v is None else bool(v) for v in samples])
    rec.update(
        samples=samples,
        majority=as_label(majority),
        n_missing_verdicts=sum(v is None for v in [rec["greedy"], *samples]),
    )
    return rec
