"""Scratch folders named after their process: a killed run's are removed by the next run, nothing else is."""

from __future__ import annotations

import os

from semuq_eval.scratch import make_scratch, remove_stale


def test_only_a_dead_processs_entries_with_the_prefix_are_removed(tmp_path):
    prefix = ".enc-x.checkpoints-"
    dead = tmp_path / f"{prefix}999999999-abc"  # above any pid_max: no such process
    dead_file = tmp_path / f"{prefix}999999998-partial"
    own = tmp_path / f"{prefix}{os.getpid()}-def"
    live = tmp_path / f"{prefix}1-ghi"  # init: always running
    no_pid = tmp_path / f"{prefix}9y4z61u0"  # not named after a process: not ours to judge
    other = tmp_path / ".enc-y.checkpoints-999999999-abc"  # another output's
    for folder in (dead, own, live, no_pid, other):
        (folder / "checkpoint-8").mkdir(parents=True)
    dead_file.write_text("x")
    removed = remove_stale(tmp_path, prefix)
    assert sorted(removed) == sorted([dead, dead_file])
    assert {p.name for p in tmp_path.iterdir()} == {own.name, live.name, no_pid.name, other.name}


def test_make_scratch_names_the_folder_after_this_process_and_cleans_first(tmp_path):
    parent = tmp_path / "tmp"  # created when missing
    fresh = make_scratch(parent)
    assert fresh.is_dir() and fresh.parent == parent and fresh.name.startswith(f"{os.getpid()}-")
    (parent / "999999999-old").mkdir()
    second = make_scratch(parent, "")
    assert {p.name for p in parent.iterdir()} == {fresh.name, second.name}


def test_a_prefix_with_glob_characters_is_matched_literally(tmp_path):
    prefix = ".enc[v1].checkpoints-"
    dead = tmp_path / f"{prefix}999999999-abc"
    lookalike = tmp_path / ".encv.checkpoints-999999999-abc"  # what the glob pattern would also match
    dead.mkdir()
    lookalike.mkdir()
    assert remove_stale(tmp_path, prefix) == [dead] and lookalike.exists()
