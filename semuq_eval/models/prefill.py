"""The shared prefill: a prompt computed once for its k sampled rows.

`generate` with `num_return_sequences=k` repeats the prompt k times *before* the prefill, computing it k times.
Instead, each prompt but its last token runs through the model once, the KV cache is expanded to k rows
(`Cache.batch_repeat_interleave`) and `generate` starts from it. The models fall back to `num_return_sequences=k`
when the model's cache does not allow it (`supports_shared_prefill`) or the shared prefill fails."""

from __future__ import annotations

import inspect
from typing import Any

import torch

from semuq_eval.models.kv_cache import cache_keyword

__all__ = ["shared_prefill", "supports_shared_prefill"]


def supports_shared_prefill(model: torch.nn.Module) -> bool:
    """Whether `model` generates with the default dynamic KV cache, which the shared prefill builds."""
    gen_cfg = getattr(model, "generation_config", None)
    if getattr(gen_cfg, "cache_implementation", None) not in (None, "dynamic"):
        return False
    supports = getattr(model, "_supports_default_dynamic_cache", None)
    return not (callable(supports) and not supports())


def shared_prefill(model: torch.nn.Module, inputs: dict[str, Any], n: int) -> dict[str, Any]:
    """Run each prompt (all but its last token) once, then expand the KV cache to n rows per prompt.

    `inputs`: the encoded, left-padded prompts (`input_ids`, `attention_mask`; other entries such as image tensors go
    to the model's forward and are consumed here); `n`: rows per prompt. Returns the `generate` inputs (ids, mask,
    cache) with each prompt's row repeated n times, positions following `generate`'s rule for left padding
    (`cumsum(attention_mask) - 1`); `generate` then computes only each row's last prompt token."""
    from transformers import DynamicCache

    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    extra = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
    cache = DynamicCache(config=model.config.get_text_config(decoder=True))
    keyword = cache_keyword(model)
    call = {
        "input_ids": ids[:, :-1],
        "attention_mask": mask[:, :-1],
        keyword: cache,
        "use_cache": True,
    }
    params = inspect.signature(model.forward).parameters
    if "position_ids" in params:
        pos = mask.long().cumsum(-1) - 1
        call["position_ids"] = pos.masked_fill(mask == 0, 0)[:, :-1]
    if "logits_to_keep" in params:
        call["logits_to_keep"] = 1
    model(**call, **extra)
    cache.batch_repeat_interleave(n)
    return {
        "input_ids": ids.repeat_interleave(n, dim=0),
        "attention_mask": mask.repeat_interleave(n, dim=0),
        keyword: cache,
    }
