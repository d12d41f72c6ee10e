"""`semuq-eval train-operator`: the triplet rules of App. C, the recipe of App. B on sentence-transformers'
trainer, the operator's card, determinism, `enc` loading the trained folder, the overlap warning, bad input.

Stores are written in the run store format by the store writer itself; training runs on the tiny random
BERT sentence-transformer of tests/fixtures/tiny_encoders.py (mechanics, not quality). The `real` test
trains the prepared all-MiniLM-L6-v2 for one epoch on real NQ-Open questions.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from semuq_eval.harness import overlap
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.label_sets import write_label_set
from semuq_eval.harness.store import RunStore
from semuq_eval.models.generation import Generation
from semuq_eval.operators import training_record
from semuq_eval.operators.encoder import format_input
from semuq_eval.training import card, stores, trainer
from semuq_eval.training.config import TrainingConfig
from semuq_eval.training.prepare import TooFewQuestionsError, prepare_data
from semuq_eval.training.stores import LabelledQuestion, question_key
from semuq_eval.training.triplets import (
    TrainingQuestion,
    TripletSampler,
    filter_questions,
    split_by_question,
    validation_triplets,
)
from tests.fixtures.tiny_encoders import (  # noqa: F401  (pytest fixtures)
    tiny_st_encoder,
    tiny_wordpiece_dir,
)

CORRECT = ["Charles Darwin", "It was Charles Darwin.", "Darwin wrote it.", "Charles Darwin wrote it in 1859."]
WRONG = ["Alfred Wallace", "It was Alfred Wallace.", "Nobody knows.", "Paris"]


def make_store(
    root: Path,
    rows: list[tuple[str, list[tuple[str, int | None]]]],
    *,
    task: str = "semuq_nqopen_train",
    sample_labels: bool = True,
    run_id: str | None = None,
) -> Path:
    """A run store at ``root`` with one question per row: (question, [(answer, verdict), ...])."""
    store = RunStore(root)
    store.begin(task, {"n_samples": max(len(s) for _, s in rows), "judge": "string", "run_id": run_id})
    docs, items = [], []
    for i, (question, samples) in enumerate(rows):
        docs.append(
            Doc(i, question, ["ref"], Generation("g", greedy=True), [Generation(a) for a, _ in samples])
        )
        item = {"doc_id": i, "labels": {"greedy": 1, "majority": 1}, "n_missing_verdicts": 0}
        if sample_labels:
            item["sample_labels"] = [v for _, v in samples]
        items.append(item)
    store.write_generations(docs, hidden=False)
    store.write_scores(items)
    store.write_breakdown({"judge": {"judge": "string", "mode": "contains"}, "created": "then"})
    return root


def qa_rows(n: int, *, offset: int = 0) -> list[tuple[str, list[tuple[str, int]]]]:
    """n questions, each with 3 correct and 2 incorrect samples (texts vary with the question)."""
    rows = []
    for i in range(offset, offset + n):
        samples = [(f"{CORRECT[k]} {i}", 1) for k in range(3)] + [(f"{WRONG[k]} {i}", 0) for k in range(2)]
        rows.append((f"Who wrote the book {i} of The Origin of Species?", samples))
    return rows


def lq(i: int, labels: tuple[int | None, ...], answers: tuple[str, ...] | None = None, store: str = "s"):
    answers = answers or tuple(f"answer {k} to {i}" for k in range(len(labels)))
    return LabelledQuestion(store, Doc.of_texts(f"question {i}?", answers, doc_id=i), labels)


def sep_format(question: str, answer: str) -> str:
    return format_input(question, answer, "[SEP]")[0]


# -- triplet rules (App. C) ---------------------------------------------------------------------------------


def test_questions_are_kept_with_at_least_two_correct_and_one_incorrect_sample():
    questions = [
        lq(0, (1, 1, 0)),  # kept: |P| = 2, |N| = 1
        lq(1, (1, 0, 0, 0)),  # |P| = 1
        lq(2, (1, 1, 1)),  # no incorrect
        lq(3, (0, 0)),  # no correct
        lq(4, (1, None, 1, None, 0)),  # kept: unknown verdicts are in neither set
        lq(5, (1, 1, 0), answers=("a", "  ", "c")),  # an empty correct answer leaves |P| = 1
        lq(6, (1, 1, None)),  # the unknown verdict is not a negative
    ]
    kept, counts = filter_questions(questions)
    assert [q.source.doc_id for q in kept] == [0, 4]
    assert kept[1].positives == (0, 2) and kept[1].negatives == (4,)
    assert counts == {
        "seen": 7,
        "kept": 2,
        "fewer_than_2_correct": 3,
        "no_incorrect": 2,
        "no_negative_in_style": 0,
        "unknown_verdicts": 3,
        "empty_answers": 1,
    }


def _kept(n: int, labels=(1, 1, 1, 0, 0)) -> list[TrainingQuestion]:
    kept, _ = filter_questions([lq(i, labels) for i in range(n)])
    return kept


def test_hard_triplets_take_two_distinct_correct_answers_and_an_incorrect_one_of_the_same_question():
    kept = _kept(6)
    sampler = TripletSampler(kept, seed=3, format_fn=sep_format)
    for epoch in range(20):
        drawn = sampler.draw(epoch)
        assert [d.question for d in drawn] == list(range(6))  # one triplet per question per epoch
        for d, row in zip(drawn, sampler.epoch_rows(epoch), strict=True):
            q = kept[d.question]
            assert d.anchor != d.positive and {d.anchor, d.positive} <= set(q.positives)
            assert d.negative in q.negatives and d.negative_question == d.question
            # the question is prepended to all three by enc's own formatting function
            assert row == {
                "anchor": format_input(q.question, q.answer(d.anchor), "[SEP]")[0],
                "positive": format_input(q.question, q.answer(d.positive), "[SEP]")[0],
                "negative": format_input(q.question, q.answer(d.negative), "[SEP]")[0],
            }


def test_triplets_are_resampled_every_epoch_and_reproducible_from_the_seed():
    kept = _kept(5)
    a = TripletSampler(kept, seed=7, format_fn=sep_format)
    b = TripletSampler(kept, seed=7, format_fn=sep_format)
    other = TripletSampler(kept, seed=8, format_fn=sep_format)
    epochs = [a.draw(e) for e in range(60)]
    assert epochs[0] == b.draw(0) and epochs[59] == b.draw(59)  # same seed and epoch, same triplets
    assert epochs[0] != other.draw(0)
    assert sum(epochs[e] != epochs[e + 1] for e in range(59)) >= 55  # a new draw each epoch
    # over the epochs, every question visits every ordered (anchor, positive) pair and every negative
    for qi in range(5):
        pairs = Counter((ep[qi].anchor, ep[qi].positive) for ep in epochs)
        assert set(pairs) == set(itertools.permutations((0, 1, 2), 2))
        assert {ep[qi].negative for ep in epochs} == {3, 4}


def test_validation_split_is_by_question_and_seeded():
    # the same 10 questions in two stores (two LLMs): a question's copies never straddle the split
    kept = _kept(10) + [
        TrainingQuestion(lq(q.source.doc_id, (1, 1, 1, 0, 0), store="t"), (0, 1, 2), (3, 4))
        for q in _kept(10)
    ]
    train, val = split_by_question(kept, 0.2, seed=0)
    assert len(val) == 4 and len(train) == 16  # 2 of 10 distinct questions, both copies each
    assert not {q.source.key for q in train} & {q.source.key for q in val}
    again = split_by_question(kept, 0.2, seed=0)
    assert [q.source for q in again[1]] == [q.source for q in val]
    splits = {
        tuple(sorted({q.source.key for q in split_by_question(kept, 0.2, seed=s)[1]})) for s in range(10)
    }
    assert len(splits) > 3  # the seed chooses the held-out questions
    with pytest.raises(ValueError, match="at least 2"):
        split_by_question(_kept(1), 0.2, seed=0)
    assert question_key(" Who  wrote IT? ") == question_key("who wrote it?")


def test_validation_triplets_are_distinct_hard_triplets_per_question_capped_by_what_exists():
    kept = _kept(3)  # 3 correct, 2 incorrect: 3 * 2 * 2 = 12 distinct (anchor, positive, negative)
    one = validation_triplets(kept, seed=0, format_fn=sep_format)
    assert len(one[0]) == 3
    many = validation_triplets(kept, seed=0, format_fn=sep_format, per_question=5)
    triplets = list(zip(*many, strict=True))
    assert len(triplets) == 15 and len(set(triplets)) == 15
    for a, p, n in triplets:
        q = a.split(" [SEP] ")[0]
        assert p.startswith(q) and n.startswith(q) and a != p  # one question; two distinct correct answers
    assert len(validation_triplets(kept, seed=0, format_fn=sep_format, per_question=50)[0]) == 36
    assert validation_triplets(kept, seed=0, format_fn=sep_format, per_question=5) == many  # seeded
    with pytest.raises(ValueError, match="at least 1"):
        validation_triplets(kept, seed=0, format_fn=sep_format, per_question=0)


def test_random_negatives_come_from_another_question_with_the_anchor_question_prepended():
    kept = _kept(4)
    sampler = TripletSampler(kept, seed=0, format_fn=sep_format, negatives="random")
    seen_labels = set()
    for epoch in range(30):
        for d, row in zip(sampler.draw(epoch), sampler.epoch_rows(epoch), strict=True):
            q, other = kept[d.question], kept[d.negative_question]
            assert other.source.key != q.source.key
            assert d.negative in (*other.positives, *other.negatives)
            seen_labels.add(other.source.labels[d.negative])
            assert {d.anchor, d.positive} <= set(q.positives) and d.anchor != d.positive
            assert row["negative"] == format_input(q.question, other.answer(d.negative), "[SEP]")[0]
    assert seen_labels == {0, 1}  # any answer of the other question


def test_no_negatives_gives_positive_pairs_with_target_one():
    kept = _kept(3)
    sampler = TripletSampler(kept, seed=0, format_fn=sep_format, negatives="none")
    rows = sampler.epoch_rows(0)
    assert sampler.columns == ("anchor", "positive", "label")
    assert all(set(r) == {"anchor", "positive", "label"} and r["label"] == 1.0 for r in rows)
    assert all(d.negative is None and d.anchor != d.positive for d in sampler.draw(0))


def test_answer_only_formatting_leaves_the_question_out():
    kept = _kept(2)
    rows = TripletSampler(kept, seed=0, format_fn=lambda q, a: format_input(None, a, "[SEP]")[0]).epoch_rows(
        0
    )
    assert all("question" not in text and "[SEP]" not in text for r in rows for text in r.values())


# -- stores and provenance ----------------------------------------------------------------------------------


def test_read_store_pairs_answers_with_their_verdicts_and_records_where_they_came_from(tmp_path):
    root = make_store(tmp_path / "semuq" / "semuq_nqopen_train" / "smollm2-135m-instruct", qa_rows(3))
    data = stores.read_store(root)
    assert [q.labels for q in data.questions] == [(1, 1, 1, 0, 0)] * 3
    assert data.questions[1].answers[3] == f"{WRONG[0]} 1"
    p = data.provenance
    assert p["llm"] == "smollm2-135m-instruct" and "folder name" in p["llm_source"]
    assert (p["task"], p["dataset"], p["split"]) == ("semuq_nqopen_train", "nq-open", "dev")
    assert p["judge"] == {"judge": "string", "mode": "contains"} and p["label_set"] == "run"
    assert stores.read_store(root, llm="my/llm").provenance["llm"] == "my/llm"
    # stores are found below an output folder, filtered by task
    make_store(tmp_path / "semuq" / "semuq_webquestions" / "x", qa_rows(2), task="semuq_webquestions")
    assert stores.find_stores([str(tmp_path)]) == [root.resolve()]
    assert len(stores.find_stores([str(tmp_path)], task=None)) == 2


def test_a_named_label_set_is_read_with_its_judge(tmp_path):
    root = make_store(tmp_path / "s", qa_rows(2))
    write_label_set(
        root,
        "llm",
        [{"doc_id": 0, "samples": [1, 1, 0, 0, 0]}, {"doc_id": 1, "samples": [1, 0]}],  # doc 1: wrong length
        {"judge": {"judge": "hf", "model": "Qwen"}},
    )
    data = stores.read_store(root, "llm")
    assert [q.labels for q in data.questions] == [(1, 1, 0, 0, 0)]
    assert data.n_label_mismatch == 1 and data.provenance["judge"]["model"] == "Qwen"


def test_bad_input_gives_clear_errors(tmp_path, capsys):
    from semuq_eval.commands.train_operator import main

    with pytest.raises(FileNotFoundError, match="no such file"):
        stores.find_stores([str(tmp_path / "nope")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no run store"):
        stores.find_stores([str(tmp_path / "empty")])
    old = make_store(tmp_path / "old", qa_rows(3), sample_labels=False)
    with pytest.raises(ValueError, match="no per-sample labels"):
        stores.read_store(old)
    with pytest.raises(FileNotFoundError, match="no label set 'llm'"):
        stores.read_store(old, "llm")
    assert main(["--stores", str(old), "--output", str(tmp_path / "op")]) == 2
    assert "no per-sample labels" in capsys.readouterr().err
    # one usable question: too few, and the message says how many were kept and why
    rows = qa_rows(1) + [("Who?", [("a", 1), ("b", 0), ("c", 0)]), ("Why?", [("a", 1), ("b", 1)])]
    few = make_store(tmp_path / "few", rows)
    with pytest.raises(TooFewQuestionsError) as err:
        prepare_data(TrainingConfig(stores=[str(few)], output=str(tmp_path / "op")))
    message = str(err.value)
    assert "only 1 of 3 questions are usable" in message
    assert "1 with fewer than 2 correct answers, 1 with no incorrect answer" in message
    assert main(["--stores", str(few), "--output", str(tmp_path / "op")]) == 2
    assert "only 1 of 3" in capsys.readouterr().err
    with pytest.raises(ValueError, match="negatives"):
        TrainingConfig(stores=[], output="x", negatives="hardest")
    assert not (tmp_path / "op").exists()


# -- the overlap warning ------------------------------------------------------------------------------------

RECORD = {
    "training_data": {
        "stores": [
            {
                "llm": "smollm2-135m-instruct",
                "task": "semuq_nqopen_train",
                "dataset": "nq-open",
                "split": "dev",
            }
        ]
    }
}


def test_overlap_names_a_shared_llm_and_a_shared_dataset():
    assert overlap.training_overlap(RECORD, llm="Qwen/Qwen2.5-7B", task="semuq_webquestions") == []
    same_llm = overlap.training_overlap(
        RECORD, llm="HuggingFaceTB/SmolLM2-135M-Instruct", task="semuq_triviaqa"
    )
    assert len(same_llm) == 1 and "generated the training answers" in same_llm[0]
    same_data = overlap.training_overlap(RECORD, llm=None, task="semuq_nqopen")
    assert len(same_data) == 1 and "is the training dataset" in same_data[0] and "split test" in same_data[0]
    same_questions = overlap.training_overlap(RECORD, llm=None, task="semuq_nqopen_train")
    assert "are the training questions" in same_questions[0]
    assert overlap.dataset_family("mandarjoshi/trivia_qa/rc.nocontext") == overlap.dataset_family("triviaqa")


def test_the_harness_warns_when_a_run_shares_the_operators_training(tmp_path, caplog):
    from semuq_eval.harness.settings import Settings

    folder = tmp_path / "op"
    card.write_record(folder, RECORD)
    settings = Settings.from_metadata(
        {"operators": ["enc", "lexical"], "operator_options": {"enc": {"model": str(folder)}}}
    )
    with caplog.at_level(logging.WARNING, logger="semuq_eval.harness.overlap"):
        messages = overlap.warn_training_overlap(
            settings, llm="/m/smollm2-135m-instruct", task="semuq_nqopen"
        )
    assert len(messages) == 2 and all(str(folder) in m for m in messages)
    assert len(caplog.records) == 2
    assert overlap.warn_training_overlap(settings, llm="gpt2", task="semuq_webquestions") == []


def test_a_semuq_task_warns_when_its_run_shares_the_operators_training(tmp_path, monkeypatch):
    """The hook in SemuqTask.__init__: the LLM comes from lm-eval's metadata (model_args merged in)."""
    from lm_eval.tasks import TaskManager

    from tests.fixtures.tiny_harness import TASKS_DIR, write_qa

    folder = tmp_path / "op"
    card.write_record(folder, RECORD)
    warned: list[str] = []
    monkeypatch.setattr(
        overlap.log, "warning", lambda message, *a: warned.append(message % a if a else message)
    )
    metadata = {
        "operators": ["enc"],
        "operator_options": {"enc": {"model": str(folder)}},
        "data_dir": str(write_qa(tmp_path / "data", name="nq-open", split="test")),
        "pretrained": "HuggingFaceTB/SmolLM2-135M-Instruct",
    }
    tm = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=metadata)
    tm.load(["semuq_nqopen"])
    assert (
        len(warned) == 2 and "generated the training answers" in warned[0] and "training dataset" in warned[1]
    )


# -- training ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def train_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("train") / "out" / "semuq" / "semuq_nqopen_train" / "tiny-llm"
    rows = qa_rows(16)
    rows.append(("What is the capital of France?", [("Paris", 1), ("Madrid", 0)]))  # left out: |P| = 1
    return make_store(root, rows)


def config_for(store: Path, output: Path, backbone: Path, **kw) -> TrainingConfig:
    options = dict(epochs=2, batch_size=4, lr=5e-4, val_fraction=0.25, device="cpu", progress=False, seed=0)
    options.update(kw)
    return TrainingConfig(stores=[str(store)], output=str(output), backbone=str(backbone), **options)


@pytest.fixture(scope="module")
def trained(train_store, tiny_st_encoder, tmp_path_factory):  # noqa: F811
    """A 2-epoch training on the tiny encoder, with every batch the trainer received recorded."""
    seen: list[tuple[int, dict]] = []
    original = trainer._EpochRows.__call__

    def spy(self, batch):
        out = original(self, batch)
        if self.in_epoch:  # what the trainer's dataloader hands to the loss
            rows = zip(*out.values(), strict=True)
            seen.extend((self.epoch, dict(zip(out, values, strict=True))) for values in rows)
        return out

    trainer._EpochRows.__call__ = spy
    try:
        output = tmp_path_factory.mktemp("ops") / "enc-tiny"
        config = config_for(train_store, output, tiny_st_encoder, patience=5)
        data = prepare_data(config)
        record = trainer.train_operator(config, data)
    finally:
        trainer._EpochRows.__call__ = original
    return output, record, data, seen


def test_the_trainer_sees_each_epochs_fresh_triplets(trained, tiny_st_encoder):  # noqa: F811
    output, record, data, seen = trained
    sampler = TripletSampler(data.train, seed=0, format_fn=sep_format)
    by_epoch = {e: [row for ep, row in seen if ep == e] for e in (0, 1)}
    for epoch in (0, 1):  # every batch of epoch e holds epoch e's draw, each training question once
        got = Counter(json.dumps(r, sort_keys=True) for r in by_epoch[epoch])
        assert got == Counter(json.dumps(r, sort_keys=True) for r in sampler.epoch_rows(epoch))
    assert by_epoch[0] != by_epoch[1]
    assert not {question_key(r["anchor"].split(" [SEP] ")[0]) for rows in by_epoch.values() for r in rows} & {
        q.source.key for q in data.val
    }


def test_the_card_records_data_counts_hyperparameters_and_validation(trained, train_store):
    output, record, data, _ = trained
    saved = json.loads((output / training_record.TRAINING_RECORD_FILE).read_text())
    assert saved["format"] == training_record.TRAINING_RECORD_FORMAT and saved["seed"] == 0
    assert saved["question_conditioned"] is True and saved["separator"] == "[SEP]"
    store = saved["training_data"]["stores"][0]
    assert (store["llm"], store["task"], store["dataset"], store["split"]) == (
        "tiny-llm",
        "semuq_nqopen_train",
        "nq-open",
        "dev",
    )
    assert store["judge"] == {"judge": "string", "mode": "contains"} and store["n_questions"] == 17
    counts = saved["counts"]
    assert (counts["seen"], counts["kept"], counts["fewer_than_2_correct"]) == (17, 16, 1)
    assert counts["train_questions"] == 12 and counts["val_questions"] == 4
    assert counts["triplets_per_epoch"] == 12 and counts["val_triplets"] == 4
    assert saved["hyperparameters"]["val_triplets_per_question"] == 1
    hp = saved["hyperparameters"]
    assert hp["loss"] == "TripletLoss(distance=COSINE, margin=0.2)" and hp["margin"] == 0.2
    assert (hp["learning_rate"], hp["batch_size"], hp["max_epochs"], hp["early_stopping_patience"]) == (
        5e-4,
        4,
        2,
        5,
    )
    val = saved["validation"]
    assert 0.0 <= val["before_training"] <= 1.0 and [e["epoch"] for e in val["per_epoch"]] == [1, 2]
    assert all(0.0 <= e["accuracy"] <= 1.0 and e["train_loss"] >= 0 for e in val["per_epoch"])
    assert val["best_accuracy"] == max(e["accuracy"] for e in val["per_epoch"])
    assert val["final_accuracy"] == pytest.approx(val["best_accuracy"])  # the best epoch is what was kept
    assert saved["versions"]["sentence-transformers"] and saved["versions"]["torch"]
    readme = (output / "README.md").read_text()
    assert "tiny-llm" in readme and "nq-open" in readme and "| 1 |" in readme and "Seed 0" in readme
    assert not (output.parent / ".enc-tiny.checkpoints").exists()  # checkpoints cleaned up


def test_enc_loads_the_trained_folder_and_builds_its_matrix(trained):
    from sentence_transformers import SentenceTransformer

    from semuq_eval.operators import get

    output, _, _, _ = trained
    question, answers = "Who wrote the book?", ["Charles Darwin", "Alfred Wallace", "It was Darwin."]
    out = get("enc", model=str(output), progress=False)([question], [answers])
    model = SentenceTransformer(str(output), device="cpu")
    phi = model.encode([sep_format(question, a) for a in answers], normalize_embeddings=True)
    np.testing.assert_allclose(out.matrices[0], phi @ phi.T, atol=1e-5)
    assert out.info["question_conditioned"] is True and out.info["model"] == str(output)


def test_same_seed_same_weights(train_store, tiny_st_encoder, tmp_path, trained):  # noqa: F811
    from safetensors.numpy import load_file

    output, *_ = trained
    again = trainer.train_operator(config_for(train_store, tmp_path / "again", tiny_st_encoder, patience=5))
    first, second = (
        load_file(output / "model.safetensors"),
        load_file(tmp_path / "again" / "model.safetensors"),
    )
    assert first.keys() == second.keys()
    assert all(np.array_equal(first[k], second[k]) for k in first)
    assert (
        again["validation"]["per_epoch"][0]["accuracy"]
        == trained[1]["validation"]["per_epoch"][0]["accuracy"]
    )
    other = trainer.train_operator(
        config_for(train_store, tmp_path / "other", tiny_st_encoder, seed=1, epochs=1)
    )
    third = load_file(tmp_path / "other" / "model.safetensors")
    assert any(not np.array_equal(first[k], third[k]) for k in first)
    assert other["seed"] == 1


class _Killed(Exception):
    """Stands for a kill in the middle of an epoch."""


def test_a_killed_training_resumes_after_its_last_saved_epoch(
    train_store,
    tiny_st_encoder,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    from safetensors.numpy import load_file

    whole = trainer.train_operator(
        config_for(train_store, tmp_path / "whole", tiny_st_encoder, epochs=3, patience=5)
    )
    original = trainer._EpochRows.__call__

    def killed_in_epoch_3(self, batch):
        if self.in_epoch and self.epoch == 2:
            raise _Killed
        return original(self, batch)

    config = config_for(train_store, tmp_path / "resumed", tiny_st_encoder, epochs=3, patience=5)
    monkeypatch.setattr(trainer._EpochRows, "__call__", killed_in_epoch_3)
    with pytest.raises(_Killed):
        trainer.train_operator(config)
    saved = tmp_path / ".resumed.checkpoints"
    assert [p.name for p in saved.glob("checkpoint-*")]  # epochs 1-2 saved, the output not written
    assert not (tmp_path / "resumed").exists() or not any((tmp_path / "resumed").iterdir())
    monkeypatch.setattr(trainer._EpochRows, "__call__", original)
    resumed = trainer.train_operator(config)

    first, second = (
        load_file(tmp_path / "whole" / "model.safetensors"),
        load_file(tmp_path / "resumed" / "model.safetensors"),
    )
    assert first.keys() == second.keys() and all(np.array_equal(first[k], second[k]) for k in first)
    epochs = [(e["epoch"], e["accuracy"], e["train_loss"]) for e in resumed["validation"]["per_epoch"]]
    assert epochs == [(e["epoch"], e["accuracy"], e["train_loss"]) for e in whole["validation"]["per_epoch"]]
    assert len(resumed["timing"]["epoch_train_seconds"]) == 3  # epochs 1-2 timed before the kill
    assert resumed["timing"]["resumed_from"] == "checkpoint-6" and whole["timing"]["resumed_from"] is None
    assert not saved.exists()  # removed once the operator is saved


@pytest.mark.subprocess
def test_checkpoints_of_another_training_or_a_live_process_are_not_resumed(tmp_path):
    from semuq_eval.durable import WriterBusy
    from semuq_eval.training.checkpoints import EpochCheckpoints

    mine = EpochCheckpoints(tmp_path / "enc", "same data and options")
    assert mine.open() is None
    (mine.folder / "checkpoint-4").mkdir()
    (mine.folder / "checkpoint-8").mkdir()  # cut short by a kill: no trainer state
    (mine.folder / "checkpoint-4" / "trainer_state.json").write_text("{}")
    assert mine.open() == str(mine.folder / "checkpoint-4")
    assert EpochCheckpoints(tmp_path / "enc", "other options").open() is None
    assert not list(mine.folder.glob("checkpoint-*"))  # a different training's checkpoints are discarded
    code = (  # another process training into the folder: it holds the folder's journal
        "import sys, time; from pathlib import Path; from semuq_eval.training.checkpoints import EpochCheckpoints\n"
        f"EpochCheckpoints(Path({str(tmp_path / 'other')!r}), 'same data and options').open()\n"
        "print('training', flush=True); time.sleep(600)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "training"
        with pytest.raises(WriterBusy, match=f"PID {child.pid}.*is writing this training"):
            EpochCheckpoints(tmp_path / "other", "same data and options").open()
    finally:
        child.kill()
        child.wait()


def test_without_early_stopping_every_epoch_runs_and_the_last_is_kept(train_store, tiny_st_encoder, tmp_path):  # noqa: F811
    out = tmp_path / "full"
    record = trainer.train_operator(
        config_for(train_store, out, tiny_st_encoder, epochs=3, patience=1, early_stopping=False)
    )
    val = record["validation"]
    assert val["epochs_run"] == 3 and not val["stopped_early"]
    assert math.isclose(val["final_accuracy"], val["per_epoch"][-1]["accuracy"])  # the last epoch's model
    hp = record["hyperparameters"]
    assert hp["kept_epoch"].startswith("last") and hp["early_stopping_patience"] is None
    assert "the last epoch is kept" in (out / "README.md").read_text()


def test_answer_only_operator_without_negatives_is_evaluated_answer_only(
    train_store,
    tiny_st_encoder,  # noqa: F811
    tmp_path,
):
    from sentence_transformers import SentenceTransformer

    from semuq_eval.commands.train_operator import main
    from semuq_eval.operators import get

    output = tmp_path / "answer-only"
    code = main(
        ["--stores", str(train_store), "--output", str(output), "--backbone", str(tiny_st_encoder), "--no_question",
         "--negatives", "none", "--epochs", "1", "--batch_size", "4", "--val_fraction", "0.25", "--device", "cpu",
         "--no_progress"]
    )  # fmt: skip
    assert code == 0
    saved = training_record.read_training_record(output)
    assert saved["question_conditioned"] is False and saved["separator"] is None
    assert (
        saved["hyperparameters"]["loss"].startswith("CosineSimilarityLoss")
        and saved["hyperparameters"]["margin"] is None
    )
    assert saved["command"][:2] == ["semuq-eval", "train-operator"] and "--no_question" in saved["command"]
    answers = ["Charles Darwin", "Alfred Wallace"]
    op = get("enc", model=str(output), progress=False)
    out = op(["Who wrote the book?"], [answers])
    phi = SentenceTransformer(str(output), device="cpu").encode(answers, normalize_embeddings=True)
    np.testing.assert_allclose(out.matrices[0], phi @ phi.T, atol=1e-5)
    assert out.info["question_conditioned"] is False
    with pytest.warns(UserWarning, match="trained with condition_on_question=False"):
        get("enc", model=str(output), condition_on_question=True, progress=False)
    assert (
        main(["--stores", str(train_store), "--output", str(output), "--backbone", str(tiny_st_encoder)]) == 2
    )


# -- real assets ---------------------------------------------------------------------------------------------


@pytest.mark.real
def test_minilm_trains_one_epoch_on_real_nq_open_questions(real_asset, tmp_path):
    """Real NQ-Open dev questions and aliases; answers built from the references (correct: a reference,
    incorrect: another question's reference); the prepared all-MiniLM-L6-v2, one epoch."""
    import time

    from semuq_eval.data import load_qa

    minilm = real_asset("all-minilm-l6-v2")
    real_asset("nq-open")
    qa = load_qa("nq-open", "dev", limit=48)
    rows = []
    for i, rec in enumerate(qa):
        ref, other = rec["answers"][0], qa[(i + 1) % len(qa)]["answers"][0]
        samples = [
            (ref, 1),
            (f"The answer is {ref}.", 1),
            (f"{ref}, I think.", 1),
            (other, 0),
            (f"It is {other}.", 0),
        ]
        rows.append((rec["question"], samples))
    store = make_store(tmp_path / "semuq" / "semuq_nqopen_train" / "smollm2-135m-instruct", rows)
    started = time.perf_counter()
    record = trainer.train_operator(
        TrainingConfig(
            stores=[str(store)], output=str(tmp_path / "op"), backbone="offline:all-minilm-l6-v2", epochs=1,
            device="cpu", progress=False,
        )
    )  # fmt: skip
    assert time.perf_counter() - started < 90
    assert record["backbone"]["name"] == "all-minilm-l6-v2" and record["backbone"]["path"] == str(minilm)
    assert record["counts"]["kept"] == 48 and record["counts"]["val_questions"] == 5
    assert record["validation"]["epochs_run"] == 1 and record["timing"]["examples_per_second"] > 0
    from semuq_eval.operators import get

    S = get("enc", model=str(tmp_path / "op"), progress=False)(
        [rows[0][0]], [[a for a, _ in rows[0][1]]]
    ).matrices[0]
    assert S.shape == (5, 5) and np.allclose(np.diag(S), 1.0, atol=1e-5)
