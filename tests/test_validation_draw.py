"""The judge validation set's draw (tools/draw_validation.py) follows leaderboards/validation/PROTOCOL.md: seeded,
equal strata, split by question, an annotation sheet that shows no LLM, kind, half or judge label."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.fixtures.tiny_harness import canned_run
from tools import draw_validation


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> list[str]:
    tmp = tmp_path_factory.mktemp("draw")
    store = canned_run(tmp, tmp / "out")
    other = store.parent / "other-llm"  # a second LLM's store of the same set
    shutil.copytree(store, other)
    return [str(store), str(other)]


def test_the_draw_is_seeded_stratified_and_split_by_question(stores, tmp_path):
    items, record = draw_validation.draw(stores, tmp_path / "a", total=8)
    again, _ = draw_validation.draw(stores, tmp_path / "b", total=8)
    assert items == again and record["per_stratum"] == 2 and record["n_items"] == 8
    strata = {(i["llm"], i["set"], i["kind"]) for i in items}
    assert len(strata) == 4 and all(
        sum((i["llm"], i["set"], i["kind"]) == s for i in items) == 2 for s in strata
    )
    assert [i["id"] for i in items] == list(range(8))
    for item in items:
        assert item["half"] == draw_validation.half(item["set"], item["doc_id"])
        assert (item["sample"] is None) == (item["kind"] == "greedy")


def test_the_sheet_shows_the_question_references_and_answer_only(stores, tmp_path, capsys):
    assert draw_validation.main([*stores, "--output", str(tmp_path), "--total", "8"]) == 0
    sheet = (tmp_path / "sheet.md").read_text()
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert all(f"## {i['id']}" in sheet for i in items)
    for hidden in ("canned", "other-llm", "greedy", "sampled", "dev", "test", "label", "correct"):
        assert hidden not in sheet.split("\n", 1)[1], hidden
    assert json.loads((tmp_path / "draw.json").read_text())["n_items"] == 8
    assert draw_validation.main([*stores, "--output", str(tmp_path), "--total", "8"]) == 2  # drawn once
    assert "drawn once" in capsys.readouterr().err


def test_halves_depend_on_the_question_only():
    assert {draw_validation.half("nqopen", d) for d in range(800, 1200)} == {"dev", "test"}
    assert draw_validation.half("nqopen", 801) == draw_validation.half("nqopen", 801)
    assert Path(draw_validation.__file__).name == "draw_validation.py"
