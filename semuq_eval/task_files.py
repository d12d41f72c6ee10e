"""The shipped task YAMLs: their folder, a listing, and what one task reads."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

__all__ = ["dataset_of_task", "list_tasks", "task_config", "tasks_dir"]


def tasks_dir() -> Path:
    """The folder of the semuq task YAMLs (``tasks/`` in a checkout, ``semuq_eval/tasks`` in a wheel)."""
    return Path(str(files("semuq_eval.tasks")))


def list_tasks() -> str:
    """An aligned table of the semuq groups and tasks: name, kind, and the first line of the YAML's header."""
    import re

    rows = []
    for path in sorted(tasks_dir().glob("*.yaml")):
        if path.name.startswith("_"):
            continue
        text = path.read_text(encoding="utf-8")
        kind = "group" if re.search(r"^group:", text, re.M) else "task"
        name = re.search(rf"^{'group' if kind == 'group' else 'task'}:\s*(\S+)", text, re.M)
        about = next((line[1:].strip() for line in text.splitlines() if line.startswith("#")), "")
        rows.append((kind, name.group(1) if name else path.stem, about))
    rows.sort(key=lambda r: (r[0] != "group", r[1]))
    width = max(len(r[1]) for r in rows)
    lines = [f"{'name':<{width}}  {'kind':<5}  what", f"{'-' * width}  -----  {'-' * 40}"]
    lines += [f"{name:<{width}}  {kind:<5}  {about}" for kind, name, about in rows]
    lines.append(f"\n{len(rows)} entries in {tasks_dir()}; `lm_eval ls tasks` lists every lm-eval task.")
    return "\n".join(lines)


def dataset_of_task(task: str | None, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{"dataset", "split"}`` of a semuq task, read from its YAML (``None`` values for unknown tasks).
    The dataset is the local QA set (``qa_set``) or the hub dataset (``dataset_path``, ``dataset_name``), the split
    ``test_split``; a ``data_dir`` in the settings is kept.

    Examples
    --------
    >>> dataset_of_task("semuq_nqopen_train")
    {'dataset': 'nq-open', 'split': 'dev'}
    >>> dataset_of_task("no_such_task")
    {'dataset': None, 'split': None}
    """
    out: dict[str, Any] = {"dataset": None, "split": None}
    config = task_config(task) if task else None
    if config:
        kwargs = config.get("dataset_kwargs") or {}
        name = kwargs.get("qa_set") or config.get("dataset_path")
        if name and config.get("dataset_name"):
            name = f"{name}/{config['dataset_name']}"
        out = {"dataset": name, "split": config.get("test_split") or config.get("validation_split")}
    if settings and settings.get("data_dir"):
        out["data_dir"] = settings["data_dir"]
    return out


def task_config(task: str) -> dict[str, Any] | None:
    """The YAML of the shipped task named ``task`` (lm-eval's ``!`` tags read as None), or None."""
    import yaml

    class _Loader(yaml.SafeLoader):
        pass

    _Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    folder = tasks_dir()
    for path in sorted(folder.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if f"task: {task}" not in text:
            continue
        config = yaml.load(text, Loader=_Loader) or {}
        if isinstance(config, dict) and config.get("task") == task:
            return config
    return None
