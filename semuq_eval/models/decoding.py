"""The paper's decoding, stated in full, so that a model's own ``generation_config`` cannot change it.

``model.generate`` fills every option the caller leaves unset from ``generation_config.json`` (a repetition
penalty, beam search, min-p, ...), so the semuq models pass every option that shapes the next-token distribution or
the search: the task's (App. E.2: temperature 1.0, top-p 0.9, top-k 50 for the samples; greedy for the reference
answer) over :data:`NEUTRAL_DECODING`. Other lm-eval models (``hf``, ``vllm``, servers) apply their own defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NEUTRAL_DECODING", "NEUTRAL_SAMPLING", "NEUTRAL_SEARCH", "decoding_kwargs"]

NEUTRAL_SEARCH: dict[str, Any] = {
    "num_beams": 1,
    "num_beam_groups": 1,
    "diversity_penalty": 0.0,
    "length_penalty": 1.0,
    "repetition_penalty": 1.0,
    "encoder_repetition_penalty": 1.0,
    "no_repeat_ngram_size": 0,
    "encoder_no_repeat_ngram_size": 0,
    "min_new_tokens": 0,
}
"""Options that shape greedy decoding and sampling alike, at values that change nothing (transformers' own
defaults)."""

NEUTRAL_SAMPLING: dict[str, Any] = {
    "temperature": 1.0,
    "top_k": 50,
    "top_p": 1.0,
    "typical_p": 1.0,
    "min_p": 0.0,
    "epsilon_cutoff": 0.0,
    "eta_cutoff": 0.0,
}
"""Sampling filters, passed when sampling (``min_p`` 0 keeps every token); greedy decoding ignores them."""

NEUTRAL_DECODING: dict[str, Any] = {**NEUTRAL_SEARCH, **NEUTRAL_SAMPLING}
"""Every option the semuq models set (the breakdown records it)."""


def decoding_kwargs(requested: Mapping[str, Any]) -> dict[str, Any]:
    """The ``generate`` keyword arguments of a request: ``requested`` over the neutral options.

    Examples
    --------
    >>> kw = decoding_kwargs({"do_sample": True, "temperature": 1.0, "top_p": 0.9, "top_k": 50})
    >>> kw["top_p"], kw["repetition_penalty"], kw["num_beams"]
    (0.9, 1.0, 1)
    >>> "top_p" in decoding_kwargs({"do_sample": False})
    False
    """
    neutral = NEUTRAL_DECODING if requested.get("do_sample") else NEUTRAL_SEARCH
    return {**neutral, **dict(requested)}
