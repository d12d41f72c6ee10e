"""The semuq-eval command line: project commands and the lm-eval passthrough."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from semuq_eval import cli

REPO = Path(__file__).resolve().parents[1]


def test_tasks_dir_is_the_shipped_task_folder(capsys):
    assert cli.main(["tasks-dir"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert printed == cli.tasks_dir() and printed.resolve() == (REPO / "tasks").resolve()


def test_assets_list_on_an_empty_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SEMUQ_EVAL_CACHE", str(tmp_path))
    assert cli.main(["assets", "--list"]) == 0
    out = capsys.readouterr().out
    assert "all-minilm-l6-v2" in out and "triviaqa" in out and "prepared" not in out.replace("not prepared", "")


def test_module_entry_point_runs():
    done = subprocess.run(
        [sys.executable, "-m", "semuq_eval", "tasks-dir"], capture_output=True, text=True, check=True
    )
    assert Path(done.stdout.strip()).is_dir()
