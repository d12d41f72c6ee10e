"""Progress output of ``semuq-eval assets``: log lines, byte progress bars and human sizes.

Everything goes to stderr (stdout carries the ``name<TAB>path`` results), nothing when ``progress`` is false;
tqdm is imported only when a bar is shown."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import IO

_LOG_PREFIX = "semuq-eval assets"


def _log(msg: str, progress: bool) -> None:
    if progress:
        print(f"{_LOG_PREFIX}: {msg}", file=sys.stderr, flush=True)


class _NullBar:
    def update(self, n: int) -> None:
        pass

    def __enter__(self) -> _NullBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _bar(total: int, desc: str, enabled: bool):
    if not enabled:
        return _NullBar()
    from tqdm.auto import tqdm

    return tqdm(
        total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024, leave=False, file=sys.stderr
    )


def _stream(src: IO[bytes], write: Callable[[bytes], object], bar) -> None:
    """Pass ``src`` to ``write`` in 1 MiB blocks, counting them on ``bar``."""
    while block := src.read(1 << 20):
        write(block)
        bar.update(len(block))


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
