"""Epoch selection on the held-out AUROC (`train-operator --select_on auroc`): the evaluator scores as the
harness does, checked against scikit-learn's AUROC; the kept weights are those of the best held-out epoch; the
greedy answers and verdicts survive the training-data files that carry them.

Training runs on the tiny random BERT sentence-transformer of tests/fixtures/tiny_encoders.py (mechanics, not
quality)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from semuq_eval.commands import main as cli_main
from semuq_eval.harness.doc import Doc
from semuq_eval.operators.encoder import EncoderOperator
from semuq_eval.training import trainer
from semuq_eval.training.config import TrainingConfig
from semuq_eval.training.data_files import read_training_file
from semuq_eval.training.heldout import (
    SELECTION_AGGREGATORS,
    HeldoutAUROCEvaluator,
    heldout_docs,
    selection_estimators,
)
from semuq_eval.training.stores import LabelledQuestion, read_store
from tests.fixtures.tiny_encoders import (  # noqa: F401  (pytest fixtures)
    tiny_st_encoder,
    tiny_wordpiece_dir,
)
from tests.fixtures.training_stores import natural_rows, write_store


def held_rows(n: int):
    """n held-out questions, each App. C-usable (2 correct, 2 incorrect samples); the first sample is also the
    greedy answer, correct for the even questions and wrong for the odd ones."""
    rows = []
    for i in range(n):
        right, wrong = (f"It is Answer {i}.", 1), (f"Maybe Other {i} or {i + 7}.", 0)
        first, second = (right, wrong) if i % 2 == 0 else (wrong, right)
        rows.append(
            (
                f"Held-out question {i}?",
                [f"Answer {i}"],
                [first, second, (f"Answer {i}, surely.", 1), (f"Nobody, {i} times.", 0)],
            )
        )
    return rows


def test_heldout_docs_keep_the_questions_with_a_greedy_verdict():
    q = LabelledQuestion("f", Doc.of_texts("Q?", ("a", "b"), doc_id=0, greedy="a"), (1, 0), greedy_label=1)
    no_verdict = LabelledQuestion(
        "f", Doc.of_texts("R?", ("a", "b"), doc_id=1, greedy="a"), (1, 0), greedy_label=None
    )
    no_greedy = LabelledQuestion("f", Doc.of_texts("S?", ("a", "b"), doc_id=2), (1, 0))
    one_answer = LabelledQuestion("f", Doc.of_texts("T?", ("a",), doc_id=3, greedy="a"), (1,), greedy_label=0)
    docs, correct = heldout_docs([q, no_verdict, no_greedy, one_answer])
    assert [d.question for d in docs] == ["Q?"] and correct.tolist() == [1]
    assert [d.greedy.text for d in docs] == ["a"] and [g.text for g in docs[0].samples] == ["a", "b"]


def test_the_selection_estimators_are_the_rules_eight_graph_aggregators_on_enc():
    """Fixed by name: an aggregator registered later (e.g. issue 23's snne, eigenscore, which also read only the
    matrix) does not change a rule stated before the data were read."""
    names = [e.name for e in selection_estimators()]
    assert names == [f"{a}@enc" for a in SELECTION_AGGREGATORS]
    assert len(names) == 8 and "snne@enc" not in names


def test_the_evaluator_scores_as_the_pipeline_and_sklearn(tmp_path, tiny_st_encoder):  # noqa: F811
    from semuq_eval.harness.pipeline import process_docs
    from semuq_eval.harness.settings import Settings

    store = write_store(tmp_path / "h" / "llm", held_rows(8))
    questions = read_store(store).questions
    evaluator = HeldoutAUROCEvaluator(questions, condition_on_question=True)
    assert evaluator.counts == {"n": 8, "n_correct": 4, "n_incorrect": 4}
    metrics = evaluator(EncoderOperator(str(tiny_st_encoder), progress=False)._load()[0])
    docs, correct = heldout_docs(questions)
    settings = Settings(
        n_samples=4,
        operators=("enc",),
        operator_options={"enc": {"model": str(tiny_st_encoder)}},
        store=False,
    )
    labels = [{"greedy": int(c), "majority": 0, "samples": [], "n_missing_verdicts": 0} for c in correct]
    items = process_docs(docs, settings, labels=labels).items
    per = []
    for est in selection_estimators():
        u = np.array([item["scores"][est.name] for item in items])
        # AUROC of detecting the incorrect answers; scores equal up to round-off (here 0.38459757400215483 and
        # 0.3845975740021549, the same answers) are ties, as metrics.ranking.TIE_TOLERANCE says
        expected = roc_auc_score(1 - correct, np.round(u, 12))
        assert metrics[f"heldout_{est.aggregator}_auroc"] == pytest.approx(expected, abs=1e-12)
        per.append(expected)
    assert metrics["heldout_mean_auroc"] == pytest.approx(np.mean(per), abs=1e-12)


def test_the_evaluator_refuses_held_out_questions_of_one_class(tmp_path):
    rows = [r for r in held_rows(6) if r[2][0][1] == 1]
    questions = read_store(write_store(tmp_path / "h" / "llm", rows)).questions
    with pytest.raises(ValueError, match="3 correct of 3"):
        HeldoutAUROCEvaluator(questions, condition_on_question=True)


def auroc_config(tmp_path, backbone, **options) -> TrainingConfig:
    """Training on 8 natural questions, the epoch selected on 8 held-out questions' AUROC (a training-data
    file, exported from a store)."""
    train_rows = natural_rows(8)
    for i in range(8):
        train_rows[i][2][1] = (f"Author {i} wrote it.", 1)
    natural = write_store(tmp_path / "n" / "llm", train_rows)
    held = write_store(tmp_path / "v" / "llm", held_rows(8))
    if not (tmp_path / "held.jsonl.gz").exists():
        assert cli_main(["train-data", "export", str(held), "--output", str(tmp_path / "held.jsonl.gz")]) == 0
    settings = dict(
        stores=[str(natural)],
        validation=[str(tmp_path / "held.jsonl.gz")],
        select_on="auroc",
        output=str(tmp_path / "op"),
        backbone=str(backbone),
        epochs=4,
        patience=4,
        batch_size=4,
        lr=5e-4,
        device="cpu",
        progress=False,
    )
    return TrainingConfig(**{**settings, **options})


def test_select_on_auroc_keeps_the_best_held_out_epoch(tmp_path, tiny_st_encoder):  # noqa: F811
    config = auroc_config(tmp_path, tiny_st_encoder)
    kept = read_training_file(tmp_path / "held.jsonl.gz").questions
    assert [(q.greedy, q.greedy_label) for q in kept] == [(r[2][0][0], r[2][0][1]) for r in held_rows(8)]
    record = trainer.train_operator(config)
    val = record["validation"]
    per_epoch = [e["heldout_auroc"] for e in val["per_epoch"]]
    assert len(per_epoch) == 4 and all(0.0 <= v <= 1.0 for v in per_epoch)
    assert val["best_epoch"] == 1 + int(np.argmax(per_epoch))
    assert val["heldout_auroc"]["best"] == max(per_epoch)
    assert val["heldout_auroc"]["n"] == 8 and val["heldout_auroc"]["n_correct"] == 4
    assert record["hyperparameters"]["select_on"] == "auroc"
    assert any(d.startswith("select_on=auroc") for d in record["deviations_from_paper"])
    # the saved folder holds the best held-out epoch's weights (scored in the same batches: the random tiny
    # model's near-tied scores flip with 1e-7 of padding noise)
    reloaded = EncoderOperator(config.output, progress=False)._load()[0]
    again = HeldoutAUROCEvaluator(kept, condition_on_question=True, batch_size=4)(reloaded)[
        "heldout_mean_auroc"
    ]
    assert again == pytest.approx(max(per_epoch), abs=1e-6)


def test_a_replayed_epoch_is_the_selected_epochs_bytes(tmp_path, tiny_st_encoder):  # noqa: F811
    """stop_after_epoch=K trains epochs 1-K of the same budget with no held-out scoring in between: the bytes
    the selection kept (how the shipped operator is rebuilt without scoring every epoch)."""
    from safetensors.numpy import load_file

    selected = trainer.train_operator(auroc_config(tmp_path, tiny_st_encoder))
    k = selected["validation"]["best_epoch"]
    calls = []
    original = HeldoutAUROCEvaluator.__call__

    def counted(self, model, *args, **kwargs):
        calls.append(1)
        return original(self, model, *args, **kwargs)

    HeldoutAUROCEvaluator.__call__ = counted
    try:
        replay = trainer.train_operator(
            auroc_config(tmp_path, tiny_st_encoder, output=str(tmp_path / "replay"), stop_after_epoch=k)
        )
    finally:
        HeldoutAUROCEvaluator.__call__ = original
    assert len(calls) == 2  # before and after training, not after every epoch
    kept, replayed = (
        load_file(tmp_path / "op" / "model.safetensors"),
        load_file(tmp_path / "replay" / "model.safetensors"),
    )
    assert kept.keys() == replayed.keys() and all(np.array_equal(kept[n], replayed[n]) for n in kept)
    val = replay["validation"]
    assert (val["epochs_run"], val["best_epoch"], val["stopped_after_epoch"]) == (k, k, k)
    assert not val["stopped_early"]
    assert val["heldout_auroc"]["final"] == pytest.approx(
        selected["validation"]["heldout_auroc"]["best"], abs=1e-6
    )
    assert [e.get("heldout_auroc") is not None for e in val["per_epoch"]] == [False] * (k - 1) + [True]
    assert replay["hyperparameters"]["kept_epoch"].startswith(f"epoch {k} of the budget, replayed")
    assert "kept: epoch" in (tmp_path / "replay" / "README.md").read_text()
    # held-out scoring after each of epochs 1-3 (none kept early) leaves epoch 4 as the replay of 4 trains it
    trainer.train_operator(
        auroc_config(tmp_path, tiny_st_encoder, output=str(tmp_path / "every"), early_stopping=False)
    )
    trainer.train_operator(
        auroc_config(tmp_path, tiny_st_encoder, output=str(tmp_path / "replay4"), stop_after_epoch=4)
    )
    every, replay4 = (
        load_file(tmp_path / "every" / "model.safetensors"),
        load_file(tmp_path / "replay4" / "model.safetensors"),
    )
    assert all(np.array_equal(every[n], replay4[n]) for n in every)
    # the learning rate follows the budget: the same epochs of a longer budget give other weights
    trainer.train_operator(
        auroc_config(tmp_path, tiny_st_encoder, output=str(tmp_path / "longer"), epochs=8, stop_after_epoch=k)
    )
    longer = load_file(tmp_path / "longer" / "model.safetensors")
    assert any(not np.array_equal(kept[n], longer[n]) for n in kept)
    with pytest.raises(ValueError, match=r"stop_after_epoch: must be in \[1, epochs=4\]"):
        auroc_config(tmp_path, tiny_st_encoder, stop_after_epoch=5)


def test_auroc_selection_needs_both_greedy_classes(tmp_path, tiny_st_encoder, capsys):  # noqa: F811
    train_rows = natural_rows(6)
    for i in range(6):
        train_rows[i][2][1] = (f"Author {i} wrote it.", 1)
    natural = write_store(tmp_path / "n" / "llm", train_rows)
    rows = [(q, refs, [(a, 1 if i < 2 else 0) for i, (a, _) in enumerate(s)]) for q, refs, s in held_rows(4)]
    held = write_store(tmp_path / "v" / "llm", rows)  # every greedy answer (the first sample) is correct
    out = tmp_path / "op"
    argv = ["train-operator", "--stores", str(natural), "--validation", str(held), "--select_on", "auroc"]
    assert cli_main([*argv, "--backbone", str(tiny_st_encoder), "--output", str(out), "--no_progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        "semuq-eval train-operator: held-out AUROC needs correct and incorrect greedy answers"
    )
    assert "4 correct of 4" in err and "\n" not in err and not out.exists()


def test_select_on_is_checked_before_anything_is_read():
    with pytest.raises(ValueError, match="select_on: input should be 'triplets' or 'auroc'"):
        TrainingConfig(stores=["x"], output="y", select_on="loss")
    with pytest.raises(ValueError, match="select_on: .*pass validation files"):
        TrainingConfig(stores=["x"], output="y", select_on="auroc")
