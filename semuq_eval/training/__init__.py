"""Training the ``enc`` operator on a generating LLM's own answers (the paper's recipe, Sec. 4, App. B-C).

``semuq-eval train-operator --stores OUT/ --backbone offline:all-minilm-l6-v2 --output ops/enc`` reads run stores
with per-sample verdicts, draws triplets as App. C does, trains with sentence-transformers' trainer as App. B does,
and writes a sentence-transformers folder with its card, which ``enc`` loads
(``operator_options: {"enc": {"model": "ops/enc"}}``); docs/layout.md names the modules. Importing this package
imports neither torch nor sentence-transformers.

Examples
--------
>>> from semuq_eval.training import TrainingConfig
>>> TrainingConfig(stores=["out/"], output="ops/enc").margin
0.2
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["TrainingConfig", "prepare_data", "train_operator"]

_WHERE = {"TrainingConfig": "config", "prepare_data": "prepare", "train_operator": "trainer"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"semuq_eval.training.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
