"""Register semuq-eval in an unmodified lm-eval 0.4.x: what the start-up hook does once lm-eval is imported.

lm-eval 0.4.x discovers no plugins, so :mod:`semuq_eval._lm_eval_hook` calls :func:`on_import` after each of these
modules executes:

- ``lm_eval.models``: :func:`semuq_eval.models.register_models` registers our models lazily (no torch import), names
  still free only;
- ``lm_eval.tasks.manager``: ``TaskManager.__init__`` is wrapped to put the semuq task folder first in ``include_path``
  when lm-eval's own tasks are included (user folders override it), unless a given folder already is or contains it
  (lm-eval would index it twice);
- ``lm_eval._cli.run``: ``Run._execute`` is wrapped in :func:`semuq_eval.context.lm_eval_cli` with its parsed
  ``--output_path`` and ``--model``.

An error here never stops lm-eval (the first is logged as a warning); ``SEMUQ_EVAL_LM_EVAL_PLUGIN=0`` turns it all off,
even after start-up."""

from __future__ import annotations

import functools
import inspect
import os
from pathlib import Path

from semuq_eval._lm_eval_hook import enabled, warn_once

__all__ = ["on_import", "patch_cli_run"]

_MARK = "__semuq_eval_lm_eval_plugin__"
_tasks_dir: str | None = None


def _register_models(module) -> None:
    from semuq_eval.models import register_models

    register_models()


def _with_semuq_tasks(include_path) -> list | None:
    """``include_path`` with the semuq task folder first, or None when it already covers that folder."""
    global _tasks_dir
    if _tasks_dir is None:
        from semuq_eval.task_files import tasks_dir

        _tasks_dir = str(tasks_dir())
    if not include_path:
        paths = []
    elif isinstance(include_path, (list, tuple)):
        paths = list(include_path)
    else:
        paths = [include_path]
    ours = Path(os.path.realpath(_tasks_dir))
    for path in paths:
        given = Path(os.path.realpath(os.fspath(path)))
        if ours == given or ours.is_relative_to(given):
            return None
    return [_tasks_dir, *paths]


def _patch_task_manager(module) -> None:
    cls = module.TaskManager
    init = cls.__init__
    if getattr(init, _MARK, False):
        return
    signature = inspect.signature(init)
    params = signature.parameters
    if "include_path" not in params:
        raise TypeError("TaskManager.__init__ has no include_path parameter")
    defaults_default = params["include_defaults"].default if "include_defaults" in params else True

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        try:
            if enabled():
                bound = signature.bind(self, *args, **kwargs)
                if bound.arguments.get("include_defaults", defaults_default):
                    paths = _with_semuq_tasks(bound.arguments.get("include_path"))
                    if paths is not None:
                        bound.arguments["include_path"] = paths
                        args, kwargs = bound.args[1:], bound.kwargs
        except Exception as err:  # lm-eval then runs as if the hook were off
            warn_once("add the semuq task folder to lm-eval's TaskManager", err)
        init(self, *args, **kwargs)

    setattr(__init__, _MARK, True)
    cls.__init__ = __init__


def patch_cli_run(module) -> None:
    """Wrap ``module.Run._execute`` (lm-eval's ``run`` command) in :func:`semuq_eval.context.lm_eval_cli`
    (idempotent; ``semuq-eval run`` calls it too, so that it works with the hook turned off)."""
    cls = module.Run
    execute = cls.__dict__["_execute"]
    function = execute.__func__ if isinstance(execute, staticmethod) else execute
    if getattr(function, _MARK, False):
        return

    @functools.wraps(function)
    def _execute(args, *rest, **kwargs):
        from semuq_eval.context import lm_eval_cli

        with lm_eval_cli(getattr(args, "output_path", None), getattr(args, "model", None)):
            return function(args, *rest, **kwargs)

    setattr(_execute, _MARK, True)
    cls._execute = staticmethod(_execute) if isinstance(execute, staticmethod) else _execute


_ON_IMPORT = {
    "lm_eval.models": _register_models,
    "lm_eval.tasks.manager": _patch_task_manager,
    "lm_eval._cli.run": patch_cli_run,
}


def on_import(name: str, module) -> None:
    """Register semuq-eval in the lm-eval module ``name`` that has just been imported."""
    _ON_IMPORT[name](module)
