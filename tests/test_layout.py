"""The repository's script folders: ``bench/`` (benchmarks), ``experiments/`` and ``tools/``, each script a module
run as ``python -m <folder>.<name>`` whose docstring says so, with a ``main``."""

from __future__ import annotations

import importlib
import re
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


def _layout_rows() -> dict[str, str]:
    """docs/layout.md's rows: ``semuq_eval/<package>/`` -> the text that describes it (continuation lines too)."""
    text = (ROOT / "docs" / "layout.md").read_text()
    block = text.split("```", 2)[1]
    rows: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        if line.startswith("semuq_eval/"):
            current, _, rest = line.partition(" ")
            rows[current] = rest
        elif line.startswith(" ") and current:
            rows[current] += " " + line.strip()
        else:
            current = None
    return rows


def test_docs_layout_names_every_package_and_module_of_the_tree():
    """Every subpackage of semuq_eval has its row in docs/layout.md and every module its name in that row (the
    top-level modules in the semuq_eval/ row); every row names a folder that exists."""
    rows = _layout_rows()
    package = ROOT / "semuq_eval"
    folders = {f"semuq_eval/{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert set(rows) - {"semuq_eval/"} == folders, "docs/layout.md's rows vs the packages"
    missing = []
    for folder in sorted(folders):
        for module in sorted((ROOT / folder).glob("*.py")):
            if module.stem not in ("__init__", "__main__") and not re.search(
                rf"\b{module.stem}\b", rows[folder]
            ):
                missing.append(f"{folder}{module.name}")
    top = [m for m in package.glob("*.py") if not m.stem.startswith("_")]
    missing += [f"semuq_eval/{m.name}" for m in top if m.name not in rows["semuq_eval/"]]
    assert not missing, f"modules docs/layout.md does not name: {missing}"
