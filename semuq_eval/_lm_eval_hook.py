"""The start-up half of the lm-eval hook: a ``sys.meta_path`` finder that waits for lm-eval.

``semuq_eval_lm_eval_plugin.pth`` imports this module at every interpreter start (unless ``SEMUQ_EVAL_LM_EVAL_PLUGIN``
is ``0``, ``false``, ``no`` or ``off``). :class:`_LmEvalFinder` answers every import but ``WATCHED`` with one set
lookup; after a watched module executes, :mod:`semuq_eval._lm_eval_plugin` registers semuq-eval there. Every Python
program pays for this module, so it stays small, imports nothing and never raises (errors met while lm-eval is imported
are logged once, logger ``semuq_eval``)."""

import os
import sys

__all__ = ["ENV", "WATCHED", "enabled", "install"]

ENV = "SEMUQ_EVAL_LM_EVAL_PLUGIN"
WATCHED = ("lm_eval._cli.run", "lm_eval.models", "lm_eval.tasks.manager")
_LAST = frozenset(WATCHED[1:])  # the finder stays until these are done
_OFF = ("0", "false", "no", "off")
_MARK = "__semuq_eval_lm_eval_hook__"
_warned = False


def enabled():
    """False when ``$SEMUQ_EVAL_LM_EVAL_PLUGIN`` is ``0``, ``false``, ``no`` or ``off`` (read at each use)."""
    return os.environ.get(ENV, "").strip().lower() not in _OFF


def warn_once(what, err):
    """Log the hook's first failure as a warning; later ones are dropped."""
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


def _run(name, module):
    if not enabled():
        return
    try:
        from semuq_eval._lm_eval_plugin import on_import

        on_import(name, module)
    except Exception as err:
        warn_once(f"register semuq-eval in {name}", err)


class _PostImportLoader:
    """Delegates to the module's real loader, then runs :func:`_run` once the module has executed."""

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
        if attr == "_loader":  # not set yet (copy, pickle): no recursion
            raise AttributeError(attr)
        return getattr(self._loader, attr)


class _LmEvalFinder:
    """Finds nothing itself: for a watched module it wraps the loader the other finders return."""

    def __init__(self):
        self.pending = set(WATCHED)
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
            warn_once(f"hook into {fullname}", err)
            return None
        finally:
            self._busy.discard(fullname)

    def done(self, name):
        self.pending.discard(name)
        if not self.pending & _LAST:
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass


def install():
    """Arm the hook (idempotent); watched modules already imported are handled at once."""
    if not enabled() or any(getattr(f, _MARK, False) for f in sys.meta_path):
        return
    finder = _LmEvalFinder()
    for name in WATCHED:
        module = sys.modules.get(name)
        if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
            finder.pending.discard(name)
            _run(name, module)
    if finder.pending & _LAST:
        sys.meta_path.insert(0, finder)


try:
    install()
except Exception:  # never fail the interpreter's start-up
    pass
