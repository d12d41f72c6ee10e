"""Finishing a run, in one place: a run's items -> metrics -> breakdown -> the run store's files.

Every way of scoring goes the same path: the pipeline on a process's docs (:mod:`~semuq_eval.harness.pipeline`), the
run store's start (:meth:`~semuq_eval.harness.store.RunStore.begin`), then :func:`finish_run` on every process's items.
The task's run step (:mod:`~semuq_eval.harness.step`) does the first two on each rank and the last on rank 0;
``rescore`` all three on a stored run."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from semuq_eval.harness.breakdown import summarize
from semuq_eval.harness.record import RECORD_NAME, build_record, write_record
from semuq_eval.harness.settings import Settings
from semuq_eval.harness.store import RunStore

__all__ = ["WRITE_FAILURES", "RunFacts", "finish_run"]

log = logging.getLogger(__name__)

WRITE_FAILURES: list[str] = []
"""One line per output of this process's runs that could not be written: lm-eval's task cannot fail without
losing lm-eval's own results, so ``semuq-eval run`` reads this list after lm-eval returns and exits non-zero."""


@dataclass(frozen=True)
class RunFacts:
    """What a run's breakdown records besides its items and settings (:func:`~semuq_eval.harness.breakdown.summarize`):
    the task, the operators run, the judge, the label set scored and extra fields."""

    task: str
    operators: Mapping[str, Any]
    judge: Mapping[str, Any]
    label_set: str = "run"
    extra: Mapping[str, Any] | None = None


def finish_run(
    items: Sequence[Mapping[str, Any]],
    settings: Settings,
    facts: RunFacts,
    *,
    store: RunStore | None = None,
    strict: bool = True,
) -> dict:
    """The breakdown of a run's ``items`` (all its questions), written into ``store`` when one is given.

    ``items`` come from every process (:func:`~semuq_eval.harness.pipeline.doc_item`); ``settings.store`` False writes
    ``breakdown.json`` only; ``store`` None writes nothing. ``strict`` (default) raises when a file cannot be written;
    False logs an error, adds it to :data:`WRITE_FAILURES` and still returns the breakdown, so lm-eval keeps its results
    and ``semuq-eval run`` exits non-zero."""
    task = facts.task
    breakdown = summarize(items, settings, **vars(facts))  # RunFacts' fields are summarize's keywords
    if store is None:
        return breakdown
    try:
        store.root.mkdir(parents=True, exist_ok=True)
        if settings.store:
            store.write_scores(items)
            _write_record(store, items, breakdown)
        path = store.write_breakdown(breakdown)  # the last file: with it the store is finished
    except (OSError, ValueError) as err:
        if strict:
            raise
        WRITE_FAILURES.append(" ".join(f"{task}: {err}".split()))
        log.error("%s: could not write the breakdown or record to %s (%s)", task, store.root, err)
        return breakdown
    labels = breakdown["labels"]["greedy"]
    log.info(
        "%s: semuq breakdown (%d questions, greedy labels %d correct / %d incorrect; %d estimators) "
        "written to %s",
        task,
        breakdown["n_docs"],
        labels["n_correct"],
        labels["n"] - labels["n_correct"],
        len(breakdown["estimators_scored"]),
        path,
    )
    return breakdown


def _write_record(store: RunStore, items: Sequence[Mapping[str, Any]], breakdown: Mapping[str, Any]) -> None:
    """The run record, from the items and breakdown just written (a new store holds no other label set)."""
    if store.manifest is None:
        raise ValueError(f"{store.root}: the store was not begun, so it has no manifest to record")
    ordered = sorted(items, key=lambda item: item["doc_id"])
    write_record(
        store.root / RECORD_NAME, build_record(store.root.name, store.manifest, breakdown, ordered, {})
    )
