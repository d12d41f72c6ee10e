"""Does an evaluation run share its LLM or its dataset with a trained operator's training data?

The paper's operator is trained on one LLM's NQ-Open answers and evaluated on other LLMs and datasets (App. C); reusing
either measures something easier. :func:`training_overlap` lists the overlaps of one operator folder with one run;
:func:`warn_training_overlap` logs them for a run's operators before the pipeline runs. Imports neither torch nor
sentence-transformers.

Examples
--------
>>> record = {"training_data": {"stores": [{"llm": "smollm2-135m-instruct", "task": "semuq_nqopen_train",
...                                         "dataset": "nq-open", "split": "dev"}]}}
>>> training_overlap(record, llm="/models/SmolLM2-135M-Instruct", task="semuq_nqopen")[0]
'the evaluated LLM (/models/SmolLM2-135M-Instruct) generated the training answers (smollm2-135m-instruct)'
>>> training_overlap(record, llm="Qwen/Qwen2.5-7B", task="semuq_webquestions")
[]
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Any

from semuq_eval.context import model_slug
from semuq_eval.operators.training_record import read_training_record
from semuq_eval.task_files import dataset_of_task

__all__ = ["dataset_family", "training_overlap", "warn_training_overlap"]

log = logging.getLogger(__name__)


def dataset_family(name: str | None) -> str | None:
    """A dataset's name without owner, config or punctuation, so that copies of one dataset compare equal.

    Examples
    --------
    >>> dataset_family("mandarjoshi/trivia_qa/rc.nocontext"), dataset_family("triviaqa"), dataset_family("nq-open")
    ('triviaqa', 'triviaqa', 'nqopen')
    """
    if not name:
        return None
    parts = [p for p in str(name).split("/") if p]
    core = parts[1] if len(parts) >= 2 else parts[0]
    return re.sub(r"[^a-z0-9]", "", core.lower()) or None


def _llm_key(name: str | None) -> str | None:
    """The model's own name, lower-cased: a hub id's owner and a folder's path are dropped."""
    return model_slug(name).rsplit("__", 1)[-1].lower() if name else None


def training_overlap(
    record: Mapping[str, Any] | str | os.PathLike, *, llm: str | None, task: str | None
) -> list[str]:
    """What the evaluation run (LLM ``llm``, semuq task ``task``) shares with an operator's training.

    ``record`` is a training record (``semuq_training.json``) or the operator folder. LLMs compare by
    :func:`~semuq_eval.context.model_slug` (case-insensitive), datasets by :func:`dataset_family`. One sentence per
    overlap ([] for none, a folder without a record, or an unknown side)."""
    if not isinstance(record, Mapping):
        record = read_training_record(record) or {}
    stores = list((record.get("training_data") or {}).get("stores") or [])
    out: list[str] = []
    eval_llm = _llm_key(llm)
    train_llms = sorted({s["llm"] for s in stores if s.get("llm")})
    if eval_llm and any(_llm_key(name) == eval_llm for name in train_llms):
        out.append(f"the evaluated LLM ({llm}) generated the training answers ({', '.join(train_llms)})")
    if task:
        evaluated = dataset_of_task(task)
        family = dataset_family(evaluated.get("dataset"))
        for s in stores:
            same_task = s.get("task") == task
            same_family = family is not None and dataset_family(s.get("dataset")) == family
            if same_task or (same_family and s.get("split") == evaluated.get("split")):
                out.append(f"the evaluation questions ({task}) are the training questions ({s.get('task')})")
                break
            if same_family:
                out.append(
                    f"the evaluation dataset ({task}: {evaluated.get('dataset')}, split {evaluated.get('split')}) "
                    f"is the training dataset ({s.get('task')}: {s.get('dataset')}, split {s.get('split')})"
                )
                break
    return out


def warn_training_overlap(settings: Any, *, llm: str | None, task: str | None) -> list[str]:
    """Log a warning for every trained operator in a run's ``settings`` (``operator_options[op]["model"]``
    naming a folder with a training record) that shares the run's LLM or dataset; returns the messages; never raises."""
    options: Mapping[str, Any] = getattr(settings, "operator_options", None) or {}
    operators = getattr(settings, "operators", None) or list(options)
    messages = []
    for op in operators:
        model = (options.get(op) or {}).get("model")
        if not isinstance(model, (str, os.PathLike)):
            continue
        try:
            overlaps = training_overlap(model, llm=llm, task=task)
        except Exception as err:  # a broken training record must not stop a run: say which, and go on
            log.warning(
                "%s: the training record of %s is unreadable (%s: %s)", op, model, type(err).__name__, err
            )
            continue
        for text in overlaps:
            message = (
                f"{op}: the trained operator {model} overlaps this evaluation: {text}. The paper keeps the "
                "training LLM and dataset out of every evaluation; figures of this run favour the operator."
            )
            log.warning(message)
            messages.append(message)
    return messages
