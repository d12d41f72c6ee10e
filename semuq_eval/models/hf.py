"""`semuq-hf`: lm-eval's HFLM that samples N answers per `generate` call and returns `Generation`s.

The steps of `generate_until` live in planning, prefill, recorder, token_spans, journal and data_parallel
(`semuq_eval.models.*`). Tokenization, padding, truncation, chat templates, stop sequences, EOS and text
post-processing are HFLM's, so the text is exactly HFLM's for the same tokens. Generation runs one step past the
budget and the stop criterion (the step that reads the last kept token), so prompts are left-truncated to
`max_length - max_gen_toks - 1` tokens (HFLM: one more). Reflexive follow-ups run after each batch of greedy
answers (P(True): one batched forward pass; verbalized: one short greedy generation) and ride on the greedy
`Generation` into the journal."""

from __future__ import annotations

import dataclasses
import logging
from functools import partial
from typing import Any

import numpy as np
import torch
import transformers
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM
from lm_eval.models.utils_hf import stop_sequences_criteria

from semuq_eval.models.cpu_dtype import cpu_generation_dtype
from semuq_eval.models.data_parallel import cpu_data_parallel_split
from semuq_eval.models.decoding import decoding_kwargs
from semuq_eval.models.generation import Generation, as_generation
from semuq_eval.models.journal import GenerationJournal, open_journal, progress, restore_groups
from semuq_eval.models.kv_cache import passed_cache
from semuq_eval.models.planning import GenerateCall, PromptGroup, batch_groups, deliver, group_requests
from semuq_eval.models.prefill import shared_prefill, supports_shared_prefill
from semuq_eval.models.recorder import OneStepLater, StepRecorder, generation_eos_ids
from semuq_eval.models.reflexive import (
    REFLEXIVE_KEY,
    VERBALIZED_MAX_TOKENS,
    check_model,
    fill_answer,
    p_true_result,
    token_sets,
)
from semuq_eval.models.token_spans import align_answer, hflm_postprocess

__all__ = ["SemuqGenerateMixin", "SemuqHFLM"]

eval_logger = logging.getLogger(__name__)


class SemuqGenerateMixin:
    """`generate_until` returning `Generation`s, N samples of a prompt per `generate` call.

    Mixed into HFLM and HFMultimodalLM; subclasses may override `_semuq_encode` (groups into `generate` inputs),
    `_semuq_postprocess`, `_semuq_share_ok` and `_semuq_resolve_share_prefill`."""

    #: keep the last hidden state (model argument `return_hidden`)
    return_hidden: bool = True
    #: run a prompt's prefill once for its k samples (model argument `share_prefill`)
    share_prefill: bool = True
    #: stop computing rows that have finished (model argument `compact_rows`)
    compact_rows: bool = True
    #: journal folder, "off", or None for the default (model argument `journal`; see models.journal)
    journal: str | None = None
    _semuq_journal_obj: GenerationJournal | None = None
    #: expand prompts to k rows with `num_return_sequences` (text) rather than in the inputs (multimodal)
    _semuq_expand_with_generate: bool = True
    #: the lm-eval name of the model (whether it answers the reflexive follow-ups: models.reflexive.check_model)
    _semuq_name: str = "semuq-hf"
    _semuq_true_false: tuple[np.ndarray, np.ndarray] | None = None
    _semuq_source_obj: dict[str, Any] | None = None

    # -- construction --------------------------------------------------------------------------------------------
    def __init__(
        self,
        pretrained: Any,
        return_hidden: Any = True,
        share_prefill: Any = None,
        compact_rows: Any = True,
        journal: str | None = None,
        **kwargs: Any,
    ) -> None:
        """The lm-eval model's own `__init__` with `kwargs`, then the semuq options (see `SemuqHFLM`)."""
        if "dtype" not in kwargs and _runs_on_cpu(kwargs.get("device")):
            kwargs["dtype"] = cpu_generation_dtype()  # by what the CPU computes natively (models.cpu_dtype)
            eval_logger.info(
                "%s: no dtype given, generating in %s on this CPU", self._semuq_name, kwargs["dtype"]
            )
        self._semuq_parallelize = _as_bool(kwargs.get("parallelize", False))
        self._semuq_tp_plan = kwargs.get("tp_plan")
        super().__init__(pretrained, **kwargs)  # the lm-eval model after this mixin in the MRO
        self._semuq_enable_cpu_data_parallel()
        self.return_hidden = _as_bool(return_hidden)
        self.compact_rows = _as_bool(compact_rows)
        self.share_prefill = self._semuq_resolve_share_prefill(share_prefill)
        self.journal = journal

    def _semuq_resolve_share_prefill(self, value: Any) -> bool:
        """The `share_prefill` argument; None (not given): on."""
        return True if value is None else _as_bool(value)

    def _semuq_enable_cpu_data_parallel(self) -> None:
        """Split the requests over the processes of a multi-process CPU launch (see models.data_parallel)."""
        split = cpu_data_parallel_split(
            getattr(self, "accelerator", None),
            int(getattr(self, "_world_size", 1)),
            parallelize=getattr(self, "_semuq_parallelize", False),
            tp_plan=getattr(self, "_semuq_tp_plan", None),
        )
        if split is None:
            return
        self._rank, self._world_size = split
        if self._rank == 0:
            eval_logger.info(
                "semuq-hf: data parallelism over %d CPU processes (%s backend)",
                self._world_size,
                getattr(self.accelerator.state, "backend", "?"),
            )

    # -- batching ------------------------------------------------------------------------------------------
    def _semuq_rows_per_call(self, max_n: int) -> int:
        """Most sequences in one `generate` call: `batch_size` prompts of the largest group (or HFLM's
        detected number of sequences for batch_size="auto")."""
        if self.batch_size == "auto":
            if getattr(self, "_semuq_auto_rows", None) is None:
                print("Passed argument batch_size = auto. Detecting largest batch size")
                self._semuq_auto_rows = self._detect_batch_size()
                print(f"Determined largest batch size (sequences): {self._semuq_auto_rows}")
            return max(1, int(self._semuq_auto_rows))
        return max(1, int(self.batch_size)) * max(1, max_n)

    # -- lm-eval entry point ----------------------------------------------------------------------------------
    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[Generation]:
        if not requests:
            return []
        causal = getattr(self, "backend", "causal") == "causal"
        asked = {
            m for r in requests if isinstance(r.args[1], dict) for m in r.args[1].get(REFLEXIVE_KEY) or ()
        }
        check_model(sorted(asked), self._semuq_name if causal else f"{self._semuq_name} (seq2seq)")
        if not causal:
            eval_logger.warning("semuq-hf: seq2seq models are served by HFLM's generate_until (text only)")
            return [as_generation(s) for s in super().generate_until(requests, disable_tqdm=disable_tqdm)]
        groups = group_requests(requests, self.max_gen_toks, self.tok_encode)
        results: list[Generation | None] = [None] * len(requests)
        pbar = progress(groups, groups, "semuq-hf", disable_tqdm or self.rank != 0)
        hand_out = partial(deliver, results, self.cache_hook, self._semuq_source())
        journal = self._semuq_journal()
        identity, seed = self._semuq_model_identity(), torch.initial_seed()
        keys = journal.group_keys(groups, identity, seed) if journal is not None else {}
        todo = restore_groups(groups, journal, keys, hand_out, model="semuq-hf")
        pbar.update(sum(g.n_gen for g in groups) - sum(g.n_gen for g in todo))
        eos = self.tok_decode(self.eot_token_id, skip_special_tokens=False)
        batches = batch_groups(todo, self._semuq_rows_per_call(max(g.n_gen for g in todo))) if todo else []
        for batch in batches:
            outputs = self._semuq_generate_batch(batch, eos)
            self._semuq_follow_ups(batch, outputs, eos)
            for group, outs in zip(batch, outputs, strict=True):
                hand_out(group, outs)
            pbar.update(sum(g.n_gen for g in batch))  # once per batch: the first rate seen is a real one
            if journal is not None:
                journal.add((keys[id(g)], outs) for g, outs in zip(batch, outputs, strict=True))
        pbar.close()
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    # -- reflexive follow-ups ------------------------------------------------------------------------------------
    def _semuq_follow_ups(self, batch: list[PromptGroup], outputs: list[list[Generation]], eos: str) -> None:
        """Answer the follow-ups of the batch's greedy answers and attach them (``Generation.reflexive``)."""
        asked = [(g, outs[0]) for g, outs in zip(batch, outputs, strict=True) if g.reflexive]
        if not asked:
            return
        found: dict[int, dict[str, dict]] = {id(answer): {} for _, answer in asked}
        p_true = [(g, a) for g, a in asked if "p_true" in g.reflexive]
        if p_true:
            prompts = [fill_answer(g.reflexive["p_true"], a.text) for g, a in p_true]
            true_ids, false_ids = self._semuq_true_false_ids()
            for (_, answer), lp in zip(p_true, self._semuq_next_token_logprobs(prompts), strict=True):
                found[id(answer)]["p_true"] = p_true_result(lp, true_ids, false_ids)
        verbal = [(g, a) for g, a in asked if "verbalized" in g.reflexive]
        if verbal:
            kwargs = {"until": [], "max_gen_toks": VERBALIZED_MAX_TOKENS, "do_sample": False}
            prompts = [fill_answer(g.reflexive["verbalized"], a.text) for g, a in verbal]
            groups = [
                PromptGroup(p, kwargs, None, request_kwargs=kwargs, length=len(self.tok_encode(p)))
                for p in prompts
            ]
            replies: dict[int, str] = {}
            for sub in batch_groups(groups, self._semuq_rows_per_call(1)):
                for group, outs in zip(sub, self._semuq_generate_batch(sub, eos), strict=True):
                    replies[id(group)] = outs[0].text
            for (_, answer), group in zip(verbal, groups, strict=True):
                found[id(answer)]["verbalized"] = {"reply": replies[id(group)]}
        for _, answer in asked:
            answer.reflexive = found[id(answer)]

    def _semuq_true_false_ids(self) -> tuple[np.ndarray, np.ndarray]:
        """The tokenizer's True-ish and False-ish token ids (`models.reflexive.token_sets`), found once."""
        if self._semuq_true_false is None:
            texts = self.tokenizer.batch_decode([[i] for i in range(len(self.tokenizer))])
            self._semuq_true_false = token_sets(texts)
        return self._semuq_true_false

    def _semuq_next_token_logprobs(self, prompts: list[str]):
        """The raw next-token log-distribution (V,) after each prompt, one batched forward pass per
        `_semuq_rows_per_call(1)` prompts (positions from the attention mask, as `generate` sets them)."""
        rows = self._semuq_rows_per_call(1)
        for start in range(0, len(prompts), rows):
            ids, mask = self.tok_batch_encode(
                prompts[start : start + rows], left_truncate_len=self.max_length, truncation=self.truncation
            )
            ids, mask = ids.to(self.device), mask.to(self.device)
            positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
            with torch.no_grad(), self._semuq_autocast():
                out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions)
            yield from torch.log_softmax(out.logits[:, -1, :].float(), dim=-1).cpu().numpy()

    # -- resume ------------------------------------------------------------------------------------------------
    def _semuq_journal(self) -> GenerationJournal | None:
        """This rank's generation journal (model argument `journal`: `semuq_eval.models.journal.open_journal`)."""
        if self._semuq_journal_obj is None:
            name = self._semuq_model_identity()["name"]
            self._semuq_journal_obj = open_journal(self.journal, name, model=self._semuq_name)
        return self._semuq_journal_obj

    def _semuq_source(self) -> dict[str, Any]:
        """What generates the answers (`Generation.source`: the run's ``generator`` record): the engine, its
        version and its settings."""
        if self._semuq_source_obj is None:
            self._semuq_source_obj = {
                "model": self._semuq_name,
                "engine": "transformers",
                "engine_version": transformers.__version__,
                "torch": torch.__version__,
                "pretrained": self._semuq_model_identity()["name"],
                "engine_args": {
                    "dtype": str(getattr(self.model, "dtype", "")).replace("torch.", ""),
                    "device": str(self.device),
                    "batch_size": self.batch_size,
                    "max_length": int(self.max_length),
                    "share_prefill": self.share_prefill,
                    "compact_rows": self.compact_rows,
                },
                "token_entropies": "exact (full softmax)",
                "hidden_states": "last layer after the final norm" if self.return_hidden else None,
            }
        return self._semuq_source_obj

    def _semuq_model_identity(self) -> dict[str, Any]:
        model = self.model
        name = getattr(model, "name_or_path", None) or getattr(
            getattr(model, "config", None), "_name_or_path", None
        )
        return {
            "name": str(name or self.pretrained),
            "revision": getattr(self, "revision", None),
            "dtype": str(getattr(model, "dtype", "")),
            "max_length": int(self.max_length),
            "hidden": bool(self.return_hidden),
        }

    # -- one generate call ---------------------------------------------------------------------------------
    def _semuq_encode(
        self, batch: list[PromptGroup], left_truncate_len: int, repeat: int = 1
    ) -> dict[str, Any]:
        """Tokenize the batch's prompts into `generate` inputs, each prompt's row repeated `repeat` times
        (HFLM's `tok_batch_encode`)."""
        context_enc, attn_masks = self.tok_batch_encode(
            [g.context for g in batch],
            left_truncate_len=left_truncate_len,
            truncation=self.truncation,
        )
        if repeat > 1:
            context_enc = context_enc.repeat_interleave(repeat, dim=0)
            attn_masks = attn_masks.repeat_interleave(repeat, dim=0)
        return {"input_ids": context_enc.to(self.device), "attention_mask": attn_masks.to(self.device)}

    def _semuq_autocast(self) -> torch.autocast:
        """HFLM's mixed precision (`mixed_precision_dtype`; none: off) on the model's device."""
        dtype = self.mixed_precision_dtype
        return torch.autocast(device_type=self.device.type, dtype=dtype, enabled=dtype is not None)

    def _semuq_share_ok(self, inputs: dict[str, Any]) -> bool:
        """Whether this batch's encoded prompts can be split for a shared prefill."""
        return True

    def _semuq_run_generate(self, call: GenerateCall) -> tuple[torch.Tensor, StepRecorder, int, int]:
        """One `generate` call for the batch; returns (sequences (rows, P + G), recorder, P, budget)."""
        autocast = self._semuq_autocast()
        inputs = self._semuq_encode(call.batch, call.left_truncate_len)
        prompt_len = inputs["input_ids"].shape[1]
        expand = call.n_gen
        if call.shared and prompt_len >= 2 and self._semuq_share_ok(inputs):
            with torch.no_grad(), autocast:
                inputs = shared_prefill(self.model, inputs, call.n_gen)
            expand = 1
        elif call.n_gen > 1 and not self._semuq_expand_with_generate:
            # expand the raw inputs (multimodal: one processor call covering every row)
            inputs = self._semuq_encode(call.batch, call.left_truncate_len, repeat=call.n_gen)
            expand = 1
        # HFLM: `max_length` counts the (padded) prompt too
        budget = call.max_gen_toks if call.max_length is None else max(0, int(call.max_length) - prompt_len)
        recorder = StepRecorder(
            self.model,
            want_hidden=self.return_hidden,
            rows=call.rows,
            prompt_len=prompt_len,
            compact=self.compact_rows,
            eos_ids=generation_eos_ids(self.model),
        )
        stop = stop_sequences_criteria(self.tokenizer, list(call.until), prompt_len, call.rows)
        stopping = transformers.StoppingCriteriaList([OneStepLater(stop, recorder)])
        with recorder:
            with torch.no_grad(), autocast:
                out = self.model.generate(
                    **inputs,
                    max_length=prompt_len + budget + 1,
                    stopping_criteria=stopping,
                    pad_token_id=self.tokenizer.pad_token_id,
                    use_cache=True,
                    num_return_sequences=expand,
                    **recorder.generate_kwargs(),
                    **decoding_kwargs(call.gen),
                )
        sequences = recorder.finish(out, prompt_len)
        self._semuq_last_stats = {
            "rows": call.rows,
            "prompt_len": prompt_len,
            "forward_calls": recorder.calls,
            "shared_prefill": passed_cache(inputs) is not None,
            "compacted_row_steps": recorder.compacted_row_steps,
            "hidden_source": recorder.hidden_source,
        }
        return sequences, recorder, prompt_len, budget

    def _semuq_generate_batch(self, batch: list[PromptGroup], eos: str) -> list[list[Generation]]:
        call = GenerateCall.for_batch(batch, eos, self.max_gen_toks, self.max_length)
        result = None
        failed = getattr(self, "_semuq_share_failed", False)
        if call.n_gen > 1 and self.share_prefill and not failed and supports_shared_prefill(self.model):
            try:
                result = self._semuq_run_generate(dataclasses.replace(call, shared=True))
            except torch.OutOfMemoryError:
                raise
            except Exception as err:  # a cache or architecture that cannot be shared: plain generate
                eval_logger.warning(
                    "semuq-hf: shared prefill failed (%s: %s); falling back to num_return_sequences",
                    type(err).__name__,
                    err,
                )
                self._semuq_share_failed = True
        if result is None:
            result = self._semuq_run_generate(call)
        sequences, recorder, prompt_len, budget = result
        return self._semuq_rows_to_generations(call, sequences, prompt_len, budget, recorder)

    def _semuq_postprocess(self, full: str, until: list[str]) -> tuple[str, int]:
        """HFLM's text post-processing of `full` (decode of the generated tokens); returns (text, start)."""
        return hflm_postprocess(full, until, self.think_end_token)

    def _semuq_rows_to_generations(
        self,
        call: GenerateCall,
        sequences: torch.Tensor,
        prompt_len: int,
        budget: int,
        rec: StepRecorder,
    ) -> list[list[Generation]]:
        """The `Generation`s of each group of the call: HFLM's text, the tokens that make it up, their
        spans and signals."""
        gen_tokens = sequences[:, prompt_len:].tolist()
        special = set(self.tokenizer.all_special_ids)
        think_int = self.think_end_token if isinstance(self.think_end_token, int) else None
        answers = [
            align_answer(
                toks[:budget],
                decode=self.tok_decode,
                batch_decode=lambda seqs: self.tokenizer.batch_decode(seqs, skip_special_tokens=True),
                postprocess=lambda full: self._semuq_postprocess(full, call.until),
                special_ids=special,
                think_end_id=think_int,
            )
            for toks in gen_tokens
        ]
        n_tok = len(gen_tokens[0]) if gen_tokens else 0
        signals = rec.answer_signals(n_tok, [a.token_idx for a in answers], [a.last_read for a in answers])
        gens = [
            Generation(
                answer.text,
                token_ids=answer.token_ids,
                token_logprobs=logprobs,
                token_entropies=entropies,
                token_offsets=answer.token_offsets,
                hidden=hidden,
                greedy=call.greedy,
            )
            for answer, (logprobs, entropies, hidden) in zip(answers, signals, strict=True)
        ]
        return [gens[g * call.n_gen : (g + 1) * call.n_gen] for g in range(len(call.batch))]


class SemuqHFLM(SemuqGenerateMixin, HFLM):
    """lm-eval `hf` model whose `generate_until` returns `Generation`s (registered as `semuq-hf`).

    Takes every HFLM argument, plus `return_hidden` (default True: keep every answer's last hidden state),
    `share_prefill` (default True: a sampled group's prompt computed once, `semuq_eval.models.prefill`),
    `compact_rows` (default True: stop computing a call's finished rows) and `journal` (`semuq_eval.models.journal`;
    `off` disables). `loglikelihood*` are HFLM's."""


def _runs_on_cpu(device: Any) -> bool:
    """Whether lm-eval's model will run on the CPU: asked for, or no device given and no GPU."""
    if device is None or str(device) in ("", "auto"):
        return not torch.cuda.is_available()
    return str(device).startswith("cpu")


def _as_bool(x: Any) -> bool:
    if isinstance(x, str):
        return x.strip().lower() in ("1", "true", "yes", "y", "on")
    return bool(x)
