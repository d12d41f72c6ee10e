"""The commands' parser and argument types: one line for a bad value, naming the flag, exit 2."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from typing import Any, NoReturn

from semuq_eval.jsonio import loads

__all__ = ["CommandParser", "json_object", "json_value", "number", "whole"]


class CommandParser(argparse.ArgumentParser):
    """argparse with one-line errors (``semuq-eval X: error: argument --flag: ...``, exit 2); ``--help`` shows
    the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def whole(low: int = 0, high: int | None = None) -> Callable[[str], int]:
    """An argument type: a whole number in ``low..high``; argparse names the flag in the error.

    Examples
    --------
    >>> whole(1)("3")
    3
    >>> whole(1)("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a whole number >= 1, got '-1'
    """
    bound = f">= {low}" if high is None else f"in {low}..{high:,}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected a whole number {bound}, got {text!r}")
        return value

    return parse


def number(
    low: float = -math.inf, high: float = math.inf, *, open_low: bool = False
) -> Callable[[str], float]:
    """An argument type: a finite number in ``[low, high]`` (``(low, high]`` with ``open_low``).

    Examples
    --------
    >>> number(0, open_low=True)("2e-5")
    2e-05
    >>> number(0, open_low=True)("inf")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a finite number > 0, got 'inf'
    """
    parts = [f"{'>' if open_low else '>='} {low:g}"] if math.isfinite(low) else []
    parts += [f"<= {high:g}"] if math.isfinite(high) else []
    bound = " and ".join(parts)

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < low or (open_low and value == low) or value > high:
            raise argparse.ArgumentTypeError(
                f"expected a finite number{' ' + bound if bound else ''}, got {text!r}"
            )
        return value

    return parse


_KINDS = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true or false"}


def json_value(text: str, what: str) -> Any:
    """The JSON value given as option ``what``; a one-line ValueError naming the option when it is not JSON
    (nesting too deep to read included).

    Examples
    --------
    >>> json_value("[1, 2]", "--x")
    [1, 2]
    >>> json_value("[" * 100_000, "--x")
    Traceback (most recent call last):
    ...
    ValueError: --x is not valid JSON (nested too deep): '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[...'
    """
    try:
        return loads(text)
    except json.JSONDecodeError as err:
        shown = text if len(text) <= 40 else f"{text[:40]}..."
        raise ValueError(f"{what} is not valid JSON ({err.msg}): {shown!r}") from None


def json_object(text: str | None, what: str, of: str | None = None) -> dict[str, Any]:
    """The JSON object given as option ``what`` (``{}`` when not given); a ValueError naming the option otherwise.
    ``of`` says what the object maps, in the error (``"operator name -> options"``).

    Examples
    --------
    >>> json_object('{"batch_size": 16}', "--operator_options")
    {'batch_size': 16}
    >>> json_object("[1]", "--operator_options", "operator name -> options")
    Traceback (most recent call last):
    ...
    ValueError: --operator_options must be a JSON object of operator name -> options, got a list
    """
    if not text:
        return {}
    value = json_value(text, what)
    if not isinstance(value, dict):
        kind = _KINDS.get(type(value), "null")
        raise ValueError(f"{what} must be a JSON object{f' of {of}' if of else ''}, got {kind}")
    return value
