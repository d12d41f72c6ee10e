"""The headline (one row per LLM, the reference estimator) and its pictures: rejection curves and reliability
bins checked against direct computations, rows / sorting / flags on the fixture board, one LLM more = one row
more. The page itself: ``tests/test_leaderboard_html.py``."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from semuq_eval.leaderboard.build import build
from semuq_eval.leaderboard.compute import LeaderboardConfig, compute
from semuq_eval.leaderboard.curves import rejection_curve, reliability_bins
from semuq_eval.leaderboard.discovery import expand_inputs
from semuq_eval.leaderboard.read_run import load_runs
from semuq_eval.leaderboard.schema import read_document
from semuq_eval.leaderboard.sections import group_sections
from semuq_eval.metrics import Bootstrap, CalibrationProtocol, auarc, auroc, calibrate, ece
from tests.fixtures.leaderboard_stores import STORES, different_question_sets

FAST = LeaderboardConfig(n_resamples=200)


# -- the pictures' numbers ------------------------------------------------------------------------------


def test_rejection_curve_and_aurac_on_a_hand_case():
    # confidence order (ascending u): q0 (1), q2 (1), q3 (0), q1 (0)
    u = np.array([0.1, 0.9, 0.5, 0.7])
    y = np.array([1.0, 0.0, 1.0, 0.0])
    curve = rejection_curve(u, y)
    # reject 0: 2/4; reject 1 (q1): 2/3; reject 2 (q1, q3): 2/2; reject 3: 1/1
    np.testing.assert_allclose(curve, [2 / 4, 2 / 3, 1.0, 1.0])
    assert math.isclose(curve.mean(), auarc(u, y), rel_tol=1e-12)
    assert math.isclose(auarc(u, y), (1 + 1 + 2 / 3 + 2 / 4) / 4, rel_tol=1e-12)  # AUARC's own definition


def test_rejection_curve_breaks_ties_as_auarc_and_skips_missing():
    # q1 and q2 tie: either may be rejected first, so each counts as their mean correctness 0.5
    u = np.array([0.2, 0.8, 0.8, np.nan])
    y = np.array([1.0, 1.0, 0.0, 1.0])
    np.testing.assert_allclose(rejection_curve(u, y), [2 / 3, 1.5 / 2, 1.0])
    assert math.isclose(rejection_curve(u, y).mean(), auarc(u, y), rel_tol=1e-12)


def test_rejection_curve_mean_is_auarc_on_random_cases():
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(2, 80))
        u = np.round(rng.normal(size=n), 1)  # rounded: many ties
        y = (rng.random(n) < 0.6).astype(float)
        direct = (
            [y[np.argsort(u, kind="stable")][: n - i].mean() for i in range(n)] if len(set(u)) == n else None
        )
        curve = rejection_curve(u, y)
        assert math.isclose(curve.mean(), auarc(u, y), rel_tol=1e-9)
        if direct is not None:
            np.testing.assert_allclose(curve, direct)


def test_reliability_bins_add_up_to_ece_and_use_its_confidences():
    rng = np.random.default_rng(5)
    u = rng.normal(size=200)
    y = (rng.random(200) < 1 / (1 + np.exp(2 * u))).astype(float)
    protocol = CalibrationProtocol(n_bins=10)
    bins = reliability_bins(u, y, protocol)
    confidence = calibrate(u, y, protocol)
    assert sum(b["n"] for b in bins) == int(np.isfinite(confidence).sum())
    gap = sum(b["n"] * abs(b["accuracy"] - b["confidence"]) for b in bins) / sum(b["n"] for b in bins)
    assert math.isclose(gap, ece(u, y, protocol), rel_tol=1e-9)
    first = bins[0]
    inside = (confidence >= first["low"]) & (confidence < first["high"])
    assert first["n"] == int(inside.sum()) and math.isclose(first["accuracy"], y[inside].mean())


def test_rejection_curve_refuses_shapes_that_differ():
    with pytest.raises(ValueError, match=r"uncertainty \(3,\) and correct \(2,\)"):
        rejection_curve(np.zeros(3), np.zeros(2))


# -- the headline on the fixture board ------------------------------------------------------------------


@pytest.fixture(scope="module")
def board():
    runs = load_runs(expand_inputs([str(STORES / "*" / "semuq" / "*" / "*")]))
    return compute(group_sections(runs), FAST), runs


@pytest.mark.parametrize("strategy", ["greedy", "majority"])
def test_headline_rows_are_the_reference_cells_with_ranks(board, strategy):
    """One headline per label strategy, greedy first: the majority-vote one reads the same estimator under the
    majority labels (its own counts, accuracy and ranks)."""
    board, runs = board
    assert list(board.headline) == ["greedy", "majority"]
    h = board.headline[strategy]
    assert h["reference"] == "kle_heat@enc" == board.config.reference and h["strategy"] == strategy
    assert h["columns"] == ["semuq_toy_a", "semuq_toy_b"]
    assert sorted(r["llm"] for r in h["rows"]) == ["llm-alpha", "llm-beta"]
    for row in h["rows"]:
        for task, cell in row["cells"].items():
            run = next(r for r in runs if r.llm == row["llm"] and r.task == task)
            known = np.isfinite(run.labels[strategy])
            y, u = run.labels[strategy][known], run.scores["kle_heat@enc"][known]
            assert math.isclose(cell["value"], auroc(u, y), rel_tol=1e-12)
            assert (cell["n_correct"], cell["n_incorrect"]) == (int(y.sum()), int((1 - y).sum()))
            assert math.isclose(cell["accuracy"], y.mean())
            assert cell["ci_low"] < cell["value"] < cell["ci_high"]
            rank = next(
                r
                for r in board.llm_ranks
                if (r["section"], r["llm"], r["estimator"], r["strategy"])
                == (task, row["llm"], "kle_heat@enc", strategy)
            )
            assert (cell["rank"], cell["rank_low"], cell["rank_high"]) == (
                rank["rank"],
                rank["rank_low"],
                rank["rank_high"],
            )
            # the flag is the cell's own (harness.reliability): minority class below 20
            assert cell["reliable"] == (min(cell["n_correct"], cell["n_incorrect"]) >= 20)


def test_headline_mean_column_and_sorting(board):
    board, runs = board
    rows = board.headline["greedy"]["rows"]
    means = [r["mean"]["value"] for r in rows]
    assert means == sorted(means, reverse=True)
    alpha, beta = rows
    assert math.isclose(alpha["mean"]["value"], np.mean([c["value"] for c in alpha["cells"].values()]))
    assert alpha["mean"]["n_correct"] == sum(c["n_correct"] for c in alpha["cells"].values())
    # llm-alpha's semuq_toy_b cell has 17 incorrect answers: flagged, and so is its mean
    assert alpha["cells"]["semuq_toy_b"]["reliable"] is False and alpha["mean"]["reliable"] is False
    assert alpha["mean"]["note"] == "1 of 2 task cells flagged (small sample)"
    assert beta["mean"]["reliable"] is True
    # the mean's interval: the percentile interval of the mean of the tasks' AUROCs on the shared resamples
    from semuq_eval.metrics import resample

    bootstrap = Bootstrap(200, 0)
    draws = []
    for task in ("semuq_toy_a", "semuq_toy_b"):
        run = next(r for r in runs if r.llm == "llm-alpha" and r.task == task)
        draws.append(
            resample("auroc", run.scores["kle_heat@enc"], run.labels["greedy"], bootstrap=bootstrap).values
        )
    low, high = bootstrap.interval(np.mean(draws, axis=0))
    assert math.isclose(alpha["mean"]["ci_low"], low) and math.isclose(alpha["mean"]["ci_high"], high)
    assert (alpha["mean"]["rank"], beta["mean"]["rank"]) == (1, 2)
    assert alpha["mean"]["n_ranked"] == 2


def test_best_table_is_each_llms_best_cell(board):
    board, _ = board
    greedy = board.headline["greedy"]
    for row in greedy["best"]:
        for task, cell in row["cells"].items():
            values = [
                c["value"]
                for c in board.cells
                if (c["llm"], c["section"], c["strategy"], c["metric"], c["status"])
                == (row["llm"], task, "greedy", "auroc", "ok")
            ]
            assert cell["value"] == max(values)
            reference = next(r for r in greedy["rows"] if r["llm"] == row["llm"])["cells"][task]
            assert cell["value"] >= reference["value"]


def test_curves_are_the_reference_estimator_per_llm_and_task(board):
    board, runs = board
    assert {(c["section"], c["llm"]) for c in board.curves} == {
        (t, llm) for t in ("semuq_toy_a", "semuq_toy_b") for llm in ("llm-alpha", "llm-beta")
    }
    for curve in board.curves:
        run = next(r for r in runs if r.llm == curve["llm"] and r.task == curve["task"])
        aurac = next(
            c
            for c in board.cells
            if (c["section"], c["llm"], c["estimator"], c["strategy"], c["metric"])
            == (curve["section"], curve["llm"], "kle_heat@enc", "greedy", "auarc")
        )
        ece_cell = {**aurac, **next(
            c
            for c in board.cells
            if (c["section"], c["llm"], c["estimator"], c["strategy"], c["metric"])
            == (curve["section"], curve["llm"], "kle_heat@enc", "greedy", "ece")
        )}  # fmt: skip
        assert math.isclose(curve["aurac"], aurac["value"], rel_tol=1e-9)  # the table's figure, same number
        assert math.isclose(np.mean(curve["accuracy_kept"]), curve["aurac"], abs_tol=1e-6)  # rounded to 1e-6
        assert math.isclose(curve["ece"], ece_cell["value"], rel_tol=1e-9)
        assert curve["n"] == len(curve["accuracy_kept"]) == int(np.isfinite(run.labels["greedy"]).sum())


def test_another_reference_estimator_is_the_one_read(board):
    _, runs = board
    other = compute(group_sections(runs), LeaderboardConfig(n_resamples=200, reference="se@lexical"))
    h = other.headline["greedy"]
    assert h["reference"] == "se@lexical" and other.config.as_dict()["reference"] == "se@lexical"
    # llm-beta ran no lexical operator on semuq_toy_b: that cell is "not run", so its mean is undefined
    beta = next(r for r in h["rows"] if r["llm"] == "llm-beta")
    assert beta["cells"]["semuq_toy_b"]["status"] == "not_run"
    assert beta["mean"]["value"] is None and beta["mean"]["note"] == "no reference AUROC on 1 of 2 tasks"
    assert h["rows"][-1]["llm"] == "llm-beta"  # no mean: last
    assert all(c["estimator"] == "se@lexical" for c in other.curves)


@pytest.mark.parametrize("metric", ["coverage_at_risk", "ece"])
def test_the_headline_can_rank_by_another_metric(board, metric):
    """The headline's cells are the reference estimator's cells of ``--headline-metric``, ranked in its
    direction (ECE: lower is better) with rank intervals from its own resamples; the rule names it."""
    from semuq_eval.metrics import get

    _, runs = board
    config = LeaderboardConfig(n_resamples=200, headline_metric=metric)
    other = compute(group_sections(runs), config)
    sign = 1 if get(metric).higher_is_better else -1
    assert metric in other.config.metrics and other.config.as_dict()["headline_metric"] == metric
    for strategy, h in other.headline.items():
        assert h["metric"] == metric and f"the {get(metric).label} of the reference" in h["rule"]
        for row in h["rows"]:
            for task, cell in row["cells"].items():
                own = next(
                    c for c in other.cells
                    if (c["section"], c["llm"], c["estimator"], c["strategy"], c["metric"])
                    == (task, row["llm"], "kle_heat@enc", strategy, metric)
                )  # fmt: skip
                assert cell["value"] == own["value"] and cell["n_ranked"] == 2
                assert cell["rank_low"] <= cell["rank"] <= cell["rank_high"]
        values = [sign * r["mean"]["value"] for r in h["rows"]]
        assert values == sorted(values, reverse=True)
        by_task = {t: {r["llm"]: r["cells"][t] for r in h["rows"]} for t in h["columns"]}
        for cells in by_task.values():
            best = max(cells.values(), key=lambda c: sign * c["value"])
            assert best["rank"] == 1


def test_coverage_at_risk_levels_from_the_command(tmp_path, capsys):
    from semuq_eval.commands import main as cli_main

    out = tmp_path / "out"
    glob = str(STORES / "*" / "semuq" / "*" / "*")
    argv = ["leaderboard", glob, "-o", str(out), "--bootstrap", "50", "--no-plots"]
    assert cli_main([*argv, "--headline-metric", "coverage_at_risk", "--coverage-at-risk", "0.3,0.2"]) == 0
    doc = read_document(out / "leaderboard.json")
    assert doc["headline"]["greedy"]["metric"] == "coverage_at_risk_0.3_0.2"
    assert "A cell: COV@0.3/0.2 [95% CI]" in (out / "leaderboard.md").read_text()
    assert cli_main([*argv, "--coverage-at-risk", "0.3,0.2", "--force"]) == 2
    assert "name coverage_at_risk in --metrics or --headline-metric" in capsys.readouterr().err
    assert cli_main([*argv, "--headline-metric", "brier", "--force"]) == 2
    assert "unknown metric(s) ['brier']" in capsys.readouterr().err


def test_reference_option_of_the_command(tmp_path, capsys):
    from semuq_eval.commands import main as cli_main

    out = tmp_path / "out"
    glob = str(STORES / "*" / "semuq" / "*" / "*")
    argv = [
        "leaderboard",
        glob,
        "-o",
        str(out),
        "--bootstrap",
        "50",
        "--no-plots",
        "--reference",
        "cos@cos_ext",
    ]
    assert cli_main(argv) == 0
    doc = read_document(out / "leaderboard.json")
    assert doc["settings"]["reference"] == doc["headline"]["greedy"]["reference"] == "cos@cos_ext"
    assert "## Headline: `cos@cos_ext` for every LLM" in (out / "leaderboard.md").read_text()
    rows = (out / "headline.csv").read_text().splitlines()
    assert sum(",cos@cos_ext," in r and r.startswith("reference,greedy,") for r in rows) == 6
    assert sum(",cos@cos_ext," in r and r.startswith("reference,majority,") for r in rows) == 6


def test_one_llm_more_is_one_headline_row_more(tmp_path):
    """A third LLM's stores (llm-alpha's runs, renamed) add one row; the others' AUROC cells do not change."""
    before = build([str(STORES / "*" / "semuq" / "*" / "*")], tmp_path / "before", config=FAST, plots=False)
    stores = tmp_path / "stores"
    shutil.copytree(STORES, stores)
    for task in ("semuq_toy_a", "semuq_toy_b"):
        shutil.copytree(
            STORES / "llm-alpha" / "semuq" / task / "llm-alpha",
            stores / "llm-gamma" / "semuq" / task / "llm-gamma",
        )
    after = build([str(stores / "*" / "semuq" / "*" / "*")], tmp_path / "after", config=FAST, plots=False)
    rows_before = {r["llm"]: r for r in before["headline"]["greedy"]["rows"]}
    rows_after = {r["llm"]: r for r in after["headline"]["greedy"]["rows"]}
    assert set(rows_after) - set(rows_before) == {"llm-gamma"} and len(rows_after) == len(rows_before) + 1
    figures = ("value", "ci_low", "ci_high", "n_correct", "n_incorrect", "accuracy", "reliable")
    for llm, row in rows_before.items():
        for task, cell in row["cells"].items():
            assert {k: cell[k] for k in figures} == {k: rows_after[llm]["cells"][task][k] for k in figures}
        assert rows_after[llm]["mean"]["n_ranked"] == 3
    gamma = rows_after["llm-gamma"]
    assert gamma["cells"]["semuq_toy_a"]["value"] == rows_before["llm-alpha"]["cells"]["semuq_toy_a"]["value"]
    md = (tmp_path / "after" / "leaderboard.md").read_text().split("### Optimistic")[0]
    assert sum(line.startswith("| llm-") for line in md.splitlines()) == 3
    # per label strategy: 3 LLMs x (2 tasks + mean), then 3 LLMs x 2 tasks (best)
    assert len((tmp_path / "after" / "headline.csv").read_text().splitlines()) == 1 + 2 * (3 * 3 + 3 * 2)


def test_a_task_whose_llms_ran_different_question_sets_is_its_common_column(tmp_path):
    """--common-questions also: each LLM's own section and a #common one; the headline reads the #common one
    (the LLMs on the same questions) and ranks them there, and draws its curves from it."""
    stores = different_question_sets(tmp_path)  # beta: the first 40 questions
    doc = build(stores, tmp_path / "out", common_questions="also", config=FAST, plots=False)
    h = doc["headline"]["greedy"]
    assert [s["id"] for s in doc["sections"]] == ["semuq_toy_a#1", "semuq_toy_a#2", "semuq_toy_a#common"]
    assert h["columns"] == ["semuq_toy_a#common"]
    for row in h["rows"]:
        cell = row["cells"]["semuq_toy_a#common"]
        assert cell["n_correct"] + cell["n_incorrect"] == 40 and cell["rank"] is not None
        assert row["mean"]["value"] == cell["value"] and row["mean"]["n_ranked"] == 2
    assert {(c["section"], c["n"]) for c in doc["curves"]} == {("semuq_toy_a#common", 40)}


def test_an_llm_without_every_task_gets_a_mean_note_and_no_mean_rank(tmp_path):
    stores = [
        _copy_store("llm-alpha", "semuq_toy_a", tmp_path),
        _copy_store("llm-alpha", "semuq_toy_b", tmp_path),
        _copy_store("llm-beta", "semuq_toy_a", tmp_path),
    ]
    doc = build(stores, tmp_path / "out", config=FAST, plots=False)
    rows = {r["llm"]: r for r in doc["headline"]["greedy"]["rows"]}
    beta = rows["llm-beta"]
    assert set(beta["cells"]) == {"semuq_toy_a"} and beta["mean"]["n_tasks"] == 1
    assert beta["mean"]["value"] == beta["cells"]["semuq_toy_a"]["value"]
    assert beta["mean"]["note"] == "mean over 1 of 2 tasks" and beta["mean"]["rank"] is None
    # only llm-alpha has every task: nothing to rank the means against; the task column still ranks both
    assert rows["llm-alpha"]["mean"]["rank"] is None and rows["llm-alpha"]["mean"]["n_ranked"] == 1
    assert {r["cells"]["semuq_toy_a"]["rank"] for r in rows.values()} == {1, 2}


def _copy_store(llm: str, task: str, dest: Path) -> str:
    target = dest / llm / "semuq" / task / llm
    shutil.copytree(STORES / llm / "semuq" / task / llm, target)
    return str(target)


def test_a_breakdown_only_run_has_its_cell_but_no_mean_ci_and_no_curve(tmp_path):
    """A run given as its breakdown alone (no scores.jsonl): its headline cell is the breakdown's AUROC with
    the breakdown's CI; the mean has no resamples to draw an interval from, so it says so and is flagged."""
    lone = tmp_path / "beta-toy-b.json"
    shutil.copy(STORES / "llm-beta" / "semuq" / "semuq_toy_b" / "llm-beta" / "breakdown.json", lone)
    board = compute(group_sections(load_runs([lone])), LeaderboardConfig(n_resamples=50))
    (row,) = board.headline["greedy"]["rows"]
    cell = next(iter(row["cells"].values()))
    assert cell["status"] == "ok" and cell["ci_low"] < cell["value"] < cell["ci_high"]
    assert row["mean"]["value"] == cell["value"] and row["mean"]["ci_low"] is None
    assert row["mean"]["reliable"] is False
    assert row["mean"]["note"] == "no CI: a task's run has no per-question scores (breakdown only)"
    assert board.curves == []
