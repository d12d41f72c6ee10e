"""experiments/reproduce.py, the reproduction's one command, on a tiny input: training variants from training-data files
(guided and fact-swapped ablations), selection on held-out validation files, rescoring of an evaluation run, the
leaderboard's comparisons, the diagnosis and the report with its selection and mean-AUROC tables."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import tarfile

import pytest

from semuq_eval.jsonio import read_json, write_json
from semuq_eval.leaderboard.schema import read_document
from tests.fixtures.tiny_encoders import (  # noqa: F401  (pytest fixtures)
    tiny_st_encoder,
    tiny_wordpiece_dir,
)
from tests.fixtures.training_stores import guided_rows, natural_rows, write_store


def _reproduce():
    return importlib.import_module("experiments.reproduce")


@pytest.mark.slow
def test_the_reproduction_trains_selects_rescores_and_reports(
    tmp_path,
    monkeypatch,
    tiny_st_encoder,  # noqa: F811
):
    from semuq_eval.training.data_files import export_store
    from tests.fixtures.tiny_harness import canned_run

    data = tmp_path / "data"
    rows = natural_rows(8)
    for i in range(0, 8, 2):  # half the questions have two correct samples: App. C keeps them
        rows[i][2][1] = (f"Author {i} wrote it.", 1)
    export_store(write_store(tmp_path / "n" / "llm", rows), data / "natural.jsonl.gz")
    export_store(
        write_store(tmp_path / "g" / "llm", guided_rows(8), task="semuq_nqopen_train_guided"),
        data / "guided.jsonl.gz",
    )
    held = [
        (
            f"Held-out {i}?",
            [f"Answer {i}"],
            [(f"It is Answer {i}.", 1), (f"Answer {i}.", 1), (f"It is X{i}.", 0)],
        )
        for i in range(4)
    ]
    export_store(write_store(tmp_path / "h" / "llm", held), data / "validation.jsonl.gz")
    store = canned_run(tmp_path, tmp_path / "runs")
    archive = tmp_path / "canned-triviaqa.tar.xz"  # the form eval_runs.sh commits
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(store, arcname="semuq_triviaqa_dpr/canned-secondary")
    report, work = tmp_path / "report", tmp_path / "work"
    # fmt: off
    args = [
        "--train", str(data / "natural.jsonl.gz"), "--guided", str(data / "guided.jsonl.gz"),
        "--validation", str(data / "validation.jsonl.gz"), "--select",
        "--eval", str(store), "--secondary", str(archive),
        "--work", str(work), "--report", str(report), "--backbone", str(tiny_st_encoder),
        "--ablations", "guided,fact_swap,answer_pooling,mpnet", "--epochs", "1", "--bootstrap", "20", "--val_triplets", "2",
        "--max_diagnose_questions", "6",
    ]
    # fmt: on
    reproduce = _reproduce()
    other = tmp_path / "other-backbone"
    other.symlink_to(tiny_st_encoder)
    reproduce.ABLATIONS["mpnet"] = ("enc_trained_mpnet", {"backbone": str(other)})  # a second backbone
    assert reproduce.main(args) == 0
    ops = ("enc_trained", "enc_trained_guided", "enc_trained_fact_swap", "enc_trained_mpnet")
    for name in ops:
        card = read_json(work / "ops" / name / "semuq_training.json")
        assert card["counts"]["val_questions"] == 4  # every variant validated on the same held-out questions
    assert (
        read_json(work / "ops" / "enc_trained_guided" / "semuq_training.json")["counts"]["added_guided"] == 16
    )
    text = (report / "README.md").read_text(encoding="utf-8")
    assert "## 1b. Selection of the main operator" in text
    selected = text.split("is the one with the highest accuracy at its kept epoch: **`")[1].split("`")[0]
    assert selected in ops
    assert "## 2a. Mean AUROC per operator over the reliable cells" in text and "(no reliable cell)" in text
    board = read_document(report / "leaderboard" / "leaderboard.json")
    # the board is built from the run records committed beside it (a fresh clone rebuilds it without the stores)
    records = sorted(p.name for p in (report / "records").iterdir())
    assert records == ["semuq_triviaqa_dpr.canned-secondary.jsonl.gz", "semuq_triviaqa_dpr.canned.jsonl.gz"]
    assert {run["source"] for run in board["runs"]} == {"record"}
    assert board["settings"]["reference"] == "kle_heat@enc"
    assert f"{selected} vs enc" in board["comparisons"]["sets"]
    assert {f"{o} vs {selected}" for o in ops if o != selected} <= set(board["comparisons"]["sets"])
    assert "enc_trained_mpnet vs enc_other_backbone" in board["comparisons"]["sets"]  # its own untrained base
    assert "(vs `enc_other_backbone`)" in text
    # an answer-pooled variant is compared with the same untrained weights pooled the same way
    assert "enc_trained_answer_pooling vs enc_answer_pooling" in board["comparisons"]["sets"]
    assert {f"{o} vs cos_ext" for o in ops} <= set(
        board["comparisons"]["sets"]
    )  # every variant against cos_ext
    assert "`enc_answer_pooling`" in text.split("## 2a.")[1].split("## 2.")[0]
    # traps and localization: each trained variant minus its untrained counterpart, paired
    diagnosis = read_json(report / "diagnosis" / "training-llm" / "diagnosis.json")
    assert "enc_trained_answer_pooling vs enc_answer_pooling" in diagnosis["comparisons"]
    assert f"{selected} vs cos_ext" in diagnosis["comparisons"]
    journal = work / "diagnosis-checkpoint" / "training-llm" / "diagnosis.jsonl"
    kept = {json.loads(line)["key"].split(":")[0] for line in journal.read_text().splitlines()}
    assert set(ops) <= kept  # each operator's outcome kept as it came: a killed diagnosis resumes there
    assert "Paired differences, trained minus untrained" in text
    criteria = text.split("## 0. What must show")[1].split("## 1.")[0]
    assert f"| `{selected}` beats the untrained `enc` |" in criteria  # tiny runs: no reliable cell, so "no"
    assert "higher in 0 of 0" in criteria and "| no |" in criteria
    unpacked = work / "runs" / "canned-triviaqa" / "semuq_triviaqa_dpr" / "canned-secondary"
    assert (unpacked / "breakdown.json").is_file() and "SAME LLM as training" in text
    with pytest.raises(SystemExit):  # --select needs held-out validation data
        _reproduce().main(["--train", "x", "--work", str(work), "--report", str(report), "--select"])
    # a main operator fixed in advance (a pre-registered plan): the trained variants are kept, nothing is selected
    fixed = tmp_path / "report-fixed"
    at = args.index("--select")
    plan = [*args[:at], *args[at + 1 :]]
    plan[plan.index("--report") + 1] = str(fixed)
    assert reproduce.main([*plan, "--main", "enc_trained_fact_swap", "--aggregators", "cae,deg"]) == 0
    text = (fixed / "README.md").read_text(encoding="utf-8")
    assert "Counted (sections 0-3): the aggregators `cae`, `deg`" in text
    assert "| cae |" in text and "| deg |" in text and "| eigv |" not in text
    assert "## 1b. The main operator, fixed in advance" in text and "highest accuracy" not in text
    assert "| `enc_trained_fact_swap` beats the untrained `enc` |" in text
    board = read_document(fixed / "leaderboard" / "leaderboard.json")
    assert {"enc_trained_fact_swap vs enc", "enc_trained_guided vs enc_trained_fact_swap"} <= set(
        board["comparisons"]["sets"]
    )
    # a new machine: the rescored stores are gone but the committed records stand for them (same operators),
    # so the variants retrain and nothing is rescored; a record with other operators is rescored
    rescore_module = importlib.import_module("semuq_eval.harness.rescore")  # the package re-exports rescore
    shutil.rmtree(work / "stores")
    (fixed / "timings.json").unlink()
    records = {p.name: p.read_bytes() for p in (fixed / "records").iterdir()}
    with monkeypatch.context() as patch:
        patch.setattr(rescore_module, "rescore", lambda *a, **k: pytest.fail("a recorded store was rescored"))
        assert reproduce.main([*plan, "--main", "enc_trained_fact_swap", "--aggregators", "cae,deg"]) == 0
    assert {p.name: p.read_bytes() for p in (fixed / "records").iterdir()} == records
    assert "## 0. What must show" in (fixed / "README.md").read_text(encoding="utf-8")
    assert not any(k.startswith("rescore") for k in read_json(fixed / "timings.json"))
    # a variant retrained to other bytes than the report's: every store is rescored
    weights = read_json(fixed / "weights.json")
    assert set(weights) == {
        "enc_trained",
        "enc_trained_guided",
        "enc_trained_fact_swap",
        "enc_trained_answer_pooling",
        "enc_trained_mpnet",
    }
    write_json(fixed / "weights.json", {**weights, "enc_trained": "0" * 64})
    assert reproduce.main([*plan, "--main", "enc_trained_fact_swap", "--aggregators", "cae,deg"]) == 0
    assert sum(k.startswith("rescore") for k in read_json(fixed / "timings.json")) == 2
    assert read_json(fixed / "weights.json") == weights
    (fixed / "timings.json").unlink()
    fewer = [*plan[: plan.index("--ablations") + 1], "guided", *plan[plan.index("--ablations") + 2 :]]
    assert reproduce.main([*fewer, "--main", "enc_trained_guided"]) == 0
    assert {k for k in read_json(fixed / "timings.json") if k.startswith("rescore")} == {
        "rescore semuq_triviaqa_dpr/canned",
        "rescore semuq_triviaqa_dpr/canned-secondary",
    }
    for wrong in (
        ["--main", "enc_trained", "--select"],
        ["--main", "enc_trained_nope"],
        ["--main", "enc_trained", "--aggregators", "cae,nope"],
    ):
        with pytest.raises(SystemExit):
            reproduce.main([*plan, *wrong])


def test_criteria_count_reliable_cells_only_and_read_the_paired_diagnosis():
    reproduce = _reproduce()

    def cell(op, agg, value, reliable=True):
        return {"section": "s", "llm": "l", "strategy": "greedy", "estimator": f"{agg}@{op}", "metric": "auroc",
                "status": "ok", "value": value, "reliable": reliable}  # fmt: skip

    def row(agg, improved, significant):
        return {"set": "main vs enc", "section": "s", "task": "t", "llm": "l", "strategy": "greedy",
                "estimator": f"{agg}@main", "status": "ok", "improved": improved, "significant": significant}  # fmt: skip

    document = {
        "cells": [cell("main", a, v) for a, v in (("se", 0.7), ("cae", 0.6), ("cos", 0.8))]
        + [cell("cos_ext", a, v) for a, v in (("se", 0.6), ("cae", 0.7), ("cos", 0.7))]
        + [cell("main", "deg", 0.9, reliable=False), cell("cos_ext", "deg", 0.1, reliable=False)],
        "comparisons": {
            "rows": [row("se", True, True), row("cae", False, False), row("cos", True, False)]
            + [row("deg", False, True)]  # its cell is a small sample: left out
        },
    }
    diagnoses = {
        "training-llm": {
            "comparisons": {
                "main vs enc": {
                    "trap:context": {
                        "difference": -0.05,
                        "ci_low": -0.08,
                        "ci_high": -0.02,
                        "n_pairs": 40,
                        "n_questions": 30,
                    },  # fmt: skip
                    "localization": {
                        "difference": 0.1,
                        "ci_low": -0.01,
                        "ci_high": 0.2,
                        "n_answers": 50,
                        "n_questions": 50,
                    },  # fmt: skip
                }
            }
        }
    }
    text = "\n".join(reproduce.criteria_section(document, diagnoses, {"main": ("enc", "b", "all")}, "main"))
    assert "higher in 2 of 3, significantly in 1 (significantly lower in 0) | yes |" in text
    assert "0.700 vs 0.667 over 3 cells | yes |" in text  # the small-sample cell is not averaged
    assert "context trap (lower is better), `main` minus `enc` (training-llm)" in text
    assert "-0.050 [-0.080, -0.020] (40 / 30 questions) | yes |" in text
    assert "+0.100 [-0.010, 0.200] (50 / 50 questions) | no |" in text


def test_heldout_questions_keep_each_answer_its_verdict_and_the_greedy_label(tmp_path):
    from semuq_eval.training.data_files import export_store

    rows = [
        ("Q0?", ["A0"], [("A0.", 1), ("A0 it is.", 1), ("B0.", 0)]),
        ("Q1?", ["A1"], [("B1.", 0), ("A1.", 1), ("C1.", None)]),
    ]
    path = tmp_path / "validation.jsonl.gz"
    export_store(write_store(tmp_path / "h" / "llm", rows), path)
    docs, labels = _reproduce().heldout_questions([str(path)])
    assert [d.question for d in docs] == ["Q0?", "Q1?"]
    assert [list(d.samples) for d in docs] == [["A0.", "A0 it is.", "B0."], ["B1.", "A1.", "C1."]]
    assert docs[0].greedy == "A0." and docs[0].greedy.greedy  # write_store's greedy is the first sample
    assert labels[0] == {
        "greedy": True,
        "majority": True,
        "samples": [True, True, False],
        "n_missing_verdicts": 0,
    }
    # a missing verdict stays missing; the majority is over the judged samples (1 of 2: not a majority)
    assert labels[1] == {
        "greedy": False,
        "majority": False,
        "samples": [False, True, None],
        "n_missing_verdicts": 1,
    }


def test_auroc_selection_ships_a_variant_only_above_its_base_and_the_untrained_enc():
    choose = _reproduce().choose_by_auroc
    bases = {"enc_trained": ("enc", "", "all"), "ap": ("enc_ap", "", "answer"), "r": ("enc", "", "all")}
    scores = {"enc_trained": 0.60, "ap": 0.70, "r": 0.66, "enc": 0.65, "enc_ap": 0.68}
    assert choose(scores, list(bases), bases) == ("ap", "ap")
    assert choose({**scores, "enc_ap": 0.71}, list(bases), bases) == (
        "ap",
        "enc_trained",
    )  # training did not help
    assert choose({**scores, "enc": 0.75}, list(bases), bases) == (
        "ap",
        "enc_trained",
    )  # below the untrained enc
    assert choose({**scores, "ap": None}, list(bases), bases) == ("r", "r")  # no score: never chosen


@pytest.mark.slow
def test_the_transfer_report_counts_what_the_committed_board_counts(capsys):
    """The transfer test's report (leaderboards/reproduction/transfer/recipe/report.py), run on SmolLM2's committed
    test records as if they were the test LLM's, gives the second confirmation's board figures: the shipped
    operator against its untrained base over the 30 reliable cells and against cos_ext over 27."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "transfer_report", root / "leaderboards/reproduction/transfer/recipe/report.py"
    )
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    records = str(root / "leaderboards/reproduction/confirmation-2/test/records/*.jsonl.gz")
    assert report.main(["--test", records]) == 0
    out = capsys.readouterr().out
    t1 = next(line for line in out.splitlines() if line.startswith("| T1 |"))
    assert "| 30 | higher in 27, 9 significantly, 0 significantly lower | 0.673 vs 0.609 | +0.064 [" in t1, t1
    assert t1.endswith("| held |")
    t2 = next(line for line in out.splitlines() if line.startswith("| T2 |"))
    assert "| 27 | higher in 21, 0 significantly, 0 significantly lower | 0.673 vs 0.656 | +0.017 [" in t2, t2
    assert "triviaqa_dpr: greedy 62 / 338, majority 39 / 361" in out
    assert report.main(["--test", "/nonexistent/*.jsonl.gz"]) == 2


@pytest.mark.slow
def test_the_trained_on_qwen_report_states_each_prediction_against_its_rule(capsys, tmp_path):
    """The report of PLAN-trained-on-qwen.md (transfer/recipe/report_trained_on_qwen.py), run on SmolLM2's committed
    test records for both LLMs with stand-in operators (the second confirmation's candidate as the trained one,
    cos_ext as the shipped one, its answer-pooled base) and SmolLM2's own training data for Q0: the training set as
    the recipe counts it, the board's figures, each verdict by its rule, the plan's reading of Q1 and Q2; a missing
    chunk is one clear line."""
    import importlib.util
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    path = root / "leaderboards/reproduction/transfer/recipe/report_trained_on_qwen.py"
    spec = importlib.util.spec_from_file_location("trained_on_qwen_report", path)
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    records = str(root / "leaderboards/reproduction/confirmation-2/test/records/*.jsonl.gz")
    data = root / "semuq_eval/assets/training_data/nqopen-dev-smollm2"
    stand_ins = [
        "--trained",
        "enc_trained_guided_ap_auroc",
        "--shipped",
        "cos_ext",
        "--base",
        "enc_answer_pooling",
    ]
    argv = ["--qwen", records, "--smollm2", records, "--training-data", str(data), *stand_ins]
    assert report.main([*argv, "--weights", "a" * 64, "--shipped-weights", "b" * 64]) == 0
    out = capsys.readouterr().out
    assert f"`enc_trained_guided_ap_auroc`: model.safetensors sha256 `{'a' * 64}`" in out
    assert f"`cos_ext`: model.safetensors sha256 `{'b' * 64}`" in out
    assert (
        "keep **129 of 2500** questions" in out
        and "SmolLM2's keep 129. Holds if more than 258: **not held**" in out
    )
    trains_on = "| SmolLM2 | 129 / 2500 | 4617 / 6088 / 1743, of 12500 | 1430 | 26 |"  # guided answers joined
    assert trains_on in out, out
    rows = [line for line in out.splitlines() if line.startswith(("| Q1 ", "| Q2 ", "| Q3 "))]
    q1, q2, *q3 = rows
    assert [row.split(" | ")[0] for row in rows] == ["| Q1", "| Q2", "| Q3", "| Q3"], rows
    llms = [row.split(" | ")[2] for row in rows]  # each row pools an LLM's test sets
    assert llms == ["Qwen2.5-Coder-1.5B-Instruct (3 test sets)", "SmolLM2-135M-Instruct (3 test sets)"] * 2, (
        llms
    )
    assert "| 27 | higher in 21, 0 significantly, 0 significantly lower | 0.673 vs 0.656 | +0.017 [" in q1, q1
    assert q1.endswith("| held |") and q2.endswith("| **not held** |"), (q1, q2)
    assert all("| 30 | higher in 27, 9 significantly" in row and row.endswith("| held |") for row in q3), q3
    assert "Q3 (above its base on both LLMs): **held**." in out
    assert "Q1 held and Q2 not: the more accurate LLM makes the better operator" in out
    partial = tmp_path / "data"
    shutil.copytree(data, partial)
    (partial / "natural-01000-01250.jsonl.gz").unlink()
    assert report.main([*argv[:4], "--training-data", str(partial), *stand_ins]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.count("\n") == 0 and "lacks 1 natural chunk(s), the first natural-01000-01250.jsonl.gz" in err
    ), err
    assert report.main([*argv, "--trained", "nope"]) == 2  # an operator the records do not hold: one line
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "has no operator 'nope' (it has " in err, err
    assert report.outcome("no reliable cell", "held") == (
        "Q1 or Q2 has no reliable cell: the plan's reading cannot be made."
    )


@pytest.mark.slow
def test_the_offline_operator_table_in_docs_is_what_the_records_give():
    """docs/leaderboard.md's table of the trained operator against the others is experiments/operator_cells.py's
    counting on the committed offline records, per LLM: each count and mean difference with its interval (a rebuilt
    board that moves them fails here until the table is rewritten)."""
    from pathlib import Path

    from experiments.operator_cells import cells, load, summary

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs/leaderboard.md").read_text(encoding="utf-8")
    table = text[text.index("| `enc_trained` against |") :].split("\n\n")[0]
    rows = [line.strip().split(" | ") for line in table.splitlines()[2:]]
    for column, llm in ((1, "smollm2-135m-instruct"), (2, "qwen2.5-coder-1.5b-instruct")):
        records = load(str(root / f"leaderboards/offline/records/*.{llm}.jsonl.gz"))
        for other in ("enc", "enc_answer_pooling", "cos_ext", "cos_int", "lexical"):
            row = next(r for r in rows if r[0].endswith(f"`{other}`"))
            s = summary([c for r in records for c in cells(r, "enc_trained", other)])
            if not s["cells"]:
                assert row[column].startswith("(llama.cpp gives none)"), row
                continue
            assert f"{s['higher']} of {s['cells']}" in row[column], (llm, other, s, row)
            figure = f"{s['difference']:+.3f} [{s['ci'][0]:.3f}, {s['ci'][1]:.3f}]"
            assert figure in row[column], (llm, other, figure, row)


@pytest.mark.slow
def test_operator_cells_counts_any_pair_of_operators(capsys):
    """experiments/operator_cells.py, the counting rule on its own: the second confirmation's candidate against its
    base and cos_ext on the committed test records (the board's 30 and 27 reliable cells); an unknown operator
    has no cell, and no record is a clear error."""
    from pathlib import Path

    from experiments.operator_cells import main

    records = str(
        Path(__file__).resolve().parents[1] / "leaderboards/reproduction/confirmation-2/test/records/*.gz"
    )
    assert main([records, "--compare", "enc_trained_guided_ap_auroc:enc_answer_pooling,cos_ext,nothing"]) == 0
    out = capsys.readouterr().out
    assert (
        "| `enc_trained_guided_ap_auroc` vs `enc_answer_pooling` | 30 | higher in 27, 9 significantly" in out
    )
    assert "| `enc_trained_guided_ap_auroc` vs `cos_ext` | 27 | higher in 21," in out
    assert "| `enc_trained_guided_ap_auroc` vs `nothing` | 0 | | | | |" in out
    assert "smollm2-135m-instruct, semuq_triviaqa_dpr: greedy 62 / 338, majority 39 / 361" in out
    assert main(["/nonexistent/*.jsonl.gz", "--compare", "a:b"]) == 2
    with pytest.raises(SystemExit) as err:
        main([records, "--compare", "enc_trained_guided_ap_auroc"])
    assert err.value.code == 2
    assert (
        "--compare: expected OPERATOR:OTHER[,OTHER...], got 'enc_trained_guided_ap_auroc'"
        in capsys.readouterr().err
    )


FAKE_SEMUQ = """#!/usr/bin/env bash
# A stand-in for semuq-eval: `run` makes the store (its task naming how many answers keep failing), `train-data
# export` writes the file. Every call is logged.
echo "$*" >> "$CALLS"
if [ "$1" = run ]; then
    while [ $# -gt 0 ]; do case $1 in --tasks) task=$2;; --output_path) out=$2;; esac; shift; done
    mkdir -p "$out/semuq/$task/llm" && echo {} > "$out/semuq/$task/llm/breakdown.json"
    case $task in *bad*) echo "semuq-api: 5 of 2750 answers came with an error (see the breakdown's bad_docs)";; esac
    echo done
else
    while [ $# -gt 0 ]; do case $1 in --output) out=$2;; esac; shift; done
    echo data > "$out"
fi
"""


def test_generate_keeps_good_runs_retries_a_failing_one_and_goes_on(tmp_path):
    """transfer/recipe/generate.sh: a run whose answers keep failing is asked three times, not kept, its store
    removed (so a later invocation does not take it as done), and the runs after it still go on."""
    root = importlib.import_module("semuq_eval").__file__.rsplit("/semuq_eval/", 1)[0]
    fake = tmp_path / "semuq"
    fake.write_text(FAKE_SEMUQ)
    fake.chmod(0o755)
    runs, data, calls = tmp_path / "runs", tmp_path / "data", tmp_path / "calls"
    env = {
        "PATH": "/usr/bin:/bin", "SEMUQ": str(fake), "CALLS": str(calls), "LLM": "llm", "RUNS": str(runs),
        "DATA": str(data), "KEEP": "training-data", "RUNS_LIST": "semuq_good:0:250 semuq_bad:250:250 semuq_next:500:250",
    }  # fmt: skip
    script = f"{root}/leaderboards/reproduction/transfer/recipe/generate.sh"
    done = subprocess.run(["bash", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert sorted(p.name for p in data.iterdir()) == [
        "natural-00000-00250.jsonl.gz",
        "natural-00500-00750.jsonl.gz",
    ]
    assert [c.split()[0] for c in calls.read_text().splitlines()] == ["run", "train-data"] + ["run"] * 4 + [
        "train-data"
    ]
    assert "llm-bad-250-500: 5 of 2750 answers came with an error; asking again for them" in done.stdout
    assert "not kept (answers with errors): llm-bad-250-500" in done.stderr
    assert not (runs / "llm-bad-250-500" / "semuq" / "semuq_bad" / "llm").exists()
    again = subprocess.run(["bash", script], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and again.stdout.count("generate llm-bad-250-500") == 3
    assert "kept " in again.stdout and "generate llm-good" not in again.stdout
