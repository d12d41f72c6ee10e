"""Faults of input and size (issue 56, items 5-7): text that is not Unicode, options of the wrong shape or
nesting, answers too long for a quadratic operator, an operator failing on one question, gzip bombs and
assets damaged without changing their size. Each ends in one line naming the file and field, or is recorded
where the run says so; nothing else of the run is lost.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tracemalloc
from pathlib import Path

import pytest

from semuq_eval import assets, operators
from semuq_eval.assets import cache as asset_cache
from semuq_eval.commands import main as cli_main
from semuq_eval.data import load_qa
from semuq_eval.harness import operator_runs
from semuq_eval.harness.breakdown import breakdown_table
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.operator_runs import MAX_FAILED_PASSES, compute_operators
from semuq_eval.harness.pipeline import process_docs
from semuq_eval.harness.record import question_hash
from semuq_eval.harness.settings import Settings
from semuq_eval.jsonio import read_jsonl_gz
from semuq_eval.judges import StringJudge
from semuq_eval.models.generation import Generation
from semuq_eval.operators.lexical import MAX_WORDS, LexicalOperator
from tests.fixtures.tiny_harness import canned_run
from tests.test_assets import cache, fake_minilm, index  # noqa: F401  (fixtures)

pytestmark = pytest.mark.faults

LONG = " ".join(f"w{i % 97}" for i in range(60_000))
OTHER_LONG = " ".join(f"w{i % 89}" for i in range(60_000))


@pytest.fixture(scope="module")
def good_store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("faults-inputs")
    return canned_run(tmp, tmp / "runs")


def _copy(store: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "semuq" / "semuq_triviaqa_dpr" / "canned"
    shutil.copytree(store, copy)
    return copy


def _one_line(argv: list[str], capsys) -> tuple[int, str]:
    """Exit status and the error lines of a command (warnings and info left out)."""
    capsys.readouterr()
    try:
        code = cli_main(argv)
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert "Traceback" not in err, err[-3000:]
    return code, "\n".join(x for x in err.splitlines() if x.strip() and not x.startswith(("WARNING", "INFO")))


# -- text that is not Unicode ---------------------------------------------------------------------------------


def test_a_lone_surrogate_is_hashed_and_every_valid_question_keeps_its_hash():
    assert question_hash(" Capital of France? ") == "a67d3f273c88df7b"  # unchanged
    assert question_hash("\ud800?") != question_hash("\ud801?")


def test_a_qa_record_with_a_lone_surrogate_is_skipped_naming_the_file_line_and_field(tmp_path):
    folder = tmp_path / "qa"
    folder.mkdir()
    rows = [
        {"id": "a", "question": "Capital of France?", "answers": ["Paris"]},
        {"id": "b", "question": "\ud800 broken?", "answers": ["x"]},
        {"id": "c", "question": "Largest planet?", "answers": ["\udfff", "Jupiter"]},
    ]
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.warns(
        UserWarning, match=r"qa/test.jsonl: skipped 1 record.*line 2: field question is not valid"
    ):
        records = load_qa("qa", "test", data_dir=tmp_path)
    assert [(r["id"], r["answers"]) for r in records] == [("a", ["Paris"]), ("c", ["Jupiter"])]


def test_a_stored_question_with_a_lone_surrogate_rescores_and_exports(good_store, tmp_path, capsys):
    store = _copy(good_store, tmp_path)
    gen = store / "generations.rank0.jsonl"
    lines = gen.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "question": "\ud800 " + first["question"]})
    gen.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _one_line(["rescore", str(store), "--bootstrap", "20"], capsys)[0] == 0
    record = tmp_path / "r.jsonl.gz"
    assert _one_line(["export-record", str(store), "--output", str(record)], capsys)[0] == 0


# -- a store's N --------------------------------------------------------------------------------------------------


def test_an_n_ablation_store_holds_as_many_samples_as_its_manifest_says(good_store, tmp_path, capsys):
    target = tmp_path / "ablated" / "semuq" / "semuq_triviaqa_dpr" / "canned"
    argv = [
        "rescore",
        str(good_store),
        "--n_samples",
        "2",
        "--store_output",
        str(target),
        "--bootstrap",
        "20",
    ]
    assert _one_line(argv, capsys)[0] == 0
    assert json.loads((target / "manifest.json").read_text())["settings"]["n_samples"] == 2
    lines = [json.loads(x) for x in (target / "generations.rank0.jsonl").read_text().splitlines()]
    assert lines and all(len(line["samples"]) == 2 for line in lines)
    assert _one_line(["rescore", str(target), "--bootstrap", "20"], capsys)[0] == 0


@pytest.mark.parametrize("command", ["rescore", "export-record"])
def test_a_manifest_smaller_than_its_samples_is_refused_naming_the_doc_and_field(
    good_store, tmp_path, capsys, command
):
    copy = _copy(good_store, tmp_path)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["settings"]["n_samples"] = 2  # the store holds 4 samples per question
    (copy / "manifest.json").write_text(json.dumps(manifest))
    argv = ["rescore", str(copy), "--bootstrap", "20"]
    if command == "export-record":
        argv = ["export-record", str(copy), "--output", str(tmp_path / "r.jsonl.gz")]
    code, err = _one_line(argv, capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "generations.rank0.jsonl:1: doc 0: field samples holds 4 answers" in err and "n_samples (2" in err


# -- options ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        (
            "--operator_options",
            "--operator_options must be a JSON object of operator name -> options, got a list",
        ),
        ("--judge_options", "--judge_options must be a JSON object of option -> value, got a list"),
    ],
)
def test_an_option_of_the_wrong_shape_is_one_line_naming_it(good_store, capsys, flag, expected):
    code, err = _one_line(["rescore", str(good_store), flag, "[1]", "--bootstrap", "20"], capsys)
    assert code == 2 and err == f"semuq-eval rescore: {expected}"


@pytest.mark.parametrize(
    "argv",
    [
        lambda store, deep: ["rescore", str(store), "--operator_options", deep],
        lambda store, deep: ["rescore", str(store), "--judge", "string", "--judge_options", deep],
        lambda store, deep: [
            "diagnose",
            str(store),
            "--operator_options",
            deep,
            "--output",
            str(store.parent / "d"),
        ],
        lambda store, deep: ["run", "--model", "dummy", "--tasks", "semuq_triviaqa", "--metadata", deep],
        lambda store, deep: ["judge", str(store), "--judge", "string", "--judge_args", f"mode={deep}"],
    ],
)
def test_option_json_nested_too_deep_is_one_line_naming_the_flag(good_store, capsys, argv):
    code, err = _one_line(argv(good_store, "[" * 100_000), capsys)
    assert code == 2 and "nested too deep" in err and len(err.splitlines()) == 1 and len(err) < 300, err


# -- answers too long for ROUGE-L ---------------------------------------------------------------------------------


def test_rouge_l_reads_at_most_max_words_of_two_huge_answers_in_little_memory():
    tracemalloc.start()
    try:
        out = LexicalOperator()(["q"], [[LONG, OTHER_LONG, "w1 w2"]], anchors=["w1"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 << 20, f"{peak:,} bytes"
    assert 0 < out.matrices[0][0, 1] < 1
    assert out.truncated == [
        f"ROUGE-L read the first {MAX_WORDS} words of answer 0, answer 1 (60,000 words at most; lexical option "
        "max_words)"
    ]
    assert LexicalOperator(measure="jaccard").truncations([[LONG]]) == [None]  # Jaccard is linear: read whole


def test_max_words_is_an_option_named_in_the_identity_only_when_changed():
    assert "max_words" not in LexicalOperator().info
    assert LexicalOperator(max_words=64).info["max_words"] == 64
    with pytest.raises(ValueError, match="max_words must be a whole number >= 1, got 0"):
        LexicalOperator(max_words=0)


def test_a_run_records_per_question_which_answers_rouge_l_read_in_part():
    docs = [
        Doc(0, "q0", ["Paris"], Generation("Paris"), [Generation(LONG), Generation("Paris")]),
        Doc(1, "q1", ["Lyon"], Generation("Lyon"), [Generation("Lyon"), Generation("Lyon city")]),
    ]
    out = process_docs(docs, Settings(n_samples=2, operators=("lexical",)), judge=StringJudge())
    first, second = out.items
    assert [p for p in first["problems"] if p.startswith("lexical: ")] == [
        "lexical: ROUGE-L read the first 512 words of answer 0 (60,000 words at most; lexical option max_words)"
    ]
    assert second["problems"] == [] and out.operator_runs["lexical"].n_truncated == 1
    assert first["scores"]["cae@lexical"] is not None


# -- an operator failing on one question --------------------------------------------------------------------------


class _FailsOnBoom(LexicalOperator):
    """Lexical, except that a question with an answer containing "boom" runs out of memory."""

    calls = 0

    def _score(self, questions, answers, cost):
        type(self).calls += 1
        if any("boom" in a for group in answers for a in group):
            raise MemoryError
        return super()._score(questions, answers, cost)


@pytest.fixture
def failing_operator():
    operators.register("fails_on_boom")(_FailsOnBoom)
    operator_runs._OPERATORS.clear()
    yield "fails_on_boom"
    operators.registry.unregister("fails_on_boom")
    operator_runs._OPERATORS.clear()


def _docs(n: int, bad: set[int]) -> list[Doc]:
    return [
        Doc(
            i, f"q{i}", ["a"], Generation("a"), [Generation("a b"), Generation("boom" if i in bad else "a c")]
        )
        for i in range(n)
    ]


def test_an_operator_failing_on_one_question_loses_only_that_question(failing_operator):
    docs = _docs(40, bad={17})
    runs = compute_operators(docs, ["lexical", failing_operator])
    assert all("lexical" in d.matrices for d in docs)  # the other operator keeps every score
    assert [d.doc_id for d in docs if failing_operator not in d.matrices] == [17]
    assert docs[17].unavailable[failing_operator] == "operator fails_on_boom failed: MemoryError"
    run = runs[failing_operator].as_dict()
    assert run["status"] == "partial" and run["n_unavailable"] == 1
    footer = breakdown_table({"results": {}, "operators": {failing_operator: run}})
    assert (
        "- operator fails_on_boom: no matrix for 1 of 40 questions (operator fails_on_boom failed: MemoryError)"
        in footer
    )


def test_an_operator_failing_everywhere_gives_up_after_a_bounded_number_of_passes(failing_operator):
    _FailsOnBoom.calls = 0
    docs = _docs(1000, bad=set(range(1000)))
    runs = compute_operators(docs, [failing_operator])
    assert runs[failing_operator].status == "unavailable" and runs[failing_operator].n_unavailable == 1000
    assert _FailsOnBoom.calls <= 2 * MAX_FAILED_PASSES + 2


# -- gzip bombs ---------------------------------------------------------------------------------------------------


def _peak(read) -> tuple[int, str]:
    """Peak traced memory of ``read()`` and the message of the ValueError it must raise."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as err:
            read()
        return tracemalloc.get_traced_memory()[1], str(err.value)
    finally:
        tracemalloc.stop()


def test_a_gzip_bomb_of_one_huge_line_is_refused_in_one_line_and_little_memory(tmp_path):
    bomb = tmp_path / "record.jsonl.gz"
    with gzip.open(bomb, "wb") as fh:  # about 100 KB that inflate to 100 MB, one line
        fh.write(b'{"a": "' + b"x" * (100 << 20) + b'"}\n')
    peak, message = _peak(lambda: list(read_jsonl_gz(bomb, "run record")))
    assert message.startswith(f"{bomb}:1: a line longer than") and "compression bomb" in message
    assert "\n" not in message and peak < 80 << 20, f"{peak:,} bytes"


def test_a_gzip_bomb_of_many_lines_is_refused_once_past_its_budget(tmp_path, monkeypatch):
    monkeypatch.setattr("semuq_eval.jsonio.MAX_GZIP_BYTES", 32 << 20)
    bomb = tmp_path / "data.jsonl.gz"
    with gzip.open(bomb, "wb") as fh:  # blank lines of 1 MiB: nothing to parse, only bytes to inflate
        for _ in range(96):
            fh.write(b" " * (1 << 20) + b"\n")
    peak, message = _peak(lambda: list(read_jsonl_gz(bomb, "training-data file")))
    assert message == f"{bomb}: inflates to more than {32 << 20:,} bytes; refusing it as a compression bomb"
    assert peak < 80 << 20, f"{peak:,} bytes"


# -- assets damaged without changing their size -------------------------------------------------------------------


@pytest.fixture
def hashes(monkeypatch) -> list[str]:
    """The files the asset cache hashes, in order."""
    seen: list[str] = []
    real = asset_cache.file_sha256

    def counting(path, **kwargs):
        seen.append(Path(path).name)
        return real(path, **kwargs)

    monkeypatch.setattr(asset_cache, "file_sha256", counting)
    monkeypatch.setattr(asset_cache, "_VERIFIED", {})
    return seen


@pytest.mark.usefixtures("cache", "index", "fake_minilm")
def test_an_asset_is_hashed_once_per_stamp_and_a_damaged_one_is_refused_in_one_line(hashes):
    name = "all-minilm-l6-v2"
    path = assets.prepare(name, progress=False)[name]
    n = len(json.loads((path / asset_cache.MANIFEST).read_text())["files"])
    hashes.clear()
    assert assets.locate(name) == path and len(hashes) == n  # first use: every file hashed once
    assert assets.locate(name) == path and len(hashes) == n  # this process trusts them now
    asset_cache._VERIFIED.clear()  # as a new process: the stamps file beside the folder vouches for them
    assert assets.locate(name) == path and len(hashes) == n

    weights = path / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[100] ^= 0xFF
    weights.write_bytes(bytes(data))  # same size
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    with pytest.raises(FileNotFoundError) as err:
        assets.locate(name)
    assert str(err.value) == (
        f"asset '{name}' is damaged in {path} (file {weights} does not match its sha256); run: "
        f"semuq-eval assets --only {name} --force"
    )
    assert hashes[-1] == "model.safetensors"
    assets.prepare(name, progress=False)  # the deep check sees it too and rebuilds
    assert assets.locate(name) == path


@pytest.mark.usefixtures("cache", "index", "fake_minilm")
def test_a_cache_that_cannot_keep_stamps_is_still_used(hashes, monkeypatch):
    name = "all-minilm-l6-v2"
    path = assets.prepare(name, progress=False)[name]

    def read_only(*_args, **_kwargs):
        raise PermissionError(13, "Read-only file system")

    monkeypatch.setattr(asset_cache, "write_json", read_only)
    n = len(json.loads((path / asset_cache.MANIFEST).read_text())["files"])
    hashes.clear()
    assert assets.locate(name) == path and len(hashes) == n
    asset_cache._VERIFIED.clear()
    assert (
        assets.locate(name) == path and len(hashes) == 2 * n
    )  # no stamps kept: the next process hashes again
