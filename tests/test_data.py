"""Tests of the local QA set loader (semuq_eval.data): offline on small files, plus `real` tests on the prepared sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semuq_eval import assets, data
from semuq_eval.data import load_qa, qa_dataset, qa_datasets


def _write(root: Path, name: str, split: str, lines: list) -> Path:
    path = root / name / f"{split}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8"
    )
    return path


@pytest.fixture
def qa_dir(tmp_path) -> Path:
    _write(
        tmp_path,
        "myqa",
        "test",
        [
            {"id": "a", "question": "What is 2+2?", "answers": ["4", "four"]},
            {"question": " Capital of France? ", "answers": [" Paris ", "", 3]},
            {"id": "c", "question": "Which sport has a scrum?", "answers": ["Rugby"], "extra": 1},
        ],
    )
    _write(tmp_path, "myqa", "dev", [{"id": "d0", "question": "q", "answers": ["a"]}])
    return tmp_path


def test_load_qa_from_data_dir(qa_dir):
    recs = load_qa("myqa", "test", data_dir=qa_dir)
    assert recs == [
        {"id": "a", "question": "What is 2+2?", "answers": ["4", "four"]},
        {"id": "myqa-test-1", "question": "Capital of France?", "answers": ["Paris"]},
        {"id": "c", "question": "Which sport has a scrum?", "answers": ["Rugby"]},
    ]
    assert [r["id"] for r in load_qa("myqa", "test", data_dir=qa_dir, limit=2)] == ["a", "myqa-test-1"]
    assert load_qa("myqa", "test", data_dir=qa_dir, limit=0) == []
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="limit"):
            load_qa("myqa", "test", data_dir=qa_dir, limit=bad)


def test_offset_and_limit_cut_a_set_into_chunks_of_usable_questions(qa_dir):
    chunks = [load_qa("myqa", "test", data_dir=qa_dir, offset=k, limit=2) for k in (0, 2, 4)]
    assert [[r["id"] for r in c] for c in chunks] == [["a", "myqa-test-1"], ["c"], []]
    assert [r["id"] for r in load_qa("myqa", "test", data_dir=qa_dir, offset=1)] == ["myqa-test-1", "c"]
    for bad in (-1, 1.5, None):
        with pytest.raises(ValueError, match="offset"):
            load_qa("myqa", "test", data_dir=qa_dir, offset=bad)


def test_the_guided_training_task_tells_the_llm_the_first_reference(tmp_path):
    from lm_eval.tasks import TaskManager

    from tests.fixtures.tiny_harness import TASKS_DIR

    _write(
        tmp_path,
        "nq-open",
        "dev",
        [{"id": f"n{i}", "question": f"q{i}?", "answers": [f"a{i}", "b"]} for i in range(5)],
    )
    tm = TaskManager(
        include_path=str(TASKS_DIR),
        include_defaults=False,
        metadata={"data_dir": str(tmp_path), "offset": 1, "limit": 2},
    )
    task = tm.load(["semuq_nqopen_train_guided"])["tasks"]["semuq_nqopen_train_guided"]
    docs = list(task.test_docs())
    assert [d["question"] for d in docs] == ["q1?", "q2?"]  # the chunk: after the first, two questions
    assert task.doc_to_text(docs[0]) == "Answer the following question. Its answer is a1.\nq1?"


def test_missing_file_names_path_and_command(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        load_qa("triviaqa", "dev", data_dir=tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "triviaqa" / "dev.jsonl") in msg and "semuq-eval assets --only triviaqa" in msg
    _write(tmp_path, "mine", "test", [{"question": "q", "answers": ["a"]}])
    with pytest.raises(FileNotFoundError, match="available splits: test") as err:
        load_qa("mine", "validation", data_dir=tmp_path)
    assert "semuq-eval assets" not in str(err.value)  # not an asset name: no misleading hint


def test_default_location_uses_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEMUQ_EVAL_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(FileNotFoundError, match="semuq-eval assets --only nq-open"):
        load_qa("nq-open", "test")
    folder = tmp_path / "prepared" / "nq-open"
    _write(folder.parent, "nq-open", "test", [{"id": "n0", "question": "who?", "answers": ["me"]}])
    monkeypatch.setattr(assets, "locate", lambda name, **kw: folder)
    assert load_qa("nq-open", "test") == [{"id": "n0", "question": "who?", "answers": ["me"]}]
    with pytest.raises(FileNotFoundError, match=r"no split 'dev'.*available splits: test"):
        load_qa("nq-open", "dev")


def test_malformed_line_names_file_and_line(tmp_path):
    path = _write(tmp_path, "x", "test", [{"question": "q", "answers": ["a"]}, "", '{"question": "q", "answ'])
    with pytest.raises(ValueError, match=rf"{path}:3: malformed JSON"):
        load_qa("x", "test", data_dir=tmp_path)
    path = _write(tmp_path, "y", "test", ['["not", "an", "object"]'])
    with pytest.raises(ValueError, match=rf"{path}:1: expected a JSON object, got list"):
        load_qa("y", "test", data_dir=tmp_path)


def test_records_without_question_or_answers_are_skipped_with_one_warning(tmp_path):
    path = _write(
        tmp_path,
        "z",
        "test",
        [
            {"question": "ok?", "answers": ["yes"]},
            {"answers": ["no question"]},
            {"question": "   ", "answers": ["blank question"]},
            {"question": "no answers?", "answers": []},
            {"question": "only blank answers?", "answers": ["", " "]},
            {"question": "answers not a list?", "answers": {"a": 1}},
            {"question": "single string answer?", "answers": "fine"},
        ],
    )
    with pytest.warns(UserWarning, match=rf"{path}: skipped 5 record\(s\).*first at line 2") as rec:
        recs = load_qa("z", "test", data_dir=tmp_path)
    assert len(rec) == 1
    assert [r["question"] for r in recs] == ["ok?", "single string answer?"]
    assert recs[1]["answers"] == ["fine"] and recs[1]["id"] == "z-test-6"


def test_qa_dataset_and_custom_dataset_hook(qa_dir):
    ds = qa_dataset("myqa", "test", data_dir=qa_dir, limit=2)
    assert ds.num_rows == 2 and ds.column_names == ["id", "question", "answers"]
    assert ds[1]["answers"] == ["Paris"]
    # lm-eval calls custom_dataset(**metadata, **dataset_kwargs)
    dd = qa_datasets(qa_set="myqa", data_dir=str(qa_dir), version=1.0, pretrained="x")
    assert sorted(dd) == ["dev", "test"] and dd["test"].num_rows == 3
    dd = qa_datasets(qa_set="myqa", splits="test", data_dir=qa_dir, limit="1")
    assert list(dd) == ["test"] and dd["test"].num_rows == 1
    with pytest.raises(FileNotFoundError):
        qa_datasets(qa_set="nothing-here", data_dir=qa_dir)


def test_empty_file_gives_no_records(tmp_path):
    _write(tmp_path, "e", "test", [])
    assert load_qa("e", "test", data_dir=tmp_path) == []
    assert qa_dataset("e", "test", data_dir=tmp_path).num_rows == 0


def test_data_path_is_public(qa_dir):
    assert data.data_path("myqa", "dev", data_dir=qa_dir) == qa_dir / "myqa" / "dev.jsonl"


# ---------------------------------------------------------------------------------------------------------------
# Real prepared sets
# ---------------------------------------------------------------------------------------------------------------

REAL = {
    ("triviaqa", "dev"): (8837, "The VS-300 was a type of what?", "Helicopter"),
    ("triviaqa", "test"): (11313, "Who was the man behind The Chipmunks?", "David Seville"),
    ("nq-open", "dev"): (8757, "who sings does he love me with reba", "Linda Davis"),
    ("nq-open", "test"): (3610, "who got the first nobel prize in physics", "Wilhelm Conrad Röntgen"),
    ("webquestions", "test"): (2032, "what does jamaican people speak?", "Jamaican English"),
}


@pytest.mark.real
@pytest.mark.parametrize(("name", "split"), list(REAL))
def test_real_sets(real_asset, name, split):
    folder = real_asset(name)
    count, first_question, an_answer = REAL[name, split]
    recs = load_qa(name, split, data_dir=folder.parent)
    assert len(recs) == count
    assert recs[0]["question"] == first_question and an_answer in recs[0]["answers"]
    assert recs[0]["id"] == f"{name}-{split}-0"
    assert len({r["id"] for r in recs}) == count
    # no leftover CSV quoting ("...""..."") in questions or aliases
    assert not any(r["question"].startswith('"') and '""' in r["question"] for r in recs)
    assert not any('""' in a for r in recs for a in r["answers"])
    assert load_qa(name, split, limit=1000) == recs[:1000]


@pytest.mark.real
def test_real_triviaqa_tricky_question(real_asset):
    real_asset("triviaqa")
    recs = load_qa("triviaqa", "dev")
    rec = next(r for r in recs if "kaleidoscope" in r["question"])
    assert rec["question"] == 'What was the name of the "girl with kaleidoscope eyes" in a Beatles song?'
    assert "Lucy" in rec["answers"]
