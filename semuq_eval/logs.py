"""semuq-eval's log messages where lm-eval shows its own (the ``run`` command and plain ``lm_eval`` runs)."""

from __future__ import annotations

import logging
import sys

__all__ = ["share_lm_eval_logging"]


def share_lm_eval_logging() -> None:
    """Show semuq-eval's log messages (journal restores, where the breakdown went, ...) as lm-eval shows its own:
    lm-eval's ``setup_logging`` configures only the ``lm_eval`` logger."""
    source, ours = logging.getLogger("lm_eval"), logging.getLogger("semuq_eval")
    ours.setLevel(source.level)
    for handler in source.handlers:
        if type(handler) is logging.StreamHandler and not isinstance(handler.stream, _CurrentStderr):
            handler.setStream(_CurrentStderr())  # lm-eval's handler kept the stderr of its first run
        if handler not in ours.handlers:
            ours.addHandler(handler)
    ours.propagate = not source.handlers


class _CurrentStderr:
    """A stream that writes to whatever ``sys.stderr`` is now: lm-eval's one handler, made once per process, would
    otherwise keep the first run's stderr (closed when it was captured or redirected)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()
