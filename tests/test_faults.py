"""The fault suite (issue 56; docs/safety.md, "Faults"): a kill at a write point, a full disk, a read-only folder
and a second writer, through every command that writes a store, a label set, a record or a board.

For each: the command never exits 0 having failed to write an output; a kill leaves nothing a reader takes for a
complete result (it sees the old result, the new one whole, or refuses in one line); the same command run again
finishes the job, without ``--force``, and leaves no temporary file; two writers of one target: one succeeds, the
other exits non-zero in one line naming the holder.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import random
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from semuq_eval.commands import main as cli_main
from semuq_eval.durable import UNFINISHED, is_temporary
from semuq_eval.harness.label_sets import read_label_set
from semuq_eval.harness.record import read_record
from semuq_eval.harness.store import open_store
from tests.fixtures import faults
from tests.fixtures.tiny_encoders import tiny_st_encoder, tiny_wordpiece_dir  # noqa: F401  (fixtures)
from tests.fixtures.tiny_harness import canned_run

pytestmark = pytest.mark.faults

KILL_POINTS = 6
"""Write points killed at per command beyond the first and the last (seeded sample; every point when fewer)."""


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A finished run store (canned white-box LLM, N = 4, lexical)."""
    tmp = tmp_path_factory.mktemp("faults")
    return canned_run(tmp, tmp / "out")


def _cli(argv: list[str]) -> int:
    """``semuq-eval argv`` in this process: its exit code (some commands exit through argparse)."""
    try:
        return cli_main(argv)
    except SystemExit as stop:
        return int(stop.code or 0)


def _command_lines(capsys) -> list[str]:
    """The command's own stderr lines (``semuq-eval ...``), without the log records an earlier run's logging set-up
    in this process adds."""
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("semuq-eval")]


def _leftovers(folder: Path, *, locks: bool = True) -> list[str]:
    """The temporary files, unfinished markers and (``locks``) lock files under ``folder``."""
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if is_temporary(p) and (locks or not p.name.endswith(".semuq-lock"))
    )


def _questions(record_path: Path) -> list[dict]:
    return read_record(record_path).questions


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny GPT-2 folder and a QA set for real ``semuq-eval run`` calls."""
    from tests.fixtures.tiny_harness import write_qa
    from tests.fixtures.tiny_lm import build_tiny_gpt2

    tmp = tmp_path_factory.mktemp("tiny-llm")
    return build_tiny_gpt2(tmp / "gpt2"), write_qa(tmp / "data")


def _run_argv(tiny_llm: tuple[Path, Path], *, limit: int, n_samples: int) -> list[str]:
    """``run`` of the tiny LLM on ``limit`` TriviaQA questions, N = ``n_samples``, lexical only (no --output_path)."""
    model, data = tiny_llm
    metadata = {"data_dir": str(data), "n_samples": n_samples, "operators": ["lexical"], "bootstrap": 10}
    argv = [
        "run",
        "--model",
        "semuq-hf",
        "--model_args",
        f"pretrained={model}",
        "--tasks",
        "semuq_triviaqa_dpr",
    ]
    return [
        *argv,
        "--limit",
        str(limit),
        "--gen_kwargs",
        "max_gen_toks=4",
        "--metadata",
        json.dumps(metadata),
    ]


# -- kill at a write point ---------------------------------------------------------------------------------
# each case: (argv for a work folder, the output a reader reads, what the reader sees of a complete output)


def _judge(work: Path) -> list[str]:
    return ["judge", str(work / "store"), "--judge", "string", "--name", "j"]


def _read_judge(work: Path):
    return read_label_set(work / "store", "j").records


def _export(work: Path) -> list[str]:
    return ["export-record", str(work / "store"), "--output", str(work / "r.jsonl.gz")]


def _read_export(work: Path):
    return _questions(work / "r.jsonl.gz")


def _rescore(work: Path) -> list[str]:
    return ["rescore", str(work / "store"), "--store_output", str(work / "t"), "--bootstrap", "20"]


def _read_rescore(work: Path):
    reader = open_store(work / "t")
    return reader.manifest["task"], reader.items, reader.breakdown()["n_docs"], len(reader.docs(hidden=False))


def _board(work: Path) -> list[str]:
    return ["leaderboard", str(work / "store"), "--output", str(work / "board"), "--bootstrap", "20"]


def _read_board(work: Path):
    board = work / "board"
    if (board / UNFINISHED).exists():
        raise ValueError(f"{board}: an unfinished leaderboard")
    document = json.loads((board / "leaderboard.json").read_text())
    page = (board / "cells.js").read_text()
    assert page.startswith("window.SEMUQ_LEADERBOARD = ") and page.rstrip().endswith(";")
    assert (board / "index.html").read_text().rstrip().endswith("</html>")
    return document["cells"]


CASES: dict[str, tuple[Callable[[Path], list[str]], Callable[[Path], object]]] = {
    "judge": (_judge, _read_judge),
    "export-record": (_export, _read_export),
    "rescore --store_output": (_rescore, _read_rescore),
    "leaderboard": (_board, _read_board),
}


def _work(store: Path, folder: Path) -> Path:
    folder.mkdir(parents=True)
    shutil.copytree(store, folder / "store")
    return folder


def _read_or_refuse(read: Callable[[Path], object], work: Path) -> object | None:
    """What a reader makes of the output after a kill: the result, or None when it refuses it in one line as
    unfinished or absent (anything else fails the test)."""
    try:
        return read(work)
    except FileNotFoundError:
        return None
    except ValueError as err:
        message = str(err)
        assert "\n" not in message and ("unfinished" in message or "not a semuq run store" in message), (
            message
        )
        return None


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_kill_at_any_write_point_leaves_no_partial_result_and_a_rerun_completes_it(store, tmp_path, case):
    argv_of, read = CASES[case]
    clean = _work(store, tmp_path / "clean")
    code, points = faults.run(argv_of(clean))
    assert code == 0 and points > 0, (code, points)
    expected = read(clean)
    inner = list(range(2, points))
    chosen = [1, *sorted(random.Random(case).sample(inner, min(KILL_POINTS, len(inner)))), points]
    for k in dict.fromkeys(chosen):
        work = _work(store, tmp_path / f"kill-{k}")
        code, _ = faults.run(argv_of(work), kill_at=k)
        assert code == -9, f"{case}: not killed at write point {k} of {points}"
        seen = _read_or_refuse(read, work)
        assert seen is None or seen == expected, f"{case}: a reader took a partial result after a kill at {k}"
        # refused or absent: the same command again completes it without --force; whole: it is replaced with it
        code, _ = faults.run(argv_of(work) + ([] if seen is None else ["--force"]))
        assert code == 0 and read(work) == expected, f"{case}: the rerun after a kill at {k} did not complete"
        assert _leftovers(work) == [], f"{case}: left behind after a kill at {k} and a rerun"


# -- a reader refuses a multi-file output whose last file is missing ------------------------------------


def test_a_label_set_without_its_last_file_is_refused_and_replaced_without_force(store, tmp_path, capsys):
    work = _work(store, tmp_path / "w")
    assert _cli(_judge(work)) == 0
    (work / "store" / "labels" / "j.json").unlink()
    with pytest.raises(ValueError, match=r"j\.jsonl: an unfinished label set \(no j\.json"):
        read_label_set(work / "store", "j")
    code = _cli(["rescore", str(work / "store"), "--labels", "j", "--bootstrap", "20"])
    assert code == 2 and "unfinished label set" in capsys.readouterr().err
    assert _cli(_judge(work)) == 0 and read_label_set(work / "store", "j").records


def test_a_label_set_whose_rows_changed_after_its_manifest_is_refused(store, tmp_path):
    work = _work(store, tmp_path / "w")
    assert _cli(_judge(work)) == 0
    rows = work / "store" / "labels" / "j.jsonl"
    rows.write_text(rows.read_text().splitlines()[0] + "\n")
    with pytest.raises(ValueError, match="not those j.json was written with"):
        read_label_set(work / "store", "j")


@pytest.mark.parametrize("last", ["breakdown.json", "marker"])
def test_a_run_store_without_its_last_file_is_refused(store, tmp_path, capsys, last):
    work = _work(store, tmp_path / "w")
    target = work / "t"
    assert _cli(_rescore(work)) == 0
    if last == "marker":  # a writer stopped between its first and its last file
        (target / UNFINISHED).write_text("1\n")
    else:
        (target / "breakdown.json").unlink()
        (target / UNFINISHED).write_text("1\n")
    with pytest.raises(ValueError, match="an unfinished run store"):
        open_store(target).manifest  # noqa: B018
    assert _cli(["judge", str(target), "--judge", "string", "--name", "x"]) == 2
    assert "an unfinished run store" in capsys.readouterr().err
    assert _cli(_rescore(work)) == 0 and not (target / UNFINISHED).exists()  # completed without --force


def test_an_unfinished_board_is_rebuilt_without_force(store, tmp_path):
    work = _work(store, tmp_path / "w")
    assert _cli(_board(work)) == 0
    (work / "board" / UNFINISHED).write_text("1\n")
    (work / "board" / ".leaderboard.json.999999999.semuq-tmp").write_text("{")  # a killed writer's debris
    assert _cli(_board(work)) == 0
    assert _leftovers(work / "board") == []


# -- two writers of one target ------------------------------------------------------------------------------


def _hold(target: Path, what: str) -> subprocess.Popen:
    """A child process holding ``target``'s writer lock until killed (another semuq-eval at work)."""
    code = (
        "import sys, time; from semuq_eval.durable import writer_lock\n"
        f"with writer_lock({str(target)!r}, {what!r}):\n    print('held', flush=True); time.sleep(600)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=faults.ROOT)
    assert child.stdout.readline().strip() == "held"
    return child


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("case", "target"),
    [
        ("judge", "store/labels/j"),
        ("export-record", "r.jsonl.gz"),
        ("rescore --store_output", "t"),
        ("leaderboard", "board"),
        ("train-data export", "d.jsonl.gz"),
        ("decide calibrate", "cal.json"),
    ],
)
def test_a_second_writer_of_one_target_gets_one_line_naming_the_first(store, tmp_path, capsys, case, target):
    work = _work(store, tmp_path / "w")
    argv_of = CASES[case][0] if case in CASES else lambda work: OUTPUT_COMMANDS[case](work / "store", work)
    child = _hold(work / target, "test")
    try:
        code = _cli(argv_of(work))
    finally:
        child.kill()
        child.wait()
    lines = _command_lines(capsys)
    err = "\n".join(lines)
    assert code == 1 and len(lines) == 1, (code, err)
    assert f"PID {child.pid}" in err and "is writing this" in err
    assert _cli(argv_of(work)) == 0  # the lock went with its holder


@pytest.mark.slow
@pytest.mark.subprocess
def test_two_judges_started_together_one_succeeds_the_other_fails_in_one_line(store, tmp_path):
    work = _work(store, tmp_path / "w")
    env = {"PYTHONPATH": str(faults.ROOT)}
    argv = [sys.executable, "-m", "semuq_eval", *_judge(work)]
    children = [
        subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, cwd=faults.ROOT, env={**_env(), **env})
        for _ in range(2)
    ]
    results = [(c.wait(timeout=300), c.stderr.read()) for c in children]
    codes = sorted(code for code, _ in results)
    if codes == [0, 0]:  # the first finished before the second started: nothing raced
        pytest.skip("the two judges did not overlap on this machine")
    assert codes == [0, 1], results
    loser = next(err for code, err in results if code == 1).strip().splitlines()
    assert len(loser) == 1 and "is writing this label set" in loser[0]


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


# -- a full disk and a read-only folder ---------------------------------------------------------------------


@contextlib.contextmanager
def _small_disk(folder: Path, size_kb: int):
    """A tmpfs of ``size_kb`` KiB mounted at ``folder`` (skips when this machine does not allow mounting)."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or 'mount failed'})")
    try:
        yield folder
    finally:
        for _ in range(20):
            if subprocess.run(["umount", str(folder)], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:  # still busy (a file this process holds open): detached now, gone when the file is closed
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` but for about ``leave`` bytes."""
    free = shutil.disk_usage(disk).free
    with open(disk / "filler", "wb") as fh:
        fh.write(b"\0" * max(0, free - leave))


def _remount_read_only(folder: Path) -> None:
    done = subprocess.run(["mount", "-o", "remount,ro", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot remount read-only here ({done.stderr.strip()})")


OUTPUT_COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {  # (store, folder on the small disk) -> argv
    "judge": lambda store, disk: ["judge", str(disk / "store"), "--judge", "string", "--name", "j"],
    "export-record": lambda store, disk: ["export-record", str(store), "--output", str(disk / "r.jsonl.gz")],
    "rescore --store_output": lambda store, disk: ["rescore", str(store), "--store_output", str(disk / "t")],
    "rescore --output": lambda store, disk: ["rescore", str(store), "--output", str(disk / "b.json")],
    "leaderboard": lambda store, disk: ["leaderboard", str(store), "--output", str(disk / "board")],
    "train-data export": lambda store, disk: [
        "train-data",
        "export",
        str(store),
        "--output",
        str(disk / "d.jsonl.gz"),
    ],
    "decide calibrate": lambda store, disk: [
        "decide",
        "calibrate",
        str(store),
        "--estimator",
        "kle_heat@lexical",
        "--output",
        str(disk / "cal.json"),
    ],
    "check-operator": lambda store, disk: [
        "check-operator",
        "lexical",
        "--store",
        str(store),
        "--write-baseline",
        str(disk / "baseline.json"),
        "--report",
        str(disk / "r"),
        "--no_progress",
    ],
    "diagnose": lambda store, disk: [
        "diagnose",
        str(store),
        "--operators",
        "lexical",
        "--output",
        str(disk / "diag"),
        "--bootstrap",
        "20",
        "--no_progress",
    ],
}


@pytest.mark.parametrize("fault", ["full", "read-only"])
@pytest.mark.parametrize("command", sorted(OUTPUT_COMMANDS))
def test_no_command_exits_0_when_it_cannot_write_its_output(store, tmp_path, capsys, command, fault):
    with _small_disk(tmp_path / "disk", 256) as disk:
        if command == "judge":  # the judge writes into the store it reads: the store lies on the disk
            shutil.copytree(store, disk / "store", ignore=shutil.ignore_patterns("hidden.*"))
        if fault == "full":
            _fill(disk, 2048)
        else:
            _remount_read_only(disk)
        argv = OUTPUT_COMMANDS[command](store, disk)
        if command != "diagnose":
            argv += ["--bootstrap", "20"] if command.startswith("rescore") or command == "leaderboard" else []
        code = _cli(argv)
        err = _command_lines(capsys)
        assert code != 0, f"{command} exited 0 on a {fault} disk"
        assert len(err) == 1 and str(disk) in err[0], err
        assert "Traceback" not in err[0] and str(store) not in err[0].split(str(disk))[0][-40:]
        assert _leftovers(disk) == []


def test_run_exits_1_when_its_store_cannot_be_written(tmp_path, capsys, monkeypatch):
    from semuq_eval.commands.run import _report_write_failures
    from semuq_eval.harness.finish import WRITE_FAILURES, RunFacts, finish_run
    from semuq_eval.harness.settings import Settings
    from semuq_eval.harness.store import RunStore

    settings = Settings(n_samples=2, operators=("lexical",), bootstrap=10)
    with _small_disk(tmp_path / "disk", 64) as disk:
        store = RunStore(disk / "s")
        store.begin("semuq_toy", settings.as_dict())
        _fill(disk, 512)
        WRITE_FAILURES.clear()
        items = [
            {"doc_id": i, "labels": {"greedy": i % 2, "majority": i % 2}, "scores": {"x": i * 0.1}}
            for i in range(40)
        ]
        with contextlib.suppress(Exception):
            finish_run(items, settings, RunFacts("semuq_toy", {}, {}), store=store, strict=False)
        failures = list(WRITE_FAILURES)
    assert failures and all("semuq_toy: cannot write" in f and str(disk) in f for f in failures)
    assert _report_write_failures(failures) == 1
    assert "semuq-eval run: semuq_toy: cannot write" in capsys.readouterr().err


def test_lm_evals_unsaved_results_make_run_exit_1(capsys):
    import logging

    from semuq_eval.commands.run import _report_write_failures, _watching_saves

    tracker = logging.getLogger("lm_eval.loggers.evaluation_tracker")
    level = tracker.level
    tracker.setLevel(logging.INFO)  # lm-eval's own logging setup, at its default verbosity
    with _watching_saves() as saves:
        tracker.warning("Could not save results aggregated")
        tracker.info("OSError(28, 'No space left on device')")
    tracker.setLevel(level)
    assert saves.failures == [
        "lm-eval: could not save results aggregated (OSError(28, 'No space left on device')); its results file "
        "may be cut short"
    ]
    assert _report_write_failures(saves.failures) == 1


def test_a_record_is_never_half_written(store, tmp_path):
    """gzip bytes that stop short (a copy cut off) are refused in one line naming the file."""
    work = _work(store, tmp_path / "w")
    assert _cli(_export(work)) == 0
    data = (work / "r.jsonl.gz").read_bytes()
    cut = work / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=str(cut)):
        read_record(cut)
    assert gzip.decompress(data)


@pytest.mark.slow
@pytest.mark.subprocess
def test_run_on_a_full_disk_exits_1_in_one_line_naming_the_file(tmp_path, tiny_llm):
    argv = _run_argv(tiny_llm, limit=3, n_samples=2)
    with _small_disk(tmp_path / "disk", 256) as disk:  # in a child: lm-eval's logging set-up outlives a run
        _fill(disk, 1024)
        code, _ = faults.run([*argv, "--output_path", str(disk / "out")], check=False)
        left = _leftovers(disk)
    err = faults.LAST_STDERR[0]
    ours = re.findall(r"semuq-eval run: [^\r\n]*", err)  # after a progress bar's carriage return
    assert code == 1 and len(ours) == 1, err[-3000:]
    assert "cannot write" in ours[0] and str(disk) in ours[0], ours
    assert left == [] or all(p.endswith(".semuq-lock") for p in left), left  # a lock goes with the process


@pytest.mark.slow
def test_train_operator_on_a_full_disk_exits_non_zero_in_one_line(tmp_path, capsys, tiny_st_encoder):  # noqa: F811
    from tests.fixtures.training_stores import write_store
    from tests.test_training import qa_rows

    store = write_store(tmp_path / "out" / "semuq" / "semuq_nqopen_train" / "tiny-llm", [
        (q, ["ref"], samples) for q, samples in qa_rows(16)
    ])  # fmt: skip
    with _small_disk(tmp_path / "disk", 256) as disk:
        argv = ["train-operator", "--stores", str(store), "--output", str(disk / "op"), "--backbone"]
        argv += [str(tiny_st_encoder), "--epochs", "1", "--batch_size", "4", "--val_fraction", "0.25"]
        code = _cli([*argv, "--device", "cpu", "--no_progress"])
        err = _command_lines(capsys)
        assert code != 0 and len(err) == 1 and str(disk) in err[0], err
        left = {p.name for p in (disk / "op").iterdir()} if (disk / "op").is_dir() else set()
        assert UNFINISHED in left or not left & {"modules.json", "config.json"}, left  # never read as a model


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_second_run_into_the_same_output_gets_one_line_naming_the_first(tmp_path, tiny_llm):
    out = tmp_path / "out"
    child = _hold(out / "semuq" / "_journal" / "gpt2" / "rank0.jsonl", "generation journal")
    try:
        argv = [*_run_argv(tiny_llm, limit=2, n_samples=2), "--output_path", str(out)]
        code, _ = faults.run(argv, check=False)  # in a child: lm-eval's logging set-up outlives a run
    finally:
        child.kill()
        child.wait()
    ours = re.findall(r"semuq-eval run: [^\r\n]*", faults.LAST_STDERR[0])
    assert code == 1 and len(ours) == 1 and f"PID {child.pid}" in ours[0], ours


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_run_killed_at_a_write_point_is_never_read_and_its_rerun_gives_the_same_store(tmp_path, tiny_llm):
    argv = _run_argv(tiny_llm, limit=3, n_samples=3)

    def store(out: Path):
        return open_store(out / "semuq" / "semuq_triviaqa_dpr" / "gpt2")

    code, points = faults.run([*argv, "--output_path", str(tmp_path / "clean")])
    assert code == 0 and points > 2
    expected = store(tmp_path / "clean").items
    for k in dict.fromkeys([random.Random("run").randrange(2, points), points]):  # while answering; the last
        out = tmp_path / f"kill-{k}"
        assert faults.run([*argv, "--output_path", str(out)], kill_at=k)[0] == -9
        assert _read_or_refuse(lambda work: store(work).items, out) in (None, expected)
        assert faults.run([*argv, "--output_path", str(out)])[0] == 0  # resumes from its journal
        assert store(out).items == expected, f"the rerun after a kill at write point {k} of {points} differs"
        assert _leftovers(out) == []
