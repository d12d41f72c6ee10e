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
    assert (
        "all-minilm-l6-v2" in out and "triviaqa" in out and "prepared" not in out.replace("not prepared", "")
    )


def test_module_entry_point_runs():
    done = subprocess.run(
        [sys.executable, "-m", "semuq_eval", "tasks-dir"], capture_output=True, text=True, check=True
    )
    assert Path(done.stdout.strip()).is_dir()


def test_semuq_info_messages_are_shown_like_lm_evals():
    code = (
        "import logging\n"
        "from lm_eval.utils import setup_logging\n"
        "from semuq_eval.cli import share_lm_eval_logging\n"
        "setup_logging()\n"
        "logging.getLogger('semuq_eval.models.hf').info('before: lost')\n"
        "share_lm_eval_logging()\n"
        "logging.getLogger('semuq_eval.models.hf').info('semuq-hf: 3 of 4 prompts restored')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "semuq-hf: 3 of 4 prompts restored" in out.stderr
    assert "before: lost" not in out.stderr
    assert out.stderr.count("restored") == 1  # no duplicate through the root logger
