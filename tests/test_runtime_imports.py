"""semuq-eval's runtime does not need pytest: only its pytest plugin imports it, and pytest loads the plugin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_pytest_is_not_a_runtime_dependency():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.split(">")[0].split("=")[0].strip() == "pytest"]


@pytest.mark.subprocess
def test_no_runtime_module_imports_pytest():
    """Every module but the plugin imports with pytest hidden (an import of it fails)."""
    code = (
        "import sys, pkgutil, importlib, semuq_eval\n"
        "sys.modules['pytest'] = None\n"
        "bad = []\n"
        "for m in pkgutil.walk_packages(semuq_eval.__path__, 'semuq_eval.'):\n"
        "    if m.name.endswith(('pytest_plugin', '__main__')) or '.assets.compact' in m.name:\n"
        "        continue\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except ImportError as err:\n"
        "        if 'pytest' in str(err): bad.append(m.name)\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", f"modules importing pytest: {done.stdout.strip()}"
