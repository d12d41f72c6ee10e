"""More training signal per question: the compact training-data files, `semuq-eval train-data`, mined texts
(guided answers, references, fact swaps) with style-matched triplets, and answer-token pooling.

Stores are written by the run store writer itself; training runs on the tiny random BERT sentence-transformer of
tests/fixtures/tiny_encoders.py (mechanics, not quality).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from semuq_eval.commands import main as cli_main
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.record import read_record
from semuq_eval.operators.encoder import EncoderOperator, pooling_mode
from semuq_eval.operators.pooling import AnswerMeanPooling, answer_mask
from semuq_eval.training import trainer
from semuq_eval.training.config import TrainingConfig
from semuq_eval.training.data_files import (
    TRAINING_DATA_FORMAT,
    convert_training_file,
    export_store,
    read_training_file,
    write_training_file,
)
from semuq_eval.training.mining import ECHO, mine, style_of
from semuq_eval.training.prepare import TooFewQuestionsError, prepare_data, read_sources
from semuq_eval.training.stores import LabelledQuestion, StoreData, read_store
from semuq_eval.training.triplets import TripletSampler, filter_questions, validation_triplets
from tests.fixtures.tiny_encoders import (  # noqa: F401  (pytest fixtures)
    tiny_st_encoder,
    tiny_wordpiece_dir,
)
from tests.fixtures.training_stores import guided_rows, natural_rows, write_store

# -- the compact training-data file ----------------------------------------------------------------------------


def test_export_keeps_questions_references_answers_and_verdicts_and_reads_back(tmp_path):
    store = write_store(tmp_path / "s" / "smollm2", natural_rows(3))
    out = tmp_path / "data" / "chunk.jsonl.gz"
    info = export_store(store, out, note="questions 0-2")
    assert (
        info["n_questions"] == 3 and info["task"] == "semuq_nqopen_train" and info["note"] == "questions 0-2"
    )
    data = read_training_file(out)
    original = read_store(store)
    assert [(q.question, q.answers, q.labels, q.references) for q in data.questions] == [
        (q.question, q.answers, q.labels, q.references) for q in original.questions
    ]
    assert data.questions[1].references == ("Author 1", "A. 1")
    lines = [json.loads(x) for x in gzip.open(out, "rt", encoding="utf-8")]
    assert lines[0]["format"] == "semuq-run-record/1" and lines[0]["n_questions"] == 3
    assert lines[0]["estimators"] == [] and lines[0]["provenance"]["note"] == "questions 0-2"
    assert lines[1]["texts"]["greedy"] == "It was Author 0." and lines[1]["labels"]["run"]["greedy"] == 1
    assert read_record(out).questions[2]["texts"]["references"] == list(original.questions[2].references)
    assert "hidden" not in json.dumps(lines)  # text only


def test_export_never_replaces_a_file_without_force_and_the_same_data_writes_the_same_bytes(tmp_path):
    store = write_store(tmp_path / "s" / "llm", natural_rows(2))
    out = tmp_path / "x.jsonl.gz"
    export_store(store, out)
    before = out.read_bytes()
    with pytest.raises(FileExistsError, match="--force"):
        export_store(store, out)
    assert out.read_bytes() == before
    data = read_training_file(out)
    a, b = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    write_training_file(a, data)
    write_training_file(b, data)
    assert a.read_bytes() == b.read_bytes()  # no name, no mtime in the gzip header


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not gzip at all", "not a gzip-compressed"),
        (
            gzip.compress(b'{"format": "other/1"}\n'),
            ":1: field format: input should be 'semuq-run-record/1'",
        ),
        (
            gzip.compress(b'{"format": "semuq-training-data/1", "provenance": {}}\n{"doc_id": 0'),
            ":2: malformed",
        ),
        (
            gzip.compress(
                b'{"format": "semuq-training-data/1", "provenance": {}}\n'
                b'{"doc_id": 0, "question": "q", "references": [], "answers": ["a", "b"], "labels": [1]}\n'
            ),
            "2 answers but 1 labels",
        ),
        (
            gzip.compress(
                b'{"format": "semuq-training-data/1", "provenance": {}}\n'
                b'{"doc_id": 0, "question": "q", "references": [], "answers": ["a"], "labels": ["false"]}\n'
            ),
            ":2: field labels.0: a label 1, 0, true, false or null, got 'false'",
        ),
    ],
)
def test_a_broken_training_file_is_refused_naming_the_file_and_line(tmp_path, content, message):
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as err:
        read_training_file(path)
    assert str(path) in str(err.value)


REPO = Path(__file__).resolve().parents[1]


def _former_training_files() -> list[Path]:
    """Every committed file of the former training-data format (the shipped data and the transfer's)."""
    found = []
    for path in sorted(REPO.glob("**/*.jsonl.gz")):
        if ".venv" in path.parts or "build" in path.parts:
            continue
        with gzip.open(path, "rt", encoding="utf-8") as f:
            if json.loads(f.readline()).get("format") == TRAINING_DATA_FORMAT:
                found.append(path)
    return found


def test_the_committed_training_files_convert_to_run_records_that_read_back_the_same(tmp_path):
    files = _former_training_files()
    assert len(files) >= 40  # the shipped SmolLM2 data and the transfer's Qwen data
    for path in files:
        raw = [json.loads(x) for x in gzip.open(path, "rt", encoding="utf-8")]
        data = read_training_file(path)
        assert [
            (q.doc_id, q.question, list(q.references), q.greedy, list(q.answers)) for q in data.questions
        ] == [
            (o["doc_id"], o["question"], o["references"], o.get("greedy"), o["answers"]) for o in raw[1:]
        ], path
        assert [list(q.labels) for q in data.questions] == [o["labels"] for o in raw[1:]], path
        assert [q.greedy_label for q in data.questions] == [o.get("greedy_label") for o in raw[1:]], path
        kept = {k: v for k, v in raw[0]["provenance"].items() if k != "n_questions"}
        assert {k: v for k, v in data.provenance.items() if k not in ("path", "n_questions")} == kept
        converted = tmp_path / path.name
        write_training_file(converted, data)
        assert read_record(converted).questions == convert_training_file(path).questions
        again = read_training_file(converted)
        assert [(q.question, q.answers, q.labels, q.greedy, q.greedy_label) for q in again.questions] == [
            (q.question, q.answers, q.labels, q.greedy, q.greedy_label) for q in data.questions
        ], path


def test_a_record_without_texts_is_refused_as_training_data(tmp_path):
    from semuq_eval.harness.record import write_record
    from semuq_eval.training.data_files import training_record

    doc = Doc.of_texts("Capital of France?", ("Paris", "Lyon"), doc_id=3, references=("Paris",))
    record = training_record(StoreData("s", {"task": "t", "llm": "m"}, [LabelledQuestion("s", doc, (1, 0))]))
    del record.questions[0]["texts"]
    path = write_record(tmp_path / "r.jsonl.gz", record)
    with pytest.raises(ValueError, match=r"r\.jsonl\.gz:2: record t/m: field 'texts' is missing"):
        read_training_file(path)


def test_train_data_command_exports_and_counts(tmp_path, capsys):
    natural = write_store(tmp_path / "n" / "llm", natural_rows(4))
    guided = write_store(tmp_path / "g" / "llm", guided_rows(4), task="semuq_nqopen_train_guided")
    out = tmp_path / "data"
    assert cli_main(["train-data", "export", str(natural), str(guided), "--output", str(out)]) == 0
    files = sorted(out.glob("*.jsonl.gz"))
    assert len(files) == 2
    capsys.readouterr()
    assert cli_main(["train-data", "stats", *map(str, files)]) == 0
    printed = capsys.readouterr().out
    assert (
        "4 questions (semuq_nqopen_train" in printed and "4 of 20 sampled answers correct; kept 0" in printed
    )
    assert "12 of 16 sampled answers correct; kept 4" in printed  # guided, read alone
    assert cli_main(["train-data", "export", str(natural), "--output", str(files[0])]) == 2
    assert "exists" in capsys.readouterr().err


# -- mined texts -------------------------------------------------------------------------------------------------


def test_guided_answers_join_their_questions_positives_without_echoes_or_incorrect_ones(tmp_path):
    natural = read_store(write_store(tmp_path / "n" / "llm", natural_rows(3))).questions
    guided = read_store(write_store(tmp_path / "g" / "llm", guided_rows(3), task="x")).questions
    extra = LabelledQuestion("g", Doc.of_texts("A question nobody asked?", ("x",), doc_id=9), (1,))
    mined, counts = mine(natural, [*guided, extra])
    assert counts["added_guided"] == 6 and counts["guided_echo"] == 3 and counts["guided_incorrect"] == 3
    assert counts["guided_unmatched"] == 1
    q = mined[0]
    assert (
        q.answers[:5] == natural[0].answers and q.labels[:5] == natural[0].labels
    )  # samples first, unchanged
    assert q.origins == ("sample",) * 5 + ("guided",) * 2
    kept, _ = filter_questions(natural)
    assert not kept  # App. C alone keeps nothing here: one correct sample per question
    kept, _ = filter_questions(mined)
    assert len(kept) == 3


def test_references_come_raw_and_as_a_sentence_with_wrong_answers_rendered_alike():
    q = LabelledQuestion(
        "s",
        Doc.of_texts(
            "Who?",
            ("It was Author.", "Writer", "A long wrong sentence about a writer."),
            doc_id=0,
            references=("Author", "A."),
        ),
        (1, 0, 0),
    )
    (both,), counts = mine([q], positives="both")
    added = list(zip(both.answers[3:], both.labels[3:], both.origins[3:], strict=True))
    assert added == [
        ("Author", 1, "reference"),
        ("The answer is Author.", 1, "reference_sentence"),
        ("A.", 1, "reference"),
        ("The answer is A..", 1, "reference_sentence"),
        ("Writer", 0, "wrong"),
        ("The answer is Writer.", 0, "wrong_sentence"),
    ]  # the long wrong sentence is no bare answer
    assert counts["added_reference"] == 2 and counts["added_wrong_sentence"] == 1
    (refs_only,), _ = mine([q], positives="references")
    assert refs_only.labels[0] is None  # the LLM's own correct sample is no positive
    (samples,), _ = mine([q])
    assert (samples.answers, samples.labels, samples.origins) == (q.answers, q.labels, ("sample",) * 3)


def test_fact_swaps_make_a_negative_of_a_correct_answer_and_a_positive_of_a_wrong_one():
    q = LabelledQuestion(
        "s",
        Doc.of_texts(
            "Who wrote Hamlet?",
            (
                "It was written by William Shakespeare.",
                "Well, it was written by Christopher Marlowe.",
                "Marlowe",
            ),
            doc_id=0,
            references=("William Shakespeare", "Shakespeare"),
        ),
        (1, 0, 0),
    )
    (m,), counts = mine([q], fact_swap=True)
    added = list(zip(m.answers[3:], m.labels[3:], m.origins[3:], strict=True))
    assert added == [
        ("It was written by Christopher Marlowe.", 0, "swapped"),
        ("Well, it was written by William Shakespeare.", 1, "repaired"),
    ]
    assert counts["added_swapped"] == counts["added_repaired"] == 1
    (again,), _ = mine([m], fact_swap=True)  # a text already there is never added twice
    assert len(set(again.answers)) == len(again.answers)


def test_the_negative_is_always_written_in_the_positives_style():
    q = LabelledQuestion(
        "s",
        Doc.of_texts(
            "Who?",
            ("It was Author.", "Author did it.", "Writer!", "It was Writer, I think."),
            doc_id=0,
            references=("Author",),
        ),
        (1, 1, 0, 0),
    )
    (m,), _ = mine([q], positives="both")
    kept, counts = filter_questions([m])
    assert counts["kept"] == 1
    sampler = TripletSampler(kept, seed=0, format_fn=lambda _q, a: a)
    styles = {}
    for epoch in range(200):
        (d,) = sampler.draw(epoch)
        tq = kept[0]
        assert tq.style(d.positive) == tq.style(d.negative)
        assert d.anchor != d.positive and m.labels[d.anchor] == m.labels[d.positive] == 1
        styles[tq.style(d.positive)] = styles.get(tq.style(d.positive), 0) + 1
    assert set(styles) == {"llm", "raw", "sentence"}  # every style is drawn
    anchors, positives, negatives = validation_triplets(
        kept, seed=0, format_fn=lambda _q, a: a, per_question=50
    )
    for p, n in zip(positives, negatives, strict=True):
        assert style_of(m.origins[m.answers.index(p)]) == style_of(m.origins[m.answers.index(n)])


def test_a_question_whose_positives_have_no_negative_in_their_style_is_left_out():
    q = LabelledQuestion(
        "s",
        Doc.of_texts("Who?", ("Author", "The answer is Author."), doc_id=0),
        (1, 1),
        origins=("reference", "reference_sentence"),
    )
    q = LabelledQuestion(
        "s",
        Doc.of_texts("Who?", (*q.answers, "It was Writer."), doc_id=0),
        (1, 1, 0),
        origins=(*q.origins, "sample"),
    )
    kept, counts = filter_questions([q])
    assert not kept and counts["no_negative_in_style"] == 1


def test_the_echo_rule_catches_the_prompt_and_spares_plain_answers():
    assert ECHO.search("The correct answer is Paris.") and ECHO.search("As you said, Paris.")
    assert not ECHO.search("Paris is the capital of France.")


# -- answer-token pooling ----------------------------------------------------------------------------------------


def test_answer_mask_keeps_the_tokens_after_the_first_separator():
    ids = torch.tensor([[101, 5, 6, 102, 7, 8, 102, 0], [101, 7, 102, 0, 0, 0, 0, 0]])
    attention = (ids != 0).long()
    mask = answer_mask(ids, attention, 102)
    assert mask.tolist() == [[0, 0, 0, 0, 1, 1, 0, 0], [1, 1, 1, 0, 0, 0, 0, 0]]


def test_enc_answer_pooling_averages_the_answer_tokens_only(tiny_st_encoder):  # noqa: F811
    from sentence_transformers import SentenceTransformer

    question, answers = "Who wrote the book?", ["Charles Darwin", "Alfred Wallace wrote it"]
    plain = EncoderOperator(str(tiny_st_encoder), progress=False)([question], [answers]).matrices[0]
    pooled_op = EncoderOperator(str(tiny_st_encoder), pooling="answer", progress=False)
    pooled = pooled_op([question], [answers]).matrices[0]
    assert not np.allclose(plain, pooled)
    model = SentenceTransformer(str(tiny_st_encoder), device="cpu")
    texts = [pooled_op._input(question, a)[0] for a in answers]
    features = model.tokenize(texts)
    with torch.inference_mode():
        tokens = model[0](dict(features))["token_embeddings"]
    mask = answer_mask(features["input_ids"], features["attention_mask"], model.tokenizer.sep_token_id)
    manual = (tokens * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
    manual = torch.nn.functional.normalize(manual, dim=-1).numpy()
    np.testing.assert_allclose(pooled, manual @ manual.T, atol=1e-5)
    assert pooled_op.info["pooling"] == "answer_mean"
    # the model is cached per path and may be the caller's: answer pooling works on a copy, never on them
    again = EncoderOperator(str(tiny_st_encoder), progress=False)([question], [answers]).matrices[0]
    np.testing.assert_array_equal(again, plain)
    EncoderOperator(model, pooling="answer", progress=False)([question], [answers])
    assert pooling_mode(model) == "mean"
    with pytest.raises(ValueError, match="pooling must be one of"):
        EncoderOperator(str(tiny_st_encoder), pooling="max")


# -- training on mined texts and files ---------------------------------------------------------------------------


def test_training_reads_files_and_guided_answers_and_records_every_option(tmp_path, tiny_st_encoder):  # noqa: F811
    natural = write_store(tmp_path / "n" / "llm", natural_rows(8))
    guided = write_store(tmp_path / "g" / "llm", guided_rows(8), task="semuq_nqopen_train_guided")
    files = tmp_path / "data"
    assert cli_main(["train-data", "export", str(natural), str(guided), "--output", str(files)]) == 0
    nat_file, gui_file = sorted(files.glob("*.jsonl.gz"))[1], sorted(files.glob("*.jsonl.gz"))[0]
    base = dict(
        output=str(tmp_path / "op"),
        backbone=str(tiny_st_encoder),
        epochs=1,
        batch_size=4,
        val_fraction=0.25,
        device="cpu",
        progress=False,
    )
    with pytest.raises(TooFewQuestionsError):
        prepare_data(TrainingConfig(stores=[str(nat_file)], **base))
    config = TrainingConfig(
        stores=[str(files / "*.jsonl.gz")],
        guided=[str(gui_file)],
        positives="both",
        fact_swap=True,
        pooling="answer",
        **base,
    )
    data = prepare_data(config)
    assert data.counts["kept"] == 8 and data.counts["added_guided"] == 16 and data.counts["guided_echo"] == 8
    assert len(data.stores) == 2  # the glob's guided file is of another task: only named with --guided
    record = trainer.train_operator(config, data)
    assert record["hyperparameters"]["positives"] == "both" and record["hyperparameters"]["fact_swap"]
    assert record["pooling"] == "answer_mean"
    assert any("guided" in d for d in record["deviations_from_paper"])
    modules = json.loads((Path(config.output) / "modules.json").read_text())
    assert not any("semuq" in m["type"] for m in modules)  # the folder loads without custom code
    reloaded = EncoderOperator(config.output, progress=False)
    assert isinstance(reloaded._load()[0][1], AnswerMeanPooling)
    assert reloaded.info["pooling"] == "answer_mean"
    with pytest.raises(ValueError, match="hard negatives only"):
        TrainingConfig(stores=["x"], output="y", negatives="random", positives="both")


def test_read_sources_explains_a_pattern_that_matches_nothing(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_sources([str(tmp_path / "none*.jsonl.gz")], "semuq_nqopen_train", "run")
    empty = StoreData("x", {"task": "semuq_nqopen_train"})
    path = tmp_path / "empty.jsonl.gz"
    write_training_file(path, empty)
    assert read_sources([str(path)], "semuq_nqopen_train", "run")[0].questions == []


def test_held_out_validation_files_select_on_natural_triplets_whatever_the_options(tmp_path, tiny_st_encoder):  # noqa: F811
    train_rows = natural_rows(6)
    held_rows = [
        (
            f"Held-out question {i}?",
            [f"Answer {i}"],
            [(f"It is Answer {i}.", 1), (f"Answer {i}, surely.", 1), (f"It is Other {i}.", 0)],
        )
        for i in range(3)
    ]
    natural = write_store(tmp_path / "n" / "llm", train_rows)
    guided = write_store(tmp_path / "g" / "llm", guided_rows(6), task="semuq_nqopen_train_guided")
    held = write_store(tmp_path / "h" / "llm", [*held_rows, train_rows[0]])
    base = dict(output=str(tmp_path / "op"), backbone=str(tiny_st_encoder), device="cpu", progress=False)
    counts = {}
    for name, extra in (("samples", {}), ("mined", {"positives": "both", "fact_swap": True})):
        config = TrainingConfig(
            stores=[str(natural)], guided=[str(guided)], validation=[str(held)], **base, **extra
        )
        data = prepare_data(config)
        assert [q.source.question for q in data.val] == [r[0] for r in held_rows]  # natural App. C triplets
        assert all(q.source.origins == () for q in data.val)
        counts[name] = data.counts
    assert counts["samples"]["train_questions"] == 6 and counts["mined"]["train_questions"] == 6
    assert counts["samples"]["validation_seen"] == 4
    config = TrainingConfig(stores=[str(natural)], guided=[str(guided)], validation=[str(natural)], **base)
    with pytest.raises(TooFewQuestionsError, match="--validation keeps 0"):
        prepare_data(config)  # App. C keeps none of the natural questions


def test_bf16_mixed_precision_training_is_recorded_as_a_deviation(tmp_path, tiny_st_encoder, monkeypatch):  # noqa: F811
    """No device given on a machine without a GPU: the trainer runs bf16 on the CPU (it refuses unless told);
    on a CPU without native bfloat16 the run is refused before anything is read or written."""
    rows = natural_rows(6)
    for i in range(6):
        rows[i][2][1] = (f"Author {i} wrote it.", 1)
    store = write_store(tmp_path / "n" / "llm", rows)
    config = TrainingConfig(
        stores=[str(store)],
        output=str(tmp_path / "op"),
        backbone=str(tiny_st_encoder),
        epochs=1,
        batch_size=4,
        val_fraction=0.34,
        progress=False,
        bf16=True,
    )
    monkeypatch.setattr("semuq_eval.training.config.native_cpu_bf16", lambda: False)
    with pytest.raises(ValueError, match="no native bfloat16.*without --bf16"):
        trainer.train_operator(config)
    assert not (tmp_path / "op").exists()
    monkeypatch.setattr(
        "semuq_eval.training.config.native_cpu_bf16", lambda: True
    )  # the tiny encoder trains either way
    record = trainer.train_operator(config)
    assert record["hyperparameters"]["precision"] == "bf16 mixed"
    assert any(d.startswith("bf16") for d in record["deviations_from_paper"])
    weights = EncoderOperator(config.output, progress=False)._load()[0]
    assert next(weights.parameters()).dtype == torch.float32  # the saved weights stay float32


def test_train_operator_command_takes_the_options_and_says_what_was_added(tmp_path, capsys, tiny_st_encoder):  # noqa: F811
    natural = write_store(tmp_path / "n" / "llm", natural_rows(6))
    guided = write_store(tmp_path / "g" / "llm", guided_rows(6), task="semuq_nqopen_train_guided")
    argv = [
        "train-operator",
        "--stores",
        str(natural),
        "--guided",
        str(guided),
        "--fact_swap",
        "--pooling",
        "answer",
        "--backbone",
        str(tiny_st_encoder),
        "--output",
        str(tmp_path / "op"),
        "--epochs",
        "1",
        "--batch_size",
        "4",
        "--val_fraction",
        "0.34",
        "--device",
        "cpu",
        "--no_progress",
    ]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert "texts added to the samples: guided 12" in out
    card = json.loads((tmp_path / "op" / "semuq_training.json").read_text())
    assert card["hyperparameters"]["pooling"] == "answer" and card["hyperparameters"]["fact_swap"] is True
    with pytest.raises(SystemExit) as err:  # argparse refuses an unknown choice
        cli_main(
            [
                "train-operator",
                "--stores",
                str(natural),
                "--output",
                str(tmp_path / "x"),
                "--positives",
                "all",
            ]
        )
    assert err.value.code == 2 and "invalid choice" in capsys.readouterr().err
