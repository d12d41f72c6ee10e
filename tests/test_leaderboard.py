"""The leaderboard: golden files, figures equal to the project's metric functions, bad input.

Fixtures: ``tests/fixtures/leaderboard/`` (stores and golden files made by ``make_fixtures.py`` there).
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from semuq_eval.commands.leaderboard import main
from semuq_eval.jsonio import read_json, write_json
from semuq_eval.leaderboard import (
    LeaderboardConfig,
    LeaderboardInputError,
    group_sections,
    load_runs,
)
from semuq_eval.leaderboard.build import build
from semuq_eval.leaderboard.compute import compute
from semuq_eval.leaderboard.discovery import expand_inputs
from semuq_eval.leaderboard.read_run import load_run
from semuq_eval.leaderboard.schema import read_document
from semuq_eval.leaderboard.sections import common_questions
from semuq_eval.metrics import Bootstrap, auroc, paired_difference
from tests.fixtures.tiny_encoders import tiny_st_encoder, tiny_wordpiece_dir  # noqa: F401  (fixtures)
from tools import board_digest

FIXTURES = Path(__file__).parent / "fixtures" / "leaderboard"
STORES = FIXTURES / "stores"
GOLDEN = FIXTURES / "golden"
CREATED = "2026-01-01T00:00:00+00:00"
FAST = LeaderboardConfig(n_resamples=200)


def _store(llm: str, task: str) -> Path:
    return STORES / llm / "semuq" / task / llm


def _copy(llm: str, task: str, dest: Path) -> Path:
    target = dest / llm / "semuq" / task / llm
    shutil.copytree(_store(llm, task), target)
    return target


def _close(a, b, path="") -> None:
    """Equal JSON values, numbers to 1e-9 relative."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{path}: keys {sorted(set(a) ^ set(b))}"
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: lengths {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (
            f"{path}: {a} vs {b}"
        )
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


@pytest.fixture(scope="module")
def golden_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("lb")
    import os

    cwd = os.getcwd()
    os.chdir(FIXTURES)
    try:
        doc = build(
            ["stores/*/semuq/*/*"], out, config=FAST, created=CREATED, plots=True, relative_to=FIXTURES,
            header="Golden fixture: synthetic runs.",
        )  # fmt: skip
    finally:
        os.chdir(cwd)
    return out, doc


# -- golden ---------------------------------------------------------------------------------------------


def test_golden_json(golden_build):
    out, _ = golden_build
    got, want = read_json(out / "leaderboard.json"), read_json(GOLDEN / "leaderboard.json")
    assert got["format"] == "semuq-leaderboard/2" and set(got["generator"]) >= {
        "semuq_eval",
        "numpy",
        "python",
    }
    got.pop("generator"), want.pop("generator")
    _close(got, want)


def test_the_json_keeps_run_facts_once_and_reads_back_as_the_records(golden_build, tmp_path):
    """leaderboard.json's run tables: a row names its run by index (no section, LLM, label set or task
    repeated, no aggregator / operator / accuracy), and read_document gives back the very records the writers
    used; another format (version 1 among them) and an edited record are clear errors."""
    from semuq_eval.leaderboard.schema import CELL_COLUMNS, RANK_COLUMNS
    from semuq_eval.leaderboard.write import write_json_document

    out, doc = golden_build
    raw = read_json(out / "leaderboard.json")
    assert raw["cells"]["columns"] == list(CELL_COLUMNS) and len(raw["cells"]["rows"]) == len(doc["cells"])
    assert raw["ranks"]["llms"]["columns"] == raw["ranks"]["estimators"]["columns"] == list(RANK_COLUMNS)
    assert {row[0] for row in raw["cells"]["rows"]} == set(range(len(raw["runs"])))
    assert not {"llm", "section", "task", "label_set", "accuracy", "operator"} & set(CELL_COLUMNS)
    assert read_document(out / "leaderboard.json") == json.loads(json.dumps(doc))
    text = (out / "leaderboard.json").read_text()
    one_line = [line for line in text.splitlines() if line.startswith("[")]  # a run-table row per line
    assert len(one_line) == len(doc["cells"]) + len(doc["ranks"]["llms"]) + len(doc["ranks"]["estimators"])
    for old in ("semuq-leaderboard/0", "semuq-leaderboard/1"):
        write_json(tmp_path / "old.json", {**raw, "format": old})
        with pytest.raises(
            ValueError, match=rf"old.json: format '{old}' is not a leaderboard this version reads"
        ):
            read_document(tmp_path / "old.json")
    edited = {**doc, "cells": [{**doc["cells"][0], "llm": "someone else"}, *doc["cells"][1:]]}
    with pytest.raises(ValueError, match=r"cells: no run \('semuq_toy_a', 'someone else'\)"):
        write_json_document(edited, tmp_path / "edited.json")
    edited["cells"][0] = {**doc["cells"][0], "accuracy": 0.123}
    with pytest.raises(ValueError, match="cells: accuracy of .* differ from its run's"):
        write_json_document(edited, tmp_path / "edited.json")


def test_comparisons_on_small_samples_are_flagged_and_counted(golden_build):
    """A comparison is reliable when both its AUROC cells are; the summary repeats its counts over those."""
    _, doc = golden_build
    flag = {
        (c["section"], c["llm"], c["strategy"], c["estimator"]): c["reliable"]
        for c in doc["cells"]
        if c["metric"] == "auroc"
    }
    done = [r for r in doc["comparisons"]["rows"] if r["status"] == "ok"]
    for r in done:
        key = (r["section"], r["llm"], r["strategy"])
        assert r["reliable"] == (flag[(*key, r["estimator"])] and flag[(*key, r["base"])])
    assert any(not r["reliable"] for r in done) and any(r["reliable"] for r in done)
    for s in doc["comparisons"]["summary"]:
        rows = [r for r in done if (r["set"], r["strategy"]) == (s["set"], s["strategy"])]
        kept = [r for r in rows if r["reliable"]]
        assert s["n_cells"] == len(rows) and s["reliable"]["n_cells"] == len(kept)
        assert s["reliable"]["n_improved"] == sum(r["improved"] for r in kept)
        assert s["reliable"]["n_worse_significant"] == sum(
            r["significant"] and not r["improved"] for r in kept
        )
        if kept:
            assert math.isclose(s["reliable"]["mean_difference"], np.mean([r["difference"] for r in kept]))


def test_golden_csv_and_markdown(golden_build):
    out, _ = golden_build
    assert _same_csv(out / "leaderboard.csv", GOLDEN / "leaderboard.csv") > 0
    assert (out / "leaderboard.md").read_text() == (GOLDEN / "leaderboard.md").read_text()
    # per label strategy: 2 LLMs x (2 tasks + mean), then 2 LLMs x 2 tasks (best)
    assert _same_csv(out / "headline.csv", GOLDEN / "headline.csv") == 20


def _same_csv(path: Path, golden: Path) -> int:
    """Assert the CSV at ``path`` equals ``golden`` (figures to 1e-9 relative); returns its number of rows."""
    with open(path) as a, open(golden) as b:
        rows_a, rows_b = list(csv.DictReader(a)), list(csv.DictReader(b))
    assert len(rows_a) == len(rows_b)
    for ra, rb in zip(rows_a, rows_b, strict=True):
        for k in ra:
            if k in ("value", "ci_low", "ci_high", "accuracy") and ra[k]:
                assert math.isclose(float(ra[k]), float(rb[k]), rel_tol=1e-9), (k, ra, rb)
            else:
                assert ra[k] == rb[k], (k, ra, rb)
    return len(rows_a)


def test_outputs_written(golden_build):
    out, doc = golden_build
    assert (out / "index.html").is_file()
    plots = sorted(p.name for p in (out / "plots").glob("*.png"))
    assert plots == [
        "auroc_semuq_toy_a.png",
        "auroc_semuq_toy_b.png",
        "headline_forest.png",
        "heatmap_operator_x_aggregator.png",
        "ranks_semuq_toy_a.png",
        "ranks_semuq_toy_b.png",
        "rejection_semuq_toy_a.png",
        "rejection_semuq_toy_b.png",
        "reliability_semuq_toy_a.png",
        "reliability_semuq_toy_b.png",
    ]
    for name in plots:
        assert (out / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # one row per cell: (section, llm, estimator, strategy, metric) unique, every estimator x LLM x strategy x metric
    keys = [(c["section"], c["llm"], c["estimator"], c["strategy"], c["metric"]) for c in doc["cells"]]
    assert len(keys) == len(set(keys))
    for section in doc["sections"]:
        n = sum(c["section"] == section["id"] for c in doc["cells"])
        assert n == len(section["llms"]) * len(section["estimators"]) * 2 * 4


def test_provenance(golden_build):
    _, doc = golden_build
    alpha = next(r for r in doc["runs"] if r["llm"] == "llm-alpha" and r["task"] == "semuq_toy_a")
    p = alpha["provenance"]
    assert p["model"]["pretrained"] == "/models/llm-alpha" and p["model"]["revision"] == "main"
    assert p["model"]["sha"] == "0123abcd"
    assert p["versions"]["lm_eval"] == "0.4.13" and p["versions"]["torch"] == "2.13.0+cpu"
    assert p["n_samples"] == 5 and p["seed"] == 0 and p["n_docs"] == 60
    assert p["operators"]["enc"]["model"] == "/cache/models/all-minilm-l6-v2"
    assert p["judge"]["judge"] == "string"
    beta = next(r for r in doc["runs"] if r["llm"] == "llm-beta" and r["task"] == "semuq_toy_a")
    assert beta["provenance"]["model"]["pretrained"] == "org/llm-beta"  # from the store's manifest
    assert beta["provenance"]["model"]["revision"] == "v1"
    assert beta["provenance"]["versions"]["lm_eval"] is None
    assert any("no lm-eval results file" in n for n in beta["provenance"]["notes"])
    assert beta["labels"]["majority"] == {
        "n": 56,
        "n_correct": 37,
        "n_incorrect": 19,
        "n_missing": 4,
        "accuracy": 37 / 56,
    }


# -- the figures are the project's ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def board():
    runs = load_runs(expand_inputs([str(STORES / "*" / "semuq" / "*" / "*")]))
    return compute(group_sections(runs), FAST), runs


def _cell(board, llm, task, est, strategy, metric):
    return next(
        c
        for c in board.cells
        if (c["llm"], c["task"], c["estimator"], c["strategy"], c["metric"])
        == (llm, task, est, strategy, metric)
    )


def test_cells_equal_the_runs_own_breakdown(board):
    """No missing labels and the run's bootstrap: AUROC recomputed = the run's; ECE taken from the run."""
    b, runs = board
    run = next(r for r in runs if r.llm == "llm-alpha" and r.task == "semuq_toy_a")
    for name, per in run.breakdown["results"]["greedy"].items():
        cell = _cell(b, "llm-alpha", "semuq_toy_a", name, "greedy", "auroc")
        for k in ("value", "ci_low", "ci_high"):
            assert math.isclose(cell[k], per["auroc"][k], rel_tol=1e-12), (name, k)
        for k in ("n_correct", "n_incorrect", "reliable"):
            assert cell[k] == per["auroc"][k], (name, k)
        assert (cell["note"] or None) == per["auroc"]["note"]
        ece = _cell(b, "llm-alpha", "semuq_toy_a", name, "greedy", "ece")
        assert ece["source"] == "run" and ece["value"] == per["ece"]["value"]
    prr = _cell(b, "llm-alpha", "semuq_toy_a", "se@enc", "greedy", "prr")
    assert prr["source"] == "computed" and prr["status"] == "ok"


def test_ece_recomputed_when_the_bootstrap_differs():
    runs = load_runs([_store("llm-alpha", "semuq_toy_a")])
    b = compute(group_sections(runs), LeaderboardConfig(n_resamples=150))
    cell = _cell(b, "llm-alpha", "semuq_toy_a", "se@enc", "greedy", "ece")
    assert cell["source"] == "computed"
    assert math.isclose(
        cell["value"], runs[0].breakdown["results"]["greedy"]["se@enc"]["ece"]["value"], rel_tol=1e-12
    )


def test_breakdown_figures_are_not_reused_when_its_auroc_differs(tmp_path):
    store = _copy("llm-alpha", "semuq_toy_a", tmp_path)
    bd = read_json(store / "breakdown.json")
    bd["results"]["greedy"]["se@enc"]["auroc"]["value"] += 0.01  # a breakdown of other scores
    bd["results"]["greedy"]["se@enc"]["ece"]["value"] = 0.999
    write_json(store / "breakdown.json", bd)
    b = compute(group_sections(load_runs([store])), FAST)
    ece = _cell(b, "llm-alpha", "semuq_toy_a", "se@enc", "greedy", "ece")
    assert ece["source"] == "computed" and ece["value"] < 0.9
    assert _cell(b, "llm-alpha", "semuq_toy_a", "cae@enc", "greedy", "ece")["source"] == "run"


def test_enc_vs_base_equals_paired_difference(board):
    b, runs = board
    for llm, strategy in (
        ("llm-alpha", "greedy"),
        ("llm-beta", "majority"),
    ):  # beta: 4 majority labels missing
        run = next(r for r in runs if r.llm == llm and r.task == "semuq_toy_a")
        row = next(
            c
            for c in b.comparisons
            if (c["set"], c["llm"], c["task"], c["strategy"], c["estimator"])
            == ("offline", llm, "semuq_toy_a", strategy, "se@enc")
        )
        y = run.labels[strategy]
        keep = np.isfinite(y)
        want = paired_difference(
            np.where(keep, run.scores["se@enc"], np.nan),
            np.where(keep, run.scores["se@lexical"], np.nan),
            np.nan_to_num(y),
            bootstrap=Bootstrap(200, 0),
        )
        assert row["base"] == "se@lexical" and row["status"] == "ok"
        for k in ("value_a", "value_b", "difference", "ci_low", "ci_high", "p_value", "n"):
            assert math.isclose(row[k], getattr(want, k), rel_tol=1e-12), (llm, k)
        assert row["significant"] == (want.ci_low > 0 or want.ci_high < 0)


def test_msp_with_a_missing_score_falls_back_to_paired_difference(board):
    """llm-beta has no msp score on one question: the LLM pair on msp leaves it out of both, as paired_difference."""
    b, runs = board
    alpha, beta = (
        next(r for r in runs if r.llm == n and r.task == "semuq_toy_a") for n in ("llm-alpha", "llm-beta")
    )
    got = compute(group_sections([alpha, beta]), LeaderboardConfig(n_resamples=200, llm_estimators=("msp",)))
    row = next(p for p in got.llm_pairs if p["strategy"] == "greedy")
    want = paired_difference(alpha.scores["msp"], beta.scores["msp"], alpha.labels["greedy"],
                             correct_b=beta.labels["greedy"], bootstrap=Bootstrap(200, 0))  # fmt: skip
    assert row["n"] == want.n == 59
    assert math.isclose(row["difference"], want.difference) and math.isclose(row["ci_low"], want.ci_low)


def test_llm_pairs_and_ranks(board):
    b, runs = board
    pair = next(p for p in b.llm_pairs if p["task"] == "semuq_toy_a" and p["strategy"] == "greedy")
    alpha, beta = (
        next(r for r in runs if r.llm == n and r.task == "semuq_toy_a") for n in ("llm-alpha", "llm-beta")
    )
    name = pair["estimator"]
    want = paired_difference(alpha.scores[name], beta.scores[name], alpha.labels["greedy"],
                             correct_b=beta.labels["greedy"], bootstrap=Bootstrap(200, 0))  # fmt: skip
    assert math.isclose(pair["difference"], want.difference) and math.isclose(pair["p_value"], want.p_value)
    assert pair["chosen"] == "best mean AUROC in the section"
    for r in b.llm_ranks + b.estimator_ranks:
        if r["rank"] is not None:
            assert 1 <= r["rank_low"] <= r["rank_high"] <= r["n_ranked"]
    ranks = {
        r["llm"]: r
        for r in b.llm_ranks
        if r["task"] == "semuq_toy_a" and r["estimator"] == name and r["strategy"] == "greedy"
    }
    assert ranks["llm-alpha"]["rank"] == 1 and ranks["llm-beta"]["rank"] == 2  # alpha is better on cos@enc
    summary = next(s for s in b.comparison_summary if s["set"] == "offline" and s["strategy"] == "greedy")
    ok = [
        c
        for c in b.comparisons
        if c["set"] == "offline" and c["strategy"] == "greedy" and c["status"] == "ok"
    ]
    assert summary["n_cells"] == len(ok) and summary["n_improved"] == sum(c["difference"] > 0 for c in ok)
    assert summary["n_improved_significant"] == sum(c["difference"] > 0 and c["ci_low"] > 0 for c in ok)


# -- explicit empty cells ---------------------------------------------------------------------------------


def test_unavailable_and_not_run_cells_are_explicit(board):
    b, _ = board
    cell = _cell(b, "llm-alpha", "semuq_toy_b", "cos@cos_int", "greedy", "auroc")
    assert cell["status"] == "unavailable" and cell["value"] is None and "black-box" in cell["note"]
    cell = _cell(b, "llm-beta", "semuq_toy_b", "se@lexical", "greedy", "auroc")
    assert cell["status"] == "not_run" and cell["value"] is None
    row = next(
        c
        for c in b.comparisons
        if c["llm"] == "llm-beta" and c["task"] == "semuq_toy_b" and c["base"] == "se@lexical"
    )
    assert row["status"] == "unavailable" and "se@lexical" in row["note"]


def test_one_class_labels_give_undefined_cells(tmp_path):
    store = _copy("llm-alpha", "semuq_toy_a", tmp_path)
    lines = [json.loads(x) for x in (store / "scores.jsonl").read_text().splitlines()]
    for it in lines:
        it["labels"]["greedy"] = 1
    (store / "scores.jsonl").write_text("".join(json.dumps(it) + "\n" for it in lines))
    bd = read_json(store / "breakdown.json")
    bd["labels"]["greedy"].update(n_correct=60, n_incorrect=0)
    write_json(store / "breakdown.json", bd)
    out = tmp_path / "out"
    assert main([str(store), "-o", str(out), "--bootstrap", "50", "--no-plots"]) == 0
    doc = read_document(out / "leaderboard.json")
    greedy = [c for c in doc["cells"] if c["strategy"] == "greedy" and c["metric"] == "auroc"]
    assert greedy and all(c["status"] == "undefined" and c["value"] is None for c in greedy)
    assert "one class only" in greedy[0]["note"]
    assert any(c["status"] == "ok" for c in doc["cells"] if c["strategy"] == "majority")
    rows = list(csv.DictReader(open(out / "leaderboard.csv")))
    assert any(r["status"] == "undefined" and r["value"] == "" for r in rows)
    assert "n/a" in (out / "leaderboard.md").read_text()


# -- bad input --------------------------------------------------------------------------------------------


def test_older_breakdown_schema_is_refused(tmp_path, capsys):
    store = _copy("llm-alpha", "semuq_toy_a", tmp_path)
    bd = read_json(store / "breakdown.json")
    bd["format"] = "semuq-breakdown/0"
    write_json(store / "breakdown.json", bd)
    with pytest.raises(LeaderboardInputError, match=r"semuq-breakdown/0.*older or unknown.*rescore"):
        load_run(store)
    assert main([str(store), "-o", str(tmp_path / "out")]) == 2
    assert "expected 'semuq-breakdown/1'" in capsys.readouterr().err
    assert not (tmp_path / "out" / "leaderboard.json").exists()


@pytest.mark.parametrize("missing", ["scores.jsonl", "breakdown.json", "manifest.json"])
def test_missing_file(tmp_path, missing):
    store = _copy("llm-alpha", "semuq_toy_a", tmp_path)
    (store / missing).unlink()
    with pytest.raises(LeaderboardInputError, match=missing):
        load_run(store)


def test_missing_path_and_empty_glob(tmp_path):
    with pytest.raises(LeaderboardInputError, match="does not exist"):
        expand_inputs([str(tmp_path / "nope")])
    with pytest.raises(LeaderboardInputError, match="matches no run store"):
        expand_inputs([str(tmp_path / "**" / "semuq" / "*" / "*")])


def test_unfinished_runs_matched_by_a_glob_are_skipped_and_listed(tmp_path, capsys):
    _copy("llm-alpha", "semuq_toy_a", tmp_path)
    running = _copy("llm-beta", "semuq_toy_a", tmp_path)
    (running / "breakdown.json").unlink()  # a run still generating: manifest only
    (running / "scores.jsonl").unlink()
    out = tmp_path / "out"
    assert (
        main([str(tmp_path / "*" / "semuq" / "*" / "*"), "-o", str(out), "--bootstrap", "50", "--no-plots"])
        == 0
    )
    assert "skipped" in capsys.readouterr().out
    doc = read_document(out / "leaderboard.json")
    assert [r["llm"] for r in doc["runs"]] == ["llm-alpha"]
    assert len(doc["skipped"]) == 1 and "unfinished run" in doc["skipped"][0]["reason"]
    assert "## Skipped stores" in (out / "leaderboard.md").read_text()
    with pytest.raises(LeaderboardInputError, match="breakdown.json is missing"):
        load_runs(expand_inputs([running]))  # named explicitly: an error, not a skip
    with pytest.raises(LeaderboardInputError, match="no finished run"):
        expand_inputs([str(running.parent / "llm-b*")], [])


def test_scores_and_breakdown_of_different_runs(tmp_path):
    store = _copy("llm-alpha", "semuq_toy_a", tmp_path)
    lines = (store / "scores.jsonl").read_text().splitlines()
    (store / "scores.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(LeaderboardInputError, match="59 questions but breakdown.json says 60"):
        load_run(store)


def test_two_runs_of_the_same_llm(tmp_path):
    a = _copy("llm-alpha", "semuq_toy_a", tmp_path / "one")
    b = _copy("llm-alpha", "semuq_toy_a", tmp_path / "two")
    bd = read_json(b / "breakdown.json")
    bd["created"] = "2026-02-01T00:00:00+00:00"
    write_json(b / "breakdown.json", bd)
    runs = load_runs([a, b])
    with pytest.raises(LeaderboardInputError, match="two runs of llm-alpha on semuq_toy_a"):
        group_sections(runs)
    sections = group_sections(runs, on_duplicate="latest")
    assert len(sections) == 1 and sections[0].runs[0].path == b
    assert "kept" in sections[0].notes[0] and str(a) in sections[0].notes[0]


def _alpha_and_first_40_of_beta(tmp_path: Path) -> tuple[Path, Path]:
    """Copies of llm-alpha's store (60 questions) and of llm-beta's cut to its first 40 questions."""
    a = _copy("llm-alpha", "semuq_toy_a", tmp_path)
    b = _copy("llm-beta", "semuq_toy_a", tmp_path)
    lines = (b / "scores.jsonl").read_text().splitlines()[:40]
    (b / "scores.jsonl").write_text("\n".join(lines) + "\n")
    bd = read_json(b / "breakdown.json")
    bd["n_docs"] = 40
    write_json(b / "breakdown.json", bd)
    return a, b


def test_different_questions_are_separate_sections_or_refused(tmp_path):
    a, b = _alpha_and_first_40_of_beta(tmp_path)
    sections = group_sections(load_runs([a, b]))
    assert [s.id for s in sections] == ["semuq_toy_a#1", "semuq_toy_a#2"]
    assert all("differ in question set" in s.notes[0] for s in sections)
    board = compute(sections, LeaderboardConfig(n_resamples=50))
    assert board.llm_pairs == []  # never paired across sections
    with pytest.raises(LeaderboardInputError, match="cannot be compared question by question"):
        group_sections(load_runs([a, b]), strict=True)


def test_common_questions_lines_runs_of_different_question_sets_up(tmp_path, capsys):
    """--common-questions: a run of 60 and one of 40 questions are compared on the 40 they share; every
    figure is recomputed on those 40 (the 60-question breakdown is not reused)."""
    a, b = _alpha_and_first_40_of_beta(tmp_path)
    runs, notes = common_questions(load_runs([a, b]))
    assert [len(r.doc_ids) for r in runs] == [40, 40]
    assert notes["semuq_toy_a"].startswith("restricted to the 40 questions all 2 runs share")
    full = load_runs([a])[0]
    alpha = next(r for r in runs if r.llm == "llm-alpha")
    keep = np.isin(full.doc_ids, alpha.doc_ids)
    assert np.array_equal(alpha.scores["se@enc"], full.scores["se@enc"][keep], equal_nan=True)
    out = tmp_path / "out"
    argv = [str(a), str(b), "-o", str(out), "--bootstrap", "100", "--no-plots", "--common-questions"]
    assert main(argv) == 0
    doc = read_document(out / "leaderboard.json")
    assert len(doc["sections"]) == 1 and doc["sections"][0]["notes"][0] == notes["semuq_toy_a"]
    assert doc["llm_pairs"]  # the two LLMs are now compared
    cell = next(
        c
        for c in doc["cells"]
        if (c["llm"], c["estimator"], c["strategy"], c["metric"])
        == ("llm-alpha", "se@enc", "greedy", "auroc")
    )
    assert cell["source"] == "computed" and cell["n"] == 40
    y = alpha.labels["greedy"]
    want = auroc(alpha.scores["se@enc"][np.isfinite(y)], y[np.isfinite(y)])
    assert math.isclose(cell["value"], want, rel_tol=1e-12)
    assert main([str(a), str(b), "-o", str(tmp_path / "split"), "--bootstrap", "50", "--no-plots"]) == 0
    assert len(read_document(tmp_path / "split" / "leaderboard.json")["sections"]) == 2  # without the option


def test_common_questions_also_keeps_each_runs_own_section_and_adds_a_shared_one(tmp_path, capsys):
    """--common-questions also: each LLM keeps its section on all its questions (alpha's figures on its 60),
    a third section compares both on the 40 they share, and the summary counts leave that repeat out."""
    a, b = _alpha_and_first_40_of_beta(tmp_path)
    out = tmp_path / "out"
    argv = [str(a), str(b), "-o", str(out), "--bootstrap", "100", "--no-plots", "--compare", "enc:lexical"]
    assert main([*argv, "--common-questions", "also"]) == 0
    doc = read_document(out / "leaderboard.json")
    ids = [s["id"] for s in doc["sections"]]
    assert ids == ["semuq_toy_a#1", "semuq_toy_a#2", "semuq_toy_a#common"]
    sections = {s["id"]: s for s in doc["sections"]}
    assert [sections[i]["repeats"] for i in ids] == [False, False, True]
    assert sections["semuq_toy_a#common"]["llms"] == ["llm-alpha", "llm-beta"]
    assert sections["semuq_toy_a#common"]["n_questions"] == 40
    assert sections["semuq_toy_a#1"]["n_questions"] == 60
    assert "semuq_toy_a#common compares the LLMs" in sections["semuq_toy_a#1"]["notes"][-1]
    assert {p["section"] for p in doc["llm_pairs"]} == {"semuq_toy_a#common"}
    alpha = load_runs([a])[0]
    full = next(
        c
        for c in doc["cells"]
        if (c["section"], c["llm"], c["estimator"], c["strategy"], c["metric"])
        == ("semuq_toy_a#1", "llm-alpha", "se@enc", "greedy", "auroc")
    )
    y = alpha.labels["greedy"]
    want = auroc(alpha.scores["se@enc"][np.isfinite(y)], y[np.isfinite(y)])
    assert full["n"] == 60 and math.isclose(full["value"], want, rel_tol=1e-9)
    rows = [
        r for r in doc["comparisons"]["rows"] if r["set"] == "enc vs lexical" and r["strategy"] == "greedy"
    ]
    counted = [r for r in rows if r["section"] != "semuq_toy_a#common" and r["status"] == "ok"]
    summary = next(
        s for s in doc["comparisons"]["summary"] if (s["set"], s["strategy"]) == ("enc vs lexical", "greedy")
    )
    assert summary["n_cells"] == len(counted) < len([r for r in rows if r["status"] == "ok"])
    assert "leave out the `#common` sections (`semuq_toy_a#common`)" in (out / "leaderboard.md").read_text()
    # --common-questions alone is "only": one section
    assert main([*argv, "--common-questions"]) == 0
    assert [s["id"] for s in read_document(out / "leaderboard.json")["sections"]] == ["semuq_toy_a"]
    with pytest.raises(SystemExit):
        main([*argv, "--common-questions", "some"])
    assert "invalid choice: 'some'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="common_questions: input should be"):
        build([str(a)], tmp_path / "x", common_questions=True)


def test_different_operator_models_are_separate_sections(tmp_path):
    a = _copy("llm-alpha", "semuq_toy_a", tmp_path)
    b = _copy("llm-beta", "semuq_toy_a", tmp_path)
    bd = read_json(b / "breakdown.json")
    bd["operators"]["enc"]["info"]["model"] = "/cache/models/all-mpnet-base-v2"
    write_json(b / "breakdown.json", bd)
    sections = group_sections(load_runs([a, b]))
    assert len(sections) == 2 and "operator identities" in sections[0].notes[0]


def test_breakdown_only_run(tmp_path):
    src = _store("llm-beta", "semuq_toy_b") / "breakdown.json"
    lone = tmp_path / "beta-toy-b.json"
    shutil.copy(src, lone)
    runs = load_runs([lone, _store("llm-alpha", "semuq_toy_b")])
    sections = group_sections(runs)
    assert len(sections) == 2 and sum(not s.paired for s in sections) == 1
    board = compute(sections, LeaderboardConfig(n_resamples=50))
    cells = [
        c
        for c in board.cells
        if c["llm"] == "beta-toy-b" and c["estimator"] == "se@enc" and c["strategy"] == "greedy"
    ]
    by_metric = {c["metric"]: c for c in cells}
    assert by_metric["auroc"]["status"] == "ok" and by_metric["auroc"]["source"] == "run"
    assert by_metric["prr"]["status"] == "not_computed" and "breakdown only" in by_metric["prr"]["note"]
    assert not any(p["llm_a"] == "beta-toy-b" or p["llm_b"] == "beta-toy-b" for p in board.llm_pairs)


def test_label_sets(tmp_path):
    from semuq_eval.harness.label_sets import write_label_set

    stores = [_copy(llm, "semuq_toy_a", tmp_path) for llm in ("llm-alpha", "llm-beta")]
    for store in stores:
        items = [json.loads(x) for x in (store / "scores.jsonl").read_text().splitlines()]
        records = [
            {"doc_id": it["doc_id"], "greedy": 1 - (it["labels"]["greedy"] or 0), "majority": None}
            for it in items
        ]
        write_label_set(store, "flipped", records, {"judge": {"judge": "hf", "model": "tiny"}})
    runs = load_runs(stores, ("run", "flipped"))
    sections = group_sections(runs)
    assert sorted(s.label_set for s in sections) == ["flipped", "run"]
    # sections that differ only in their judge are named by their label set
    assert sorted(s.id for s in sections) == ["semuq_toy_a:flipped", "semuq_toy_a:run"]
    board = compute(sections, LeaderboardConfig(n_resamples=50))
    run_cell = next(
        c
        for c in board.cells
        if c["label_set"] == "run"
        and c["llm"] == "llm-alpha"
        and c["estimator"] == "se@enc"
        and c["metric"] == "auroc"
        and c["strategy"] == "greedy"
    )
    flip_cell = next(
        c
        for c in board.cells
        if c["label_set"] == "flipped"
        and c["llm"] == "llm-alpha"
        and c["estimator"] == "se@enc"
        and c["metric"] == "auroc"
        and c["strategy"] == "greedy"
    )
    assert math.isclose(flip_cell["value"], 1 - run_cell["value"])  # flipped labels mirror AUROC
    # one headline per judge: the run's first, then the flipped set's, each over its own sections only
    assert list(board.headline) == ["greedy", "majority", "greedy:flipped", "majority:flipped"]
    assert board.headline["greedy"]["columns"] == ["semuq_toy_a:run"]
    assert board.headline["greedy:flipped"]["columns"] == ["semuq_toy_a:flipped"]
    assert board.headline["greedy:flipped"]["label_set"] == "flipped"
    assert flip_cell["source"] == "computed"
    majority = [c for c in board.cells if c["label_set"] == "flipped" and c["strategy"] == "majority"]
    assert all(c["status"] == "undefined" for c in majority)
    with pytest.raises(LeaderboardInputError, match="no label set 'other'"):
        load_runs(stores, ("other",))


def test_rankings_across_judges_rank_llms_under_every_label_set_and_show_disagreement(tmp_path):
    """Three label sets of the same questions: the run's, an identical copy and the flipped labels. The copy
    agrees everywhere (tau 1); the flipped set reverses the LLMs' order and every LLM's estimator order (AUROC
    becomes 1 - AUROC: tau -1), and the mean rank sits between."""
    from semuq_eval.harness.label_sets import write_label_set
    from semuq_eval.leaderboard.markdown import across_judges_markdown

    stores = [_copy(llm, "semuq_toy_a", tmp_path) for llm in ("llm-alpha", "llm-beta")]
    for store in stores:
        items = [json.loads(x) for x in (store / "scores.jsonl").read_text().splitlines()]
        for name, flip in (("same", False), ("flipped", True)):
            records = [
                {"doc_id": it["doc_id"], "greedy": (1 - it["labels"]["greedy"]) if flip else it["labels"]["greedy"],
                 "majority": None}
                for it in items
            ]  # fmt: skip
            write_label_set(store, name, records, {"judge": {"judge": "hf", "model": name}})
    board = compute(
        group_sections(load_runs(stores, ("run", "same", "flipped"))), LeaderboardConfig(n_resamples=100)
    )
    (group,) = [g for g in board.across_judges if g["strategy"] == "greedy"]
    assert group["label_sets"] == ["run", "same", "flipped"] and group["estimator"] == "kle_heat@enc"
    taus = {(a["label_set_a"], a["label_set_b"]): a["kendall_tau"] for a in group["agreement"]}
    assert taus == {("run", "same"): 1.0, ("run", "flipped"): -1.0, ("same", "flipped"): -1.0}
    for row in group["llms"]:
        assert row["ranks"]["run"] == row["ranks"]["same"] == 3 - row["ranks"]["flipped"]
        assert row["mean_rank"] == pytest.approx((2 * row["ranks"]["run"] + row["ranks"]["flipped"]) / 3)
        assert row["mean_rank_low"] <= row["mean_rank"] <= row["mean_rank_high"]
        low, high = row["rank_intervals"]["run"]
        f_low, f_high = row["rank_intervals"]["flipped"]
        assert row["disagree"] == (max(low, f_low) > min(high, f_high))
    for a in group["estimator_agreement"]:
        expected = 1.0 if (a["label_set_a"], a["label_set_b"]) == ("run", "same") else -1.0
        assert a["kendall_tau"] == pytest.approx(expected) and a["n_estimators"] >= 5
    for r in group["estimator_ranks"]:  # the flipped set reverses every order: the mean rank sits between
        assert r["mean_rank"] == pytest.approx((2 * r["ranks"]["run"] + r["ranks"]["flipped"]) / 3)
    alpha = [r["mean_rank"] for r in group["estimator_ranks"] if r["llm"] == "llm-alpha"]
    assert alpha == sorted(alpha) and len(alpha) >= 5
    # the judges' labels of the same answers: the copy agrees on every one (kappa 1), the flipped set on none
    kappas = {(a["llm"], a["label_set_a"], a["label_set_b"]): a for a in group["label_agreement"]}
    assert len(kappas) == 6
    for (_, a, b), row in kappas.items():
        same = (a, b) == ("run", "same")
        assert row["n"] == 60 and row["observed"] == (1.0 if same else 0.0)
        if same:
            assert row["kappa"] == pytest.approx(1.0)
        else:  # no agreement: below chance, as far below as the classes' balance allows
            assert row["kappa"] < 0 and row["confusion"][0][0] == row["confusion"][1][1] == 0
    assert not [g for g in board.across_judges if g["strategy"] == "majority"]  # no majority labels: nothing
    text = "\n".join(across_judges_markdown(board.across_judges))
    assert "llm-alpha (run vs same): kappa 1.00, agree 1.00 on 60 answers" in text
    assert "## Rankings across judges" in text and "run vs flipped: tau -1.00 (2 LLMs)" in text
    assert "Best mean estimator ranks over the label sets, llm-alpha:" in text
    from semuq_eval.leaderboard.html import render_html
    from semuq_eval.leaderboard.write import to_document

    page = render_html(to_document(board))
    assert "<h2>Rankings across judges</h2>" in page and "run vs flipped: tau -1.00" in page
    one = compute(group_sections(load_runs(stores, ("run",))), LeaderboardConfig(n_resamples=50))
    assert one.across_judges == []  # one judge: no such table, and the document has no such key


def test_cli_registered_and_jobs(tmp_path, capsys):
    from semuq_eval.commands import COMMANDS
    from semuq_eval.commands import main as cli_main

    assert COMMANDS["leaderboard"][0] == "semuq_eval.commands.leaderboard:main"
    out = tmp_path / "out"
    glob = str(STORES / "**" / "semuq" / "*" / "*")
    assert cli_main(["leaderboard", glob, "-o", str(out), "--bootstrap", "200", "-j", "2", "--no-plots"]) == 0
    text = capsys.readouterr().out
    assert "4 runs in 2 sections" in text and "improves in" in text
    got = read_document(out / "leaderboard.json")
    want = read_document(GOLDEN / "leaderboard.json")
    for key in ("cells", "comparisons", "llm_pairs", "ranks"):
        _close(got[key], want[key], key)  # two worker processes give the same figures


def test_metrics_option(tmp_path, capsys):
    out = tmp_path / "out"
    store = str(_store("llm-alpha", "semuq_toy_a"))
    assert main([store, "-o", str(out), "--metrics", "auroc,ece", "--bootstrap", "50", "--no-plots"]) == 0
    assert {c["metric"] for c in read_document(out / "leaderboard.json")["cells"]} == {"auroc", "ece"}
    assert main([store, "-o", str(out), "--metrics", "ece,auroc"]) == 2
    assert main([store, "-o", str(out), "--metrics", "auroc,brier"]) == 2
    err = capsys.readouterr().err
    assert "must start with 'auroc'" in err and "brier" in err


@pytest.mark.subprocess
def test_compare_option_pairs_an_operator_with_its_bases(tmp_path, capsys):
    """--compare enc:lexical,cos_ext: one pair set per base, every aggregator both operators have, each row
    the paired difference of the two estimators; a malformed spec is a clear error."""
    out = tmp_path / "out"
    store = str(_store("llm-alpha", "semuq_toy_a"))
    argv = [store, "-o", str(out), "--bootstrap", "200", "--no-plots", "--compare", "enc:lexical,cos_ext"]
    assert main(argv) == 0
    assert "enc vs lexical pairs, greedy labels: improves in" in capsys.readouterr().out
    doc = read_document(out / "leaderboard.json")
    pairs = doc["comparisons"]["sets"]["enc vs lexical"]["pairs"]
    run = load_runs([store])[0]
    want = [[n, n.replace("@enc", "@lexical")] for n in run.estimators if n.endswith("@enc")]
    assert sorted(pairs) == sorted(p for p in want if p[1] in run.estimators) and pairs
    assert doc["settings"]["compare"] == {"enc": ["lexical", "cos_ext"]}
    for name, base in pairs:
        row = next(
            r
            for r in doc["comparisons"]["rows"]
            if (r["set"], r["strategy"], r["estimator"]) == ("enc vs lexical", "greedy", name)
        )
        d = paired_difference(
            run.scores[name], run.scores[base], run.labels["greedy"], bootstrap=Bootstrap(200, 0)
        )
        assert math.isclose(row["difference"], d.difference, rel_tol=1e-12)
    assert "enc vs cos_ext" in doc["comparisons"]["sets"]
    assert "`enc` against `lexical`" in (out / "leaderboard.md").read_text()
    assert main([store, "-o", str(out), "--compare", "enc"]) == 2
    assert "give OPERATOR:BASE" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- the committed board
REGENERATE = Path(__file__).resolve().parents[1] / "leaderboards" / "offline" / "recipe" / "regenerate.sh"


def _regenerate(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(REGENERATE)], env={**os.environ, **env}, capture_output=True, text=True, check=False
    )


def test_offline_board_command_rescores_the_run_stores_and_builds_the_board(tmp_path, tiny_st_encoder):  # noqa: F811
    """leaderboards/offline/recipe/regenerate.sh, the committed board's one command, on a tiny run: every operator of the
    board (mpnet and trained variants included) is rescored into a complete store, whose run record goes to
    RECORDS; the board is built from the records with both comparisons; without RUNS (a fresh clone) the records
    alone rebuild the same board, apart from its build date; a second call keeps the finished store; a missing
    model or an archive pattern that matches nothing is a clear error."""
    from tests.fixtures.tiny_harness import canned_run

    runs = tmp_path / "runs"
    archives = tmp_path / "archives"  # SmolLM2's runs come as the reproduction's committed run-store archives
    archives.mkdir()
    with tarfile.open(archives / "smollm2-135m-instruct-webquestions.tar.xz", "w:xz") as tar:
        tar.add(canned_run(tmp_path, tmp_path / "made"), arcname="semuq_triviaqa_dpr/canned")
    models = tmp_path / "models"
    models.mkdir()
    for name in ("all-minilm-l6-v2", "all-mpnet-base-v2"):
        (models / name).symlink_to(tiny_st_encoder)
    env = {
        "RUNS": str(runs),
        "WORK": str(tmp_path / "work"),
        "OUTPUT": str(tmp_path / "board"),
        "RECORDS": str(tmp_path / "records"),
        "MODELS": str(models),
        "TRAINED": str(tiny_st_encoder),
        "UNPACK": str(archives / "*.tar.xz"),
        "RUN_NAMES": "smollm2-135m-instruct-webquestions gemma-3-270m-triviaqa_dpr",
        "SEMUQ": f"{sys.executable} -m semuq_eval",
    }
    done = _regenerate(env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "skip" in done.stderr and "gemma-3-270m-triviaqa_dpr" in done.stderr  # a run with no store here
    unpacked = runs / "smollm2-135m-instruct-webquestions" / "semuq" / "semuq_triviaqa_dpr" / "canned"
    assert (unpacked / "breakdown.json").is_file()
    store = tmp_path / "work" / "stores" / "semuq_triviaqa_dpr" / "canned"
    run = load_run(store)
    board_ops = ("lexical", "cos_int", "cos_ext", "enc", "enc_answer_pooling", "cos_ext_mpnet", "enc_mpnet")
    for op in (*board_ops, "enc_trained"):
        assert f"cae@{op}" in run.estimators, op
    doc = read_document(tmp_path / "board" / "leaderboard.json")
    assert doc["settings"]["compare"] == {
        "enc_trained": ["enc_answer_pooling", "enc", "cos_ext", "lexical", "cos_int"],
        "enc_mpnet": ["enc", "cos_ext_mpnet"],
    }
    assert {"enc_trained vs enc", "enc_mpnet vs cos_ext_mpnet"} <= set(doc["comparisons"]["sets"])
    # the board's recipe fixes the headline's reference estimator: the trained operator with kle_heat
    assert doc["settings"]["reference"] == doc["headline"]["greedy"]["reference"] == "kle_heat@enc_trained"
    (row,) = doc["headline"]["greedy"]["rows"]
    assert row["llm"] == "canned" and all(c["status"] != "not_run" for c in row["cells"].values())
    assert (tmp_path / "board" / "index.html").is_file()
    assert [p.name for p in (tmp_path / "records").iterdir()] == ["semuq_triviaqa_dpr.canned.jsonl.gz"]
    assert [Path(r["path"]).name for r in doc["runs"]] == ["semuq_triviaqa_dpr.canned.jsonl.gz"]
    fresh = _regenerate({k: v for k, v in env.items() if k not in ("RUNS", "WORK", "MODELS", "TRAINED")})
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    again = read_document(tmp_path / "board" / "leaderboard.json")
    assert {**again, "created": None} == {**doc, "created": None}  # the same board, from the records alone
    assert f"kept {store}" in _regenerate(env).stdout  # an interrupted regeneration resumes
    missing = _regenerate({**env, "TRAINED": str(tmp_path / "nowhere")})
    assert missing.returncode == 1 and f"no model at {tmp_path / 'nowhere'}" in missing.stderr
    # without RUN_NAMES the runs are the archives' names, read after the archives are restored
    named = _regenerate({k: v for k, v in env.items() if k != "RUN_NAMES"})
    assert named.returncode == 0 and f"kept {store}" in named.stdout, named.stderr[-3000:]
    nothing = _regenerate({**env, "UNPACK": str(tmp_path / "none" / "*.tar.xz")})
    assert nothing.returncode == 1 and "no archive matches" in nothing.stderr


def test_the_csv_never_starts_a_cell_with_a_formula(tmp_path):
    from semuq_eval.leaderboard.schema import CELL_FIELDS
    from semuq_eval.leaderboard.write import write_csv

    hostile = {
        "llm": '=HYPERLINK("http://x","y")',
        "estimator": "+cmd|' /C calc'!A0",
        "note": "@SUM(1)",
        "operator": "-",
        "value": -0.25,
        "section": "-2+3",
    }
    path = write_csv({"cells": [hostile]}, tmp_path / "leaderboard.csv")
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    assert list(rows[0]) == list(CELL_FIELDS)
    row = rows[0]
    assert (
        row["llm"] == "'" + hostile["llm"] and row["estimator"].startswith("'+") and row["note"] == "'@SUM(1)"
    )
    assert row["section"] == "'-2+3"  # text that a spreadsheet would compute
    assert row["operator"] == "-" and row["value"] == "-0.25"  # "no operator" and numbers stay as they are


# ----------------------------------------------------------------------------- a committed board, from its records
LEADERBOARDS = Path(__file__).resolve().parents[1] / "leaderboards"
REPRODUCTION = LEADERBOARDS / "reproduction"
COMMITTED_BOARDS = {  # recipe script -> the board it rebuilds from the run records committed beside it
    "offline": (LEADERBOARDS / "offline" / "recipe" / "regenerate.sh", LEADERBOARDS / "offline"),
    "common": (LEADERBOARDS / "common" / "recipe" / "build.sh", LEADERBOARDS / "common"),
    "reproduction": (REPRODUCTION / "recipe" / "board.sh", REPRODUCTION / "leaderboard"),
    "confirmation": (
        REPRODUCTION / "confirmation" / "recipe" / "board.sh",
        REPRODUCTION / "confirmation" / "leaderboard",
    ),
    "confirmation-2-test": (
        REPRODUCTION / "confirmation-2" / "recipe" / "board.sh",
        REPRODUCTION / "confirmation-2" / "test" / "leaderboard",
    ),
    "confirmation-2-new-estimators": (
        REPRODUCTION / "confirmation-2" / "new-estimators" / "recipe" / "board.sh",
        REPRODUCTION / "confirmation-2" / "new-estimators" / "leaderboard",
    ),
    "reference-positives": (
        REPRODUCTION / "reference-positives" / "recipe" / "board.sh",
        REPRODUCTION / "reference-positives" / "leaderboard",
    ),
    "mpnet": (REPRODUCTION / "mpnet" / "recipe" / "board.sh", REPRODUCTION / "mpnet" / "leaderboard"),
    "confirmation-2-exploratory": (
        REPRODUCTION / "confirmation-2" / "recipe" / "exploratory_board.sh",
        REPRODUCTION / "confirmation-2" / "exploratory" / "board",
    ),
}


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("board", sorted(COMMITTED_BOARDS))
def test_a_committed_board_rebuilds_from_its_records_alone(tmp_path, board):
    """Each board's recipe on a fresh clone: the committed run records give the leaderboard.json (every cell,
    comparison, rank and headline) and leaderboard.csv whose digests are committed, and the committed Markdown and
    headline CSV, apart from the build date."""
    script, committed = COMMITTED_BOARDS[board]
    output = tmp_path / "board"
    done = subprocess.run(
        ["bash", str(script), "--no-plots"],  # the pictures are drawn from the curves compared below
        env={**os.environ, "OUTPUT": str(output), "SEMUQ": f"{sys.executable} -m semuq_eval"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    pinned = json.loads((committed / board_digest.DIGEST_FILE).read_text())
    assert board_digest.digests(output) == pinned  # leaderboard.json and .csv, committed as their digests
    for name in ("leaderboard.md", "headline.csv"):
        assert board_digest.bare_text((output / name).read_text()) == board_digest.bare_text(
            (committed / name).read_text()
        ), name


def test_a_board_digest_ignores_the_build_date_and_last_bits_but_not_a_figure(tmp_path):
    """tools.board_digest pins leaderboard.json and .csv: the build date, the records' folders and a sum's 16th digit
    leave the digest as it is; a figure that moves changes it."""

    def board(name: str, created: str, path: str, value: float) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        document = {"created": created, "runs": [{"path": path}], "cells": [{"value": value}]}
        (folder / "leaderboard.json").write_text(json.dumps(document))
        (folder / "leaderboard.csv").write_text(f"value\n{value!r}\n")
        return folder

    first = board("a", "2026-11-01T10:00:00+00:00", "/x/records/t.llm.jsonl.gz", 0.12345678901234567)
    again = board("b", "2026-11-28T03:00:00+00:00", "/y/t.llm.jsonl.gz", 0.12345678901234599)
    moved = board("c", "2026-11-01T10:00:00+00:00", "/x/records/t.llm.jsonl.gz", 0.1234571)
    assert board_digest.digests(first) == board_digest.digests(again)
    assert board_digest.digests(first) != board_digest.digests(moved)
    board_digest.main([str(first), "--write"])
    assert json.loads((first / board_digest.DIGEST_FILE).read_text()) == board_digest.digests(first)
