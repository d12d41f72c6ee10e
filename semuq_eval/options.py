"""Options declared once: a pydantic model whose fields give a command's flags, their checks and the docs' table.

Fields are declared with :func:`option`; :func:`add_options` adds their flags to a parser, :func:`parse_options` turns
parsed flags into the model (one line naming a flag out of bounds), :func:`options_table` writes the docs' table.

Example
-------
>>> class Demo(Options):
...     limit: int | None = option(None, "questions to read", ge=1)
...     names: list[str] | None = option(None, "comma-separated names", parse="csv")
>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> add_options(parser, Demo)
>>> parse_options(Demo, parser.parse_args(["--limit", "3", "--names", "a,b"]))
Demo(limit=3, names=['a', 'b'])
"""

from __future__ import annotations

import argparse
import json
import types
import typing
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from semuq_eval.jsonio import json_object

__all__ = ["OptionError", "Options", "add_options", "option", "options_table", "parse_options"]

Parse = Literal["append", "csv", "json", "many"]


class Options(BaseModel):
    """The base of every command's options: unknown fields are refused, values are checked on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def __init__(self, **given: Any) -> None:
        """The options given as keywords (a function's ``**given``); OptionError in one line naming the field."""
        try:
            super().__init__(**given)
        except ValidationError as err:
            first = err.errors()[0]
            field = str(first["loc"][0]) if first.get("loc") else ""
            if first.get("type") == "value_error":  # a validator's own message, as it wrote it
                error = first["ctx"]["error"]
                raise (error if isinstance(error, OptionError) else OptionError(field, str(error))) from None
            raise OptionError(field, f"{first['msg'].lower()}, got {first.get('input')!r}") from None


class OptionError(ValueError):
    """An option refused: the field and why, in one line (``"<field>: <why>"``)."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field, self.why = field, why


def option(
    default: Any,
    help: str,
    *,
    parse: Parse | None = None,
    flag: str | None = None,
    of: str | None = None,
    const: Any = None,
    cli: bool = True,
    **bounds: Any,
) -> Any:
    """A field of an :class:`Options` model.

    A ``...`` default makes the flag required. ``parse`` says how its flag's text is read (``csv``: a comma-separated
    list; ``many``: words after the flag; ``append``: a repeatable flag, an item each time; ``json``: a JSON object,
    ``of`` saying what it maps; default: the field's type); ``flag`` overrides ``--<field>``, aliases after a space
    (``"--force --overwrite"``, ``"--output -o"``; a boolean field defaulting to true is switched off by its flag,
    e.g. ``--no_progress``; a name without dashes makes the field a positional argument, ``parse="many"`` for
    several); ``const`` is the value of the bare flag; ``cli=False`` keeps the field out of the parser
    and table; ``ge`` / ``le`` / ``gt`` are pydantic bounds. A model validator names its field by raising
    :class:`OptionError`."""
    extra = {"parse": parse, "flag": flag, "of": of, "const": const, "cli": cli}
    return Field(default, description=help, json_schema_extra=extra, **bounds)


def _flags_of(name: str, info: Any) -> list[str]:
    """A field's flag and its aliases."""
    return ((info.json_schema_extra or {}).get("flag") or f"--{name}").split()


def _flag(name: str, info: Any) -> str:
    return _flags_of(name, info)[0]


def _base_type(annotation: Any) -> Any:
    """The type of a field without ``None`` (``int | None`` -> ``int``)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else str
    return annotation


def _reader(name: str, info: Any) -> Callable[[str], Any]:
    """How the flag's text becomes a value (checked against the field's bounds later, by the model)."""
    parse = (info.json_schema_extra or {}).get("parse")
    if parse == "csv":
        return lambda text: [item.strip() for item in text.split(",") if item.strip()]
    if parse == "json":
        return str  # read by parse_options, so that a bad object is the command's one line, not argparse's
    kind = _base_type(info.annotation)
    if kind in (int, float):

        def number(text: str) -> Any:
            try:
                return kind(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected a {kind.__name__}, got {text!r}") from None

        return number
    return str


def _is_positional(name: str, info: Any) -> bool:
    return not _flags_of(name, info)[0].startswith("-")


def _add_positional(parser: argparse.ArgumentParser, name: str, info: Any) -> None:
    """A positional argument: one value, or several with ``parse="many"``; optional when it has a default."""
    required = info.is_required()
    many = (info.json_schema_extra or {}).get("parse") == "many"
    nargs = ("+" if required else "*") if many else (None if required else "?")
    metavar = _flags_of(name, info)[0]
    parser.add_argument(
        name, nargs=nargs, metavar=None if metavar == name else metavar, help=info.description
    )


def add_options(parser: argparse.ArgumentParser, model: type[Options]) -> None:
    """One flag per field of ``model`` (a boolean field is a switch, a name without dashes a positional argument);
    the help text ends with the default."""
    for name, info in _flags(model):
        flags = _flags_of(name, info)
        if _is_positional(name, info):
            _add_positional(parser, name, info)
            continue
        if _base_type(info.annotation) is bool:
            action = "store_false" if info.default is True else "store_true"
            parser.add_argument(*flags, dest=name, action=action, default=None, help=info.description)
            continue
        required = info.is_required()
        shown = "" if required or info.default in (None, [], "") else f" (default {_shown(info.default)})"
        metavar = flags[0].lstrip("-").upper()
        extra: dict[str, Any] = {"required": required}
        parse = (info.json_schema_extra or {}).get("parse")
        if parse == "many":
            extra["nargs"] = "+" if required else "*"
        if parse == "append":
            extra["action"] = "append"
        if (info.json_schema_extra or {}).get("const") is not None:
            extra.update(nargs="?", const=info.json_schema_extra["const"])
        if typing.get_origin(_base_type(info.annotation)) is Literal:
            extra["choices"] = list(typing.get_args(_base_type(info.annotation)))
            metavar = None  # argparse shows the choices
        parser.add_argument(
            *flags,
            dest=name,
            metavar=metavar,
            type=_reader(name, info),
            help=f"{info.description}{shown}",
            **extra,
        )


def _flags(model: type[Options]) -> list[tuple[str, Any]]:
    """The fields of ``model`` that are flags of its command (not ``cli=False``)."""
    return [(n, i) for n, i in model.model_fields.items() if (i.json_schema_extra or {}).get("cli", True)]


def _shown(default: Any) -> str:
    """A default as the help shows it (a list as its flag's text)."""
    return ",".join(map(str, default)) if isinstance(default, (list, tuple)) else str(default)


def parse_options(model: type[Options], namespace: argparse.Namespace) -> Options:
    """The model of the parsed flags (a flag not given keeps its default); ValueError in one line naming the flag
    and the bound for a value the model refuses."""
    given = {n: getattr(namespace, n) for n, _ in _flags(model) if getattr(namespace, n, None) is not None}
    for name, info in model.model_fields.items():
        if name in given and (info.json_schema_extra or {}).get("parse") == "json":
            given[name] = json_object(
                given[name], _flag(name, info), (info.json_schema_extra or {}).get("of")
            )
    try:
        return model(**given)
    except OptionError as err:
        info = model.model_fields.get(err.field)
        raise ValueError(f"{_flag(err.field, info) if info is not None else err.field}: {err.why}") from None


def _bounds(info: Any) -> str:
    """A field's bounds as text (``> 0, <= 1``, or the choices ``em, f1``), from its pydantic constraints."""
    if typing.get_origin(_base_type(info.annotation)) is Literal:
        return ", ".join(map(str, typing.get_args(_base_type(info.annotation))))
    signs = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    found = [
        f"{sign} {getattr(m, key)}" for m in info.metadata for key, sign in signs.items() if hasattr(m, key)
    ]
    return ", ".join(found)


def _table_default(value: Any) -> str:
    """A default as the table shows it: nothing for none, a switch or an empty list; a list as its flag's text."""
    if value is None or isinstance(value, bool) or value == []:
        return ""
    return f"`{_shown(value)}`" if isinstance(value, (list, tuple)) else f"`{json.dumps(value)}`"


def options_table(model: type[Options]) -> str:
    """The Markdown table of a model's options: flag, default, bounds and what it does (the docs show it)."""
    rows = ["| option | default | bounds | what |", "|---|---|---|---|"]
    for name, info in _flags(model):
        if _is_positional(name, info):
            continue  # the command's usage line shows its positional arguments
        default = "required" if info.is_required() else _table_default(info.default)
        flags = " ".join(f"`{f}`" for f in _flags_of(name, info))
        rows.append(f"| {flags} | {default} | {_bounds(info)} | {info.description} |")
    return "\n".join(rows)
