"""Judging a finished run store again: a named label set from another judge, and how it agrees with another set.

Every stored answer is judged once (:mod:`semuq_eval.harness.label_sets` keeps the set). :func:`compare_label_sets`
gives Cohen's kappa and confusion matrices (greedy, majority, per-sample; greedy vs majority within each set),
:func:`auroc_side_by_side` each stored estimator's AUROC under each set. ``semuq-eval judge`` runs them."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from semuq_eval import judges
from semuq_eval.durable import writer_lock
from semuq_eval.harness.breakdown import summarize
from semuq_eval.harness.label_sets import (
    check_name,
    label_docs,
    label_set_names,
    read_label_set,
    write_label_set,
)
from semuq_eval.harness.settings import stored_settings
from semuq_eval.harness.store import open_store
from semuq_eval.judges.agreement import agreement
from semuq_eval.judges.panel import check_panel, combine
from semuq_eval.judges.strategies import majority_label

__all__ = ["ANSWERS", "auroc_side_by_side", "compare_label_sets", "judge_store", "panel_store"]


def judge_store(
    store: str | os.PathLike,
    judge_name: str,
    judge_options: Mapping[str, Any] | None = None,
    *,
    name: str,
    force: bool = False,
    answers: str = "all",
) -> dict[str, Any]:
    """Judge every stored answer with ``judge_name`` and write label set ``name``; returns its provenance.
    ``answers="greedy"`` judges only the greedy answers (sample and majority labels stay unknown). An existing set of
    that name is replaced only with ``force`` (else FileExistsError); one process at a time writes it
    (:func:`~semuq_eval.durable.writer_lock`)."""
    check_name(name)
    if answers not in ANSWERS:
        raise ValueError(f"answers {answers!r}: choose one of {', '.join(ANSWERS)}")
    with writer_lock(Path(store) / "labels" / name, "label set"):
        return _judge_and_write(store, judge_name, judge_options, name, force, answers)


ANSWERS = ("all", "greedy")
"""What ``judge_store`` judges: every answer, or the greedy answers only."""


def _judge_and_write(
    store: str | os.PathLike,
    judge_name: str,
    judge_options: Mapping[str, Any] | None,
    name: str,
    force: bool,
    answers: str,
) -> dict[str, Any]:
    _check_new(store, name, force)
    docs = open_store(store).docs(hidden=False)
    if not docs:
        raise ValueError(f"{store}: the store has no questions")
    if answers == "greedy":
        docs = [dataclasses.replace(d, samples=[]) for d in docs]
    judge = judges.get(judge_name, **dict(judge_options or {}))
    start = time.perf_counter()
    labels = label_docs(judge, docs)
    seconds = time.perf_counter() - start
    rows = [{"doc_id": d.doc_id, **lab} for d, lab in zip(docs, labels, strict=True)]
    errors: dict[str, int] = {}
    for lab in labels:
        for reason, count in (lab.get("errors") or {}).items():
            errors[reason] = errors.get(reason, 0) + count
    provenance = {
        "judge": judge.info,
        "tie_rule": "majority: strict majority of the known sample labels; a tie is incorrect",
        "seconds": round(seconds, 2),
        "answers": answers,
        "unknown_reasons": errors,
        "judge_stats": dict(getattr(judge, "stats", {}) or {}),
    }
    write_label_set(store, name, rows, provenance)
    return provenance


def _check_new(store: str | os.PathLike, name: str, force: bool) -> None:
    if name in label_set_names(store) and not force:
        raise FileExistsError(f"{store}: label set {name!r} exists; choose another --name or pass --force")


def panel_store(
    store: str | os.PathLike, members: Sequence[str], rule: str, *, name: str, force: bool = False
) -> dict[str, Any]:
    """Write label set ``name``: the panel of two label sets of the store under ``rule``
    (:mod:`semuq_eval.judges.panel`), answer by answer (majority from the panel's sample labels); questions either set
    lacks are left out. Returns its provenance."""
    first, second = check_panel(members, rule)
    check_name(name)
    a, b = read_label_set(store, first), read_label_set(store, second)
    with writer_lock(Path(store) / "labels" / name, "label set"):
        _check_new(store, name, force)
        rows = []
        for doc_id in sorted(set(a.records) & set(b.records)):
            x, y = a.records[doc_id], b.records[doc_id]
            k = min(len(x["samples"]), len(y["samples"]))
            samples = [combine(p, q, rule) for p, q in zip(x["samples"][:k], y["samples"][:k], strict=True)]
            rows.append(
                {
                    "doc_id": doc_id,
                    "greedy": combine(x["greedy"], y["greedy"], rule),
                    "majority": majority_label([None if v is None else bool(v) for v in samples]),
                    "samples": samples,
                }
            )
        provenance = {
            "judge": {"judge": "panel", "rule": rule, "members": {first: a.judge, second: b.judge}},
            "tie_rule": "majority: strict majority of the panel's known sample labels; a tie is incorrect",
        }
        write_label_set(store, name, rows, provenance)
    return provenance


def compare_label_sets(store: str | os.PathLike, a: str, b: str) -> dict[str, Any]:
    """Agreement of label sets ``a`` and ``b`` of a store, lined up by doc id (module docstring)."""
    set_a, set_b = read_label_set(store, a), read_label_set(store, b)
    ids = sorted(set(set_a.records) & set(set_b.records))
    ra, rb = [set_a.records[i] for i in ids], [set_b.records[i] for i in ids]
    samples_a, samples_b = [], []
    for x, y in zip(ra, rb, strict=True):
        k = min(len(x["samples"]), len(y["samples"]))
        samples_a += x["samples"][:k]
        samples_b += y["samples"][:k]
    return {
        "a": a,
        "b": b,
        "n_docs": len(ids),
        "docs_only_in_one": len(set(set_a.records) ^ set(set_b.records)),
        "greedy": agreement([x["greedy"] for x in ra], [y["greedy"] for y in rb]),
        "majority": agreement([x["majority"] for x in ra], [y["majority"] for y in rb]),
        "samples": agreement(samples_a, samples_b),
        f"greedy_vs_majority[{a}]": agreement([x["greedy"] for x in ra], [x["majority"] for x in ra]),
        f"greedy_vs_majority[{b}]": agreement([y["greedy"] for y in rb], [y["majority"] for y in rb]),
    }


def auroc_side_by_side(store: str | os.PathLike, label_sets: Sequence[str], strategy: str = "greedy") -> dict:
    """AUROC (with CI and counts) of every stored estimator under each label set, from the stored scores."""
    reader = open_store(store)
    items = [reader.items[k] for k in sorted(reader.items)]  # the stored scores, checked field by field
    settings = stored_settings(reader.manifest, reader.manifest_path)
    out: dict[str, Any] = {}
    for name in label_sets:
        records = read_label_set(store, name).records
        relabelled = [
            {**it, "labels": judges.strategies.labels_of(records.get(it["doc_id"]) or {})} for it in items
        ]
        b = summarize(relabelled, settings, label_set=name)
        out[name] = {
            "labels": b["labels"][strategy],
            "auroc": {e: r["auroc"] for e, r in b["results"][strategy].items()},
        }
    return out
