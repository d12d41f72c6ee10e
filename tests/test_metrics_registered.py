"""A metric registered as CONTRIBUTING.md shows reaches the breakdown and the leaderboard with no other edit.

The run names it in its ``metrics`` setting; the breakdown scores it with a CI, the leaderboard's cells carry it,
and its ``higher_is_better`` decides which estimator is best and what lm-eval is told.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from semuq_eval import metrics
from semuq_eval.harness.breakdown import summarize, summary_keys
from semuq_eval.harness.settings import Settings
from semuq_eval.leaderboard.schema import read_document
from tests.fixtures.tiny_harness import QA, CannedLM, breakdown_of, run_tasks

EXAMPLE = "tests.examples.mean_gap_metric"


@pytest.fixture
def mean_gap():
    """CONTRIBUTING's metric example, imported (registering ``mean_gap``) and unregistered afterwards."""
    sys.modules.pop(EXAMPLE, None)
    module = importlib.import_module(EXAMPLE)
    yield module
    metrics.registry.unregister("mean_gap")
    sys.modules.pop(EXAMPLE, None)


def test_a_registered_metric_reaches_the_breakdown_and_the_leaderboard(mean_gap, tmp_path):
    from semuq_eval.leaderboard.build import build

    chosen = [*metrics.DEFAULT_METRICS, "mean_gap"]
    run_tasks(CannedLM(white_box=True), tmp_path, metrics=chosen)
    b = breakdown_of(tmp_path)
    assert b["settings"]["metrics"] == chosen
    for estimator, per in b["results"]["greedy"].items():
        gap = per["mean_gap"]
        assert gap["n"] == len(QA) and gap["n_valid_resamples"] > 0, estimator
        assert gap["ci_low"] <= gap["value"] <= gap["ci_high"], estimator
        assert gap["ci_method"] == "percentile bootstrap, 50 resamples, 95%"
    doc = build([str(tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr")], tmp_path / "board", plots=False)
    assert doc["settings"]["metrics"] == ["auroc", "ece", "prr", "auarc", "mean_gap"]
    cells = [c for c in doc["cells"] if c["metric"] == "mean_gap" and c["strategy"] == "greedy"]
    assert {c["estimator"] for c in cells} == set(b["results"]["greedy"])
    for c in cells:
        assert c["status"] == "ok" and c["value"] == pytest.approx(
            b["results"]["greedy"][c["estimator"]]["mean_gap"]["value"]
        )
    on_disk = read_document(tmp_path / "board" / "leaderboard.json")
    assert any(c["metric"] == "mean_gap" for c in on_disk["cells"])


def _items(scores: dict[str, list[float]], correct: list[int]) -> list[dict]:
    return [
        {
            "doc_id": i,
            "scores": {name: values[i] for name, values in scores.items()},
            "labels": {"greedy": y, "majority": y},
            "problems": [],
        }
        for i, y in enumerate(correct)
    ]


def test_the_first_metric_ranks_the_estimators_as_its_higher_is_better_says(mean_gap):
    rng = np.random.default_rng(0)
    correct = rng.integers(0, 2, 60)
    wide = (1 - correct) + 0.3 * rng.normal(size=60)  # incorrect answers far more uncertain
    narrow = 0.2 * (1 - correct) + 0.3 * rng.normal(size=60)
    items = _items({"wide": wide.tolist(), "narrow": narrow.tolist()}, correct.tolist())

    by_gap = summarize(items, Settings.from_metadata({"metrics": ["mean_gap", "ece"], "bootstrap": 20}))
    assert by_gap["best"]["greedy"]["estimator"] == "wide"  # higher_is_better=True: the larger gap
    assert set(by_gap["best"]["greedy"]) == {"estimator", "mean_gap", "ece", "reliable"}

    by_ece = summarize(items, Settings.from_metadata({"metrics": ["ece", "mean_gap"], "bootstrap": 20}))
    results = by_ece["results"]["greedy"]
    lowest = min(results, key=lambda n: results[n]["ece"]["value"])
    highest = max(results, key=lambda n: results[n]["ece"]["value"])
    assert lowest != highest and by_ece["best"]["greedy"]["estimator"] == lowest  # higher_is_better=False

    keys = summary_keys(  # a table estimator must be one a run can score: a registered aggregator
        Settings.from_metadata({"metrics": ["mean_gap", "ece"], "table_estimators": ["msp"]})
    )
    assert keys["mean_gap_best_greedy"] is True and keys["mean_gap_greedy:msp"] is True
    assert keys["ece_best_greedy"] is False and keys["ece_greedy:msp"] is False


def test_an_unknown_metric_is_refused_naming_it_and_the_known_ones():
    from semuq_eval.leaderboard.compute import LeaderboardConfig

    with pytest.raises(
        ValueError, match=r"metadata metrics: unknown metric\(s\) \['brier'\]; known: \[.*'auroc'"
    ):
        Settings.from_metadata({"metrics": ["auroc", "brier"]})
    with pytest.raises(ValueError, match=r"each once"):
        Settings.from_metadata({"metrics": ["auroc", "auroc"]})
    with pytest.raises(ValueError, match=r"unknown metric\(s\) \['brier'\]"):
        LeaderboardConfig(metrics=("auroc", "brier"))


def test_a_default_run_records_the_default_metrics():
    assert Settings.from_metadata({}).as_dict()["metrics"] == list(metrics.DEFAULT_METRICS)
