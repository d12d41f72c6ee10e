"""From scores to decisions: saved calibrators, abstention thresholds with a finite-sample guarantee, the
cross-fitted combination of estimators, and the `semuq-eval decide` command on a run store."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from semuq_eval.commands import main as cli_main
from semuq_eval.decisions import (
    abstention_threshold,
    cross_fitted_combination,
    fit_calibrator,
    held_out,
    load_calibrator,
    split_questions,
)
from semuq_eval.metrics.calibrators import _fit_predict
from semuq_eval.metrics.ranking import auroc

STORE = Path(__file__).parent / "fixtures" / "leaderboard" / "stores" / "llm-alpha" / "semuq" / "semuq_toy_a"


def _population(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """u ~ U(0, 1) and P(wrong | u) = u: answering u <= t has the error rate t / 2 among answered questions."""
    u = rng.uniform(size=n)
    return u, (rng.uniform(size=n) > u).astype(int)


# --- saved calibrators ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["isotonic", "platt"])
def test_a_saved_calibrator_is_the_map_ece_fits_and_reads_back_identically(kind, tmp_path):
    rng = np.random.default_rng(1)
    u, y = _population(300, rng)
    u_new = rng.uniform(-0.5, 1.5, size=50)  # beyond the fitted range too (clipped / extrapolated)
    cal = fit_calibrator(u, y, estimator="se@enc", kind=kind, operator={"kind": "gram", "revision": "r1"})
    expected = _fit_predict(kind, u, y.astype(float), u_new)
    got = cal.confidence(
        u_new, estimator="se@enc", operator={"kind": "gram", "revision": "r1", "model": "/x"}
    )
    np.testing.assert_allclose(got, expected, atol=1e-9)
    again = load_calibrator(cal.save(tmp_path / "cal.json"))
    assert again == cal
    assert cal.provenance == {"n": 300, "n_correct": int(y.sum()), "n_incorrect": 300 - int(y.sum())}
    assert np.isnan(
        again.confidence(np.array([np.nan]), estimator="se@enc", operator={"kind": "gram", "revision": "r1"})
    )[0]


def test_a_calibrator_refuses_another_estimator_another_operator_and_one_class():
    cal = fit_calibrator(
        [0.1, 0.9, 0.2, 0.8], [1, 0, 1, 0], estimator="se@enc", operator={"kind": "gram", "revision": "a"}
    )
    with pytest.raises(ValueError, match="fitted for estimator 'se@enc', not 'kle_heat@enc'"):
        cal.confidence(np.zeros(2), estimator="kle_heat@enc")
    with pytest.raises(
        ValueError, match=r"fitted with operator \{'kind': 'gram', 'revision': 'a'\}.*'revision': 'b'"
    ):
        cal.confidence(np.zeros(2), estimator="se@enc", operator={"kind": "gram", "revision": "b"})
    with pytest.raises(
        ValueError, match="3 correct and 0 incorrect scored questions; a calibrator needs both"
    ):
        fit_calibrator([0.1, 0.2, 0.3, np.nan], [1, 1, 1, 0], estimator="msp")
    with pytest.raises(ValueError, match="unknown calibrator kind 'beta'"):
        fit_calibrator([0.1, 0.2], [1, 0], estimator="msp", kind="beta")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"format": "other/1"}, "not a semuq-calibrator/1 file"),
        ({"kind": "spline"}, "field kind must be one of"),
        ({"estimator": ""}, "field estimator must be a non-empty string"),
        ({"operator": [1]}, "field operator must be an object"),
        ({"parameters": {"u": [0.0, 1.0], "p": [0.9]}}, "u and p must be two lists of one length"),
        ({"parameters": {"u": [1.0, 0.0], "p": [0.9, 0.1]}}, "u must be ascending and p within"),
        ({"parameters": {"u": [0.0, True], "p": [0.9, 0.1]}}, "u and p must hold finite numbers"),
        ({"parameters": {"u": [0.0, 1.0], "p": [1.5, 0.1]}}, "u must be ascending and p within"),
    ],
)
def test_a_damaged_calibrator_file_is_refused_naming_the_file_and_field(edit, message, tmp_path):
    cal = fit_calibrator([0.1, 0.9, 0.2, 0.8], [1, 0, 1, 0], estimator="msp")
    doc = {**cal.to_json(), **edit}
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=f"{path}: .*{message}" if "format" not in edit else message):
        load_calibrator(path)


def test_a_damaged_platt_calibrator_is_refused():
    cal = fit_calibrator([0.1, 0.9, 0.2, 0.8], [1, 0, 1, 0], estimator="msp", kind="platt")
    assert cal.parameters["scale"] > 0 and cal.parameters["coef"] < 0  # more uncertain, less likely correct


# --- abstention thresholds -----------------------------------------------------------------------------------


def test_the_threshold_guarantee_holds_over_a_thousand_calibration_sets():
    """Learn-then-Test's promise: over fresh calibration sets, P(error rate among answered > alpha) <= delta.
    The population's error curve is known (t / 2 below t), so every chosen threshold's true risk is exact. The
    naive threshold (the largest whose calibration error rate is <= alpha) breaks the promise on the same sets:
    the simulation can see a violation."""
    alpha, delta, n, splits = 0.1, 0.1, 1500, 1000
    rng = np.random.default_rng(2026)
    guarded, naive, answered = 0, 0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(splits):
            u, y = _population(n, rng)
            chosen = abstention_threshold(u, y, alpha=alpha, delta=delta)
            if chosen.threshold is not None:
                answered += 1
                guarded += chosen.threshold / 2 > alpha
            order = np.argsort(u)
            running = np.cumsum(1 - y[order]) / np.arange(1, n + 1)
            t_naive = u[order][np.flatnonzero(running <= alpha).max()]
            naive += t_naive / 2 > alpha
    monte_carlo = 3 * np.sqrt(delta * (1 - delta) / splits)
    assert guarded / splits <= delta + monte_carlo, (guarded, answered)
    assert naive / splits > delta + monte_carlo, naive  # the check has teeth
    assert answered >= splits // 4  # and the guarded procedure does answer, often enough to be tested


def test_no_threshold_when_the_target_cannot_be_met_and_held_out_figures_with_intervals():
    rng = np.random.default_rng(3)
    u, y = _population(400, rng)
    nothing = abstention_threshold(u, y, alpha=0.001, delta=0.05)
    assert nothing.answers_nothing and nothing.n_answered == 0
    result = held_out(nothing.threshold, u, y)
    assert result.n_answered == 0 and np.isnan(result.error_rate) and result.coverage == 0.0

    u, y = _population(6000, rng)
    cal, new = split_questions(len(u), seed=4)
    chosen = abstention_threshold(u[cal], y[cal], alpha=0.15, delta=0.1)
    assert chosen.threshold is not None and chosen.threshold / 2 <= 0.15
    result = held_out(chosen.threshold, u[new], y[new])
    answered = u[new] <= chosen.threshold
    assert result.n_answered == answered.sum() and result.n_errors == (1 - y[new][answered]).sum()
    assert result.coverage_ci[0] < result.coverage < result.coverage_ci[1]
    assert result.error_rate_ci[0] < result.error_rate < result.error_rate_ci[1]


def test_the_vectorized_procedure_of_the_metric_chooses_what_mapie_chooses():
    """The leaderboard's `coverage_at_risk` runs Learn-then-Test vectorized over resamples; on plain data it picks
    MAPIE's threshold, over populations of every difficulty, sizes and levels."""
    from semuq_eval.metrics.risk import ltt_choice

    rng = np.random.default_rng(7)
    agreed = chosen = 0
    for trial in range(300):
        n = int(rng.integers(30, 800))
        u = rng.normal(size=n)
        correct = (rng.uniform(size=n) < 1 / (1 + np.exp(rng.uniform(0.5, 4) * u - rng.normal()))).astype(int)
        if trial % 7 == 0:
            u = np.round(u, 1)  # ties
        alpha, delta = float(rng.choice([0.05, 0.1, 0.2, 0.3])), float(rng.choice([0.05, 0.1, 0.2]))
        mapie = abstention_threshold(u, correct, alpha=alpha, delta=delta)
        index, answered, total, thresholds = ltt_choice(u, correct, np.ones((1, n)), alpha=alpha, delta=delta)
        ours = None if index[0] < 0 else float(thresholds[index[0]])
        assert ours == mapie.threshold, (trial, ours, mapie)
        assert answered[0] == mapie.n_answered and total[0] == n
        agreed += 1
        chosen += ours is not None
    assert agreed == 300 and 50 < chosen < 300  # both outcomes were exercised


def test_coverage_at_risk_is_a_registered_metric_with_an_interval():
    from semuq_eval.metrics import Bootstrap, evaluate, get

    assert get("coverage_at_risk").higher_is_better
    rng = np.random.default_rng(8)
    u, y = _population(3000, rng)
    r = evaluate({"u": u, "noise": rng.normal(size=3000)}, y, metrics=["coverage_at_risk"],
                 bootstrap=Bootstrap(n_resamples=200))  # fmt: skip
    good, noise = r["u"]["coverage_at_risk"], r["noise"]["coverage_at_risk"]
    assert 0.1 < good.value <= 0.2 and good.ci_low <= good.value <= good.ci_high
    assert noise.value == 0.0  # the LLM is wrong half of the time and the noise ranks nothing: answer nothing


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": 0.0}, "alpha must be strictly between 0 and 1"),
        ({"delta": 1.0}, "delta must be strictly between 0 and 1"),
        ({"n_thresholds": 0}, "n_thresholds must be a whole number"),
        ({"method": "holm"}, "unknown multiplicity correction 'holm'"),
    ],
)
def test_bad_levels_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        abstention_threshold([0.1, 0.2], [1, 0], **kwargs)


# --- the cross-fitted combination ---------------------------------------------------------------------------


def test_the_combination_scores_every_question_with_a_model_that_did_not_see_it():
    """Forty noise estimators on 120 questions: a model scored on the questions it was fitted on memorizes them
    (AUROC far above 0.5); the cross-fitted scores stay at chance, and so does the fold-chosen single one."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(5)
    n, k = 120, 40
    correct = rng.integers(0, 2, n)
    noise = {f"e{j}": rng.normal(size=n) for j in range(k)}
    x = np.column_stack(list(noise.values()))
    in_sample = 1 - LogisticRegression(C=1.0, max_iter=1000).fit(x, correct).predict_proba(x)[:, 1]
    assert auroc(in_sample, correct) > 0.75
    c = cross_fitted_combination(noise, correct)
    assert abs(auroc(c.combined, correct) - 0.5) < 0.15
    assert abs(auroc(c.best_single, correct) - 0.5) < 0.15
    assert len(c.chosen) == 5 and np.isfinite(c.combined).all()


def test_two_complementary_estimators_combine_better_than_either():
    rng = np.random.default_rng(6)
    n = 1000
    correct = rng.integers(0, 2, n)
    half = rng.integers(0, 2, n).astype(bool)  # each estimator sees the label on its own half only
    a = np.where(half, -2.0 * correct, 0.0) + rng.normal(size=n)
    b = np.where(~half, -2.0 * correct, 0.0) + rng.normal(size=n)
    c = cross_fitted_combination({"a": a, "b": b}, correct)
    assert auroc(c.combined, correct) > auroc(c.best_single, correct) + 0.05
    assert auroc(c.combined, correct) > max(auroc(a, correct), auroc(b, correct))


def test_the_combination_leaves_out_unscored_questions_and_refuses_too_few():
    correct = np.array([1, 0] * 10, dtype=float)
    a = np.linspace(0, 1, 20)
    a[3] = np.nan
    c = cross_fitted_combination({"a": a, "b": np.cos(np.arange(20.0))}, correct, n_folds=2)
    assert np.isnan(c.combined[3]) and np.isfinite(np.delete(c.combined, 3)).all()
    with pytest.raises(ValueError, match="at least two estimators"):
        cross_fitted_combination({"a": a}, correct)
    with pytest.raises(ValueError, match="each class needs at least n_folds = 50"):
        cross_fitted_combination({"a": a, "b": a}, correct, n_folds=50)


# --- the command ----------------------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path):
    target = tmp_path / "semuq" / "semuq_toy_a" / "llm-alpha"
    shutil.copytree(STORE / "llm-alpha", target)
    return target


def test_decide_calibrate_then_apply_to_a_run(store, tmp_path, capsys):
    cal = tmp_path / "cal.json"
    assert (
        cli_main(["decide", "calibrate", str(store), "--estimator", "kle_heat@enc", "--output", str(cal)])
        == 0
    )
    saved = load_calibrator(cal)
    assert saved.estimator == "kle_heat@enc" and saved.provenance["llm"] == "llm-alpha"
    assert "correct" in capsys.readouterr().out
    out = tmp_path / "conf.json"
    assert cli_main(["decide", "apply", str(cal), str(store), "--output", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert len(doc["questions"]) == 60 and all(0.0 <= q["confidence"] <= 1.0 for q in doc["questions"])
    mine = tmp_path / "notes.json"
    mine.write_text("{}")
    assert cli_main(["decide", "apply", str(cal), str(store), "--output", str(mine)]) == 2
    assert mine.read_text() == "{}" and "--force" in capsys.readouterr().err


def test_decide_threshold_and_combine_print_counts_and_intervals(store, tmp_path, capsys):
    assert cli_main(["decide", "threshold", str(store), "--estimator", "kle_heat@enc", "--alpha", "0.3",
                     "--json", str(tmp_path / "t.json")]) == 0  # fmt: skip
    text = capsys.readouterr().out
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["calibration"]["n_calibration"] == 30 and doc["held_out"]["n"] == 30
    assert ("answer nothing" in text) == (doc["calibration"]["threshold"] is None)
    assert cli_main(["decide", "combine", str(store), "--estimators", "kle_heat@enc,se@lexical,msp",
                     "--folds", "3", "--bootstrap", "50"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "combination - best single" in text and "correct /" in text


def test_decide_refuses_an_unknown_estimator_and_strategy_in_one_line(store, capsys):
    assert cli_main(["decide", "threshold", str(store), "--estimator", "nope@enc"]) == 2
    assert "no estimator 'nope@enc'" in capsys.readouterr().err
    assert cli_main(["decide", "threshold", str(store), "--estimator", "msp", "--strategy", "vote"]) == 2
    assert "--strategy 'vote'" in capsys.readouterr().err
    assert cli_main(["decide", "combine", str(store), "--folds", "1"]) == 2
    assert "--folds: input should be greater than or equal to 2" in capsys.readouterr().err


def test_the_offline_boards_decisions_regenerate_from_its_records(tmp_path):
    """leaderboards/offline/decisions.md is what its recipe makes of the committed records."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "decisions.md"
    recipe = repo / "leaderboards" / "offline" / "recipe" / "decisions.py"
    subprocess.run(
        [sys.executable, str(recipe), "--output", str(out)], check=True, cwd=repo, capture_output=True
    )
    assert out.read_text() == (repo / "leaderboards" / "offline" / "decisions.md").read_text()
