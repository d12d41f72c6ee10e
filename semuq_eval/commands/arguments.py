"""The commands' parser: one line for a bad value, naming the flag, exit 2 (the flags come from options models)."""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["CommandParser"]


class CommandParser(argparse.ArgumentParser):
    """argparse with one-line errors (``semuq-eval X: error: argument --flag: ...``, exit 2); ``--help`` shows
    the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")
