"""The one JSON / JSON-lines reader and writer: safe values, atomic writes, torn lines."""

from __future__ import annotations

import json

import numpy as np
import pytest

from semuq_eval.jsonio import (
    append_jsonl,
    json_safe,
    parse_jsonl,
    read_json,
    read_jsonl,
    write_json,
    write_jsonl,
)


def test_json_safe_values():
    out = json_safe(
        {"nan": float("nan"), "inf": np.float32(np.inf), "a": np.arange(3), "b": np.bool_(True), 1: (2,)}
    )
    assert out == {"nan": None, "inf": None, "a": [0, 1, 2], "b": True, "1": [2]}
    assert json.dumps(out, allow_nan=False)


def test_write_and_read_round_trip(tmp_path):
    path = write_json(tmp_path / "sub" / "x.json", {"v": np.float64(0.5)})
    assert read_json(path) == {"v": 0.5} and not list(path.parent.glob("*.tmp"))
    write_jsonl(tmp_path / "x.jsonl", [{"a": 1}, {"a": float("nan")}])
    assert [obj for _, obj in read_jsonl(tmp_path / "x.jsonl")] == [{"a": 1}, {"a": None}]
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.json: not a JSON document"):
        read_json(tmp_path / "bad.json")


def test_malformed_lines_raise_or_are_skipped(caplog):
    lines = ['{"a": 1}', "", '{"a": 2', "[3]", '{"a": 4}']
    with pytest.raises(ValueError, match=r"src:3: malformed JSON line"):
        list(parse_jsonl(lines, "src"))
    with caplog.at_level("WARNING"):
        kept = list(parse_jsonl(lines, "src", on_error="skip"))
    assert kept == [(1, {"a": 1}), (5, {"a": 4})]
    assert "src:3" in caplog.text and "src:4" in caplog.text and "got list" in caplog.text


def test_append_after_a_torn_line_keeps_the_new_record(tmp_path):
    path = tmp_path / "j.jsonl"
    append_jsonl(path, [{"k": 1}], durable=True)
    path.write_text(path.read_text() + '{"k": 2, "torn', encoding="utf-8")  # killed mid-write
    append_jsonl(path, [{"k": 3}])
    assert [obj["k"] for _, obj in read_jsonl(path, on_error="skip")] == [1, 3]
    append_jsonl(path, [])  # nothing to append: the file is left as it is
    assert path.read_text().endswith('{"k": 3}\n')
