"""The commands' parser and argument types: one line for a bad value, naming the flag, exit 2."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import NoReturn

from semuq_eval.jsonio import json_object, json_value

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
