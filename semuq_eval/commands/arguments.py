"""Argument types shared by the commands."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["json_object"]


def json_object(text: str | None, what: str) -> dict[str, Any]:
    """The JSON object given as option ``what`` (``{}`` when not given); a ValueError naming the option otherwise.

    Examples
    --------
    >>> json_object('{"batch_size": 16}', "--operator_options")
    {'batch_size': 16}
    """
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{what} is not valid JSON ({err.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object, got {text!r}")
    return value
