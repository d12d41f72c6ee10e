"""Glue for the semuq task YAMLs (lm-eval resolves ``!function utils.x`` relative to this folder)."""

from __future__ import annotations

import logging

from semuq_eval.data import parquet_dataset, parquet_files, qa_datasets
from semuq_eval.harness.task import SemuqTask, references_of

__all__ = [
    "SemuqTask",
    "SemuqVQATask",
    "advqa_docs",
    "first_1000",
    "first_5000",
    "hotpotqa_references",
    "qa_datasets",
    "triviaqa_references",
    "vizwiz_docs",
    "vqa_references",
]

log = logging.getLogger(__name__)


class SemuqVQATask(SemuqTask):
    """SemuqTask with the local data directory override of the visual tasks.

    With ``--metadata '{"data_dir": "/path"}'`` and a folder ``/path/<data_name>`` (``data_name`` from the task's
    metadata: okvqa, vizwiz, advqa), the test split is read from the parquet files there (layouts: see
    :mod:`semuq_eval.data`) instead of the hub; ``process_docs`` (first / last N) applies as to the hub copy, so the
    files must hold the whole split in its original order. Without that folder the task loads its hub dataset.
    """

    def download(self, dataset_kwargs=None, **kwargs) -> None:
        import datasets

        metadata = self.config.metadata or {}
        name, data_dir, split = metadata.get("data_name"), metadata.get("data_dir"), self.config.test_split
        files = parquet_files(name, split, data_dir) if name and data_dir else None
        if files is None:
            if name and data_dir:
                log.warning(
                    "%s: no folder %s/%s, loading %s from the hub",
                    self.config.task,
                    data_dir,
                    name,
                    self.config.dataset_path,
                )
            return super().download(dataset_kwargs, **kwargs)
        cache_dir = (dataset_kwargs or {}).get("cache_dir")
        log.info(
            "%s: reading split %s from %d local parquet file(s) in %s/%s",
            self.config.task,
            split,
            len(files),
            data_dir,
            name,
        )
        self.dataset = datasets.DatasetDict({split: parquet_dataset(files, split, cache_dir=cache_dir)})


def _first(dataset, n: int):
    return dataset.select(range(min(n, len(dataset))))


def _last(dataset, n: int):
    return dataset.select(range(max(0, len(dataset) - n), len(dataset)))


def first_1000(dataset):
    """TriviaQA (rc.nocontext): the first 1,000 questions of the validation set (App. E.1)."""
    return _first(dataset, 1000)


def first_5000(dataset):
    """HotpotQA and OK-VQA: the first 5,000 questions of the validation set (App. E.1)."""
    return _first(dataset, 5000)


def vizwiz_docs(dataset):
    """VizWiz: the last 4,400 questions of the training set (App. E.1)."""
    return _last(dataset, 4400)


def advqa_docs(dataset):
    """AdVQA: the last 2,200 questions of the validation set (App. E.1)."""
    return _last(dataset, 2200)


def triviaqa_references(doc):
    """Every alias of the answer (``answer.aliases``), then its ``value`` if not among them; order kept."""
    answer = doc.get("answer") or {}
    return references_of([*(answer.get("aliases") or []), answer.get("value")])


def hotpotqa_references(doc):
    return references_of(doc.get("answer"))


def vqa_references(doc):
    """The annotators' answers as reference strings, deduplicated in order: ``answers`` as a list of strings
    (lmms-lab/OK-VQA, HuggingFaceM4/VizWiz) or of ``{"answer": ...}`` dicts (HuggingFaceM4/AdVQA, VQA format)."""
    return references_of(doc.get("answers") or doc.get("answer"))
