"""The common part of the LLM judges (``hf``, ``openai``): prompts, de-duplication, cache, progress.

:class:`PromptedJudge` renders each (question, references, answer) as a prompt
(:class:`~semuq_eval.judges.prompts.JudgePrompt`), judges every DISTINCT triple once, serves what the persistent
cache holds (:class:`~semuq_eval.judges.cache.JudgeCache`) and asks the backend for the rest in blocks of whole
questions, caching each block when done (a killed run loses at most one block). A question without references gets
an unknown verdict. Backends implement ``judge_prompts(prompts, questions) -> list[Verdict]`` and ``identity`` (see
:mod:`semuq_eval.judges.hf` and :mod:`semuq_eval.judges.openai`)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from typing import Any

from semuq_eval.judges.base import Verdict
from semuq_eval.judges.cache import JudgeCache, default_cache_path, verdict_key
from semuq_eval.judges.prompts import JudgePrompt
from semuq_eval.registry import NamedByRegistry

__all__ = ["PromptedJudge", "shortest_references"]

log = logging.getLogger(__name__)

NO_REFERENCE = "no reference answer"
CACHE_BLOCK = 256
"""Uncached prompts are judged in blocks of about this many (whole questions), each block's verdicts cached
as soon as it is done: a run killed mid-way loses at most one block."""


class PromptedJudge(NamedByRegistry):
    """Base class of the LLM judges (module docstring).

    ``prompt``: a named prompt (:data:`semuq_eval.judges.prompts.PROMPTS`, default ``reference_match``), or
    ``prompt_file``: a custom template (fields ``{question}``, ``{references}``, ``{answer}``); ``cache``: the
    verdict cache file, ``"default"`` (``<cache dir>/judge-cache.sqlite``) or ``None`` / ``"none"`` (off);
    ``progress``: a progress bar; ``max_answer_chars``: answers are cut to this many characters; ``max_references``:
    show at most this many reference aliases, the shortest distinct ones (default: all; TriviaQA lists dozens for
    some questions); ``threshold``: label correct when ``p_correct`` exceeds it (a verdict without a probability
    keeps its label; default: the backend's rule, ``p > 0.5`` for ``hf``); the cache holds probabilities, so a new
    threshold asks nothing again."""

    family_module = "semuq_eval.judges"

    def __init__(
        self,
        *,
        prompt: str = "reference_match",
        prompt_file: str | os.PathLike | None = None,
        cache: str | os.PathLike | None = "default",
        progress: bool = True,
        max_answer_chars: int = 1000,
        threshold: float | None = None,
        max_references: int | None = None,
    ) -> None:
        self.prompt = JudgePrompt.named(prompt, prompt_file)
        if int(max_answer_chars) < 1:
            raise ValueError(f"max_answer_chars must be >= 1, got {max_answer_chars}")
        self.prompt = JudgePrompt(self.prompt.name, self.prompt.template, int(max_answer_chars))
        off = cache is None or str(cache).lower() == "none"
        self.cache = None if off else JudgeCache(default_cache_path() if str(cache) == "default" else cache)
        self.progress = bool(progress)
        self.max_references = None if max_references is None else int(max_references)
        if self.max_references is not None and self.max_references < 1:
            raise ValueError(f"max_references must be >= 1, got {max_references}")
        self.threshold = None if threshold is None else float(threshold)
        if self.threshold is not None and not 0.0 <= self.threshold < 1.0:
            raise ValueError(f"threshold must be in [0, 1), got {threshold}")
        self.cache_block = CACHE_BLOCK
        self.stats = {"answers": 0, "distinct": 0, "cache_hits": 0, "judged": 0, "failed": 0}

    # ------------------------------------------------------------------ what a backend implements
    @property
    def identity(self) -> dict[str, Any]:
        """What makes two judges agree verdict for verdict (backend, model, revision, decoding)."""
        raise NotImplementedError

    def judge_prompts(self, prompts: Sequence[str], questions: Sequence[int]) -> list[Verdict]:
        """One verdict per prompt (a failed request gives an unknown verdict with its ``error``).

        ``questions[i]`` numbers prompt i's (question, references); the ``hf`` judge runs a number's shared
        prefix once."""
        raise NotImplementedError

    def _judge_block(
        self, block: Sequence[str], todo: dict[str, str], question_of: dict[str, int]
    ) -> dict[str, Verdict]:
        """Judge one block of uncached keys and store what the judge reached in the cache at once."""
        fresh = self.judge_prompts([todo[k] for k in block], [question_of[k] for k in block])
        if len(fresh) != len(block):
            raise RuntimeError(f"judge {self.name} returned {len(fresh)} verdicts for {len(block)} prompts")
        verdicts = dict(zip(block, fresh, strict=True))
        reached = {k: v for k, v in verdicts.items() if not v.error or v.reply is not None}
        self.stats["judged"] += len(reached)
        self.stats["failed"] += len(verdicts) - len(reached)
        if self.cache is not None and reached:
            self.cache.put(reached, judge=self.name)
        return verdicts

    # ------------------------------------------------------------------ the Judge protocol
    @property
    def info(self) -> dict[str, Any]:
        return {
            **self.identity,
            "prompt": self.prompt.name,
            "prompt_sha256": self.prompt.sha256,
            "cache": None if self.cache is None else str(self.cache.path),
            **({} if self.threshold is None else {"threshold": self.threshold}),
            **({} if self.max_references is None else {"max_references": self.max_references}),
        }

    def batch(
        self, questions: Sequence[str], answers: Sequence[str], references: Sequence[Sequence[str]]
    ) -> list[Verdict]:
        identity, prompt_sha = self.identity, self.prompt.sha256
        keys: list[str | None] = []
        todo: dict[str, str] = {}  # key -> prompt, distinct triples only
        question_of: dict[str, int] = {}  # key -> number of its (question, references)
        numbers: dict[tuple, int] = {}
        for q, a, refs in zip(questions, answers, references, strict=True):
            refs = shortest_references([str(r) for r in refs if str(r).strip()], self.max_references)
            key = verdict_key(identity, prompt_sha, q, refs, a) if refs else None  # None: no reference
            keys.append(key)
            if key is not None and key not in todo:
                todo[key] = self.prompt.render(q, refs, a)
                question_of[key] = numbers.setdefault((str(q), tuple(refs)), len(numbers))
        known = self.cache.get(todo) if self.cache is not None else {}
        misses = [k for k in todo if k not in known]
        self.stats["answers"] += len(keys)
        self.stats["distinct"] += len(todo)
        self.stats["cache_hits"] += len(todo) - len(misses)
        if misses:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(misses), desc=f"judge {self.name}", disable=not self.progress)
            for block in _blocks(misses, question_of, self.cache_block):
                known.update(self._judge_block(block, todo, question_of))
                bar.update(len(block))
            bar.close()
            if self.stats["failed"]:
                log.warning(
                    "judge %s: %d requests failed after their retries; their labels are unknown (counted, not "
                    "cached: a re-run asks again)",
                    self.name,
                    self.stats["failed"],
                )
        return [Verdict(None, error=NO_REFERENCE) if k is None else self._thresholded(known[k]) for k in keys]

    def _thresholded(self, verdict: Verdict) -> Verdict:
        """The verdict labelled by ``threshold`` when one is set and the verdict has a probability."""
        if self.threshold is None or verdict.p_correct is None:
            return verdict
        return dataclasses.replace(verdict, label=verdict.p_correct > self.threshold)


def shortest_references(references: Sequence[str], limit: int | None) -> list[str]:
    """At most ``limit`` of ``references`` (all when ``limit`` is None): the shortest distinct ones, where
    references that differ only in case and whitespace count once; ties keep their order.

    Examples
    --------
    >>> shortest_references(["Republic of Bolivia", "Bolivia", "bolivia", "BO", "Name of Bolivia"], 2)
    ['BO', 'Bolivia']
    >>> shortest_references(["b", "a"], None)
    ['b', 'a']
    """
    if limit is None:
        return list(references)
    seen: dict[str, str] = {}
    for ref in references:
        seen.setdefault(" ".join(ref.split()).lower(), ref)
    return sorted(seen.values(), key=len)[:limit]


def _blocks(keys: Sequence[str], question_of: dict[str, int], size: int) -> list[list[str]]:
    """``keys`` in consecutive blocks of at least ``size`` keys (the last one may be smaller), cut only where
    the question changes, so that a question's prompts stay together (the ``hf`` judge shares their prefix).

    Examples
    --------
    >>> _blocks(["a", "b", "c", "d"], {"a": 0, "b": 0, "c": 1, "d": 2}, 1)
    [['a', 'b'], ['c'], ['d']]
    """
    blocks: list[list[str]] = []
    for key in keys:
        if blocks and (len(blocks[-1]) < size or question_of[blocks[-1][-1]] == question_of[key]):
            blocks[-1].append(key)
        else:
            blocks.append([key])
    return blocks
