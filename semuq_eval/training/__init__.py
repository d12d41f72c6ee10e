"""Training the ``enc`` operator on a generating LLM's own answers (the paper's recipe, Sec. 4, App. B-C).

``semuq-eval train-operator --stores OUT/ --backbone offline:all-minilm-l6-v2 --output ops/enc`` reads run stores
with per-sample verdicts, draws triplets as App. C does, trains with sentence-transformers' trainer as App. B does,
and writes a sentence-transformers folder with its card, which ``enc`` loads
(``operator_options: {"enc": {"model": "ops/enc"}}``). Modules: :mod:`~semuq_eval.training.stores` (run stores ->
labelled questions, provenance), :mod:`~semuq_eval.training.triplets` (P / N filtering, the split by question,
per-epoch triplets), :mod:`~semuq_eval.training.config` (the checked options), :mod:`~semuq_eval.training.prepare`
(the kept questions, split), :mod:`~semuq_eval.training.trainer` (objective, schedule, trainer) and
:mod:`~semuq_eval.training.card` (``semuq_training.json`` and ``README.md``, which ``enc`` reads with
:mod:`semuq_eval.operators.training_record`). Importing this package imports neither torch nor sentence-transformers.

Examples
--------
>>> from semuq_eval.training import TrainingConfig
>>> TrainingConfig(stores=["out/"], output="ops/enc").margin
0.2
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "TrainingConfig",
    "prepare_data",
    "train_operator",
]

_WHERE = {
    "TrainingConfig": "config",
    "prepare_data": "prepare",
    "train_operator": "trainer",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"semuq_eval.training.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
