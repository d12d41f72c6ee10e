"""Judging a finished run store again: a named label set from another judge, and how it agrees with another set.

Every stored answer is judged once (:mod:`semuq_eval.harness.label_sets` keeps the set). :func:`compare_label_sets`
gives Cohen's kappa and confusion matrices (greedy, majority, per-sample; greedy vs majority within each set),
:func:`auroc_side_by_side` each stored estimator's AUROC under each set. ``semuq-eval judge`` runs them."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import field_validator, model_validator

from semuq_eval import judges
from semuq_eval.durable import writer_lock
from semuq_eval.harness.breakdown import summarize
from semuq_eval.harness.label_sets import (
    RUN_LABELS,
    LabelSet,
    check_name,
    label_docs,
    label_set_names,
    read_label_set,
    write_label_set,
)
from semuq_eval.harness.settings import stored_settings
from semuq_eval.harness.store import open_store
from semuq_eval.jsonio import loads
from semuq_eval.judges.agreement import agreement
from semuq_eval.judges.panel import PANEL_RULES, check_panel, combine
from semuq_eval.judges.strategies import majority_label
from semuq_eval.options import OptionError, Options, option

__all__ = ["JudgeOptions", "auroc_side_by_side", "compare_label_sets", "judge_store", "panel_store"]


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
        errors: Counter[str] = Counter()
        for lab in labels:
            errors.update(lab.get("errors") or {})
        provenance = {
            "judge": judge.info,
            "tie_rule": "majority: strict majority of the known sample labels; a tie is incorrect",
            "seconds": round(seconds, 2),
            "answers": answers,
            "unknown_reasons": dict(errors),
            "judge_stats": dict(getattr(judge, "stats", {}) or {}),
        }
        rows = [{"doc_id": d.doc_id, **lab} for d, lab in zip(docs, labels, strict=True)]
        write_label_set(store, name, rows, provenance)
    return provenance


ANSWERS = ("all", "greedy")
"""What ``judge_store`` judges: every answer, or the greedy answers only."""


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
        for doc_id, x, y, samples_x, samples_y in _paired(a, b):
            samples = [combine(p, q, rule) for p, q in zip(samples_x, samples_y, strict=True)]
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


def _paired(a: LabelSet, b: LabelSet) -> list[tuple[int, dict, dict, list, list]]:
    """``(doc_id, a's record, b's record, a's sample labels, b's)`` of the questions both label sets hold, by doc
    id, the sample labels cut to the shorter list."""
    out = []
    for i in sorted(set(a.records) & set(b.records)):
        x, y = a.records[i], b.records[i]
        k = min(len(x["samples"]), len(y["samples"]))
        out.append((i, x, y, x["samples"][:k], y["samples"][:k]))
    return out


def compare_label_sets(store: str | os.PathLike, a: str, b: str) -> dict[str, Any]:
    """Agreement of label sets ``a`` and ``b`` of a store, lined up by doc id (module docstring)."""
    set_a, set_b = read_label_set(store, a), read_label_set(store, b)
    paired = _paired(set_a, set_b)
    ra, rb = [p[1] for p in paired], [p[2] for p in paired]
    samples_a, samples_b = [v for p in paired for v in p[3]], [v for p in paired for v in p[4]]
    return {
        "a": a,
        "b": b,
        "n_docs": len(paired),
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


class JudgeOptions(Options):
    """``semuq-eval judge``'s options: the judge or panel, the label set it writes and the one it is compared with
    (docs/judges.md's table).

    Examples
    --------
    >>> JudgeOptions(judge_args="base_url=http://h:8/v1,model=m,concurrency=4,logprobs=false").judge_args
    {'base_url': 'http://h:8/v1', 'model': 'm', 'concurrency': 4, 'logprobs': False}
    """

    store: str | None = option(
        None, "a run store directory (<output_path>/semuq/<task>/<run_id>)", flag="store"
    )
    judge: str | None = option(None, "the judge: string, hf, openai or a plugin's")
    judge_args: dict[str, Any] = option({}, "the judge's options: key=value,key=value")
    name: str | None = option(None, "the label set's name (default: the judge's name and model)")
    compare: str = option(RUN_LABELS, "compare with this label set")
    strategy: str = option("greedy", "the label strategy of the AUROC table")
    top: int = option(15, "rows shown: estimators in the AUROC table, candidates with --choose", ge=1)
    answers: Literal[ANSWERS] = option(
        "all", "all: every answer; greedy: the greedy answers only (sampled and majority labels stay unknown)"
    )
    panel: list[str] | None = option(
        None, "instead of a judge: a panel of label sets A,B (with --validate: of verdict sets)", parse="csv"
    )
    rule: Literal[PANEL_RULES] = option("both", "the panel's rule: correct when both say so or either does")
    force: bool = option(False, "replace a label set of the same name")
    allow_unknown: bool = option(
        False, "exit 0, not 1, when every judge request failed (no label known)", flag="--allow-unknown"
    )

    @field_validator("judge_args", mode="before")
    @classmethod
    def _read(cls, value: Any) -> Any:
        """The flag's ``k=v,...`` text as a dict, values read as JSON when they parse (numbers, true/false,
        null); a mapping given in Python stays as it is."""
        if not isinstance(value, str):
            return value
        out: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in value.split(","))):
            key, sep, text = (s.strip() for s in part.partition("="))
            if not sep or not key:
                raise ValueError(f"{part!r} is not key=value")
            try:
                out[key] = loads(text)
            except json.JSONDecodeError as err:
                if err.msg == "nested too deep":  # not echoed: the error would print the whole value
                    raise ValueError(f"{key} is nested too deep to read") from None
                out[key] = text
        return out

    @model_validator(mode="after")
    def _registered(self) -> JudgeOptions:
        """The judge and the strategy are registered names (plugins add more, so no Literal)."""
        for field, known in (("judge", judges.names()), ("strategy", judges.label_strategy_names())):
            value = getattr(self, field)
            if value is not None and value not in known:
                raise OptionError(field, f"invalid choice: {value!r} (choose from {', '.join(known)})")
        return self
