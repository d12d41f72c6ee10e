"""The semuq-eval command line: project commands and the lm-eval passthrough."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from semuq_eval import commands as cli
from semuq_eval import task_files

REPO = Path(__file__).resolve().parents[1]


def test_tasks_dir_is_the_shipped_task_folder(capsys):
    assert cli.main(["tasks-dir"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert printed == task_files.tasks_dir() and printed.resolve() == (REPO / "tasks").resolve()


def test_assets_list_on_an_empty_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SEMUQ_EVAL_CACHE", str(tmp_path))
    assert cli.main(["assets", "--list"]) == 0
    out = capsys.readouterr().out
    assert (
        "all-minilm-l6-v2" in out and "triviaqa" in out and "prepared" not in out.replace("not prepared", "")
    )


@pytest.mark.subprocess
def test_module_entry_point_runs():
    done = subprocess.run(
        [sys.executable, "-m", "semuq_eval", "tasks-dir"], capture_output=True, text=True, check=True
    )
    assert Path(done.stdout.strip()).is_dir()


@pytest.mark.subprocess
def test_semuq_info_messages_are_shown_like_lm_evals():
    code = (
        "import logging\n"
        "from lm_eval.utils import setup_logging\n"
        "from semuq_eval.logs import share_lm_eval_logging\n"
        "setup_logging()\n"
        "logging.getLogger('semuq_eval.models.hf').info('before: lost')\n"
        "share_lm_eval_logging()\n"
        "logging.getLogger('semuq_eval.models.hf').info('semuq-hf: 3 of 4 prompts restored')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "semuq-hf: 3 of 4 prompts restored" in out.stderr
    assert "before: lost" not in out.stderr
    assert out.stderr.count("restored") == 1  # no duplicate through the root logger


def test_help_lists_every_command_with_what_it_does(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in [*cli.COMMANDS, *cli.LM_EVAL_COMMANDS]:
        assert f"  {name} " in out
    assert "prepare the offline models" in out and ":func:" not in out


def test_unknown_command_is_an_error_listing_the_commands(capsys):
    assert cli.main(["judg", "--help"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'judg'" in err and "rescore" in err and "run" in err


def test_every_command_target_resolves():
    import importlib

    for target, _ in cli.COMMANDS.values():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function))


def test_a_bad_setting_is_refused_in_one_line_before_the_model_loads(tmp_path, capsys):
    from semuq_eval.commands import main as cli_main

    argv = [
        "run",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={tmp_path / 'no-such-model'}",
        "--tasks",
        "semuq_webquestions",
        "--metadata",
        '{"bootstrap": 0}',
        "--limit",
        "2",
    ]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        err[-1]
        == "semuq-eval run: metadata bootstrap must be in 1..100,000, got 0 (--debug shows the traceback)"
    )
    assert not any("Traceback" in line for line in err)  # and no word about the model that does not exist


def test_an_output_folder_that_cannot_be_written_is_refused_before_the_model_loads(tmp_path, capsys):
    from semuq_eval.commands import main as cli_main

    blocker = tmp_path / "results"
    blocker.write_text("a file where the runs' folder should be")
    argv = [
        "run", "--model", "hf", "--model_args", f"pretrained={tmp_path / 'no-such-model'}",
        "--tasks", "semuq_webquestions", "--limit", "2", "--output_path", str(blocker / "out"),
    ]  # fmt: skip
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(
        f"semuq-eval run: --output_path {blocker / 'out'}: {blocker} is a file, not a folder"
    )
    assert not any("Traceback" in line for line in err)
    assert blocker.read_text() == "a file where the runs' folder should be"


def test_the_task_refuses_a_store_folder_it_cannot_write_before_generating(tmp_path):
    from semuq_eval.writes import check_writable

    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        check_writable(tmp_path / "f" / "semuq" / "t", "the run store folder")
    with pytest.raises(ValueError, match="cannot write in /proc"):
        check_writable("/proc/semuq-test/out", "the run store folder")
    check_writable(tmp_path / "new" / "deeper", "the run store folder")
    assert not (tmp_path / "new").exists()  # nothing created by the check
