"""Run records: a store's record gives the same leaderboard cells, in the same bytes every time; a record that
cannot join, or cannot be read, is named in one line (file, record, field) and never stops the others.

Fixtures: the leaderboard's synthetic stores (``tests/fixtures/leaderboard/stores``), copied with a question
text per doc (the synthetic stores have no answers), and one real run of the canned LM.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from semuq_eval.commands import main as cli_main
from semuq_eval.harness.label_sets import write_label_set
from semuq_eval.harness.record import (
    RECORD_FORMAT,
    RECORD_NAME,
    RunRecord,
    question_set_hash,
    read_record,
    record_from_store,
    write_record,
)
from semuq_eval.jsonio import read_jsonl, write_jsonl
from semuq_eval.leaderboard import LeaderboardConfig, LeaderboardInputError, group_sections, load_runs
from semuq_eval.leaderboard.build import build
from semuq_eval.leaderboard.compute import compute
from semuq_eval.leaderboard.read_run import load_run
from semuq_eval.leaderboard.schema import read_document

STORES = Path(__file__).parent / "fixtures" / "leaderboard" / "stores"
FAST = LeaderboardConfig(n_resamples=200)
PAIRS = [(llm, task) for llm in ("llm-alpha", "llm-beta") for task in ("semuq_toy_a", "semuq_toy_b")]


def _stores(dest: Path) -> list[Path]:
    """The four synthetic stores copied under ``dest``, each with a question text (and a stub answer) per doc."""
    out = []
    for llm, task in PAIRS:
        target = dest / llm / "semuq" / task / llm
        shutil.copytree(STORES / llm / "semuq" / task / llm, target)
        docs = [item["doc_id"] for _, item in read_jsonl(target / "scores.jsonl")]
        write_jsonl(
            target / "generations.rank0.jsonl",
            [
                {"doc_id": d, "question": f"{task} question {d}?", "greedy": {"text": "a"}, "samples": []}
                for d in docs
            ],
        )
        out.append(target)
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``(stores, records folder)``: the records written by ``semuq-eval export-record``."""
    root = tmp_path_factory.mktemp("records")
    stores = _stores(root / "stores")
    assert cli_main(["export-record", *map(str, stores), "--output", str(root / "records")]) == 0
    return stores, root / "records"


def _record(records: Path, llm: str, task: str) -> Path:
    return records / f"{task}.{llm}.jsonl.gz"


def _without_source(cells: list[dict]) -> list[dict]:
    return [{k: v for k, v in c.items() if k != "source"} for c in cells]


def test_store_and_its_record_give_the_same_cells(exported):
    stores, records = exported
    from_stores = compute(group_sections(load_runs(stores)), FAST)
    from_records = compute(group_sections(load_runs(sorted(records.glob("*.jsonl.gz")))), FAST)
    assert [s.id for s in from_stores.sections] == [s.id for s in from_records.sections]
    assert [s.question_set for s in from_stores.sections] == [s.question_set for s in from_records.sections]
    assert len(from_stores.cells) == len(from_records.cells) == 368
    assert _without_source(from_stores.cells) == _without_source(from_records.cells)  # every figure, exactly
    # the store's breakdown lends its ECE where it equals a recomputation; the record recomputes it
    assert {c["source"] for c in from_records.cells if c["value"] is not None} == {"computed"}
    assert "run" in {c["source"] for c in from_stores.cells}
    assert from_stores.llm_pairs == from_records.llm_pairs


def test_the_record_holds_labels_scores_and_the_runs_identity(exported):
    stores, records = exported
    record = read_record(_record(records, "llm-alpha", "semuq_toy_a"))
    assert record["format"] == RECORD_FORMAT and (record["task"], record["llm"]) == (
        "semuq_toy_a",
        "llm-alpha",
    )
    assert record["n_samples"] == 5 and record["n_questions"] == len(record.questions) == 60
    assert record["question_set"] == question_set_hash(record.questions)
    assert (
        record["estimators"][:3] == ["se@enc", "cae@enc", "kle_heat@enc"] and len(record["estimators"]) == 11
    )
    assert record["operators"]["enc"] == {
        "kind": "gram",
        "status": "ok",
        "info": {"operator": "enc", "kind": "gram", "model": "/cache/models/all-minilm-l6-v2", "question_conditioned": True},
    }  # fmt: skip
    first = json.loads((stores[0] / "scores.jsonl").read_text().splitlines()[0])
    q = record.questions[0]
    assert (q["doc_id"], q["id"]) == (0, "semuq_toy_a-0")
    assert q["scores"][0] == first["scores"]["se@enc"]
    assert q["labels"] == {"run": {"greedy": 0, "majority": 0, "samples": []}}


def test_every_label_set_and_per_sample_labels_travel(tmp_path):
    store = _stores(tmp_path)[0]
    rows = [{"doc_id": d, "greedy": 1, "majority": None, "samples": [1, 0, None]} for d in range(0, 60, 2)]
    write_label_set(store, "llm-judge", rows, {"judge": {"judge": "hf", "model": "tiny"}})
    record = record_from_store(store)
    assert record["label_sets"]["llm-judge"] == {"judge": "hf", "model": "tiny"}
    assert record.questions[0]["labels"]["llm-judge"] == {
        "greedy": 1,
        "majority": None,
        "samples": [1, 0, None],
    }
    assert "llm-judge" not in record.questions[1]["labels"]  # the set did not label doc 1
    write_record(tmp_path / "r.jsonl.gz", record)
    from_record = load_run(tmp_path / "r.jsonl.gz", "llm-judge")
    from_store = load_run(store, "llm-judge")
    assert from_record.judge == from_store.judge == {"label_set": "llm-judge", "judge": "hf", "model": "tiny"}
    for strategy in ("greedy", "majority"):
        assert from_record.labels[strategy].tolist() == pytest.approx(
            from_store.labels[strategy].tolist(), nan_ok=True
        )
    assert [r.label_set for r in load_runs([tmp_path / "r.jsonl.gz"], ("all",))] == ["run", "llm-judge"]


def test_a_label_strategy_registered_from_outside_reaches_the_record_and_the_board(tmp_path):
    """A strategy registered by a user's package is computed from a label set's per-sample verdicts and written
    into the run record beside greedy and majority, and the board scores and heads a table by it (the registry is
    the one list of strategies)."""
    from semuq_eval.judges import strategies

    @strategies.register("any_sample")
    def any_sample(greedy, samples):
        judged = [v for v in samples if v is not None]
        return any(judged) if judged else None

    try:
        store = _stores(tmp_path)[0]
        rows = [
            {"doc_id": d, "greedy": 0, "majority": 0, "samples": [d % 4 == 0, 0, None]}
            for d in range(0, 60, 2)
        ]
        write_label_set(store, "llm-judge", rows, {"judge": {"judge": "hf", "model": "tiny"}})
        record = record_from_store(store)
        labelled = [q for q in record.questions if "llm-judge" in q["labels"]]
        assert [q["labels"]["llm-judge"]["any_sample"] for q in labelled] == [
            q["doc_id"] % 4 == 0 for q in labelled
        ]
        assert all(
            set(q["labels"]["run"]) == {"greedy", "majority", "any_sample", "samples"}
            for q in record.questions
        )
        write_record(tmp_path / "r.jsonl.gz", record)
        assert read_record(tmp_path / "r.jsonl.gz").questions == record.questions
        board = compute(group_sections(load_runs([tmp_path / "r.jsonl.gz"], ("llm-judge",))), FAST)
        cells = [c for c in board.cells if c["strategy"] == "any_sample" and c["metric"] == "auroc"]
        assert cells and {c["label_set"] for c in cells} == {"llm-judge"}
        assert list(board.headline) == ["greedy", "majority", "any_sample"]
    finally:
        strategies.registry.unregister("any_sample")


def test_the_same_store_gives_the_same_bytes(exported, tmp_path):
    stores, records = exported
    again = tmp_path / "again.jsonl.gz"
    assert cli_main(["export-record", str(stores[0]), "--output", str(again)]) == 0
    assert again.read_bytes() == _record(records, "llm-alpha", "semuq_toy_a").read_bytes()
    assert again.read_bytes()[4:8] == b"\0\0\0\0"  # gzip mtime 0: no date in the bytes
    assert (
        write_record(tmp_path / "w.jsonl.gz", record_from_store(stores[0])).read_bytes() == again.read_bytes()
    )


def test_export_never_overwrites_without_force(exported, tmp_path, capsys):
    stores, _ = exported
    target = tmp_path / "mine.jsonl.gz"
    target.write_text("the user's file")
    assert cli_main(["export-record", str(stores[0]), "--output", str(target)]) == 2
    assert "exists; choose another --output or pass --force" in capsys.readouterr().err
    assert target.read_text() == "the user's file"
    assert cli_main(["export-record", str(stores[0]), "--output", str(target), "--force"]) == 0
    assert read_record(target)["llm"] == "llm-alpha"
    assert cli_main(["export-record", str(stores[0]), "--output", str(tmp_path / "x.json")]) == 2
    assert "ends with .jsonl.gz" in capsys.readouterr().err
    unfinished = tmp_path / "unfinished"
    shutil.copytree(stores[0], unfinished)
    (unfinished / "breakdown.json").unlink()
    assert cli_main(["export-record", str(unfinished), "--output", str(tmp_path / "u.jsonl.gz")]) == 2
    assert "breakdown.json is missing: the run has not finished" in capsys.readouterr().err


def _edited(source: Path, target: Path, **header) -> Path:
    """A copy of the record ``source`` with ``header`` fields replaced (and a question dropped for
    ``drop=True``), its hashes made consistent again: a well-formed record of another run."""
    record = read_record(source)
    questions = record.questions[:-1] if header.pop("drop", False) else record.questions
    manifest = {
        **record,
        **header,
        "n_questions": len(questions),
        "question_set": question_set_hash(questions),
    }
    return write_record(target, RunRecord(manifest, questions))


@pytest.mark.parametrize(
    ("edit", "field", "mine", "theirs"),
    [
        ({"n_samples": 10}, "n_samples", "10", "5"),
        ({"drop": True}, "question_set", "59 questions", "60 questions"),
        ({"judge": {"judge": "hf"}}, "judge", '{"judge": "hf"}', '"mode": "contains"'),
    ],
)
def test_a_record_that_cannot_join_its_section_is_refused_naming_the_field(
    exported, tmp_path, capsys, edit, field, mine, theirs
):
    _, records = exported
    incoming = _edited(_record(records, "llm-beta", "semuq_toy_a"), tmp_path / "in" / "beta.jsonl.gz", **edit)
    fits = _record(records, "llm-beta", "semuq_toy_b")
    out = tmp_path / "board"
    args = [str(_record(records, "llm-alpha", t)) for t in ("semuq_toy_a", "semuq_toy_b")]
    status = cli_main(
        ["leaderboard", *args, "--add", str(incoming), "--add", str(fits), "-o", str(out), "--no-plots"]
    )
    assert status == 1
    document = read_document(out / "leaderboard.json")
    (entry,) = document["skipped"]
    reason = entry["reason"]
    assert Path(entry["path"]).name == incoming.name and "\n" not in reason  # the path relative to the board
    assert reason.startswith(f"{incoming}: record semuq_toy_a/llm-beta: field {field!r} is {mine}")
    assert theirs in reason and reason.endswith("it cannot join the board")
    assert reason in capsys.readouterr().out
    # the other record joined; the refused one is in no section
    runs = {(r["task"], r["llm"]) for r in document["runs"]}
    assert runs == {("semuq_toy_a", "llm-alpha"), ("semuq_toy_b", "llm-alpha"), ("semuq_toy_b", "llm-beta")}
    assert {r["source"] for r in document["runs"]} == {"record"}


def test_a_record_that_fits_joins_and_gives_the_cells_of_its_store(exported, tmp_path):
    stores, records = exported
    base = [str(_record(records, "llm-alpha", t)) for t in ("semuq_toy_a", "semuq_toy_b")]
    added = build(base, tmp_path / "a", add=[str(records / "*.llm-beta.jsonl.gz")], config=FAST, plots=False)
    whole = build(list(map(str, stores)), tmp_path / "b", config=FAST, plots=False)
    assert added["skipped"] == []
    assert _without_source(added["cells"]) == _without_source(whole["cells"])


def test_a_second_record_of_an_llm_already_on_the_board_is_refused(exported, tmp_path):
    _, records = exported
    alpha = str(_record(records, "llm-alpha", "semuq_toy_a"))
    copy = shutil.copy(alpha, tmp_path / "alpha-again.jsonl.gz")
    doc = build([alpha], tmp_path / "b", add=[str(copy)], config=FAST, plots=False)
    (entry,) = doc["skipped"]
    assert (
        ": record semuq_toy_a/llm-alpha: field 'llm' is 'llm-alpha', which the section semuq_toy_a has"
        in (entry["reason"])
    )


def test_a_record_of_a_task_the_board_lacks_is_refused(exported, tmp_path):
    _, records = exported
    doc = build(
        [str(_record(records, "llm-alpha", "semuq_toy_a"))],
        tmp_path / "b",
        add=[str(_record(records, "llm-beta", "semuq_toy_b"))],
        config=FAST,
        plots=False,
    )
    (entry,) = doc["skipped"]
    assert "record semuq_toy_b/llm-beta: field 'task' is 'semuq_toy_b'" in entry["reason"]


def _gzip_lines(path: Path, lines: list[str]) -> Path:
    path.write_bytes(gzip.compress("".join(line + "\n" for line in lines).encode()))
    return path


def _broken(records: Path, tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Broken copies of a good record: ``{what: (file, the start of the error after the file name)}``."""
    good = gzip.decompress(_record(records, "llm-alpha", "semuq_toy_a").read_bytes()).decode().splitlines()
    second = json.loads(good[1])
    where = "record semuq_toy_a/llm-alpha"
    header = json.loads(good[0])
    cases = {
        "not gzip": ("plain text", "", ": not a gzip-compressed run record"),
        "bad json": ([*good[:2], "{not json", *good[3:]], ":3", ": malformed JSON line"),
        "doc id": ([good[0], json.dumps({**second, "doc_id": "1"}), *good[2:]], ":2", f": {where}: field doc_id: input should be a valid integer"),
        "scores": ([good[0], json.dumps({**second, "scores": [0.1]}), *good[2:]], ":2", f": {where}: field 'scores'"),
        "label": (
            [good[0], json.dumps({**second, "labels": {"run": {"greedy": 2, "majority": 0, "samples": []}}}), *good[2:]],
            ":2",
            f": {where}: field labels.run.greedy:",
        ),
        "format": ([json.dumps({**header, "format": "semuq-run-record/0"}), *good[1:]], ":1", ": field format: input should be 'semuq-run-record/1'"),
        "n_samples": ([json.dumps({**header, "n_samples": "5"}), *good[1:]], ":1", ": field n_samples: input should be a valid integer, got '5'"),
        "truncated": (good[:-1], ":1", f": {where}: field 'n_questions' is 60 but the file holds 59"),
        "edited": (
            [good[0], json.dumps({**second, "question_hash": "0" * 16}), *good[2:]],
            ":1",
            f": {where}: field 'question_set' does not match",
        ),
    }  # fmt: skip
    out = {}
    for what, (content, line, message) in cases.items():
        path = tmp_path / f"{what.replace(' ', '_')}.jsonl.gz"
        if isinstance(content, str):
            path.write_text(content)
        else:
            _gzip_lines(path, content)
        out[what] = (path, f"{path}{line}{message}")
    return out


def test_a_broken_record_is_named_in_one_line_with_file_line_and_field(exported, tmp_path):
    _, records = exported
    for what, (path, start) in _broken(records, tmp_path).items():
        with pytest.raises(ValueError) as caught:
            read_record(path)
        message = str(caught.value)
        assert message.startswith(start), (what, message)
        assert "\n" not in message, what
        with pytest.raises(LeaderboardInputError, match="^" + str(path).replace(".", r"\.")):
            load_run(path)


def test_one_bad_record_never_aborts_the_others(exported, tmp_path):
    _, records = exported
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for path in records.glob("*.jsonl.gz"):
        shutil.copy(path, inputs / path.name)
    broken = _broken(records, tmp_path)
    for what in ("not gzip", "bad json", "label"):
        shutil.copy(broken[what][0], inputs / broken[what][0].name)
    doc = build([str(inputs / "*.jsonl.gz")], tmp_path / "board", config=FAST, plots=False)
    assert len(doc["runs"]) == 4
    assert sorted(Path(e["path"]).name for e in doc["skipped"]) == [
        "bad_json.jsonl.gz",
        "label.jsonl.gz",
        "not_gzip.jsonl.gz",
    ]
    for entry in doc["skipped"]:
        assert (
            entry["reason"].startswith(str(inputs / Path(entry["path"]).name)) and "\n" not in entry["reason"]
        )


def test_every_run_writes_its_record_and_the_record_builds_the_same_cells(tmp_path, monkeypatch):
    """A run writes its record from what it holds (it never reads back the files it has just written), with the
    bytes the store gives when read (``export-record``)."""
    from semuq_eval.harness import record as record_module
    from tests.fixtures.tiny_harness import canned_run

    def no_reading(path):
        raise AssertionError(f"the run read its store {path} back to write its record")

    with monkeypatch.context() as patched:
        patched.setattr(record_module, "open_store", no_reading)
        store = canned_run(tmp_path, tmp_path / "runs")
    record = read_record(store / RECORD_NAME)
    assert (record["task"], record["llm"], record["n_samples"]) == ("semuq_triviaqa_dpr", "canned", 4)
    assert record["decoding"]["sampled"]["do_sample"] is True and record["judge"]["judge"] == "string"
    assert record["operators"]["lexical"]["info"]["operator"] == "lexical"
    assert all(len(q["labels"]["run"]["samples"]) == 4 for q in record.questions)
    assert (store / RECORD_NAME).read_bytes() == write_record(
        tmp_path / "x.jsonl.gz", record_from_store(store)
    ).read_bytes()
    config = LeaderboardConfig(n_resamples=20)
    a = compute(group_sections(load_runs([store])), config)
    b = compute(group_sections(load_runs([store / RECORD_NAME])), config)
    assert _without_source(a.cells) == _without_source(b.cells) and len(a.cells) > 0
    rescored = tmp_path / "rescored"
    with monkeypatch.context() as patched:
        patched.setattr(record_module, "open_store", no_reading)
        assert cli_main(["rescore", str(store), "--store_output", str(rescored), "--bootstrap", "20"]) == 0
    assert (rescored / RECORD_NAME).read_bytes() == write_record(
        tmp_path / "y.jsonl.gz", record_from_store(rescored)
    ).read_bytes()
    assert read_record(rescored / RECORD_NAME)["settings"]["bootstrap"] == 20


def test_two_records_of_the_same_questions_are_compared_pairwise(exported):
    from experiments.paired_records import compare
    from semuq_eval.metrics import paired_difference

    _, records = exported
    a, b = (read_record(_record(records, llm, "semuq_toy_a")) for llm in ("llm-alpha", "llm-beta"))
    name = next(e for e in a["estimators"] if e in b["estimators"])
    rows = compare(a, b, [name])
    assert [(r["estimator"], r["label"]) for r in rows] == [(name, "greedy"), (name, "majority")]

    def column(record):
        k = record["estimators"].index(name)
        return np.array([np.nan if q["scores"][k] is None else q["scores"][k] for q in record.questions])

    def labels(record):
        return np.array([q["labels"]["run"]["greedy"] for q in record.questions], dtype=float)

    known = ~np.isnan(labels(a)) & ~np.isnan(labels(b))  # a question without a verdict is left out
    assert known.any()
    direct = paired_difference(
        column(a)[known], column(b)[known], labels(a)[known], correct_b=labels(b)[known]
    ).as_dict()
    assert rows[0]["difference"] == pytest.approx(direct["difference"])
    assert rows[0]["ci_low"] == pytest.approx(direct["ci_low"])
    y = labels(a)[known]
    assert rows[0]["counts_a"] == (int(y.sum()), int((y == 0).sum()))
    both = [
        qa["labels"]["run"]["majority"] is not None and qb["labels"]["run"]["majority"] is not None
        for qa, qb in zip(a.questions, b.questions, strict=True)
    ]
    assert (
        sum(rows[1]["counts_a"]) == sum(rows[1]["counts_b"]) == sum(both) < len(both)
    )  # no verdict: left out
    other = read_record(_record(records, "llm-alpha", "semuq_toy_b"))
    with pytest.raises(ValueError, match="different question sets"):
        compare(a, other, [name])
