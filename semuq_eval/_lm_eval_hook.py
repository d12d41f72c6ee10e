"""Make an unmodified ``lm_eval`` (0.4.x) know semuq-eval's tasks and models: no ``--include_path``, no import.

lm-eval 0.4.13 discovers no plugins (the ``lm_eval.models`` / ``lm_eval.tasks`` entry points in pyproject.toml
are for later releases). So the wheel, and an editable install, put ``semuq_eval_lm_eval_plugin.pth`` into
site-packages (see setup.py); Python runs its one line at start-up, which imports this module unless
``SEMUQ_EVAL_LM_EVAL_PLUGIN`` is ``0``, ``false``, ``no`` or ``off``. Importing it only puts a finder at the
front of ``sys.meta_path`` (this module imports nothing but ``os`` and ``sys``, which start-up has already
loaded). The finder answers every other import with one dict lookup; after each of two lm-eval modules has
executed, it registers the plugin there, then it removes itself:

- ``lm_eval.models`` (where lm-eval registers its built-in models, so ours exist exactly when ``hf`` does):
  :func:`semuq_eval.models.register_models` registers ``semuq-hf`` and ``semuq-hf-multimodal`` lazily (no
  torch import), and only names still free.
- ``lm_eval.tasks.manager``: ``TaskManager.__init__`` is wrapped. When lm-eval's own tasks are included
  (``include_defaults=True``: the CLI, ``simple_evaluate`` without a task manager), the semuq task folder is
  put first in ``include_path`` (user folders come after it, so they override it, as they override
  lm-eval's built-ins), unless a folder already given is, or contains, the semuq folder (``semuq-eval run``
  prepends it; ``--include_path "$(semuq-eval tasks-dir)"``): lm-eval would index it twice and warn that
  every semuq task overrides itself. ``include_defaults=False`` asks for exactly the given folders: left alone.

Nothing here may break the interpreter or lm-eval: every error is swallowed, and an error met while lm-eval
is being imported is logged once as a warning (logger ``semuq_eval``). The switch is also read when
lm-eval is imported, so setting it later in the process works too.
"""

import os
import sys

__all__ = ["ENV", "enabled", "install"]

ENV = "SEMUQ_EVAL_LM_EVAL_PLUGIN"
_OFF = ("0", "false", "no", "off")
_MARK = "__semuq_eval_lm_eval_hook__"
_warned = False
_tasks_dir = None


def enabled():
    """False when ``$SEMUQ_EVAL_LM_EVAL_PLUGIN`` is ``0``, ``false``, ``no`` or ``off``."""
    return os.environ.get(ENV, "").strip().lower() not in _OFF


def _warn(what, err):
    global _warned
    if _warned:
        return
    _warned = True
    try:
        import logging

        logging.getLogger("semuq_eval").warning(
            "semuq-eval: the lm-eval start-up hook could not %s (%s: %s). Use `semuq-eval run ...` or "
            '`lm_eval --include_path "$(semuq-eval tasks-dir)"` instead; %s=0 turns the hook off.',
            what,
            type(err).__name__,
            err,
            ENV,
        )
    except Exception:
        pass


def _register_models(module):
    from semuq_eval.models import register_models

    register_models()


def _with_semuq_tasks(include_path):
    """``include_path`` with the semuq task folder first, or None when it already covers that folder."""
    global _tasks_dir
    if _tasks_dir is None:
        from semuq_eval.launch import tasks_dir

        _tasks_dir = str(tasks_dir())
    from pathlib import Path

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


def _patch_task_manager(module):
    import functools
    import inspect

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
            _warn("add the semuq task folder to lm-eval's TaskManager", err)
        init(self, *args, **kwargs)

    setattr(__init__, _MARK, True)
    cls.__init__ = __init__


_CALLBACKS = {
    "lm_eval.models": (_register_models, "register the semuq-hf models"),
    "lm_eval.tasks.manager": (_patch_task_manager, "add the semuq tasks to lm-eval's TaskManager"),
}


def _run(name, module):
    callback, what = _CALLBACKS[name]
    if not enabled():
        return
    try:
        callback(module)
    except Exception as err:
        _warn(what, err)


class _PostImportLoader:
    """Delegates to the module's real loader; runs the registration once the module has executed."""

    def __init__(self, loader, finder, name):
        self._loader, self._finder, self._name = loader, finder, name

    def create_module(self, spec):
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        # the module sees its real loader (resource readers, linecache, inspect.getsource)
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        self._loader.exec_module(module)  # an import error propagates; the hook stays armed
        self._finder.done(self._name)
        _run(self._name, module)

    def __getattr__(self, attr):
        return getattr(self._loader, attr)


class _LmEvalFinder:
    """A ``sys.meta_path`` finder that only wraps the loaders of the modules in ``_CALLBACKS``."""

    def __init__(self):
        self.pending = set(_CALLBACKS)
        self._busy = set()  # a finder that asks sys.meta_path again must not bring it back here
        setattr(self, _MARK, True)

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.pending or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            if not enabled():
                return None
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
            if spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return None
            spec.loader = _PostImportLoader(spec.loader, self, fullname)
            return spec
        except Exception as err:
            _warn(f"hook into {fullname}", err)
            return None
        finally:
            self._busy.discard(fullname)

    def done(self, name):
        self.pending.discard(name)
        if not self.pending:
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass


def install():
    """Arm the hook (idempotent); modules lm-eval has already imported are handled at once."""
    if not enabled() or any(getattr(f, _MARK, False) for f in sys.meta_path):
        return
    finder = _LmEvalFinder()
    for name in list(finder.pending):
        module = sys.modules.get(name)
        if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
            finder.pending.discard(name)
            _run(name, module)
    if finder.pending:
        sys.meta_path.insert(0, finder)


try:
    install()
except Exception:  # never fail the interpreter's start-up
    pass
