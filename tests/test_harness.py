"""Harness: labels, scoring, the batched filter, and offline end-to-end lm-eval runs of the semuq tasks."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from lm_eval.api.instance import Instance

from semuq_eval.harness import StringJudge, label_doc, majority_label, normalize, rescore
from semuq_eval.harness.filters import SampleList, SemuqFilter
from semuq_eval.harness.scoring import DocInputs, estimators, score_doc
from semuq_eval.harness.settings import Settings
from semuq_eval.harness.store import load_store
from semuq_eval.harness.task import references_of
from semuq_eval.models.generation import Generation
from semuq_eval.paths import output_path_from_argv
from tests.fixtures.tiny_harness import QA, TASKS_DIR, CannedLM, write_qa

N = 4
BASE_META = {"n_samples": N, "operators": ["lexical", "cos_int"], "bootstrap": 50}


def run(lm, tmp_path, tasks=("semuq_triviaqa",), **meta):
    import lm_eval
    from lm_eval.tasks import TaskManager

    metadata = {
        **BASE_META,
        "data_dir": str(write_qa(tmp_path / "data")),
        "output_dir": str(tmp_path / "out"),
        **meta,
    }
    tm = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=metadata)
    return lm_eval.simple_evaluate(model=lm, tasks=list(tasks), task_manager=tm, bootstrap_iters=0)


def breakdown_of(tmp_path, task="semuq_triviaqa"):
    return json.loads((tmp_path / "out" / "semuq" / task / "breakdown.json").read_text())


# ---------------------------------------------------------------------------------------------- labels
@pytest.mark.parametrize(
    ("text", "norm"),
    [
        ("The  Eiffel Tower!", "eiffel tower"),
        ("An apple, a day.", "apple day"),
        ("Théâtre", "théâtre"),
        ("  A  ", ""),
        ("Rock-'n'-roll", "rock n roll"),
    ],
)
def test_normalize(text, norm):
    assert normalize(text) == norm


def test_contains_is_whole_word():
    judge = StringJudge()
    assert judge("q", "I think it is Paris, France.", ["Paris"]) is True
    assert judge("q", "Parisian cafes", ["Paris"]) is False
    assert judge("q", "the shakespeare play", ["William Shakespeare", "Shakespeare"]) is True
    assert judge("q", "anything", []) is None
    assert judge("q", "anything", ["  ", "!!"]) is None  # references empty after normalization


def test_em_and_f1():
    em = StringJudge("em")
    assert em("q", "The Paris.", ["paris"]) is True
    assert em("q", "Paris France", ["paris"]) is False
    f1 = StringJudge("f1")
    assert f1("q", "William Shakespeare wrote it", ["William Shakespeare"]) is True  # F1 = 2/3
    assert f1("q", "a play by someone called Shakespeare", ["William Shakespeare"]) is False  # F1 = 0.29
    assert (
        StringJudge("f1", f1_threshold=0.25)(
            "q", "a play by someone called Shakespeare", ["William Shakespeare"]
        )
        is True
    )
    with pytest.raises(ValueError, match="unknown label mode"):
        StringJudge("regex")


def test_majority_ties_are_incorrect_and_missing_is_counted():
    assert majority_label([True, True, False]) is True
    assert majority_label([True, False]) is False  # tie -> incorrect
    assert majority_label([True, None, None]) is True  # missing verdicts leave the vote
    assert majority_label([None, None]) is None
    labels = label_doc(StringJudge(), "q", "Paris", ["Paris", "Rome", "Paris", "Rome"], ["Paris"])
    assert labels["greedy"] is True and labels["majority"] is False
    empty = label_doc(StringJudge(), "q", "Paris", ["Paris"], [])
    assert empty["greedy"] is None and empty["majority"] is None and empty["n_missing_verdicts"] == 2


def test_references_of_shapes():
    assert references_of("Paris") == ["Paris"]
    assert references_of(["a", " a ", "", "b"]) == ["a", "b"]
    assert references_of([{"answer": "cat"}, {"answer": "cat"}, {"answer": "dog"}]) == ["cat", "dog"]
    assert references_of(None) == []


# ---------------------------------------------------------------------------------------------- scoring
def test_estimator_validity():
    names = {e.name for e in estimators({"lexical": "graded", "cos_int": "gram", "nli": "equivalence"})}
    assert "cos@cos_int" in names and "cos@lexical" not in names and "cos@nli" not in names
    assert {"se@nli", "se@lexical", "kle_heat@cos_int", "te"} <= names
    assert "te_enc@enc" not in names
    assert "te_enc@enc" in {e.name for e in estimators({"enc": "gram"})}


def test_score_doc_unavailable_never_zero():
    samples = [Generation(t) for t in ["Paris", "Paris", "Rome"]]
    inputs = DocInputs(
        "q",
        Generation("Paris", greedy=True),
        samples,
        matrices={"lexical": np.eye(3)},
        unavailable_operators={"cos_int": "no hidden states"},
    )
    scores, reasons = score_doc(inputs, estimators({"lexical": "graded", "cos_int": "gram"}))
    assert math.isnan(scores["te"]) and "black-box" in reasons["te"]
    assert math.isnan(scores["se@lexical"]) and "log-probabilities" in reasons["se@lexical"]
    assert math.isnan(scores["cos@cos_int"]) and reasons["cos@cos_int"] == "no hidden states"
    assert scores["kle_heat@lexical"] > 0 and "kle_heat@lexical" not in reasons


# ---------------------------------------------------------------------------------------------- filter
def _instances(doc, greedy_resps, sample_resps, n):
    g = Instance("generate_until", doc, ("ctx", {"do_sample": False}), 0, ("t", 0, 1))
    s = Instance("generate_until", doc, ("ctx", {"do_sample": True}), 1, ("t", 0, n))
    g.resps, s.resps = list(greedy_resps), list(sample_resps)
    return g, s


def test_padding_guard_keeps_exactly_n():
    doc = {"question": "What is the capital of France?", "answers": ["Paris"]}
    g, s = _instances(doc, ["Paris", "Paris"], [f"answer {i}" for i in range(3 * N)], N)
    filt = SemuqFilter(
        Settings(n_samples=N, operators=("lexical",)), lambda d: d["question"], lambda d: d["answers"]
    )
    (inputs,) = filt.apply_instances([g, s])
    kept = s.filtered_resps["none"]
    assert isinstance(kept, SampleList) and len(kept) == N and kept.inputs is inputs
    assert g.filtered_resps["none"] == ["Paris"]
    assert inputs.n_extra_responses == 1 + 2 * N
    assert inputs.matrices["lexical"].shape == (N, N)
    assert filt.operator_runs["lexical"].status == "ok"


def test_operator_that_cannot_run_is_unavailable():
    doc = {"question": "q", "answers": ["a"]}
    g, s = _instances(doc, ["a"], ["a", "b"], 2)
    filt = SemuqFilter(
        Settings(n_samples=2, operators=("lexical", "cos_int", "no_such_op")),
        lambda d: d["question"],
        lambda d: d["answers"],
    )
    (inputs,) = filt.apply_instances([g, s])
    assert "lexical" in inputs.matrices and "cos_int" not in inputs.matrices
    assert "hidden states" in inputs.unavailable_operators["cos_int"]
    assert "unavailable" in inputs.unavailable_operators["no_such_op"]
    assert filt.operator_runs["no_such_op"].status == "unavailable"


def test_output_path_from_argv():
    assert output_path_from_argv(["lm_eval", "--output_path", "res"]) == "res"
    assert output_path_from_argv(["lm_eval", "--output_path=res/x.json"]) == "res/x.json"
    assert output_path_from_argv(["lm_eval"]) is None


# ---------------------------------------------------------------------------------------------- end to end
def test_end_to_end_white_box(tmp_path, capsys):
    from lm_eval.utils import make_table

    lm = CannedLM(white_box=True)
    results = run(lm, tmp_path, table_estimators=["kle_heat@lexical"])
    res = results["results"]["semuq_triviaqa"]
    print(make_table(results))
    # requests: greedy (do_sample False) + N sampled (App. E.2 decoding) per question
    sampled = [kw for _, kw in lm.calls if kw.get("do_sample")]
    greedy = [kw for _, kw in lm.calls if not kw.get("do_sample")]
    assert len(greedy) == len(QA) and len(sampled) == N * len(QA)
    assert sampled[0]["temperature"] == 1.0 and sampled[0]["top_p"] == 0.9 and sampled[0]["top_k"] == 50
    assert lm.calls[0][0].startswith("Answer the following question.\n")
    assert res["acc_greedy,none"] == pytest.approx(0.5)
    assert res["auroc_best_greedy,none"] == pytest.approx(1.0)
    assert 0 <= res["ece_best_greedy,none"] <= 1
    assert "auroc_greedy:kle_heat@lexical,none" in res

    b = breakdown_of(tmp_path)
    expected = {e.name for e in estimators({"lexical": "graded", "cos_int": "gram"})}
    for strategy in ("greedy", "majority"):
        assert set(b["results"][strategy]) == expected  # every estimator, including te / se / cos@cos_int
        for per in b["results"][strategy].values():
            for metric in ("auroc", "ece"):
                r = per[metric]
                assert r["n"] == len(QA) and {"value", "ci_low", "ci_high"} <= set(r)
    assert b["unavailable"] == {}
    assert b["n_samples"] == N and b["operators"]["lexical"]["info"]["operator"] == "lexical"
    assert b["judge"]["mode"] == "contains" and "tau=0.5" in b["equivalence_rule"]

    manifest, records = load_store(tmp_path / "out" / "semuq" / "semuq_triviaqa")
    assert len(records) == len(QA) and len(records[0]["samples"]) == N
    assert records[0]["samples"][0].hidden is not None and records[0]["greedy"].has_logprobs
    assert records[0]["item"]["labels"]["greedy"] in (0, 1)

    re_b = rescore(
        tmp_path / "out" / "semuq" / "semuq_triviaqa",
        operators=["lexical"],
        n_samples=2,
        output=tmp_path / "rescore",
    )
    assert re_b["n_samples"] == 2 and "cos@cos_int" not in re_b["results"]["greedy"]
    assert "kle_heat@lexical" in re_b["results"]["greedy"]
    assert (tmp_path / "rescore" / "breakdown.rescore.json").is_file()
    same = rescore(tmp_path / "out" / "semuq" / "semuq_triviaqa", bootstrap=50)
    ours = b["results"]["greedy"]["kle_heat@lexical"]["auroc"]["value"]
    assert same["results"]["greedy"]["kle_heat@lexical"]["auroc"]["value"] == pytest.approx(ours)
    with pytest.raises(ValueError, match="n_samples"):
        rescore(tmp_path / "out" / "semuq" / "semuq_triviaqa", n_samples=N + 1)


def test_end_to_end_black_box_canned(tmp_path):
    results = run(CannedLM(white_box=False), tmp_path, n_samples=3)
    b = breakdown_of(tmp_path)
    assert set(b["unavailable"]) >= {"te", "se@lexical", "cos@cos_int"}
    assert "black-box" in next(iter(b["unavailable"]["te"]["reasons"]))
    assert "te" not in b["results"]["greedy"] and "kle_heat@lexical" in b["results"]["greedy"]
    assert b["operators"]["cos_int"]["status"] == "unavailable"
    assert results["results"]["semuq_triviaqa"]["n_estimators,none"] == len(b["results"]["greedy"])


def test_bad_docs_are_recorded_not_fatal(tmp_path):
    qs = list(QA)
    lm = CannedLM(white_box=True, bad=(qs[0],), empty=(qs[1],))
    run(lm, tmp_path)
    b = breakdown_of(tmp_path)
    problems = {d["doc_id"]: d["problems"] for d in b["bad_docs"]}
    assert any("NaN" in p for p in problems[0])
    assert "empty greedy answer" in problems[1] and "all sampled answers are empty" in problems[1]
    assert b["unavailable"]["se@lexical"]["n_docs"] == 1
    scores = [
        json.loads(line)
        for line in (tmp_path / "out" / "semuq" / "semuq_triviaqa" / "scores.jsonl").read_text().splitlines()
    ]
    assert scores[0]["scores"]["se@lexical"] is None and "NaN" in scores[0]["reasons"]["se@lexical"]
    assert scores[1]["scores"]["te"] is None  # empty greedy answer has no tokens
    assert b["results"]["greedy"]["kle_heat@lexical"]["auroc"]["n"] == len(QA)


def test_gen_kwargs_and_metadata_override(tmp_path):
    import lm_eval
    from lm_eval.tasks import TaskManager

    lm = CannedLM(white_box=False)
    meta = {
        **BASE_META,
        "n_samples": 2,
        "data_dir": str(write_qa(tmp_path / "data")),
        "output_dir": str(tmp_path / "out"),
    }
    lm_eval.simple_evaluate(
        model=lm,
        tasks=["semuq_triviaqa"],
        gen_kwargs="temperature=0.5",
        task_manager=TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta),
        bootstrap_iters=0,
    )
    sampled = [kw for _, kw in lm.calls if kw.get("do_sample")]
    assert len(sampled) == 2 * len(QA) and sampled[0]["temperature"] == 0.5
    assert all(kw.get("temperature", 0.0) == 0.0 for _, kw in lm.calls if not kw.get("do_sample"))


def test_all_tasks_and_groups_are_indexed():
    from lm_eval.tasks import TaskManager

    tm = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    names = set(tm.all_tasks)
    assert {
        "semuq_triviaqa",
        "semuq_nqopen",
        "semuq_webquestions",
        "semuq_hotpotqa",
        "semuq_okvqa",
        "semuq_vizwiz",
        "semuq_advqa",
        "semuq_text",
        "semuq_vqa",
        "semuq",
    } <= names
    assert not any(n.startswith("_semuq") for n in names)
