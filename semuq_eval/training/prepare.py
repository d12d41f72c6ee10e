"""The training data of a run: read the stores and training files, keep the usable questions (App. C), split them.

:func:`prepare_data` is the step before :func:`~semuq_eval.training.trainer.train_operator`; the CLI calls it
first so a data problem (too few usable questions, a store without labels) is reported before a model loads.
"""

from __future__ import annotations

import glob
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from semuq_eval.training.config import GUIDED_TASK, TrainingConfig
from semuq_eval.training.data_files import is_training_file, read_training_file
from semuq_eval.training.mining import mine
from semuq_eval.training.stores import (
    DEFAULT_TRAINING_TASK,
    StoreData,
    find_stores,
    labelled_questions,
    read_store,
)
from semuq_eval.training.triplets import TrainingQuestion, filter_questions, split_by_question

__all__ = ["TooFewQuestionsError", "TrainingData", "prepare_data", "read_sources"]

log = logging.getLogger(__name__)


class TooFewQuestionsError(ValueError):
    """The stores hold too few questions with at least 2 correct and 1 incorrect samples."""


@dataclass
class TrainingData:
    """The stores read, the kept questions split by question, and the counts behind them."""

    stores: list[StoreData]
    train: list[TrainingQuestion]
    val: list[TrainingQuestion]
    counts: dict[str, int]
    validation_stores: list[StoreData] = field(default_factory=list)


def prepare_data(config: TrainingConfig) -> TrainingData:
    """Read the stores, keep the usable questions (App. C), split them by question.

    Raises FileNotFoundError (no store, or no such label set), ValueError (a store without per-sample labels) or
    :class:`TooFewQuestionsError` (fewer than 2 distinct usable questions; the message says how many were kept and
    why the others were not)."""
    stores = read_sources(config.stores, config.task, config.labels, llm=config.llm)
    for s in stores:
        if s.provenance.get("task") != DEFAULT_TRAINING_TASK:
            log.warning(
                "%s: task %s is not the training set %s; keep the operator's training data apart from every "
                "evaluation set (the paper trains on NQ-Open only)",
                s.path,
                s.provenance.get("task"),
                DEFAULT_TRAINING_TASK,
            )
    guided = read_sources(config.guided, GUIDED_TASK, config.labels, llm=config.llm) if config.guided else []
    questions, mined = mine(
        labelled_questions(stores),
        labelled_questions(guided),
        positives=config.positives,
        fact_swap=config.fact_swap,
    )
    kept, counts = filter_questions(questions)
    counts.update(mined)
    counts["seen"] += sum(s.n_unlabelled + s.n_label_mismatch for s in stores)
    counts["unlabelled"] = sum(s.n_unlabelled for s in stores)
    counts["label_mismatch"] = sum(s.n_label_mismatch for s in stores)
    distinct = len({q.source.key for q in kept})
    if distinct < 2:
        raise TooFewQuestionsError(
            f"only {counts['kept']} of {counts['seen']} questions are usable ({distinct} distinct; at least 2 are "
            "needed, one to train and one to validate): a question is kept when at least 2 of its sampled answers "
            f"are correct and at least 1 is incorrect. Left out: {counts['fewer_than_2_correct']} with fewer than 2 "
            f"correct answers, {counts['no_incorrect']} with no incorrect answer, {counts['unlabelled']} without "
            f"per-sample labels, {counts['label_mismatch']} whose label count differs from their samples "
            f"({counts['unknown_verdicts']} answers had an unknown verdict, {counts['empty_answers']} were empty). "
            "Use more questions, more samples per question (n_samples), or an LLM that is right more often."
        )
    if config.validation:
        held_out = read_sources(config.validation, config.task, config.labels, llm=config.llm)
        val, val_counts = filter_questions(labelled_questions(held_out))
        keys = {q.source.key for q in val}
        train = [q for q in kept if q.source.key not in keys]
        dropped = len(kept) - len(train)
        counts.update(validation_seen=val_counts["seen"], train_dropped_as_validation=dropped)
        if dropped:
            log.warning(
                "%d training question(s) are also validation questions: left out of training", dropped
            )
        if not val or not train:
            raise TooFewQuestionsError(
                f"--validation keeps {len(val)} question(s) under App. C and {len(train)} remain to train on; "
                "both need at least one"
            )
        if config.select_on == "auroc":  # checked before anything is written
            from semuq_eval.training.heldout import check_both_classes, heldout_docs

            check_both_classes(heldout_docs(labelled_questions(held_out))[1])
    else:
        held_out = []
        train, val = split_by_question(kept, config.val_fraction, config.seed)
    counts.update(train_questions=len(train), val_questions=len(val))
    return TrainingData(stores + guided, train, val, counts, held_out)


def read_sources(
    patterns: Sequence[str], task: str | None, labels: str, *, llm: str | None = None
) -> list[StoreData]:
    """The labelled questions of run stores and training-data files (:mod:`semuq_eval.training.data_files`).

    ``patterns`` may mix both (paths or globs): a ``.jsonl.gz`` file is read as training data, anything else as in
    :func:`~semuq_eval.training.stores.find_stores`. A file of another task than ``task`` is used when named
    exactly, and skipped with a warning when a glob found it. Raises FileNotFoundError for a pattern that matches
    nothing or no store below a folder, ValueError for an unreadable training-data file (naming file and line)."""
    files: dict[str, StoreData] = {}
    others: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(os.path.expanduser(pattern)))
        if not matches:
            raise FileNotFoundError(f"{pattern!r}: no such file or folder")
        for match in matches:
            if not is_training_file(match):
                others.append(match)
                continue
            data = files.get(match) or read_training_file(match)
            if match == pattern or task is None or data.provenance.get("task") == task:
                files[match] = data
            else:
                log.warning("%s: task %s, not %s: skipped", match, data.provenance.get("task"), task)
    out = list(files.values())
    if others:
        out += [read_store(p, labels, llm=llm) for p in find_stores(others, task)]
    if not out:
        raise FileNotFoundError(f"no training data of task {task!r} in {list(patterns)}")
    if llm:
        for d in out:
            d.provenance["llm"] = d.provenance.get("llm") or llm
    return out
