"""Glue for the semuq task YAMLs (lm-eval resolves ``!function utils.x`` relative to this folder)."""

from __future__ import annotations

from semuq_eval.data import qa_datasets
from semuq_eval.harness.task import SemuqTask, references_of

__all__ = ["SemuqTask", "advqa_docs", "first_5000", "hotpotqa_references", "qa_datasets", "vizwiz_docs",
           "vqa_references"]


def _first(dataset, n: int):
    return dataset.select(range(min(n, len(dataset))))


def _last(dataset, n: int):
    return dataset.select(range(max(0, len(dataset) - n), len(dataset)))


def first_5000(dataset):
    """HotpotQA and OK-VQA: the first 5,000 questions of the validation set (App. E.1)."""
    return _first(dataset, 5000)


def vizwiz_docs(dataset):
    """VizWiz: the last 4,400 questions of the training set (App. E.1)."""
    return _last(dataset, 4400)


def advqa_docs(dataset):
    """AdVQA: the last 2,200 questions of the validation set (App. E.1)."""
    return _last(dataset, 2200)


def hotpotqa_references(doc):
    return references_of(doc.get("answer"))


def vqa_references(doc):
    """VQA annotations (``[{"answer": ...}, ...]`` or strings), deduplicated."""
    return references_of(doc.get("answers") or doc.get("answer"))
