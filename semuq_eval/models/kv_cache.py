"""The keyword under which a transformers model takes its key-value cache.

``cache`` in transformers 5.x (where ``past_key_values`` is deprecated), ``past_key_values`` in 4.x; every caller
that hands a model a cache asks here."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

CACHE_KEYWORDS = ("cache", "past_key_values")
"""Both names, the current one first."""


def cache_keyword(model: Any) -> str:
    """``"cache"`` when ``model``'s forward (unwrapped from PEFT) takes it, else ``"past_key_values"``.

    Examples
    --------
    >>> class Old:
    ...     def forward(self, input_ids, past_key_values=None): ...
    >>> cache_keyword(Old())
    'past_key_values'
    """
    return (
        "cache" if "cache" in inspect.signature(base_model(model).forward).parameters else "past_key_values"
    )


def base_model(model: Any) -> Any:
    """``model`` unwrapped from PEFT (``get_base_model``), else itself."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def passed_cache(kwargs: Mapping[str, Any]) -> Any:
    """The cache among a call's keyword arguments, under either name (None if there is none)."""
    return next((kwargs[k] for k in CACHE_KEYWORDS if kwargs.get(k) is not None), None)
