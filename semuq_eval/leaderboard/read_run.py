"""Reading one run: a run store, a run record or a breakdown alone, checked, as a :class:`~.runs.Run` of aligned
per-question arrays (scores and labels in doc-id order) with its provenance. A run record gives its store's run,
but with every figure computed (``source`` "computed"). Errors: :class:`~.runs.LeaderboardInputError`, naming the
file and the fix."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from semuq_eval.harness.breakdown import FORMAT as BREAKDOWN_FORMAT
from semuq_eval.harness.label_sets import RUN_LABELS, label_set_names, read_label_set
from semuq_eval.harness.record import RECORD_SUFFIX, read_record
from semuq_eval.harness.schemas import BreakdownFile, check_line
from semuq_eval.harness.store import BREAKDOWN, SCORES, open_store, read_breakdown
from semuq_eval.judges import label_strategy_names
from semuq_eval.leaderboard.provenance import provenance
from semuq_eval.leaderboard.runs import LeaderboardInputError, Run

__all__ = ["load_run", "load_runs"]


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def load_run(path: str | os.PathLike, label_set: str = RUN_LABELS) -> Run:
    """Read one run store directory, one run record (``*.jsonl.gz``), or one breakdown JSON file (a
    breakdown-only run).

    ``label_set`` names the labels (:mod:`semuq_eval.harness.label_sets`): ``"run"``, the run's own judge
    (``scores.jsonl``), or a set written by ``semuq-eval judge`` (``labels/<name>.jsonl``), whose judge then
    identifies the labels; a question the set does not label has no label. Raises LeaderboardInputError, naming the
    file and the fix, for a missing file, an unknown store or breakdown format, or items not matching the breakdown.

    Examples
    --------
    >>> load_run("/nonexistent/semuq/semuq_nqopen/x")
    Traceback (most recent call last):
    ...
    semuq_eval.leaderboard.runs.LeaderboardInputError: /nonexistent/semuq/semuq_nqopen/x does not exist
    """
    path = Path(path)
    if not path.exists():
        raise LeaderboardInputError(f"{path} does not exist")
    if path.is_file() and path.name.endswith(RECORD_SUFFIX):
        return _load_record(path, label_set)
    store = path if path.is_dir() else None
    breakdown_file = path / BREAKDOWN if store else path
    if store is None and path.name == BREAKDOWN and open_store(path.parent).has_scores:
        store, breakdown_file = path.parent, path
    if not breakdown_file.is_file():
        raise LeaderboardInputError(
            f"{breakdown_file} is missing: the run did not finish its aggregation; re-run it, or rebuild it "
            f"from the store with `semuq-eval rescore {breakdown_file.parent} --output {breakdown_file}`"
        )
    try:
        breakdown = read_breakdown(breakdown_file)
    except ValueError as err:
        raise LeaderboardInputError(str(err)) from None
    fmt = breakdown.get("format")
    if fmt != BREAKDOWN_FORMAT:
        raise LeaderboardInputError(
            f"{breakdown_file}: breakdown format {fmt!r}, expected {BREAKDOWN_FORMAT!r} (an older or unknown "
            f"schema); rebuild it with `semuq-eval rescore {breakdown_file.parent}` from the run store"
        )
    for key in ("task", "results", "labels"):
        if key not in breakdown:
            raise LeaderboardInputError(f"{breakdown_file}: no {key!r} in the breakdown (a truncated file?)")
    try:
        check_line(BreakdownFile, breakdown, breakdown_file)
    except ValueError as err:
        raise LeaderboardInputError(str(err)) from None
    settings = dict(breakdown.get("settings") or {})
    task = str(breakdown["task"])
    if store is None:
        if label_set != RUN_LABELS:
            raise LeaderboardInputError(
                f"{path}: a breakdown alone has only the run's labels, not {label_set!r}"
            )
        llm = path.parent.name if path.name == BREAKDOWN else path.stem
        run = Run(path=path, task=task, llm=llm, breakdown=breakdown, settings=settings)
        run.provenance = provenance(path.parent, task, llm, breakdown, settings)
        run.provenance["notes"].append("breakdown only (no scores.jsonl): not paired with other runs")
        return run
    manifest, items = _store_parts(store, task, breakdown_file)
    if breakdown.get("n_docs") is not None and int(breakdown["n_docs"]) != len(items):
        raise LeaderboardInputError(
            f"{store}: scores.jsonl holds {len(items)} questions but breakdown.json says {breakdown['n_docs']}: "
            f"they come from different runs; rebuild the breakdown with `semuq-eval rescore {store}`"
        )
    doc_ids = np.array(sorted(items), dtype=np.int64)
    ordered = [items[d] for d in doc_ids]
    names: list[str] = []
    for it in ordered:
        names.extend(k for k in it["scores"] if k not in names)
    scores = {n: np.array([_float(it["scores"].get(n)) for it in ordered]) for n in names}
    labels, judge_info = _labels(store, ordered, doc_ids, label_set)
    qids = [it.get("id") for it in ordered]
    llm = store.name
    run = Run(
        path=store,
        task=task,
        llm=llm,
        breakdown=breakdown,
        settings=settings,
        doc_ids=doc_ids,
        question_ids=[str(q) for q in qids] if all(q is not None for q in qids) else None,
        scores=scores,
        labels=labels,
        label_set=label_set,
        judge_info=judge_info,
    )
    run.provenance = provenance(store, task, llm, breakdown, settings)
    _name_model(run.provenance["model"], manifest.get("model") or {})
    run.provenance["label_set"] = label_set
    if judge_info is not None:
        run.provenance["judge"] = judge_info
    return run


def _labels(
    store: Path, ordered: Sequence[Mapping[str, Any]], doc_ids: np.ndarray, label_set: str
) -> tuple[dict[str, np.ndarray], dict[str, Any] | None]:
    """``(labels per strategy, judge info)``: the run's own labels (judge info None), or label set ``label_set``'s
    lined up by doc id (a question it does not label has no label)."""
    if label_set == RUN_LABELS:
        return {
            s: np.array([_float(it["labels"].get(s)) for it in ordered]) for s in label_strategy_names()
        }, None
    try:
        chosen = read_label_set(store, label_set)
    except (FileNotFoundError, ValueError) as err:
        raise LeaderboardInputError(str(err)) from None
    labels = {
        s: np.array([_float((chosen.records.get(int(d)) or {}).get(s)) for d in doc_ids])
        for s in label_strategy_names()
    }
    return labels, {"label_set": label_set, **chosen.judge}


def _name_model(model: dict[str, Any], named: Mapping[str, Any]) -> None:
    """The provenance's LLM as the run's manifest names it (newer stores name it; older ones leave it empty)."""
    if named:
        model["pretrained"] = named.get("pretrained") or named.get("model") or model["pretrained"]
        model["revision"] = named.get("revision") or model["revision"]
        model["manifest"] = dict(named)


def _store_parts(
    store: Path, task: str, breakdown_file: Path
) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    """The manifest and the scored items of a run store whose breakdown is ``breakdown_file`` (of ``task``)."""
    reader = open_store(store)
    try:
        manifest = reader.manifest
        if manifest.get("task") != task:
            raise ValueError(
                f"{store}: the manifest's task {manifest.get('task')!r} is not the breakdown's {task!r}"
            )
        if not reader.has_scores:
            raise ValueError(
                f"{store / SCORES} is missing: the per-question scores are needed to pair runs; pass "
                f"{breakdown_file} alone to show its figures unpaired"
            )
        items = reader.items
    except (FileNotFoundError, ValueError) as err:
        raise LeaderboardInputError(str(err)) from None
    if not items:
        raise LeaderboardInputError(f"{store / SCORES} holds no questions")
    return manifest, items


def _load_record(path: Path, label_set: str) -> Run:
    """A run read from its run record: what :func:`load_run` gives for the store it came from, except that
    its breakdown holds no figures (every cell is computed) and its provenance is the record's."""
    try:
        record = read_record(path)
    except ValueError as err:
        raise LeaderboardInputError(str(err)) from None
    task, llm = record["task"], record["llm"]
    if label_set not in record["label_sets"]:
        raise LeaderboardInputError(
            f"{path}: record {task}/{llm}: no label set {label_set!r} (it holds {sorted(record['label_sets'])})"
        )
    questions = record.questions
    breakdown = {
        "format": BREAKDOWN_FORMAT,
        "n_samples": record["n_samples"],
        "n_docs": len(questions),
        **{
            k: v for k, v in record.items() if k not in ("format", "llm", "model", "estimators", "label_sets")
        },
    }
    settings = dict(record.get("settings") or {})
    columns = {name: i for i, name in enumerate(record["estimators"])}
    scores = {n: np.array([_float(q["scores"][i]) for q in questions]) for n, i in columns.items()}
    chosen = [q["labels"].get(label_set) or {} for q in questions]
    labels = {s: np.array([_float(c.get(s)) for c in chosen]) for s in label_strategy_names()}
    qids = [q.get("id") for q in questions]
    run = Run(
        path=path,
        task=task,
        llm=llm,
        breakdown=breakdown,
        settings=settings,
        doc_ids=np.array([q["doc_id"] for q in questions], dtype=np.int64),
        question_ids=[str(q) for q in qids] if all(q is not None for q in qids) else None,
        scores=scores,
        labels=labels,
        label_set=label_set,
        judge_info=None
        if label_set == RUN_LABELS
        else {"label_set": label_set, **record["label_sets"][label_set]},
        question_set_hash=record["question_set"],
    )
    run.provenance = provenance(path, task, llm, breakdown, settings)
    model = run.provenance["model"]
    named = dict(record.get("model") or {})
    model.update(pretrained=named.get("pretrained") or named.get("model"), revision=named.get("revision"))
    model["manifest"] = named
    run.provenance["label_set"] = label_set
    run.provenance["notes"] = [
        f"from the run record {path.name}: the LLM as the store's manifest named it; package versions not recorded"
    ]
    if run.judge_info is not None:
        run.provenance["judge"] = run.judge_info
    return run


def load_runs(
    paths: Iterable[str | os.PathLike],
    label_sets: Sequence[str] = (RUN_LABELS,),
    skipped: list[dict[str, str]] | None = None,
) -> list[Run]:
    """:func:`load_run` of every path and label set, in the order given.

    ``label_sets`` may hold ``"all"``: every label set of each store or record (:func:`label_set_names`). An
    unreadable run record (it may come from anywhere) is listed in ``skipped`` (``{"path", "reason"}``) when a list
    is given, and the others read; otherwise the error is raised, as for a store."""
    runs = []
    for p in paths:
        names = list(label_sets)
        record = str(p).endswith(RECORD_SUFFIX)
        try:
            if "all" in names:
                found = (
                    label_set_names(p)
                    if Path(p).is_dir()
                    else list(read_record(p)["label_sets"])
                    if record
                    else [RUN_LABELS]
                )
                names = [n for n in names if n != "all"] + [n for n in found if n not in names]
            runs.extend([load_run(p, name) for name in names])
        except (LeaderboardInputError, ValueError) as err:
            if not record or skipped is None:
                raise LeaderboardInputError(str(err)) from None
            skipped.append({"path": str(p), "reason": str(err)})
    return runs
