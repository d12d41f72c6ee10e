"""One registry shape for the five extensible families: operators, aggregators, metrics, judges, label strategies.

A :class:`Registry` maps names to objects or to lazy ``"module:object"`` targets imported on first lookup (naming an
operator loads no model library). Each family also reads an entry-point group, so an installed package adds entries in
its ``pyproject.toml``::

    [project.entry-points."semuq_eval.operators"]
    word_overlap = "my_package.operators:WordOverlapOperator"

A target is the object itself, or a module whose import registers the name. Each family module exposes ``registry``,
``register``, ``get`` and ``names``."""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
import threading
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any, ClassVar, Generic, TypeVar

__all__ = ["NamedByRegistry", "Registry", "check_keywords"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class _Lazy:
    """A registered name whose object is imported on its first lookup: a ``"module:object"`` target or an
    entry point."""

    def __init__(self, target: str | metadata.EntryPoint) -> None:
        if isinstance(target, str) and not (":" in target and all(target.partition(":")[::2])):
            raise ValueError(f"a lazy target is 'module:object', got {target!r}")
        self.target = target

    def __str__(self) -> str:
        if isinstance(self.target, str):
            return self.target
        dist = self.target.dist.name if self.target.dist else "an installed package"
        return f"{self.target.value} (entry point of {dist})"

    def load(self) -> Any:
        if isinstance(self.target, str):
            module, _, attribute = self.target.partition(":")
            return getattr(importlib.import_module(module), attribute)
        return self.target.load()


def _target_text(target: str | metadata.EntryPoint) -> str:
    """A lazy target as ``"module:object"``."""
    return target if isinstance(target, str) else target.value


class NamedByRegistry:
    """A family's base class: ``name`` is the name the class is registered under in the family's registry (the
    module-level ``registry`` of :attr:`family_module`), so no class repeats it; a class declaring ``name`` itself must
    register under it."""

    family_module: ClassVar[str]

    @property
    def name(self) -> str:
        """The registered name of the class, or of its nearest registered base (as an inherited attribute)."""
        registry = importlib.import_module(self.family_module).registry
        for cls in type(self).__mro__:
            try:
                return registry.name_of(cls)
            except LookupError:
                continue
        raise LookupError(f"{type(self)!r} is not a registered {registry.family}, nor a subclass of one")


class Registry(Generic[T]):
    """Names -> objects of one family, with lazy targets and the family's entry-point group.

    ``family`` says what an entry is in messages ("operator"); ``group`` is the entry-point group; ``check(name, obj) ->
    obj`` validates a loaded object (TypeError naming what is wrong) and returns what to register.

    Examples
    --------
    >>> r = Registry("colour", group="semuq_eval.doctest_colours")
    >>> r.register("red", "colorsys:rgb_to_hsv")
    >>> r.names(), r.get("red").__name__
    (['red'], 'rgb_to_hsv')
    """

    def __init__(self, family: str, *, group: str, check: Callable[[str, Any], T] | None = None) -> None:
        self.family = family
        self.group = group
        self._check = check
        self._entries: dict[str, T | _Lazy] = {}
        self._discovered_on: tuple[str, ...] | None = None
        self._points: set[metadata.EntryPoint] = set()
        self._lock = threading.RLock()

    def register(self, name: str, target: T | str) -> None:
        """Register ``target`` (an object, or a lazy ``"module:object"`` string) under ``name``.
        A concrete object replaces a lazy entry of that name; another object under a taken name raises ValueError."""
        entry = _Lazy(target) if isinstance(target, str) else target
        declared = vars(target).get("name") if isinstance(target, type) else None
        if isinstance(declared, str) and declared != name:
            raise ValueError(
                f"{self.family} {name!r}: its class declares name = {declared!r}; the registration names it"
            )
        with self._lock:
            current = self._entries.get(name)
            if current is not None and current is not target and not isinstance(current, _Lazy):
                raise ValueError(f"{self.family} {name!r} is already registered ({current!r})")
            if isinstance(current, _Lazy) and isinstance(entry, _Lazy):
                raise ValueError(f"{self.family} {name!r} is already registered (lazily, {current})")
            self._entries[name] = entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test, or a session that registered an entry for a while); KeyError if unknown."""
        with self._lock:
            if name not in self._entries:
                raise KeyError(self._unknown(name))
            del self._entries[name]
            self._points = {p for p in self._points if p.name != name}  # found again if still installed
            self._discovered_on = None

    def get(self, name: str) -> T:
        """The object registered under ``name``, imported if lazy. KeyError naming the known names otherwise."""
        self._discover()
        with self._lock:
            if name not in self._entries:
                raise KeyError(self._unknown(name))
            entry = self._entries[name]
            if not isinstance(entry, _Lazy):
                return entry
            try:
                loaded = entry.load()
            except Exception as err:
                raise ImportError(f"{self.family} {name!r}: loading {entry} failed: {err}") from err
            registered = self._entries.get(name)
            if not isinstance(registered, _Lazy):  # its module registered it: the declared object
                return registered
            obj = self._check(name, loaded) if self._check else loaded
            self._entries[name] = obj
            return obj

    def name_of(self, obj: object) -> str:
        """The name ``obj`` is registered under, a lazy target's without importing it: a class is named once, by
        its registration, and reads its name here. LookupError if it is not registered."""
        self._discover()
        target = f"{getattr(obj, '__module__', '')}:{getattr(obj, '__qualname__', '')}"
        with self._lock:
            for name, entry in self._entries.items():
                if entry is obj or (isinstance(entry, _Lazy) and _target_text(entry.target) == target):
                    return name
        raise LookupError(f"{obj!r} is not a registered {self.family}; register it under the name users type")

    def names(self) -> list[str]:
        """The registered names, sorted (installed packages' entry points included)."""
        self._discover()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self._discover()
        return name in self._entries

    def _unknown(self, name: str) -> str:
        return f"unknown {self.family} {name!r}; known: {sorted(self._entries)}"

    def _discover(self) -> None:
        """Add the entry points of ``group`` not registered yet; read again whenever ``sys.path`` changed.
        An entry point whose name is taken is skipped with a warning naming its package."""
        path = tuple(sys.path)
        if path == self._discovered_on:
            return
        with self._lock:
            self._discovered_on = path
            for point in metadata.entry_points(group=self.group):
                if point in self._points:
                    continue
                self._points.add(point)
                if point.name not in self._entries:
                    self._entries[point.name] = _Lazy(point)
                    continue
                dist = point.dist.name if point.dist else "an installed package"
                log.warning(
                    "%s %r from %s (%s) is ignored: the name is registered already",
                    self.family,
                    point.name,
                    dist,
                    point.value,
                )


def check_keywords(what: str, func: Callable[..., Any], given: Mapping[str, Any], skip: int = 0) -> None:
    """Refuse options ``func`` cannot take as keywords (its first ``skip`` positional parameters are not options),
    before anything is built or run. A class takes its ``__init__``'s options and, while that forwards ``**kwargs``, its
    bases' and its ``forwarded_options``; a function taking ``**kwargs`` accepts every name.

    Examples
    --------
    >>> def judge(model="x", *, cache="default"): ...
    >>> check_keywords("judge 'j'", judge, {"cache": "none"})
    >>> check_keywords("judge 'j'", judge, {"colour": "blue"})
    Traceback (most recent call last):
    ...
    ValueError: judge 'j': unknown option(s) ['colour']; it takes ['cache', 'model']
    """
    accepted: set[str] = set(getattr(func, "forwarded_options", ()))
    for target, first in _signatures(func, skip):
        try:
            params = list(inspect.signature(target).parameters.values())[first:]
        except (TypeError, ValueError):  # no signature to read (a builtin): let the call decide
            return
        accepted |= {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    else:
        return  # **kwargs all the way down
    unknown = sorted(set(given) - accepted)
    if unknown:
        raise ValueError(f"{what}: unknown option(s) {unknown}; it takes {sorted(accepted)}")


def _signatures(func: Callable[..., Any], skip: int) -> list[tuple[Callable[..., Any], int]]:
    """What takes ``func``'s keywords, with the positional parameters to pass over: a function itself; a class's
    ``__init__`` of each class of its MRO that defines one (``self`` passed over), ``object`` excluded."""
    if not isinstance(func, type):
        return [(func, skip)]
    inits = [
        cls.__dict__["__init__"] for cls in func.__mro__ if cls is not object and "__init__" in cls.__dict__
    ]
    return [(init, 1 + skip) for init in inits] or [(func, skip)]
