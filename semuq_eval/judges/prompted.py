"""The common part of the LLM judges (``hf``, ``openai``): prompts, de-duplication, cache, progress.

:class:`PromptedJudge` turns each (question, references, answer) into a prompt
(:class:`~semuq_eval.judges.prompts.JudgePrompt`), judges every DISTINCT triple once, looks each up in the
persistent cache first (:class:`~semuq_eval.judges.cache.JudgeCache`) and asks the backend only for the
misses, in one call (:meth:`PromptedJudge.judge_prompts`, which a backend implements). A question without
references gets an unknown verdict without asking anyone.

Backends implement ``judge_prompts(prompts, questions) -> list[Verdict]`` and ``identity`` (what makes two judges give
the same verdicts: backend, model and revision, decoding); see :mod:`semuq_eval.judges.hf` and
:mod:`semuq_eval.judges.openai`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

from semuq_eval.judges.base import Verdict
from semuq_eval.judges.cache import JudgeCache, default_cache_path, verdict_key
from semuq_eval.judges.prompts import JudgePrompt

__all__ = ["PromptedJudge"]

log = logging.getLogger(__name__)

NO_REFERENCE = "no reference answer"


class PromptedJudge:
    """Base class of the LLM judges (module docstring).

    Parameters
    ----------
    prompt : str
        A named prompt (:data:`semuq_eval.judges.prompts.PROMPTS`), default ``reference_match``.
    prompt_file : path-like, optional
        A custom template file instead (fields ``{question}``, ``{references}``, ``{answer}``).
    cache : str or path-like or None
        The verdict cache file; ``"default"`` (the default) is ``<cache dir>/judge-cache.sqlite``;
        ``None`` or ``"none"`` disables it.
    progress : bool
        A progress bar over the answers sent to the model.
    max_answer_chars : int
        Answers are cut to this many characters in the prompt.
    """

    name = "prompted"

    def __init__(
        self,
        *,
        prompt: str = "reference_match",
        prompt_file: str | os.PathLike | None = None,
        cache: str | os.PathLike | None = "default",
        progress: bool = True,
        max_answer_chars: int = 1000,
    ) -> None:
        self.prompt = JudgePrompt.named(prompt, prompt_file)
        if int(max_answer_chars) < 1:
            raise ValueError(f"max_answer_chars must be >= 1, got {max_answer_chars}")
        self.prompt = JudgePrompt(self.prompt.name, self.prompt.template, int(max_answer_chars))
        if cache is None or str(cache).lower() == "none":
            self.cache = None
        else:
            self.cache = JudgeCache(default_cache_path() if str(cache) == "default" else cache)
        self.progress = bool(progress)
        self.stats = {"answers": 0, "distinct": 0, "cache_hits": 0, "judged": 0, "failed": 0}

    # ------------------------------------------------------------------ what a backend implements
    @property
    def identity(self) -> dict[str, Any]:
        """What makes two judges agree verdict for verdict (backend, model, revision, decoding)."""
        raise NotImplementedError

    def judge_prompts(self, prompts: Sequence[str], questions: Sequence[int]) -> list[Verdict]:
        """One verdict per prompt (a failed request gives an unknown verdict with its ``error``).

        ``questions[i]`` numbers the (question, references) of prompt i: prompts with the same number differ
        only in their answer, which a backend may exploit (the ``hf`` judge runs their shared prefix once).
        """
        raise NotImplementedError

    # ------------------------------------------------------------------ the Judge protocol
    @property
    def info(self) -> dict[str, Any]:
        return {
            **self.identity,
            "prompt": self.prompt.name,
            "prompt_sha256": self.prompt.sha256,
            "cache": None if self.cache is None else str(self.cache.path),
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
            refs = [str(r) for r in refs if str(r).strip()]
            if not refs:
                keys.append(None)
                continue
            key = verdict_key(identity, prompt_sha, q, refs, a)
            keys.append(key)
            if key not in todo:
                todo[key] = self.prompt.render(q, refs, a)
                question_of[key] = numbers.setdefault((str(q), tuple(refs)), len(numbers))
        known = self.cache.get(todo) if self.cache is not None else {}
        misses = [k for k in todo if k not in known]
        self.stats["answers"] += len(keys)
        self.stats["distinct"] += len(todo)
        self.stats["cache_hits"] += len(todo) - len(misses)
        if misses:
            fresh = self.judge_prompts([todo[k] for k in misses], [question_of[k] for k in misses])
            if len(fresh) != len(misses):
                raise RuntimeError(
                    f"judge {self.name} returned {len(fresh)} verdicts for {len(misses)} prompts"
                )
            reached = {k: v for k, v in zip(misses, fresh, strict=True) if not v.error or v.reply is not None}
            failed = len(misses) - len(reached)
            self.stats["judged"] += len(reached)
            self.stats["failed"] += failed
            if failed:
                log.warning(
                    "judge %s: %d of %d requests failed after their retries; their labels are unknown (counted, "
                    "not cached: a re-run asks again)",
                    self.name,
                    failed,
                    len(misses),
                )
            if self.cache is not None and reached:
                self.cache.put(reached, judge=self.name)
            known.update(zip(misses, fresh, strict=True))
        return [Verdict(None, error=NO_REFERENCE) if k is None else known[k] for k in keys]
