"""Extending semuq-eval is one file plus one registration: the CONTRIBUTING examples, run for real.

Each file in ``tests/examples/`` registers an operator, an aggregator, a judge, a metric or a label strategy;
nothing in the harness is edited, yet a run's breakdown gains the new estimator, the new judge's labels and the
new strategy's results.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from semuq_eval import aggregators, judges, metrics, operators, signals
from semuq_eval.judges import strategies
from tests.fixtures.tiny_harness import QA, CannedLM, breakdown_of, run_tasks

EXAMPLES = Path(__file__).parent / "examples"
REGISTERED = {
    "word_overlap_operator": (operators, "word_overlap"),
    "mean_dissimilarity_aggregator": (aggregators, "mean_dissimilarity"),
    "first_alias_judge": (judges, "first_alias"),
    "mean_gap_metric": (metrics, "mean_gap"),
    "any_sample_strategy": (strategies, "any_sample"),
    "char_weights_extra": (operators, "lexical_chars"),
}
"""Example module -> (the family it registers into, the name it registers)."""
MODULES = tuple(REGISTERED)


@pytest.fixture
def extensions():
    """Import the examples (registering them) and unregister them afterwards."""
    modules = {}
    for name in MODULES:
        full = f"tests.examples.{name}"
        sys.modules.pop(full, None)
        modules[name] = importlib.import_module(full)
    yield modules
    for name, (family, registered) in REGISTERED.items():
        family.registry.unregister(registered)
        sys.modules.pop(f"tests.examples.{name}", None)
    aggregators.registry.unregister("char_weighted_te")
    del signals.SIGNALS["char_weights"]


def test_a_registered_operator_aggregator_judge_and_label_strategy_reach_the_breakdown(extensions, tmp_path):
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
    assert list(b["labels"]) == ["greedy", "majority", "any_sample"]  # App. D's two first, then by name
    assert b["results"]["any_sample"]["mean_dissimilarity@word_overlap"]["auroc"]["n"] == len(QA)
    assert b["labels"]["any_sample"]["n_correct"] >= b["labels"]["majority"]["n_correct"]


def test_a_declared_signal_reaches_the_aggregator_that_reads_it(extensions, tmp_path):
    """A plugin's operator extra is an aggregator input without editing any list of the package."""
    run_tasks(CannedLM(white_box=True), tmp_path, operators=["lexical_chars"])
    b = breakdown_of(tmp_path)
    assert b["results"]["greedy"]["char_weighted_te@lexical_chars"]["auroc"]["n"] == len(QA)
    assert "char_weighted_te@lexical_chars" not in b["unavailable"]
    op = extensions["char_weights_extra"].LexicalCharsOperator()
    (weights,) = op.char_weights(["q"], [["ab c"]], [[[(0, 2), (2, 4)]]])[0]
    np.testing.assert_allclose(weights, [0.5, 0.5])


def test_an_operator_extra_must_be_a_declared_signal():
    class Undeclared(operators.Operator):
        extras = ("not_declared",)

    with pytest.raises(TypeError, match=r"extras \['not_declared'\] are not declared operator signals"):
        operators.register("undeclared_extra")(Undeclared)
    assert "undeclared_extra" not in operators.names()


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
    any_sample = extensions["any_sample_strategy"].any_sample
    assert [any_sample(False, [False, None, True]), any_sample(True, [None]), any_sample(None, [False])] == [
        True,
        None,
        False,
    ]


def test_contributing_shows_each_example_verbatim():
    text = (Path(__file__).parents[1] / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for name in MODULES:
        assert (EXAMPLES / f"{name}.py").read_text(encoding="utf-8").strip() in text, name
