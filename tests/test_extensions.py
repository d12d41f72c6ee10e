"""Extending semuq-eval is one file plus one registration: the CONTRIBUTING examples, run for real.

Each file in ``tests/examples/`` registers an operator, an aggregator, a judge or a metric; nothing in the
harness is edited, yet a run's breakdown gains the new estimator and the new judge's labels.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.tiny_harness import QA, CannedLM, breakdown_of, run_tasks

EXAMPLES = Path(__file__).parent / "examples"
MODULES = ("word_overlap_operator", "mean_dissimilarity_aggregator", "first_alias_judge", "mean_gap_metric")


@pytest.fixture
def extensions():
    """Import the examples (registering them) and restore every registry afterwards."""
    from semuq_eval.aggregators import aggregator_registry
    from semuq_eval.judges import judge_registry
    from semuq_eval.metrics import metric_registry
    from semuq_eval.operators import operator_registry

    registries = (aggregator_registry, judge_registry, metric_registry, operator_registry)
    saved = [dict(r._objs) for r in registries]
    modules = {}
    for name in MODULES:
        full = f"tests.examples.{name}"
        sys.modules.pop(full, None)
        modules[name] = importlib.import_module(full)
    yield modules
    for registry, objs in zip(registries, saved, strict=True):
        registry._objs = objs
    for name in MODULES:
        sys.modules.pop(f"tests.examples.{name}", None)


def test_a_registered_operator_aggregator_and_judge_reach_the_breakdown(extensions, tmp_path):
    run_tasks(CannedLM(white_box=True), tmp_path, operators=["lexical", "word_overlap"], judge="first_alias")
    b = breakdown_of(tmp_path)
    greedy = b["results"]["greedy"]
    for name in ("mean_dissimilarity@word_overlap", "mean_dissimilarity@lexical", "kle_heat@word_overlap"):
        assert greedy[name]["auroc"]["n"] == len(QA)
    assert "cos@word_overlap" not in greedy  # a graded matrix is no Gram matrix: declarations decide
    assert b["judge"] == {"judge": "first_alias"}
    assert b["operators"]["word_overlap"]["status"] == "ok"
    # Who wrote Hamlet? refs ["William Shakespeare", ...]: the first alias is not in "Christopher Marlowe"
    assert b["labels"]["greedy"]["n_correct"] == 3


def test_the_examples_compute_what_they_say(extensions):
    from semuq_eval.metrics import Bootstrap, evaluate

    op = extensions["word_overlap_operator"].WordOverlapOperator()
    (S,) = op(["q"], [["a b", "b c", "a b"]]).matrices
    np.testing.assert_allclose(S, [[1, 1 / 3, 1], [1 / 3, 1, 1 / 3], [1, 1 / 3, 1]])
    agg = extensions["mean_dissimilarity_aggregator"].mean_dissimilarity
    assert agg(S) == pytest.approx(1 - (1 / 3 * 4 + 2) / 6)
    assert agg(np.ones((1, 1))) == 0.0
    u, y = np.array([0.1, 0.2, 0.9, 0.8]), np.array([1, 1, 0, 0])
    out = evaluate({"u": u}, y, metrics=["mean_gap"], bootstrap=Bootstrap(n_resamples=20, seed=0))
    assert out["u"]["mean_gap"].value == pytest.approx(0.85 - 0.15)


def test_contributing_shows_each_example_verbatim():
    text = (Path(__file__).parents[1] / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for name in MODULES:
        assert (EXAMPLES / f"{name}.py").read_text(encoding="utf-8").strip() in text, name
