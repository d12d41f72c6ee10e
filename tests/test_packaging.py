"""The wheel ships the task YAMLs: build it, install it into a fresh venv, list the tasks."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_and_lists_semuq_tasks(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
    )
    wheel = next(tmp_path.glob("semuq_eval-*.whl"))
    shipped = zipfile.ZipFile(wheel).namelist()
    assert "semuq_eval/tasks/semuq_triviaqa.yaml" in shipped and "semuq_eval/tasks/utils.py" in shipped
    entry_points = (
        zipfile.ZipFile(wheel).read(next(n for n in shipped if n.endswith("entry_points.txt"))).decode()
    )
    assert "[lm_eval.models]" in entry_points and "semuq-hf = semuq_eval.models.hf:SemuqHFLM" in entry_points
    assert "[lm_eval.tasks]" in entry_points and "semuq = semuq_eval.tasks" in entry_points

    env_dir = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    # the fresh venv gets only the wheel; its dependencies come from this environment's site-packages
    # (appended after, so the wheel's copy of semuq_eval wins over the editable checkout)
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    deps = sysconfig.get_paths()["purelib"]
    (site / "zz_deps.pth").write_text(deps + "\n")
    listed = subprocess.run(
        [python, "-c", "import sys; from semuq_eval.cli import main; sys.exit(main(sys.argv[1:]))", "ls", "tasks"],
        capture_output=True, text=True, cwd=tmp_path, check=True,
    )  # fmt: skip
    where = subprocess.run(
        [python, "-c", "import semuq_eval.cli as c; print(c.tasks_dir())"],
        capture_output=True, text=True, cwd=tmp_path, check=True,
    ).stdout.strip()  # fmt: skip
    assert str(site) in where, "the tasks must come from the installed wheel, not the checkout"
    for task in (
        "semuq_triviaqa",
        "semuq_nqopen",
        "semuq_webquestions",
        "semuq_hotpotqa",
        "semuq_text",
        "semuq",
    ):
        assert task in listed.stdout, task
