"""The repository's script folders: ``bench/`` (benchmarks), ``experiments/`` and ``tools/``, each script a module
run as ``python -m <folder>.<name>`` whose docstring says so, with a ``main``."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = {"bench.timing"}  # shared code, not a script
SCRIPTS = sorted(
    f"{folder}.{path.stem}"
    for folder in ("bench", "experiments", "tools")
    for path in (ROOT / folder).glob("*.py")
    if path.stem != "__init__" and f"{folder}.{path.stem}" not in HELPERS
)


def test_every_script_folder_has_scripts():
    assert {name.split(".")[0] for name in SCRIPTS} == {"bench", "experiments", "tools"}
    assert not list(ROOT.glob("bench/*.sh")) and not list(ROOT.glob("*.py"))


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_is_a_module_with_main_and_says_how_to_run_it(name):
    module = importlib.import_module(name)  # importing runs nothing: the work is in main()
    assert callable(getattr(module, "main", None)), f"{name} has no main()"
    assert f"python -m {name}" in (module.__doc__ or ""), (
        f"{name}'s docstring does not say `python -m {name}`"
    )
