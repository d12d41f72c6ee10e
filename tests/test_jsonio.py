"""The one JSON / JSON-lines reader and writer: safe values, atomic writes, torn lines."""

from __future__ import annotations

import json

import numpy as np
import pytest

from semuq_eval.jsonio import (
    append_jsonl,
    is_id,
    json_safe,
    parse_jsonl,
    read_json,
    read_jsonl,
    read_jsonl_gz,
    write_json,
    write_jsonl,
    write_jsonl_gz,
)


def test_json_safe_values():
    out = json_safe(
        {"nan": float("nan"), "inf": np.float32(np.inf), "a": np.arange(3), "b": np.bool_(True), 1: (2,)}
    )
    assert out == {"nan": None, "inf": None, "a": [0, 1, 2], "b": True, "1": [2]}
    assert json.dumps(out, allow_nan=False)


def test_write_and_read_round_trip(tmp_path):
    path = write_json(tmp_path / "sub" / "x.json", {"v": np.float64(0.5)})
    assert read_json(path) == {"v": 0.5} and [p.name for p in path.parent.iterdir()] == ["x.json"]
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


@pytest.mark.parametrize("writer", ["write_jsonl", "write_json"])
@pytest.mark.subprocess
def test_a_writer_killed_half_way_leaves_the_old_file_whole(tmp_path, writer):
    """SIGKILL while the new content is being written: the file keeps its old content, readable."""
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / ("x.jsonl" if writer == "write_jsonl" else "x.json")
    old = [{"old": i} for i in range(3)]
    write_jsonl(path, old) if writer == "write_jsonl" else write_json(path, old)
    before = path.read_bytes()
    code = (
        "import sys, time\n"
        f"from semuq_eval.jsonio import {writer}\n"
        "def slow():\n"
        "    for i in range(10**6):\n"
        "        if i == 2000: print('writing', flush=True); time.sleep(60)\n"
        "        yield {'new': i, 'pad': 'x' * 100}\n"
        f"{writer}(sys.argv[1], " + ("slow())" if writer == "write_jsonl" else "list(slow()))") + "\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"  # half-way: its generator is sleeping
    if writer == "write_jsonl":
        deadline = time.time() + 10
        while not list(tmp_path.glob("*.tmp")) and time.time() < deadline:
            time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert path.read_bytes() == before
    if writer == "write_jsonl":
        assert [obj for _, obj in read_jsonl(path)] == old
    else:
        assert read_json(path) == old


def test_json_nested_too_deep_is_a_located_value_error(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "deep.json").write_text(deep)
    (tmp_path / "deep.jsonl").write_text('{"ok": 1}\n{"a": ' + deep + "}\n")
    with pytest.raises(ValueError, match=r"deep\.json: not a JSON document \(nested too deep"):
        read_json(tmp_path / "deep.json")
    with pytest.raises(ValueError, match=r"deep\.jsonl:2: malformed JSON line \(nested too deep\)"):
        list(read_jsonl(tmp_path / "deep.jsonl"))


def test_a_gzip_bomb_is_refused_before_it_fills_memory(tmp_path):
    import gzip

    bomb = tmp_path / "record.jsonl.gz"
    with gzip.open(bomb, "wb") as fh:  # about 100 KB that inflate to 100 MB
        fh.write(b'{"a": "' + b"x" * (100 << 20) + b'"}\n')
    assert bomb.stat().st_size < 200_000
    with pytest.raises(ValueError, match="record.jsonl.gz:1: a line longer than .* compression bomb"):
        list(read_jsonl_gz(bomb, "run record"))
    sound = tmp_path / "sound.jsonl.gz"
    write_jsonl_gz(sound, [{"a": "x" * 1000}] * 100)
    assert len(list(read_jsonl_gz(sound, "run record"))) == 100


def test_ids_are_whole_numbers_a_float_holds_exactly():
    assert [is_id(v) for v in (0, 2**53, 2**53 + 1, 2**70, -1, True, 1.0, "1")] == [
        True,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
    ]


def test_a_server_reply_nested_too_deep_is_one_unknown_verdict(tmp_path):
    from semuq_eval import judges
    from tests.fixtures.stub_openai import StubServer

    deep = ("[" * 100_000 + "]" * 100_000).encode()
    server = StubServer(lambda body, n: (200, deep, 0))
    try:
        judge = judges.get(
            "openai", base_url=server.base_url, model="m", max_retries=0, cache="none", progress=False
        )
        (verdict,) = judge.batch(["q?"], ["a"], [["a"]])
    finally:
        server.close()
    assert verdict.label is None and verdict.error and "JSON" in verdict.error
