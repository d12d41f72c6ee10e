"""Judges against annotated labels (semuq_eval/judges/validation.py, ``semuq-eval judge --validate``), panels of two
judges (judges/panel.py, ``--panel``) and greedy-only judging (``--answers greedy``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from semuq_eval.commands import judge as judge_command
from semuq_eval.judges import validation
from semuq_eval.judges.panel import check_panel, combine
from tests.fixtures.tiny_harness import canned_run
from tools import draw_validation

COMMITTED = Path(__file__).resolve().parents[1] / "leaderboards" / "validation"

# (question, references, answer, annotation): the string judge (contains) gets items 2 and 3 wrong
ROWS = [
    ("Capital of France?", ["Paris"], "It is Paris.", 1),
    ("Capital of Italy?", ["Rome"], "Milan", 0),
    ("Who wrote Hamlet?", ["William Shakespeare"], "Shakespeare wrote it.", 1),  # contains misses the surname
    ("Largest planet?", ["Jupiter"], "Not Jupiter but Saturn.", 0),  # contains says correct
    ("Boiling point of water in C?", ["100"], "100 degrees", 1),
    ("Author of Faust?", ["Goethe"], "Schiller", 0),
]


def _folder(tmp_path: Path, rows=ROWS) -> Path:
    folder = tmp_path / "validation"
    folder.mkdir()
    items, notes = [], []
    for n, (question, refs, answer, label) in enumerate(rows):
        items.append(
            {
                "id": n,
                "llm": "a" if n % 2 else "b",
                "set": "s",
                "doc_id": n // 2,  # two items per question: the bootstrap resamples them together
                "kind": "greedy" if n < 3 else "sampled",
                "sample": None if n < 3 else 0,
                "half": "test",
                "question": question,
                "references": refs,
                "answer": answer,
            }
        )
        notes.append({"id": n, "label": label, "note": ""})
    (folder / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    (folder / "annotations.jsonl").write_text("".join(json.dumps(i) + "\n" for i in notes))
    return folder


def test_a_judge_on_the_validation_set_gives_its_exact_confusion_and_kappa(tmp_path):
    folder = _folder(tmp_path)
    meta = validation.judge_items(folder, "string", {"mode": "contains"}, name="contains")
    assert meta["judge"]["judge"] == "string" and meta["seconds"] >= 0
    verdicts, _ = validation.read_verdicts(folder, "contains")
    assert {k: v["label"] for k, v in verdicts.items()} == {0: 1, 1: 0, 2: 0, 3: 1, 4: 1, 5: 0}
    report = validation.validation_report(
        validation.read_items(folder), {k: v["label"] for k, v in verdicts.items()}
    )
    overall = report["all"]
    # annotation rows x judge columns: [[a0 j0, a0 j1], [a1 j0, a1 j1]]
    assert (
        overall["confusion"] == [[2, 1], [1, 2]] and overall["n_items"] == 6 and overall["n_questions"] == 3
    )
    assert overall["accuracy"]["value"] == pytest.approx(4 / 6)
    assert overall["kappa"]["value"] == pytest.approx(1 / 3)  # p_o 2/3, p_e 1/2
    low, high = overall["accuracy"]["ci_low"], overall["accuracy"]["ci_high"]
    assert 0 <= low <= 4 / 6 <= high <= 1
    assert set(report["kind"]) == {"greedy", "sampled"} and set(report["llm"]) == {"a", "b"}
    with pytest.raises(FileExistsError, match="--force"):
        validation.judge_items(folder, "string", {"mode": "contains"}, name="contains")


def test_the_bootstrap_resamples_questions_with_all_their_items():
    items = [
        validation.ValidationItem(
            n, "m", "s", n // 3, "greedy", None, "test", "q", ("a",), "a", int(n % 3 == 0)
        )
        for n in range(30)
    ]
    # the judge is right on every item of even questions and wrong on every item of odd ones
    labels = {i.id: i.label if i.doc_id % 2 == 0 else 1 - i.label for i in items}
    report = validation.validation_report(items, labels, n_resamples=300, seed=1)
    assert report["all"]["n_questions"] == 10 and report["all"]["accuracy"]["value"] == 0.5
    again = validation.validation_report(items, labels, n_resamples=300, seed=1)
    assert again == report  # seeded
    # resampling whole questions: accuracy moves in steps of whole questions, so its interval is wide
    assert report["all"]["accuracy"]["ci_high"] - report["all"]["accuracy"]["ci_low"] > 0.3


def test_threshold_relabels_by_probability_and_keeps_labels_without_one():
    verdicts = {
        0: {"label": 1, "p_correct": 0.55},
        1: {"label": 0, "p_correct": 0.2},
        2: {"label": 1, "p_correct": None},
    }
    assert validation.thresholded(verdicts, None) == {0: 1, 1: 0, 2: 1}
    assert validation.thresholded(verdicts, 0.6) == {0: 0, 1: 0, 2: 1}
    assert validation.thresholded(verdicts, 0.1) == {0: 1, 1: 1, 2: 1}


def test_panels_combine_two_verdict_sets_by_their_rule(tmp_path):
    folder = _folder(tmp_path)
    validation.judge_items(folder, "string", {"mode": "contains"}, name="contains")
    validation.judge_items(folder, "string", {"mode": "em"}, name="em")
    validation.panel_verdicts(folder, ["contains", "em"], "either", name="either")
    validation.panel_verdicts(folder, ["contains", "em"], "both", name="both")
    contains, em = (validation.read_verdicts(folder, n)[0] for n in ("contains", "em"))
    for name, rule in (("either", "either"), ("both", "both")):
        got, meta = validation.read_verdicts(folder, name)
        assert meta["judge"]["rule"] == rule and set(meta["judge"]["members"]) == {"contains", "em"}
        assert all(got[k]["label"] == combine(contains[k]["label"], em[k]["label"], rule) for k in got)
    with pytest.raises(ValueError, match="two different members"):
        check_panel(["contains"], "both")
    with pytest.raises(ValueError, match="panel rule"):
        combine(1, 0, "majority")


def test_bad_validation_files_are_one_line_naming_file_line_and_field(tmp_path):
    folder = _folder(tmp_path)
    notes = folder / "annotations.jsonl"
    lines = notes.read_text().splitlines()
    notes.write_text("\n".join([*lines[:2], json.dumps({"id": 2, "label": "yes"}), *lines[3:]]) + "\n")
    with pytest.raises(ValueError, match=r"annotations.jsonl:3: field 'label' must be 1 or 0"):
        validation.read_items(folder)
    notes.write_text("\n".join(lines[:-1]) + "\n")  # item 5 not annotated
    with pytest.raises(ValueError, match=r"items.jsonl:6: item 5 has no annotation"):
        validation.read_items(folder)
    notes.write_text("\n".join(lines) + "\n")
    validation.judge_items(folder, "string", {}, name="contains")
    rows = folder / "verdicts" / "contains.jsonl"
    rows.write_text(
        rows.read_text().replace('"label": 0', '"label": 1', 1)
    )  # edited after the judge wrote it
    with pytest.raises(ValueError, match="rows differ from those its manifest"):
        validation.read_verdicts(folder, "contains")
    with pytest.raises(FileNotFoundError, match="no finished verdict set 'nope'"):
        validation.read_verdicts(folder, "nope")


def test_the_validate_command_reports_judges_and_tables_every_verdict_set(tmp_path, capsys):
    folder = _folder(tmp_path)
    base = ["--validate", str(folder), "--half", "test"]
    assert judge_command.main([*base, "--judge", "string", "--name", "contains"]) == 0
    out = capsys.readouterr().out
    assert "judge 'contains' against the annotation, test half" in out
    assert "0.667 [" in out and "0.333 [" in out and "[[2, 1], [1, 2]]" in out
    assert judge_command.main([*base, "--judge", "string", "--judge_args", "mode=em", "--name", "em"]) == 0
    assert judge_command.main([*base, "--panel", "contains,em", "--rule", "both", "--name", "both"]) == 0
    capsys.readouterr()
    assert judge_command.main(base) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("| judge | accuracy | kappa |") and len(table) == 2 + 3
    assert any(row.startswith("| contains | 0.667 [") for row in table)
    with pytest.raises(SystemExit) as stop:
        judge_command.main([*base, "--half", "dev"])  # the fixture has no dev item
    assert stop.value.code == 2 and "no item of half 'dev'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        judge_command.main([])
    assert stop.value.code == 2 and "give a run store, or --validate FOLDER" in capsys.readouterr().err


def test_a_store_gets_greedy_only_labels_and_a_panel_label_set(tmp_path, capsys):
    store = canned_run(tmp_path, tmp_path / "out")
    args = [str(store), "--judge", "string", "--judge_args", "mode=em", "--name", "em", "--answers", "greedy"]
    assert judge_command.main(args) == 0
    from semuq_eval.harness.label_sets import read_label_set

    em = read_label_set(store, "em")
    assert em.provenance["answers"] == "greedy"
    assert all(
        r["samples"] == [] and r["majority"] is None and r["greedy"] in (0, 1) for r in em.records.values()
    )
    assert judge_command.main([str(store), "--panel", "run,em", "--rule", "either", "--name", "either"]) == 0
    assert "agreement of 'run'" in capsys.readouterr().out
    run, either = read_label_set(store, "run"), read_label_set(store, "either")
    assert either.judge["judge"] == "panel" and set(either.records) == set(run.records)
    for doc_id, r in either.records.items():
        assert r["greedy"] == combine(run.records[doc_id]["greedy"], em.records[doc_id]["greedy"], "either")
        assert r["samples"] == []  # the greedy-only member has no sample label: the panel keeps none
    with pytest.raises(SystemExit) as stop:
        judge_command.main([str(store), "--panel", "run,nope", "--name", "x"])
    assert stop.value.code == 2


def test_the_committed_validation_set_is_complete_and_split_by_its_rule():
    items = validation.read_items(COMMITTED)
    assert len(items) == 720 and [i.id for i in items] == list(range(720))
    assert sum(i.label for i in items) == 125  # the annotation, as committed (README)
    for item in items:
        assert item.half == draw_validation.half(item.set, item.doc_id)
    strata = {}
    for item in items:
        strata[(item.llm, item.set, item.kind)] = strata.get((item.llm, item.set, item.kind), 0) + 1
    assert len(strata) == 12 and set(strata.values()) == {60}
    keys = {i.question_id: i.half for i in items}
    assert all(keys[i.question_id] == i.half for i in items)  # no question on both sides
    for name in validation.verdict_names(COMMITTED):  # every committed verdict set is whole and readable
        verdicts, meta = validation.read_verdicts(COMMITTED, name)
        assert set(verdicts) == set(range(720)) and meta["name"] == name
    assert np.mean([i.half == "dev" for i in items]) == pytest.approx(347 / 720)


def test_the_choice_ranks_llm_judges_thresholds_and_panels_on_the_dev_half(tmp_path, capsys):
    # the string judge misses item 7 (another name of the city): the LLM judge does not
    rows = [
        (f"q{n}", ["Paris"], "Lutetia" if n == 7 else "Paris" if n % 2 else "Lyon", n % 2) for n in range(12)
    ]
    folder = _folder(tmp_path, rows)
    items = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    for item in items:
        item["half"] = "dev" if item["id"] < 8 else "test"
    (folder / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    validation.judge_items(folder, "string", {"mode": "contains"}, name="string-contains")
    # an LLM judge whose p_correct separates right from wrong answers at 0.7, not at its own 0.5
    probs = {n: (0.8 if n % 2 else 0.6) for n in range(12)}
    verdicts = [{"id": n, "label": int(p > 0.5), "p_correct": p} for n, p in probs.items()]
    validation._write_verdicts(
        folder, "slow", verdicts, {"judge": {"judge": "hf"}, "seconds_per_answer": 2.0}
    )
    validation._write_verdicts(
        folder, "fast", verdicts, {"judge": {"judge": "hf"}, "seconds_per_answer": 0.5}
    )
    ranked = validation.candidates(folder)
    best = ranked[0]
    assert best["kappa"] == pytest.approx(1.0) and best["judge"] == "fast"  # a tie goes to the faster judge
    assert all(c["judge"] in ("slow", "fast") for c in ranked)  # the string judge alone is no candidate
    own = next(c for c in ranked if c["judge"] == "fast" and c["threshold"] is None and c["panel"] is None)
    assert own["kappa"] == pytest.approx(0.0)  # everything called correct
    assert any(c["panel"] == "both with string-contains" for c in ranked)
    partner = {i: v["label"] for i, v in validation.read_verdicts(folder, "string-contains")[0].items()}
    dev = [i.id for i in validation.read_items(folder) if i.half == "dev"]
    for c in ranked:  # no candidate is the string judge again
        labels = validation.thresholded(validation.read_verdicts(folder, c["judge"])[0], c["threshold"])
        if c["panel"]:
            labels = {k: combine(v, partner[k], c["panel"].split()[0]) for k, v in labels.items()}
        assert any(labels[k] != partner[k] for k in dev), c
    assert judge_command.main(["--validate", str(folder), "--choose", "--half", "test"]) == 0
    out = capsys.readouterr().out
    assert "chosen: fast" in out and "test half" in out
