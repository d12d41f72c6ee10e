"""Epoch checkpoints that let a killed training resume where it stopped.

The trainer saves its whole state after every epoch (weights, optimizer, schedule, random generators, the
early-stopping counter) into ``<output parent>/.<output name>.checkpoints/``; running the same training again resumes
after the last saved epoch, and a finished training removes the folder. A fingerprint of the options and the prepared
data, kept in the folder's journal (:mod:`semuq_eval.journal`), guards it: a different training's checkpoints are
discarded, never resumed, and a folder a live process trains into is refused (the journal's writer lock).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from semuq_eval.journal import Journal
from semuq_eval.training.config import TrainingConfig
from semuq_eval.training.prepare import TrainingData
from semuq_eval.training.stores import labelled_questions

__all__ = ["EpochCheckpoints", "fingerprint"]

log = logging.getLogger(__name__)

JOURNAL = "journal.jsonl"
"""The journal in the checkpoint folder: the training's fingerprint and each epoch's time."""

_NOT_TRAINING = ("output", "overwrite", "progress", "command", "device")
"""Options that do not change the trained weights, so a resumed run may differ in them."""


def fingerprint(config: TrainingConfig, data: TrainingData) -> str:
    """sha256 of what decides the trained weights: the training options and every kept question's texts, verdicts
    and chosen positives / negatives (training, validation and held-out)."""
    digest = hashlib.sha256()
    options = config.model_dump(exclude=set(_NOT_TRAINING))
    digest.update(json.dumps(options, sort_keys=True, default=str).encode())
    for kept in (*data.train, *data.val):
        digest.update(_question_bytes(kept.source, kept.positives, kept.negatives))
    for question in labelled_questions(data.validation_stores):
        digest.update(_question_bytes(question, (), ()))
    return digest.hexdigest()


def _question_bytes(q: Any, positives: Iterable[int], negatives: Iterable[int]) -> bytes:
    texts = [q.key, q.question, list(q.answers), list(q.labels), q.greedy, q.greedy_label, list(q.origins)]
    return json.dumps([*texts, list(positives), list(negatives)]).encode()


class EpochCheckpoints:
    """The checkpoint folder of the training that writes ``output``: the trainer's ``checkpoint-<step>`` folders
    and a journal (:mod:`semuq_eval.journal`) of the training's fingerprint and each epoch's training time.

    Examples
    --------
    >>> ckpt = EpochCheckpoints(Path("ops/enc-qwen"), "ab12...")  # doctest: +SKIP
    >>> ckpt.open()  # the last saved epoch's checkpoint to resume from, or None  # doctest: +SKIP
    """

    def __init__(self, output: Path, fingerprint: str) -> None:
        self.folder = output.parent / f".{output.name}.checkpoints"
        self.fingerprint = fingerprint
        self._journal: Journal | None = None

    def open(self) -> str | None:
        """Claim the folder for this process; return the checkpoint to resume from (None: start afresh).

        Raises :class:`semuq_eval.durable.WriterBusy` when a live process is training into the folder."""
        self.folder.mkdir(parents=True, exist_ok=True)
        journal = Journal(self.folder / JOURNAL, "training")
        last = self._last_complete()
        if last is not None and journal.get("fingerprint") != self.fingerprint:
            log.warning(
                "%s: checkpoints of a different training (options or data differ); starting afresh",
                self.folder,
            )
            last = None
        if last is None:
            for path in self.folder.glob("checkpoint-*"):
                shutil.rmtree(path, ignore_errors=True)
            journal.path.unlink(missing_ok=True)
            journal = Journal(journal.path, "training")
        journal.add([("fingerprint", self.fingerprint)])
        self._journal = journal
        if last is not None:
            log.info("resuming the training from %s", last)
        return last

    def _last_complete(self) -> str | None:
        """The latest ``checkpoint-<step>`` whose trainer state was written (the trainer writes it last, so a
        checkpoint cut short by a kill is passed over)."""
        steps = [
            int(path.name.split("-", 1)[1])
            for path in (self.folder.glob("checkpoint-*") if self.folder.is_dir() else ())
            if path.name.split("-", 1)[1].isdigit() and (path / "trainer_state.json").is_file()
        ]
        return str(self.folder / f"checkpoint-{max(steps)}") if steps else None

    def timings(self) -> list[dict[str, float]]:
        """The epochs' training times saved so far (one entry per epoch, the latest run of each), by epoch."""
        journal = self._journal
        epochs = sorted(int(k.split(":", 1)[1]) for k in journal or () if k.startswith("epoch:"))
        return [{"epoch": e, "train_seconds": float(journal.get(f"epoch:{e}"))} for e in epochs]

    def save_timing(self, epoch: int, seconds: float) -> None:
        """Record epoch ``epoch``'s training time, replacing an earlier run of the same epoch."""
        if self._journal is None:
            raise RuntimeError(f"{self.folder}: open() the checkpoints before saving a timing")
        self._journal.add([(f"epoch:{int(epoch)}", float(seconds))])

    def remove(self) -> None:
        """Remove the folder once the trained operator is saved."""
        shutil.rmtree(self.folder, ignore_errors=True)
