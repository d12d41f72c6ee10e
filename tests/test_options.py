"""Options declared once (semuq_eval/options.py): one pydantic model gives the flags, their checks and the table."""

from __future__ import annotations

import argparse
from typing import Literal

import pytest
from pydantic import field_validator

from semuq_eval.options import Options, add_options, option, options_table, parse_options


class Demo(Options):
    limit: int | None = option(None, "questions to read", ge=1)
    rate: float = option(0.5, "a share", gt=0, le=1, allow_inf_nan=False)
    names: list[str] | None = option(None, "comma-separated names", parse="csv", flag="--only")
    extra: dict | None = option(None, "JSON options", parse="json", of="option -> value")
    force: bool = option(False, "replace what is there")


def _parse(argv: list[str]) -> Demo:
    parser = argparse.ArgumentParser()
    add_options(parser, Demo)
    return parse_options(Demo, parser.parse_args(argv))


def test_flags_come_from_the_fields_with_their_defaults_and_readers():
    assert _parse([]) == Demo()
    got = _parse(["--limit", "3", "--rate", "0.25", "--only", "a, b,,c", "--extra", '{"k": 1}', "--force"])
    assert got == Demo(limit=3, rate=0.25, names=["a", "b", "c"], extra={"k": 1}, force=True)


@pytest.mark.parametrize(
    "argv, line",
    [
        (["--limit", "0"], "--limit: input should be greater than or equal to 1, got 0"),
        (["--rate", "nan"], "--rate: "),
        (["--rate", "2"], "--rate: input should be less than or equal to 1, got 2.0"),
        (["--extra", "[1]"], "--extra must be a JSON object of option -> value, got a list"),
    ],
)
def test_a_refused_value_is_one_line_naming_the_flag(argv, line):
    with pytest.raises(ValueError) as err:
        _parse(argv)
    assert line in str(err.value) and "\n" not in str(err.value)


def test_the_table_lists_every_flag_with_its_default_and_bounds():
    table = options_table(Demo).splitlines()
    assert table[0] == "| option | default | bounds | what |" and len(table) == 2 + 5
    assert "| `--rate` | `0.5` | > 0, <= 1 | a share |" in table and any(
        r.startswith("| `--only` |") for r in table
    )
    with pytest.raises(ValueError):
        Demo(unknown=1)  # a field that is not declared is refused


class Switches(Options):
    unit: Literal["word", "token"] = option("word", "the unit")
    pairs: list[str] = option([], "A:B pairs", parse="many")
    progress: bool = option(True, "no progress bars", flag="--no_progress")
    seed: int = option(0, "the seed", ge=0)

    @field_validator("pairs")
    @classmethod
    def _pairs(cls, value: list[str]) -> list[str]:
        bad = [v for v in value if ":" not in v]
        if bad:
            raise ValueError(f"{bad[0]!r} is not A:B")
        return value


def test_switch_off_flags_word_lists_and_choices():
    parser = argparse.ArgumentParser()
    add_options(parser, Switches)
    assert parse_options(Switches, parser.parse_args([])) == Switches()
    got = parse_options(
        Switches, parser.parse_args(["--no_progress", "--pairs", "a:b", "c:d", "--unit", "token"])
    )
    assert got == Switches(unit="token", pairs=["a:b", "c:d"], progress=False)
    with pytest.raises(SystemExit):
        parser.parse_args(["--unit", "byte"])  # a choice argparse refuses, listing the choices
    with pytest.raises(ValueError) as err:
        parse_options(Switches, parser.parse_args(["--pairs", "ab"]))
    assert str(err.value) == "--pairs: 'ab' is not A:B"  # a validator's message as written
    table = options_table(Switches).splitlines()
    assert "| `--no_progress` |  |  | no progress bars |" in table  # a switch shows no default
    assert "| `--seed` | `0` | >= 0 | the seed |" in table  # a zero default is shown


class Repeated(Options):
    add: list[str] = option([], "a record (repeatable)", parse="append")
    output: str = option(..., "the folder", flag="--output -o")


def test_a_repeatable_flag_and_a_short_alias():
    parser = argparse.ArgumentParser()
    add_options(parser, Repeated)
    got = parse_options(Repeated, parser.parse_args(["-o", "out", "--add", "a", "--add", "b"]))
    assert got == Repeated(output="out", add=["a", "b"])
    assert parse_options(Repeated, parser.parse_args(["--output", "out"])).add == []
    assert "| `--output` `-o` | required |  | the folder |" in options_table(Repeated)
