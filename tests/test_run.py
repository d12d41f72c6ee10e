"""finish_run: the one place a run's items become its breakdown and its store's files."""

from __future__ import annotations

import json
import logging

import pytest

from semuq_eval.harness import Doc, RunFacts, RunStore, Settings, finish_run, process_docs
from semuq_eval.judges import StringJudge
from semuq_eval.models.generation import Generation


def _docs() -> list[Doc]:
    return [
        Doc(
            0, "Capital of France?", ["Paris"], Generation("Paris"), [Generation("Paris"), Generation("Lyon")]
        ),
        Doc(1, "Largest planet?", ["Jupiter"], Generation("Mars"), [Generation("Mars"), Generation("Venus")]),
    ]


def _items(settings: Settings) -> list[dict]:
    return process_docs(_docs(), settings, judge=StringJudge()).items


def _finish(items, settings, store, label_set="run", **kwargs) -> dict:
    facts = RunFacts("t", {}, {"judge": "string"}, label_set=label_set)
    return finish_run(items, settings, facts, store=store, **kwargs)


def test_the_breakdown_scores_and_record_are_written_into_the_store(tmp_path):
    settings = Settings(n_samples=2, operators=("lexical",), bootstrap=10)
    items = _items(settings)
    store = RunStore(tmp_path / "store")
    store.begin("t", settings.as_dict())  # a run's start, which the record is read with
    store.write_generations(_docs())
    breakdown = _finish(items, settings, store)
    assert breakdown["n_docs"] == 2 and breakdown["labels"]["greedy"]["n_correct"] == 1
    on_disk = json.loads((tmp_path / "store" / "breakdown.json").read_text(encoding="utf-8"))
    assert (
        list(on_disk) == list(breakdown) and on_disk["labels"] == breakdown["labels"]
    )  # NaN is null on disk
    lines = (tmp_path / "store" / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["doc_id"] for line in lines] == [0, 1]
    assert (tmp_path / "store" / "record.jsonl.gz").is_file()


def test_without_a_store_setting_only_the_breakdown_is_written(tmp_path):
    settings = Settings(n_samples=2, operators=("lexical",), bootstrap=10, store=False)
    _finish(_items(settings), settings, RunStore(tmp_path / "store"))
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == ["breakdown.json"]


def test_a_store_that_cannot_be_written_raises_or_warns_and_keeps_the_breakdown(tmp_path, caplog):
    settings = Settings(n_samples=2, operators=("lexical",), bootstrap=10)
    items = _items(settings)
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    store = RunStore(tmp_path / "file" / "store")
    with pytest.raises(OSError):
        _finish(items, settings, store)
    with caplog.at_level(logging.WARNING, logger="semuq_eval.harness.finish"):
        breakdown = _finish(items, settings, store, strict=False)
    assert breakdown["n_docs"] == 2
    assert "t: could not write the breakdown or record to" in caplog.text
