"""Register semuq-eval in an unmodified lm-eval 0.4.x: what the start-up hook does once lm-eval is imported.

lm-eval 0.4.13 discovers no plugins (the ``lm_eval.models`` / ``lm_eval.tasks`` entry points in
pyproject.toml are for later releases), so ``lm_eval --tasks semuq_triviaqa --model semuq-hf ...`` would
find neither. :mod:`semuq_eval._lm_eval_hook` (armed at start-up by ``semuq_eval_lm_eval_plugin.pth``) calls
:func:`on_import` right after each of these lm-eval modules has executed:

- ``lm_eval.models``, where lm-eval registers its built-in models (so ours exist exactly when ``hf`` does):
  :func:`semuq_eval.models.register_models` registers ``semuq-hf``, ``semuq-hf-multimodal`` and ``semuq-api``
  lazily (no torch import), and only names still free (``semuq-eval run`` and later lm-eval releases register
  them too).
- ``lm_eval.tasks.manager``: ``TaskManager.__init__`` is wrapped. When lm-eval's own tasks are included
  (``include_defaults=True``: the CLI, ``simple_evaluate`` without a task manager), the semuq task folder is
  put first in ``include_path``, so user folders, which come after it, override it as they override
  lm-eval's built-ins; unless a folder already given is, or contains, the semuq folder (``semuq-eval run``
  prepends it; ``--include_path "$(semuq-eval tasks-dir)"``): lm-eval would index it twice and warn that
  every semuq task overrides itself. ``include_defaults=False`` asks for exactly the given folders.
- ``lm_eval._cli.run``: the ``run`` command's ``Run._execute`` is wrapped in :func:`semuq_eval.context.lm_eval_cli`
  with its parsed ``--output_path`` and ``--model``: the run's output folder (the semuq store and the generation
  journal go under it) and the model the settings are checked against come from lm-eval's parsed arguments.

An error here never stops lm-eval: ``TaskManager`` then runs as if the hook were off, and the first error
is logged as a warning. ``SEMUQ_EVAL_LM_EVAL_PLUGIN=0`` turns all of it off, also when set after start-up.
"""

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
