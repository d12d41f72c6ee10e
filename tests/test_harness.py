"""Harness: labels, scoring, the batched filter, and offline end-to-end lm-eval runs of the semuq tasks."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from lm_eval.api.instance import Instance

from semuq_eval import judges
from semuq_eval.context import OUTPUT_ENV, RunContext, lm_eval_cli, model_slug, resolve_output_dir
from semuq_eval.harness import Doc, OperatorSpec, process_docs, rescore, score_doc, valid_estimators
from semuq_eval.harness.operator_runs import operator_spec
from semuq_eval.harness.settings import Settings
from semuq_eval.harness.step import docs_from_instances
from semuq_eval.harness.store import open_store
from semuq_eval.harness.task import references_of
from semuq_eval.judges import StringJudge, label_answers, majority_label, normalize
from semuq_eval.models.generation import Generation
from tests.fixtures.tiny_harness import (
    HARNESS_META,
    QA,
    TASKS_DIR,
    CannedLM,
    breakdown_of,
    run_tasks,
    write_qa,
)

N = HARNESS_META["n_samples"]


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
    (labels,) = label_answers(
        StringJudge(), ["q"], ["Paris"], [["Paris", "Rome", "Paris", "Rome"]], [["Paris"]]
    )
    assert labels["greedy"] is True and labels["majority"] is False
    (empty,) = label_answers(StringJudge(), ["q"], ["Paris"], [["Paris"]], [[]])
    assert empty["greedy"] is None and empty["majority"] is None and empty["n_missing_verdicts"] == 2


def test_references_of_shapes():
    assert references_of("Paris") == ["Paris"]
    assert references_of(["a", " a ", "", "b"]) == ["a", "b"]
    assert references_of([{"answer": "cat"}, {"answer": "cat"}, {"answer": "dog"}]) == ["cat", "dog"]
    assert references_of(None) == []


# ---------------------------------------------------------------------------------------------- scoring
SPECS = {
    "lexical": OperatorSpec("graded", ("greedy_similarities",)),
    "cos_int": OperatorSpec("gram"),
    "nli": OperatorSpec("equivalence", ("greedy_similarities",)),
}


def test_estimator_validity_follows_the_declarations():
    names = {e.name for e in valid_estimators(SPECS)}
    assert "cos@cos_int" in names and "cos@lexical" not in names and "cos@nli" not in names
    assert {"se@nli", "se@lexical", "kle_heat@cos_int", "te", "msp", "perplexity", "length"} <= names
    assert not any(n.startswith("te_enc") for n in names)  # no operator yields token weights
    enc = {e.name for e in valid_estimators({"enc": OperatorSpec("gram", ("token_weights",))})}
    assert "te_enc@enc" in enc and "cos@enc" in enc
    # an operator with any name that yields token weights pairs with te_enc: declarations, not names
    other = {e.name for e in valid_estimators({"my_enc": OperatorSpec("graded", ("token_weights",))})}
    assert "te_enc@my_enc" in other and "cos@my_enc" not in other


def test_score_doc_unavailable_never_zero():
    samples = [Generation(t) for t in ["Paris", "Paris", "Rome"]]
    doc = Doc(
        0,
        "q",
        ["Paris"],
        Generation("Paris", greedy=True),
        samples,
        matrices={"lexical": np.eye(3)},
        unavailable={"cos_int": "no hidden states"},
    )
    scores, reasons = score_doc(doc, valid_estimators({k: SPECS[k] for k in ("lexical", "cos_int")}))
    assert math.isnan(scores["te"]) and "black-box" in reasons["te"]
    assert math.isnan(scores["msp"]) and "black-box" in reasons["msp"]
    assert math.isnan(scores["se@lexical"]) and "log-probabilities" in reasons["se@lexical"]
    assert math.isnan(scores["cos@cos_int"]) and reasons["cos@cos_int"] == "no hidden states"
    assert scores["kle_heat@lexical"] > 0 and "kle_heat@lexical" not in reasons


def test_score_doc_values_and_the_tau_option():
    greedy = Generation(
        "It is Paris",
        token_ids=[1, 2, 3],
        token_logprobs=[-0.5, -0.25, -0.25],
        token_entropies=[1.0, 2.0, 3.0],
    )
    samples = [Generation("a", token_logprobs=[-1.0]), Generation("b", token_logprobs=[-1.0])]
    S = np.array([[1.0, 0.6], [0.6, 1.0]])
    doc = Doc(0, "q", ["Paris"], greedy, samples, matrices={"lexical": S})
    est = valid_estimators({"lexical": SPECS["lexical"]}, ["cae", "te", "msp", "perplexity", "length"])
    scores, reasons = score_doc(doc, est, run_options={"tau": 0.5})
    assert reasons == {}
    assert scores["cae@lexical"] == pytest.approx(0.0)  # 0.6 > tau: one cluster
    assert scores["te"] == pytest.approx(2.0) and scores["msp"] == pytest.approx(1.0)
    assert scores["perplexity"] == pytest.approx(1 / 3) and scores["length"] == 3.0
    high, _ = score_doc(doc, est, run_options={"tau": 0.7})  # tau reaches cae through its declaration
    assert high["cae@lexical"] == pytest.approx(np.log(2))
    own, _ = score_doc(doc, est, run_options={"tau": 0.5}, aggregator_options={"cae": {"tau": 0.7}})
    assert own["cae@lexical"] == pytest.approx(np.log(2))


# ---------------------------------------------------------------------------------------------- pipeline
def _instances(doc, greedy_resps, sample_resps, n):
    g = Instance("generate_until", doc, ("ctx", {"do_sample": False}), 0, ("t", 0, 1))
    s = Instance("generate_until", doc, ("ctx", {"do_sample": True}), 1, ("t", 0, n))
    g.resps, s.resps = list(greedy_resps), list(sample_resps)
    return g, s


def test_padding_guard_keeps_the_first_n_answers():
    raw = {"id": "q7", "question": "What is the capital of France?", "answers": ["Paris"]}
    g, s = _instances(raw, ["Paris", "Paris"], [f"answer {i}" for i in range(3 * N)], N)
    ((doc, greedy_inst, sample_inst),) = docs_from_instances(
        [s, g], N, lambda d: d["question"], lambda d: d["answers"], lambda d: d["id"]
    )
    assert (greedy_inst, sample_inst) == (g, s)
    assert [x.text for x in doc.samples] == [f"answer {i}" for i in range(N)]  # the first N, in order
    assert doc.greedy.text == "Paris" and doc.greedy.greedy and not doc.samples[0].greedy
    assert doc.n_extra_responses == 1 + 2 * N and doc.key == "q7" and doc.references == ["Paris"]


def test_items_are_plain_data_that_survive_pickling_and_json():
    import pickle

    docs = [
        Doc(i, q, refs, Generation(greedy), [Generation(a) for a in pool[:3]])
        for i, (q, (refs, greedy, pool, _)) in enumerate(QA.items())
    ]
    out = process_docs(docs, Settings(n_samples=3, operators=("lexical",)), judge=StringJudge())
    for item in out.items:
        assert pickle.loads(pickle.dumps(item)) == item
        assert json.loads(json.dumps(item, allow_nan=False)) == item
    assert [it["labels"]["greedy"] for it in out.items] == [1, 0, 1, 0, 1, 0]
    assert out.operator_runs["lexical"].status == "ok" and out.operator_runs["lexical"].n_questions == len(QA)


def test_operator_that_cannot_run_is_reported_once_and_not_retried(monkeypatch, caplog):
    from semuq_eval.harness import operator_runs
    from semuq_eval.operators import nli

    calls = []

    def broken(*args, **kwargs):
        calls.append(args)
        raise OSError("no model at /nowhere")

    monkeypatch.setattr(nli, "load_sequence_classifier", broken)
    monkeypatch.setattr(operator_runs, "_OPERATORS", {})
    docs = [Doc(i, f"q{i}", ["a"], Generation("a"), [Generation("a"), Generation("b")]) for i in range(5)]
    docs.append(Doc(5, "q5", ["a"], Generation("a"), []))  # no samples: its own reason
    settings = Settings(
        n_samples=2,
        operators=("lexical", "nli", "nli_soft", "cos_int"),
        operator_options={"nli": {"model": "/nowhere"}, "nli_soft": {"model": "/nowhere"}},
    )
    with caplog.at_level("WARNING", logger="semuq_eval"):
        out = process_docs(docs, settings, judge=StringJudge())
    assert len(calls) == 1  # one shared pass, one load attempt, no question-by-question retries
    runs = out.operator_runs
    assert runs["lexical"].status == "partial" and runs["lexical"].reasons == {"no sampled answers": 1}
    for name in ("nli", "nli_soft"):
        assert runs[name].status == "unavailable" and runs[name].n_unavailable == 6
        (reason,) = [
            r for r in runs[name].reasons if r.startswith(f"operator {name} failed: OSError: no model")
        ]
        assert runs[name].reasons[reason] == 5
        assert f'"operator_options": {{"{name}": {{"model": "/path/to/model"}}}}' in reason  # the fix
        assert '"profile": "offline"' in reason
    assert "hidden states" in next(iter(runs["cos_int"].reasons))
    assert sum("no model at /nowhere" in r.message for r in caplog.records) == 2  # once per operator
    for item in out.items[:5]:
        assert item["scores"]["se@nli"] is None and "no model" in item["reasons"]["kle_heat@nli_soft"]
        assert item["scores"]["kle_heat@lexical"] is not None


def test_settings_validation():
    assert Settings.from_metadata({"n_samples": "5", "operators": "lexical, cos_int"}).operators == (
        "lexical",
        "cos_int",
    )
    legacy = Settings.from_metadata({"label_mode": "em", "f1_threshold": 0.7})
    assert (legacy.judge, legacy.judge_options) == ("string", {"mode": "em", "f1_threshold": 0.7})
    assert legacy.make_judge().info["mode"] == "em"
    bad = [
        ({"n_samples": 0}, "n_samples must be >= 1"),
        ({"n_samples": "many"}, "n_samples must be a whole number"),
        ({"n_samples": 2.7}, "n_samples must be a whole number"),
        ({"n_samples": True}, "n_samples must be a whole number"),
        ({"tau": float("nan")}, "tau must be a finite"),
        ({"tau": 0}, "strictly between 0 and 1"),
        ({"tau": -0.3}, "strictly between 0 and 1"),
        ({"tau": "half"}, "tau: a numeric setting is not a number"),
        ({"bootstrap": -1}, "bootstrap must be in 1..100,000"),
        (
            {"bootstrap": 0},
            "bootstrap must be in 1..100,000",
        ),  # crashed when the metrics ran, after generation
        ({"seed": -1}, "seed must be in 0..4,294,967,295"),  # the same
        ({"store": "false"}, None),
        ({"store": "no"}, "store must be true or false"),
        ({"store_hidden": 0}, "store_hidden must be true or false"),
        ({"n_smaples": 5}, "unknown setting 'n_smaples'; did you mean 'n_samples'"),
        (
            {"operators": ["lexical"], "operator_options": {"lexical": {"measure": "bogus"}}},
            r"operator_options\['lexical'\]: unknown lexical measure 'bogus'",
        ),
        (
            {"operators": ["lexical"], "operator_options": {"lexical": {"colour": "red"}}},
            r"operator_options\['lexical'\]:.*colour",
        ),
        ({"operators": ["lexical", "nope"]}, r"Unknown operator 'nope'"),
        ({"aggregators": ["kle"]}, "aggregators: unknown"),
        ({"operators": ["lexical"], "operator_options": {"enc": {}}}, "operator_options: unknown"),
        ({"operators": ["lexical", "lexical"]}, "repeated"),
        ({"judge": "oracle"}, "judge: unknown"),
        ({"operator_options": {"lexical": 3}}, "mapping of mappings"),
    ]
    for meta, message in bad:
        if message is None:
            assert Settings.from_metadata(meta).store is False  # the string "false" is false
            continue
        with pytest.raises(ValueError, match=message):
            Settings.from_metadata(meta)
    ok = Settings.from_metadata({"n_samples": "5", "seed": 3.0, "version": 1.0, "data_dir": "/x", "limit": 9})
    assert (ok.n_samples, ok.seed) == (5, 3)  # integral values pass; unrelated keys are left alone
    with pytest.raises(ValueError, match="unknown label mode"):
        Settings.from_metadata({"label_mode": "fuzzy"}).make_judge()


def test_judge_registry_and_batched_labels():
    judge = judges.get("string", mode="contains")
    labels = label_answers(
        judge, ["q1", "q2"], ["Paris", "Lyon"], [["Paris", "Rome", "Paris"], []], [["Paris"], []]
    )
    assert labels[0] == {
        "greedy": True,
        "majority": True,
        "samples": [True, False, True],
        "n_missing_verdicts": 0,
    }
    assert labels[1] == {"greedy": None, "majority": None, "samples": [], "n_missing_verdicts": 1}
    with pytest.raises(KeyError, match="unknown judge 'oracle'; known:"):
        judges.get("oracle")


def test_run_context():
    assert resolve_output_dir("res/x.json") == resolve_output_dir("res")
    # lm-eval's --output_path counts while its command line runs, after an explicit value and $SEMUQ_OUTPUT_DIR
    assert resolve_output_dir(None) is None
    with lm_eval_cli("res/x.json", "semuq-hf"):
        assert resolve_output_dir(None).name == "res" and resolve_output_dir("other").name == "other"
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(OUTPUT_ENV, "from-env")
            assert resolve_output_dir(None).name == "from-env"
    assert resolve_output_dir(None) is None
    # one slug per model, whether it is named by a hub id or by its local folder
    assert model_slug("/root/.cache/semuq-eval/models/smollm2-135m-instruct") == "smollm2-135m-instruct"
    assert model_slug("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB__SmolLM2-135M-Instruct"
    ctx = RunContext.resolve(output_dir="out", model="/m/smollm2-135m-instruct/")
    assert ctx.store_dir("semuq_triviaqa_dpr").parts[-3:] == (
        "semuq",
        "semuq_triviaqa_dpr",
        "smollm2-135m-instruct",
    )
    assert RunContext.resolve(output_dir="out", run_id="mine", model="x").run_id == "mine"
    assert (ctx.rank, ctx.world_size) == (0, 1)


# ---------------------------------------------------------------------------------------------- end to end
def test_end_to_end_white_box(tmp_path, capsys):
    from lm_eval.utils import make_table

    lm = CannedLM(white_box=True)
    results = run_tasks(lm, tmp_path, table_estimators=["kle_heat@lexical"])
    res = results["results"]["semuq_triviaqa_dpr"]
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
    reflexive = {"p_true", "verbalized"}  # off by default: not estimators of the run, as no operator's
    declared = {k: operator_spec(k) for k in ("lexical", "cos_int")}  # the operators' own declarations
    expected = {e.name for e in valid_estimators(declared)} - reflexive
    for strategy in ("greedy", "majority"):
        assert set(b["results"][strategy]) == expected  # every estimator, including te / se / cos@cos_int
        for per in b["results"][strategy].values():
            for metric in ("auroc", "ece"):
                r = per[metric]
                assert r["n"] == len(QA) and {"value", "ci_low", "ci_high"} <= set(r)
    assert b["unavailable"] == {}
    # exact values of the deterministic canned model (seed 0): behaviour pinned across refactors
    assert b["labels"]["greedy"] == {
        "n": 6,
        "n_correct": 3,
        "n_incorrect": 3,
        "n_missing": 0,
        "accuracy": 0.5,
    }
    assert b["labels"]["majority"]["n_correct"] == 4
    kle = b["results"]["greedy"]["kle_heat@lexical"]["auroc"]
    assert (kle["value"], kle["ci_low"], kle["ci_high"]) == pytest.approx((8 / 9, 0.42, 1.0))
    assert b["results"]["majority"]["msp"]["auroc"]["value"] == pytest.approx(0.75)
    assert b["results"]["majority"]["se@cos_int"]["auroc"]["value"] == pytest.approx(0.875)
    item = [
        json.loads(x)
        for x in (tmp_path / "out/semuq/semuq_triviaqa_dpr/scores.jsonl").read_text().splitlines()
    ][1]
    pinned = {
        "kle_heat@lexical": 1.2944465029295298,
        "se@cos_int": 1.2691503904828425,
        "te": 1.6710854172706604,
        "msp": 2.1472437381744385,
        "perplexity": 1.0736218690872192,
        "length": 2.0,
        "cos@cos_int": 1.2238429403112414,
        "numsets@lexical": 2.0,
    }
    assert {k: item["scores"][k] for k in pinned} == pytest.approx(pinned, rel=1e-6)
    assert b["n_samples"] == N and b["operators"]["lexical"]["info"]["operator"] == "lexical"
    assert b["judge"]["mode"] == "contains" and "tau=0.5" in b["equivalence_rule"]

    reader = open_store(tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr")
    records = reader.docs()
    assert len(records) == len(QA) and len(records[0].samples) == N
    assert records[0].samples[0].hidden is not None and records[0].greedy.token_logprobs is not None
    assert reader.items[records[0].doc_id]["labels"]["greedy"] in (0, 1)

    re_b = rescore(
        tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr",
        operators=["lexical"],
        n_samples=2,
        output=tmp_path / "rescore",
    )
    assert re_b["n_samples"] == 2 and "cos@cos_int" not in re_b["results"]["greedy"]
    assert "kle_heat@lexical" in re_b["results"]["greedy"]
    assert (tmp_path / "rescore" / "breakdown.rescore.json").is_file()
    same = rescore(tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr", bootstrap=50)
    ours = b["results"]["greedy"]["kle_heat@lexical"]["auroc"]["value"]
    assert same["results"]["greedy"]["kle_heat@lexical"]["auroc"]["value"] == pytest.approx(ours)
    with pytest.raises(ValueError, match="n_samples"):
        rescore(tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr", n_samples=N + 1)


def test_end_to_end_black_box_canned(tmp_path):
    results = run_tasks(CannedLM(white_box=False), tmp_path, n_samples=3)
    b = breakdown_of(tmp_path)
    assert set(b["unavailable"]) >= {"te", "se@lexical", "cos@cos_int"}
    assert "black-box" in next(iter(b["unavailable"]["te"]["reasons"]))
    assert "te" not in b["results"]["greedy"] and "kle_heat@lexical" in b["results"]["greedy"]
    assert b["operators"]["cos_int"]["status"] == "unavailable"
    assert results["results"]["semuq_triviaqa_dpr"]["n_estimators,none"] == len(b["results"]["greedy"])


def test_bad_docs_are_recorded_not_fatal(tmp_path):
    qs = list(QA)
    lm = CannedLM(white_box=True, bad=(qs[0],), empty=(qs[1],))
    run_tasks(lm, tmp_path)
    b = breakdown_of(tmp_path)
    problems = {d["doc_id"]: d["problems"] for d in b["bad_docs"]}
    assert any("NaN" in p for p in problems[0])
    assert "empty greedy answer" in problems[1] and "all sampled answers are empty" in problems[1]
    assert b["unavailable"]["se@lexical"]["n_docs"] == 1
    scores = [
        json.loads(line)
        for line in (tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr" / "scores.jsonl")
        .read_text()
        .splitlines()
    ]
    assert scores[0]["scores"]["se@lexical"] is None and "NaN" in scores[0]["reasons"]["se@lexical"]
    assert scores[1]["scores"]["te"] is None  # empty greedy answer has no tokens
    assert b["results"]["greedy"]["kle_heat@lexical"]["auroc"]["n"] == len(QA)


def test_gen_kwargs_and_metadata_override(tmp_path):
    import lm_eval
    from lm_eval.tasks import TaskManager

    lm = CannedLM(white_box=False)
    meta = {
        **HARNESS_META,
        "n_samples": 2,
        "data_dir": str(write_qa(tmp_path / "data")),
        "output_dir": str(tmp_path / "out"),
    }
    lm_eval.simple_evaluate(
        model=lm,
        tasks=["semuq_triviaqa_dpr"],
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
        "semuq_triviaqa_dpr",
        "semuq_nqopen",
        "semuq_nqopen_train",
        "semuq_nqopen_train_guided",
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


# ---------------------------------------------------------------------------------------------- honest figures
def _items(labels, seed=0):
    rng = np.random.default_rng(seed)
    return [
        {
            "doc_id": i,
            "id": None,
            "scores": {"u": float(rng.normal() + (1 - y)), "v": float(rng.normal())},
            "reasons": {},
            "labels": {"greedy": y, "majority": y},
            "problems": [],
        }
        for i, y in enumerate(labels)
    ]


def test_small_samples_are_flagged_with_their_counts(caplog):
    from semuq_eval.harness.breakdown import breakdown_table, summarize

    settings = Settings(bootstrap=200)
    balanced = summarize(_items([1, 0] * 30), settings)["results"]["greedy"]["u"]["auroc"]
    assert balanced["reliable"] and balanced["note"] is None
    assert (balanced["n_correct"], balanced["n_incorrect"]) == (30, 30)
    with caplog.at_level("WARNING", logger="semuq_eval"):
        b = summarize(_items([1] + [0] * 39), settings, task="t")
    auroc = b["results"]["greedy"]["u"]["auroc"]
    assert not auroc["reliable"] and "1 correct / 39 incorrect (minority < 20)" in auroc["note"]
    assert "resamples gave a value" in auroc["note"]  # many resamples drew no correct answer
    assert b["best"]["greedy"]["reliable"] is False
    assert "greedy labels: 1 correct / 39 incorrect" in caplog.text and "unreliable" in caplog.text
    table = breakdown_table(b)
    assert "| 1/39 |" in table.replace(" !", "") and " ! |" in table and "minority < 20" in table
    one_class = summarize(_items([0] * 30), settings, task="t")
    r = one_class["results"]["greedy"]["u"]["auroc"]
    assert r["value"] is None or math.isnan(r["value"])
    assert r["note"] == "undefined: one class only (0 correct / 30 incorrect)"
    assert "one class only" in caplog.text
    assert "n/a" in breakdown_table(one_class) and "undefined: one class only" in breakdown_table(one_class)
    refit = summarize(_items([1, 0] * 30), Settings(bootstrap=50, ece_refit="per_resample"))
    assert refit["results"]["greedy"]["u"]["ece"]["calibration_refit"] == "per_resample"
    with pytest.raises(ValueError, match="ece_refit"):
        Settings.from_metadata({"ece_refit": "always"})
    # a stricter threshold is a setting
    strict = summarize(_items([1, 0] * 30), Settings(bootstrap=200, min_minority=40))["results"]["greedy"][
        "u"
    ]
    assert not strict["auroc"]["reliable"]


def test_plot_has_a_panel_per_label_strategy(tmp_path):
    from semuq_eval.harness.breakdown import summarize
    from semuq_eval.harness.figures import plot_auroc

    b = summarize(_items([1] + [0] * 39), Settings(bootstrap=50))
    path = plot_auroc(b, tmp_path / "auroc.png")
    assert path.stat().st_size > 10_000
    import matplotlib.image

    height, width = matplotlib.image.imread(path).shape[:2]
    assert width > 1.5 * 770  # two 7-inch panels at 110 dpi


def test_offline_profile(monkeypatch, tmp_path):
    import semuq_eval.assets

    monkeypatch.setattr(semuq_eval.assets, "locate", lambda name: tmp_path / name)
    s = Settings.from_metadata({"profile": "offline", "n_samples": 3})
    assert s.operators == ("lexical", "cos_int", "cos_ext", "enc", "enc_untrained") and s.profile == "offline"
    # enc is the shipped trained operator; the untrained encoder stays under its own name (the paper's ablation)
    assert s.operator_options["enc"] == {"model": str(tmp_path / "enc-trained")}
    assert s.operator_options["enc_untrained"] == {  # pooled as the shipped weights were trained (the recipe)
        "operator": "enc",
        "model": str(tmp_path / "all-minilm-l6-v2"),
        "pooling": "answer",
    }
    assert s.operator_options["cos_ext"] == {"model": str(tmp_path / "all-minilm-l6-v2")}
    mpnet = Settings.from_metadata(
        {
            "profile": "offline:all-mpnet-base-v2",
            "operator_options": {"enc": {"condition_on_question": False}},
        }
    )
    assert mpnet.operator_options["enc"] == {
        "model": str(tmp_path / "all-mpnet-base-v2"),
        "condition_on_question": False,
    }
    assert mpnet.operators == (
        "lexical",
        "cos_int",
        "cos_ext",
        "enc",
    )  # no trained mpnet ships: enc is untrained
    only = Settings.from_metadata({"profile": "offline", "operators": ["lexical", "enc"]})
    assert only.operators == ("lexical", "enc") and set(only.operator_options) == {"enc"}
    with pytest.raises(ValueError, match="unknown profile"):
        Settings.from_metadata({"profile": "cloud"})
    with pytest.raises(ValueError, match="unknown encoder"):
        Settings.from_metadata({"profile": "offline:bert"})
    stored = Settings.from_metadata(s.as_dict(), expand_profile=False)  # rescore: no second expansion
    assert stored.operator_options == s.operator_options


def test_rescore_with_fewer_operators_drops_their_options(tmp_path):
    run_tasks(CannedLM(white_box=True), tmp_path, operator_options={"lexical": {"measure": "jaccard"}})
    again = rescore(tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr", operators=["cos_int"], bootstrap=20)
    assert set(again["operators"]) == {"cos_int"} and again["settings"]["operator_options"] == {}
    assert "kle_heat@cos_int" in again["results"]["greedy"]


def test_named_operator_variant_scores_beside_its_operator_and_rescore_writes_a_store(tmp_path):
    from semuq_eval.leaderboard.read_run import load_run

    run_tasks(CannedLM(white_box=True), tmp_path)
    source = tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr"
    variant = {"lex_jaccard": {"operator": "lexical", "measure": "jaccard"}}
    target = tmp_path / "rescored" / "semuq" / "semuq_triviaqa_dpr" / "canned"
    out = rescore(
        source,
        operators=["lexical", "lex_jaccard"],
        operator_options=variant,
        bootstrap=20,
        store_output=target,
    )
    greedy = out["results"]["greedy"]
    assert "cae@lexical" in greedy and "cae@lex_jaccard" in greedy
    assert set(greedy["cae@lex_jaccard"]) == {
        "auroc",
        "ece",
        "prr",
        "auarc",
    }  # the leaderboard reuses all four
    assert out["operators"]["lex_jaccard"]["info"]["measure"] == "jaccard"
    assert out["operators"]["lexical"]["info"]["measure"] != "jaccard"
    written = open_store(target)
    assert written.manifest["settings"]["operator_options"]["lex_jaccard"] == variant["lex_jaccard"]
    records = written.docs()
    assert [r.doc_id for r in records] == [r.doc_id for r in open_store(source).docs()]
    assert all(r.greedy.hidden is not None for r in records)  # hidden vectors copied
    scores = [written.items[r.doc_id]["scores"] for r in records]
    assert any(s["kle_heat@lexical"] != s["kle_heat@lex_jaccard"] for s in scores)
    assert "cae@lex_jaccard" in load_run(target).estimators
    again = rescore(target, bootstrap=20)  # the written store rescored from its own settings
    assert again["results"]["greedy"]["cae@lex_jaccard"]["auroc"] == greedy["cae@lex_jaccard"]["auroc"]
    with pytest.raises(ValueError, match="is the input"):
        rescore(target, bootstrap=20, store_output=target)
    with pytest.raises(ValueError, match="'nope' is not registered"):
        rescore(source, operators=["lex2"], operator_options={"lex2": {"operator": "nope"}})
    with pytest.raises(ValueError, match="Unknown operator 'lex2'"):
        rescore(source, operators=["lex2"])
    with pytest.raises(ValueError, match="letters, digits and underscores"):
        rescore(source, operators=["lex@2"], operator_options={"lex@2": {"operator": "lexical"}})
