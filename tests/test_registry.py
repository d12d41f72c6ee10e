"""One registry shape for the five families: lazy targets, the names users type, and entry points through which
an installed package adds an operator, an aggregator, a metric, a judge and a label strategy to a scored run."""

from __future__ import annotations

import colorsys
import logging
import sys

import pytest

from semuq_eval import aggregators, judges, metrics, operators
from semuq_eval.judges import strategies
from semuq_eval.registry import Registry
from tests.fixtures.third_party import ENTRY_POINTS, PACKAGE, write_package
from tests.fixtures.tiny_harness import QA, CannedLM, breakdown_of, run_tasks

FAMILIES = {
    "semuq_eval.operators": operators,
    "semuq_eval.aggregators": aggregators,
    "semuq_eval.metrics": metrics,
    "semuq_eval.judges": judges,
    "semuq_eval.label_strategies": strategies,
}
"""Entry-point group -> the family module that reads it."""


def test_a_lazy_target_is_imported_on_its_first_lookup():
    registry = Registry("colour", group="semuq_eval.test_colours")
    registry.register("hsv", "colorsys:rgb_to_hsv")
    assert registry.names() == ["hsv"] and "hsv" in registry
    assert registry.get("hsv")(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="'module:object'"):
        registry.register("bad", "colorsys.rgb_to_hsv")


def test_unknown_taken_and_removed_names():
    registry = Registry("colour", group="semuq_eval.test_colours")
    registry.register("red", (255, 0, 0))
    with pytest.raises(KeyError, match=r"unknown colour 'blue'; known: \['red'\]"):
        registry.get("blue")
    with pytest.raises(ValueError, match="colour 'red' is already registered"):
        registry.register("red", (254, 0, 0))
    registry.unregister("red")
    assert registry.names() == []
    with pytest.raises(KeyError, match="unknown colour 'red'"):
        registry.unregister("red")


def test_a_lazy_target_of_the_wrong_kind_is_refused_naming_the_fix():
    aggregators.registry.register("not_declared", "math:sqrt")  # a plain function, no declarations
    try:
        with pytest.raises(TypeError, match=r"register\('not_declared', matrix=\.\.\.\)"):
            aggregators.get("not_declared")
    finally:
        aggregators.registry.unregister("not_declared")


def test_a_class_is_named_once_by_its_registration_even_before_its_module_loads():
    """A built-in operator's or judge's name is its registration's: read from the lazy target without importing the
    module, and by an instance built directly; a class declaring another name than its registration's is refused."""
    from semuq_eval.judges.string import StringJudge
    from semuq_eval.operators.lexical import LexicalOperator

    assert LexicalOperator().name == "lexical" and StringJudge().name == "string"
    registry = Registry("colour", group="semuq_eval.test_colours")
    registry.register("hsv", "colorsys:rgb_to_hsv")
    assert registry.name_of(colorsys.rgb_to_hsv) == "hsv"
    with pytest.raises(LookupError, match="is not a registered colour"):
        registry.name_of(colorsys.hsv_to_rgb)

    class Declared:
        name = "teal"

    with pytest.raises(ValueError, match=r"colour 'cyan': its class declares name = 'teal'"):
        registry.register("cyan", Declared)
    registry.register("teal", Declared)
    assert registry.name_of(Declared) == "teal"


def test_every_family_answers_the_same_three_calls():
    assert "lexical" in operators.names() and operators.get("lexical").name == "lexical"
    assert "cos" in aggregators.names() and aggregators.get("cos").matrix == "gram"
    assert "auroc" in metrics.names() and metrics.get("auroc").higher_is_better
    assert "string" in judges.names() and judges.get("string", mode="em").info["mode"] == "em"
    assert strategies.names() == ["greedy", "majority"]
    assert strategies.get("majority")(False, [True, True, None]) is True


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    """The package of :mod:`tests.fixtures.third_party` on ``sys.path``; its entries and modules are removed
    afterwards."""
    monkeypatch.syspath_prepend(str(write_package(tmp_path / "site")))
    yield
    for group, points in ENTRY_POINTS.items():
        for name in points:
            FAMILIES[group].registry.unregister(name)
    sys.modules.pop(PACKAGE, None)


@pytest.mark.slow
def test_an_installed_package_adds_one_of_each_family_to_a_scored_run(third_party, tmp_path):
    for group, points in ENTRY_POINTS.items():
        assert set(points) <= set(FAMILIES[group].names()), group
    assert PACKAGE not in sys.modules  # found by name, imported only when used

    chosen = [*metrics.DEFAULT_METRICS, "tp_gap"]
    run_tasks(
        CannedLM(white_box=True),
        tmp_path,
        operators=["lexical", "tp_chars"],
        judge="tp_first_word",
        metrics=chosen,
    )
    b = breakdown_of(tmp_path)
    assert b["operators"]["tp_chars"]["status"] == "ok" and b["judge"] == {"judge": "tp_first_word"}
    assert set(b["labels"]) == {"greedy", "majority", "tp_all"}
    for strategy in ("greedy", "tp_all"):
        for name in ("tp_spread@tp_chars", "tp_spread@lexical", "kle_heat@tp_chars"):
            assert b["results"][strategy][name]["tp_gap"]["n"] == b["labels"][strategy]["n"], (strategy, name)
    assert "cos@tp_chars" not in b["results"]["greedy"]  # a graded matrix is no Gram matrix
    # first words: "Paris", "Christopher", "Jupiter", "fifty", "The", "Michelangelo" against the first reference
    assert b["labels"]["greedy"]["n_correct"] == 2
    assert b["labels"]["tp_all"]["n"] == len(QA)


def test_an_entry_point_never_replaces_a_registered_name(tmp_path, monkeypatch, caplog):
    site = tmp_path / "site"
    (site / "shadow-0.1.dist-info").mkdir(parents=True)
    (site / "shadow-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: shadow\nVersion: 0.1\n"
    )
    (site / "shadow-0.1.dist-info" / "entry_points.txt").write_text(
        "[semuq_eval.judges]\nstring = math:sqrt\n"
    )
    monkeypatch.syspath_prepend(str(site))
    with caplog.at_level(logging.WARNING, logger="semuq_eval.registry"):
        assert judges.get("string").name == "string"
    assert "judge 'string' from shadow (math:sqrt) is ignored" in caplog.text
