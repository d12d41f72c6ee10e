"""Nothing a user wrote is replaced without --force, and no run writes outside its folder (issue 20, finding 3):
`rescore --store_output` into a non-empty folder, `leaderboard --output` into a folder of other files (and its
plots folder), and a run id that would climb out of the task folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from semuq_eval.commands import main as cli_main
from semuq_eval.context import RunContext, model_slug, safe_name
from semuq_eval.harness.label_sets import write_label_set
from tests.fixtures.tiny_harness import canned_run


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("overwrites")
    return canned_run(tmp, tmp / "runs")


def test_rescore_refuses_a_non_empty_store_output_and_force_leaves_nothing_of_the_old_store(
    store, tmp_path, capsys
):
    target = tmp_path / "rescored"
    assert cli_main(["rescore", str(store), "--store_output", str(target), "--bootstrap", "20"]) == 0
    write_label_set(
        target, "old", [{"doc_id": 0, "greedy": 1, "samples": [1]}], {}
    )  # labels of the old answers
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert cli_main(["rescore", str(store), "--store_output", str(target), "--bootstrap", "20"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exists and is not empty" in err and "--force" in err
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before  # untouched
    argv = ["rescore", str(store), "--store_output", str(target), "--bootstrap", "20", "--force"]
    assert cli_main(argv) == 0
    assert not (target / "labels").exists()  # the old label set cannot pass for the new store's
    assert cli_main(["rescore", str(target), "--labels", "old", "--bootstrap", "20"]) == 2


def test_leaderboard_refuses_a_folder_of_other_files_and_keeps_a_users_plots(store, tmp_path, capsys):
    out = tmp_path / "board"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    capsys.readouterr()
    assert cli_main(["leaderboard", str(store), "--output", str(out), "--bootstrap", "20"]) == 2
    assert "not a leaderboard" in capsys.readouterr().err and (out / "notes.md").read_text() == "mine"
    assert cli_main(["leaderboard", str(store), "--output", str(out), "--bootstrap", "20", "--force"]) == 0
    mine = out / "plots" / "my-figure.png"
    mine.write_bytes(b"\x89PNG mine")
    built = sorted(p.name for p in (out / "plots").glob("*.png") if p != mine)
    assert built
    assert (
        cli_main(["leaderboard", str(store), "--output", str(out), "--bootstrap", "20"]) == 0
    )  # its own: rebuilt
    assert mine.read_bytes() == b"\x89PNG mine"  # a file the build did not write stays
    assert sorted(p.name for p in (out / "plots").glob("*.png") if p != mine) == built
    file_output = tmp_path / "a-file"
    file_output.write_text("x")
    assert cli_main(["leaderboard", str(store), "--output", str(file_output)]) == 2
    assert "is a file" in capsys.readouterr().err and file_output.read_text() == "x"
    assert cli_main(["leaderboard", str(store), "--output", str(out), "--header", "@/nonexistent"]) == 2
    assert "--header @/nonexistent" in capsys.readouterr().err


@pytest.mark.parametrize("run_id", ["..", ".", "/", "../..", ""])
def test_a_run_id_never_climbs_out_of_its_task_folder(tmp_path, run_id):
    if not run_id:
        assert (
            RunContext.resolve(output_dir=tmp_path, run_id=run_id).store_dir("t") == tmp_path / "semuq" / "t"
        )
        return
    with pytest.raises(ValueError, match="no usable folder name"):
        RunContext.resolve(output_dir=tmp_path, run_id=run_id)


def test_names_made_from_paths_stay_inside(tmp_path, monkeypatch):
    assert safe_name("../../etc/x") == "etc__x"
    assert safe_name(".hidden") == "hidden"
    monkeypatch.chdir(tmp_path / ".")
    (tmp_path / "models" / "m1").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "models" / "m1")
    assert model_slug("..") == "models"  # pretrained=.. names the folder it points to
    store = RunContext.resolve(output_dir=tmp_path, model="..").store_dir("semuq_x")
    assert store == tmp_path / "semuq" / "semuq_x" / "models"


def test_judge_replaces_a_label_set_only_with_force(store, tmp_path, capsys):
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    argv = ["judge", str(copy), "--judge", "string", "--name", "mine"]
    assert cli_main(argv) == 0
    before = (copy / "labels" / "mine.jsonl").read_bytes()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        cli_main(argv)
    assert exit_.value.code == 2 and "label set 'mine' exists" in capsys.readouterr().err
    assert (copy / "labels" / "mine.jsonl").read_bytes() == before
    assert cli_main([*argv, "--force"]) == 0


def test_check_operator_never_replaces_a_baseline_without_force(store, tmp_path, capsys):
    baseline = tmp_path / "baseline.json"
    baseline.write_text('{"mine": true}')
    argv = [
        "check-operator",
        "lexical",
        "--store",
        str(store),
        "--write-baseline",
        str(baseline),
        "--no_progress",
    ]
    assert cli_main(argv) == 2
    assert "exists; pass --force" in capsys.readouterr().err and baseline.read_text() == '{"mine": true}'
    assert cli_main([*argv, "--force"]) == 0 and "mine" not in baseline.read_text()


def test_diagnose_refuses_a_folder_of_other_files_before_any_work(store, tmp_path, capsys):
    out = tmp_path / "diag"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    argv = [
        "diagnose",
        str(store),
        "--operators",
        "lexical",
        "--output",
        str(out),
        "--bootstrap",
        "20",
        "--no_progress",
    ]
    assert cli_main(argv) == 2
    assert "holds other files" in capsys.readouterr().err and sorted(p.name for p in out.iterdir()) == [
        "notes.md"
    ]
    assert cli_main([*argv, "--force"]) == 0 and (out / "diagnosis.json").is_file()
    assert cli_main(argv) == 0  # its own earlier diagnosis: rebuilt in place
    assert (out / "notes.md").read_text() == "mine"


def _digest(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("where", ["parent", "grandparent", "inside"])
def test_rescore_never_replaces_a_folder_around_or_inside_its_source_even_with_force(
    store, tmp_path, capsys, where
):
    root = tmp_path / "runs"
    shutil.copytree(store.parents[2], root)  # <output>/semuq/<task>/<run>: the whole output folder
    source = root / store.relative_to(store.parents[2])
    target = {"parent": source.parent, "grandparent": source.parents[1], "inside": source / "sub"}[where]
    before = _digest(root)
    capsys.readouterr()
    argv = ["rescore", str(source), "--store_output", str(target), "--bootstrap", "20", "--force"]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the input" in err and "apart from it" in err
    assert _digest(root) == before  # nothing deleted, nothing written


def test_force_replaces_a_run_store_but_never_a_folder_of_other_files(store, tmp_path, capsys):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.md").write_text("mine")
    capsys.readouterr()
    argv = ["rescore", str(store), "--store_output", str(target), "--bootstrap", "20", "--force"]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a run store" in err and (target / "notes.md").read_text() == "mine"


def test_rescore_output_replaces_a_breakdown_but_not_a_users_file_without_force(store, tmp_path, capsys):
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}')
    argv = ["rescore", str(store), "--output", str(notes), "--bootstrap", "20"]
    capsys.readouterr()
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "not a semuq-breakdown/1 file" in err
        and notes.read_text() == '{"mine": true}'
    )
    assert cli_main([*argv, "--force"]) == 0 and "mine" not in notes.read_text()
    assert cli_main(argv) == 0  # now it is a breakdown the tool wrote: replaced without --force


def test_judge_never_writes_through_a_labels_symlink_out_of_the_store(store, tmp_path, capsys):
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (copy / "labels").symlink_to(outside, target_is_directory=True)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        cli_main(["judge", str(copy), "--judge", "string", "--name", "mine"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "leads outside" in err
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("name", ["mine\n", "mine\nother", "-mine", "a/b"])
def test_a_label_set_name_must_match_whole(store, tmp_path, name):
    with pytest.raises(ValueError, match="label set name"):
        write_label_set(tmp_path, name, [], {})
    assert not (tmp_path / "labels").exists() or list((tmp_path / "labels").iterdir()) == []
