"""Reflexive baselines (setting ``reflexive``): P(True) and verbalized confidence, from the follow-up prompts to the
breakdown, on the tiny GPT-2 (semuq-hf), the stub server (semuq-api) and a stock model (refused)."""

from __future__ import annotations

import json
import math
from contextlib import contextmanager

import numpy as np
import pytest

from semuq_eval import aggregators
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.settings import Settings
from semuq_eval.models.generation import Generation
from semuq_eval.models.journal import GenerationJournal
from semuq_eval.models.reflexive import (
    NOT_ASKED,
    PROMPTS,
    REFLEXIVE_KEY,
    check_model,
    classify_first_token,
    fill_answer,
    masses,
    parse_confidence,
    reflexive_signal,
    split_reflexive,
    templates,
    token_sets,
)
from tests.fixtures.stub_openai import FakeLLM, answer_key
from tests.fixtures.tiny_harness import QA, CannedLM, breakdown_of, run_tasks

N = 3
REFLEXIVE = ["p_true", "verbalized"]


# ------------------------------------------------------------------------------------------------ the formulas
def test_p_true_by_hand_both_forms():
    # first-position distribution: " (A" 0.5, " A" 0.1 (True-ish 0.6), " (B" 0.2 (False-ish), " (" 0.2 (neither)
    top = {" (A": math.log(0.5), " A": math.log(0.1), " (B": math.log(0.2), " (": math.log(0.2)}
    result = masses(top)
    assert math.exp(result["logprob_true"]) == pytest.approx(0.6)
    assert math.exp(result["logprob_false"]) == pytest.approx(0.2)
    value, why = reflexive_signal({"p_true": result}, "p_true_logprobs")
    assert why is None
    p_true = aggregators.get("p_true")
    assert p_true(value) == pytest.approx(1 - 0.6 / 0.8)  # normalized: 0.25
    assert p_true(value, form="raw") == pytest.approx(-math.log(0.6))
    with pytest.raises(ValueError, match="form must be one of"):
        p_true(value, form="odds")
    # no False-ish mass: p = 1, U = 0; no True-ish mass: the raw form is undefined (unavailable, not inf)
    assert p_true(np.array([math.log(0.3), -math.inf])) == 0.0
    assert p_true(np.array([-math.inf, math.log(0.3)])) == 1.0
    with pytest.raises(ValueError, match="no True-ish"):
        p_true(np.array([-math.inf, math.log(0.3)]), form="raw")


def test_token_forms():
    assert [classify_first_token(t) for t in [" (A", "(A)", "A", " True", "true", " (B", "B)", " False"]] == [
        "true",
        "true",
        "true",
        "true",
        "true",
        "false",
        "false",
        "false",
    ]
    # a lone " (" does not tell (A) from (B); "a" is the article
    assert [classify_first_token(t) for t in [" (", "(", " a", " Answer", "AB", ""]] == [None] * 6


def test_token_sets_on_the_tiny_tokenizer(tmp_path):
    from transformers import AutoTokenizer

    from tests.fixtures.tiny_lm import build_tiny_gpt2

    tok = AutoTokenizer.from_pretrained(build_tiny_gpt2(tmp_path / "gpt2"))
    texts = tok.batch_decode([[i] for i in range(len(tok))])
    true_ids, false_ids = token_sets(texts)
    # the byte-level alphabet holds "A" and "B"; the tiny corpus merged no " A", " (A" or " True"
    assert [texts[i] for i in true_ids] == ["A"] and [texts[i] for i in false_ids] == ["B"]
    assert tok.convert_tokens_to_ids("A") == true_ids[0]
    # " (A)" is split into " ", "(", "A", ")": its first token is in neither set, as documented
    pieces = [tok.decode([i]) for i in tok(" (A)")["input_ids"]]
    assert pieces == [" ", "(", "A", ")"] and classify_first_token(pieces[0]) is None


@pytest.mark.parametrize(
    "reply,value",
    [("85", 85.0), ("85%", 85.0), (" 7.5", 7.5), ("100", 100.0), ("0", 0.0), ("60.\nSure", 60.0)],
)
def test_verbalized_parsing_accepts(reply, value):
    assert parse_confidence(reply) == value
    assert reflexive_signal({"verbalized": {"reply": reply}}, "verbalized_confidence") == (value, None)
    assert aggregators.get("verbalized")(value) == pytest.approx(1 - value / 100)


@pytest.mark.parametrize("reply", ["-3", "150", "high", "", "I think 80", "85/100", "100.5", "maybe " * 20])
def test_verbalized_parsing_refuses_with_the_reply_in_the_reason(reply):
    value, why = reflexive_signal({"verbalized": {"reply": reply}}, "verbalized_confidence")
    assert value is None and why == f"unparsable verbalized confidence: {reply[:40]!r}"


def test_signals_say_why_they_are_missing():
    assert reflexive_signal(None, "verbalized_confidence") == (None, NOT_ASKED)
    assert reflexive_signal({"verbalized": {"reply": "5"}}, "p_true_logprobs") == (None, NOT_ASKED)
    failed = {"p_true": {"error": "HTTP 500 (after 2 retries)"}}
    assert reflexive_signal(failed, "p_true_logprobs") == (
        None,
        "the p_true follow-up failed: HTTP 500 (after 2 retries)",
    )
    empty = {"p_true": {"logprob_true": None, "logprob_false": None}}
    assert "no True-ish or False-ish" in reflexive_signal(empty, "p_true_logprobs")[1]


def test_prompts_keep_the_answer_open():
    t = templates("Is {answer} a word?", REFLEXIVE)
    assert t["p_true"] == PROMPTS["p_true"].replace("{question}", "Is {answer} a word?")
    assert fill_answer(t["p_true"], "Paris").startswith(
        "Question: Is {answer} a word?\nPossible answer: Paris\n"
    )
    assert fill_answer(t["verbalized"], "x").endswith("Reply with a number from 0 to 100.\nConfidence:")
    with pytest.raises(ValueError, match="semuq_reflexive must map"):
        split_reflexive({REFLEXIVE_KEY: {"p_true": "no placeholder"}})
    with pytest.raises(ValueError, match="semuq_reflexive must map"):
        split_reflexive({REFLEXIVE_KEY: {"guess": "{answer}"}})


# ------------------------------------------------------------------------------------------------ the setting
def test_setting_default_off_and_validated():
    assert Settings().reflexive == ()
    assert Settings.from_metadata({"reflexive": "p_true, verbalized"}).reflexive == ("p_true", "verbalized")
    with pytest.raises(ValueError, match=r"metadata reflexive: unknown name\(s\) \['ptrue'\]"):
        Settings.from_metadata({"reflexive": ["ptrue"]})
    with pytest.raises(ValueError, match="metadata reflexive: names repeated"):
        Settings.from_metadata({"reflexive": ["p_true", "p_true"]})
    with pytest.raises(ValueError, match="metadata reflexive must be a list of names"):
        Settings.from_metadata({"reflexive": 3})


def test_estimators_not_asked_are_absent_by_default_and_unavailable_when_named():
    """Off by default, a run has no reflexive estimators (as it has none of an operator it did not run); named
    in ``aggregators`` without the setting, they are unavailable with the reason."""
    from semuq_eval.harness.pipeline import process_docs
    from semuq_eval.judges import StringJudge

    doc = Doc(0, "Capital of France?", ["Paris"], Generation("Paris", greedy=True), [Generation("Paris")])
    out = process_docs([doc], Settings(n_samples=1, operators=("lexical",)), judge=StringJudge())
    assert not {"p_true", "verbalized"} & set(out.items[0]["scores"])
    named = Settings(n_samples=1, operators=("lexical",), aggregators=("p_true", "verbalized", "msp"))
    item = process_docs([doc], named, judge=StringJudge()).items[0]
    assert item["scores"]["p_true"] is None and item["scores"]["verbalized"] is None
    assert item["reasons"]["p_true"] == item["reasons"]["verbalized"] == NOT_ASKED
    asked = Settings(n_samples=1, operators=("lexical",), reflexive=("p_true",))
    assert "p_true" in process_docs([doc], asked, judge=StringJudge()).items[0]["scores"]


# ------------------------------------------------------------------------------------------------ records
def test_generation_record_and_journal_roundtrip(tmp_path):
    reflexive = {"p_true": {"logprob_true": -0.5, "logprob_false": None}, "verbalized": {"reply": " 85%"}}
    gen = Generation("Paris", greedy=True, token_logprobs=[-0.1], reflexive=reflexive)
    record = json.loads(json.dumps(gen.to_record()))
    assert record["reflexive"] == reflexive
    assert Generation.from_record(record).reflexive == reflexive
    old = {k: v for k, v in record.items() if k != "reflexive"}  # written before the field existed
    assert Generation.from_record(old).reflexive is None
    assert "reflexive" not in Generation("x").to_record()
    # the kill / resume path: the journal gives the answer back with its follow-ups
    GenerationJournal(tmp_path).add([("k", [gen])])
    (restored,) = GenerationJournal(tmp_path).get("k", 1)
    assert restored.reflexive == reflexive and restored.text == "Paris"


# ------------------------------------------------------------------------------------------------ stock models
def test_check_model_names_the_setting_and_the_models():
    with pytest.raises(ValueError) as err:
        check_model(["p_true"], "hf")
    assert str(err.value) == (
        "metadata reflexive ['p_true']: --model hf cannot answer the reflexive follow-ups; use semuq-hf or semuq-api"
    )
    check_model([], "hf")  # off: any model
    check_model(["verbalized"], None)  # a model object: checked when its answers come back


def test_semuq_eval_run_refuses_a_stock_model_before_loading_it():
    from argparse import Namespace

    from semuq_eval.commands.run import check_settings_early

    args = Namespace(metadata={"reflexive": ["p_true"]}, tasks="semuq_triviaqa", model="hf")
    with pytest.raises(ValueError, match="--model hf cannot answer the reflexive follow-ups"):
        check_settings_early(args)
    check_settings_early(
        Namespace(metadata={"reflexive": ["p_true"]}, tasks="semuq_triviaqa", model="semuq-api")
    )


def test_the_task_refuses_a_stock_model_named_on_the_command_line(tmp_path):
    from semuq_eval.context import lm_eval_cli

    with lm_eval_cli(None, "hf"), pytest.raises(ValueError, match="--model hf cannot answer"):
        run_tasks(CannedLM(), tmp_path, reflexive=["p_true"])


def test_a_stock_model_object_is_refused_once_its_answers_come_back(tmp_path):
    lm = CannedLM()  # an lm-eval model that knows nothing of the reserved key
    with pytest.raises(RuntimeError, match=r"metadata reflexive \['p_true'\]: the model returned no answers"):
        run_tasks(lm, tmp_path, reflexive=["p_true"])
    greedy_kwargs = [kw for _, kw in lm.calls if not kw.get("do_sample")]
    assert greedy_kwargs and all(set(kw[REFLEXIVE_KEY]) == {"p_true"} for kw in greedy_kwargs)


def test_setting_off_sends_no_reserved_key(tmp_path):
    lm = CannedLM()
    run_tasks(lm, tmp_path)
    assert lm.calls and not any(REFLEXIVE_KEY in kw for _, kw in lm.calls)


# ------------------------------------------------------------------------------------------------ semuq-hf
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    from tests.fixtures.tiny_lm import build_tiny_gpt2

    return str(build_tiny_gpt2(tmp_path_factory.mktemp("gpt2") / "model"))


@pytest.fixture(scope="module")
def hf(gpt2_dir):
    from semuq_eval.models.hf import SemuqHFLM

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield SemuqHFLM(pretrained=gpt2_dir, device="cpu", batch_size=2, journal="off")
    torch.set_num_threads(threads)


@contextmanager
def count_forwards(model):
    calls = []
    handle = model.register_forward_pre_hook(lambda module, args: calls.append(1))
    try:
        yield calls
    finally:
        handle.remove()


def _greedy_requests(questions, reflexive):
    from lm_eval.api.instance import Instance

    out = []
    for i, q in enumerate(questions):
        kwargs = {"until": ["\n\n"], "do_sample": False, "max_gen_toks": 6}
        if reflexive:
            kwargs[REFLEXIVE_KEY] = templates(q, reflexive)
        out.append(Instance("generate_until", {"q": q}, (f"Q: {q}\nA:", kwargs), 0, ("t", i, 1)))
    return out


def test_semuq_hf_answers_the_follow_ups_by_hand(hf):
    questions = list(QA)[:3]
    plain = hf.generate_until(_greedy_requests(questions, []))
    with count_forwards(hf.model) as off_calls:
        hf.generate_until(_greedy_requests(questions, []))
    with count_forwards(hf.model) as p_true_calls:
        out = hf.generate_until(_greedy_requests(questions, ["p_true"]))
    # the follow-up costs ONE batched forward pass for the 3 questions (batch_size 2 x N 1 -> 2 rows: 2 passes)
    assert len(p_true_calls) == len(off_calls) + 2
    assert [g.text for g in out] == [g.text for g in plain] and all(g.reflexive for g in out)
    true_ids, false_ids = hf._semuq_true_false_ids()
    for q, gen in zip(questions, out, strict=True):
        prompt = fill_answer(templates(q, ["p_true"])["p_true"], gen.text)
        with torch.no_grad():  # unpadded, one question at a time
            lp = torch.log_softmax(hf.model(torch.tensor([hf.tok_encode(prompt)])).logits[0, -1].float(), -1)
        want_t = torch.logsumexp(lp[torch.tensor(true_ids)], 0).item()
        want_f = torch.logsumexp(lp[torch.tensor(false_ids)], 0).item()
        assert gen.reflexive["p_true"]["logprob_true"] == pytest.approx(want_t, abs=1e-4)
        assert gen.reflexive["p_true"]["logprob_false"] == pytest.approx(want_f, abs=1e-4)
    both = hf.generate_until(_greedy_requests(questions, REFLEXIVE))
    for q, gen in zip(questions, both, strict=True):
        prompt = fill_answer(templates(q, ["verbalized"])["verbalized"], gen.text)
        (reply,) = hf.generate_until([_raw_greedy(prompt)])  # the same prompt, raw, 8 tokens, greedily
        assert gen.reflexive["verbalized"] == {"reply": reply.text}


def _raw_greedy(prompt):
    from lm_eval.api.instance import Instance

    return Instance(
        "generate_until", {}, (prompt, {"until": [], "do_sample": False, "max_gen_toks": 8}), 0, ("t", 0, 1)
    )


def test_semuq_hf_off_makes_no_extra_forward_pass(hf):
    questions = list(QA)[:2]
    called = []
    original = hf._semuq_next_token_logprobs
    hf._semuq_next_token_logprobs = lambda prompts: called.append(prompts) or original(prompts)
    try:
        out = hf.generate_until(_greedy_requests(questions, []))
    finally:
        del hf._semuq_next_token_logprobs
    assert called == [] and all(g.reflexive is None for g in out)


def test_semuq_hf_end_to_end_scores_both_and_keeps_the_replies(hf, tmp_path):
    from semuq_eval.harness.store import open_store

    run_tasks(hf, tmp_path, n_samples=N, operators=["lexical"], bootstrap=20, reflexive=REFLEXIVE)
    b = breakdown_of(tmp_path)
    records = open_store(tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr").docs()
    replies = [r.greedy.reflexive["verbalized"]["reply"] for r in records]
    assert all(r.greedy.reflexive["p_true"]["logprob_true"] is not None for r in records)
    assert "p_true" in b["results"]["greedy"] and b["results"]["greedy"]["p_true"]["auroc"]["n"] == len(QA)
    assert "p_true" not in b.get("approximate", {})  # the full next-token distribution: exact
    # a random tiny model rarely replies with a number: each unparsable reply is unavailable with its text
    parsed = [
        r
        for r in replies
        if reflexive_signal({"verbalized": {"reply": r}}, "verbalized_confidence")[1] is None
    ]
    if len(parsed) < len(replies):
        reasons = b["unavailable"]["verbalized"]["reasons"]
        assert sum(reasons.values()) == len(replies) - len(parsed)
        assert all(k.startswith("unparsable verbalized confidence: ") for k in reasons)
    else:
        assert "verbalized" in b["results"]["greedy"]


def test_semuq_hf_resumes_the_follow_ups_from_the_journal(gpt2_dir, tmp_path):
    from semuq_eval.models.hf import SemuqHFLM

    questions = list(QA)[:2]
    first = SemuqHFLM(pretrained=gpt2_dir, device="cpu", batch_size=2, journal=str(tmp_path / "j"))
    out = first.generate_until(_greedy_requests(questions, REFLEXIVE))
    again = SemuqHFLM(pretrained=gpt2_dir, device="cpu", batch_size=2, journal=str(tmp_path / "j"))
    with count_forwards(again.model) as calls:
        restored = again.generate_until(_greedy_requests(questions, REFLEXIVE))
    assert calls == []  # neither the answers nor their follow-ups are asked again
    for a, b in zip(out, restored, strict=True):
        assert b.reflexive["verbalized"] == a.reflexive["verbalized"]
        for key in ("logprob_true", "logprob_false"):
            assert b.reflexive["p_true"][key] == pytest.approx(a.reflexive["p_true"][key], rel=1e-12)
    # the same prompts without the setting are other journal entries: generated afresh, no follow-ups
    with count_forwards(again.model) as calls:
        plain = again.generate_until(_greedy_requests(questions, []))
    assert calls and all(g.reflexive is None for g in plain)


def test_semuq_hf_setting_off_has_no_reflexive_estimators(hf, tmp_path):
    run_tasks(hf, tmp_path, n_samples=2, operators=["lexical"], bootstrap=10)
    b = breakdown_of(tmp_path)
    for name in REFLEXIVE:
        assert name not in b["unavailable"] and name not in b["results"]["greedy"]


def test_semuq_hf_multimodal_refuses_the_follow_ups():
    from semuq_eval.models.hf_multimodal import SemuqHFMultimodalLM

    class Unloaded(SemuqHFMultimodalLM):  # the check runs before any model use: no model is loaded
        max_gen_toks = 8
        tok_encode = staticmethod(str.split)

    lm = Unloaded.__new__(Unloaded)
    with pytest.raises(ValueError, match="--model semuq-hf-multimodal cannot answer"):
        lm.generate_until(_greedy_requests(["q?"], ["p_true"]))


# ------------------------------------------------------------------------------------------------ semuq-api
class ReflexiveServer(FakeLLM):
    """FakeLLM answering the P(True) prompt with a first-token distribution and the verbalized one with ``reply``."""

    def __init__(self, reply=" 85", p_true_garbage=False, **kwargs):
        super().__init__(**kwargs)
        self.reply, self.p_true_garbage = reply, p_true_garbage

    def __call__(self, body, call):
        prompt = answer_key(body)
        if "Is the possible answer:" in prompt:
            if self.p_true_garbage:
                return 200, {"choices": [{"text": " (", "logprobs": {"tokens": 7}}]}, 0
            top = {" (A": math.log(0.5), " A": math.log(0.1), " (B": math.log(0.2), " (": math.log(0.2)}
            logprobs = {"tokens": [" (A"], "token_logprobs": [math.log(0.5)], "top_logprobs": [top]}
            return 200, {"choices": [{"index": 0, "text": " (A", "logprobs": logprobs}]}, 0
        if "How likely is the proposed answer" in prompt:
            return 200, {"choices": [{"index": 0, "text": self.reply}]}, 0
        return super().__call__(body, call)


def _api(server, tmp_path, **kwargs):
    from semuq_eval.models.api import SemuqAPILM

    options = {"model": "fake", "base_url": server.base_url, "journal": str(tmp_path / "journal")}
    options.update(backoff=0.01, max_retries=1, concurrency=2, top_logprobs=5, max_gen_toks=16)
    return SemuqAPILM(**{**options, **kwargs})


def _follow_up_bodies(server, marker):
    return [r["body"] for r in server.requests if r["body"] and marker in answer_key(r["body"])]


def test_semuq_api_follow_ups_bodies_and_scores(stub, tmp_path):
    server = stub(ReflexiveServer())
    run_tasks(
        _api(server, tmp_path),
        tmp_path,
        n_samples=N,
        operators=["lexical"],
        bootstrap=20,
        reflexive=REFLEXIVE,
    )
    b = breakdown_of(tmp_path)
    p_true_bodies = _follow_up_bodies(server, "Is the possible answer:")
    verbal_bodies = _follow_up_bodies(server, "How likely is the proposed answer")
    assert len(p_true_bodies) == len(verbal_bodies) == len(QA)
    body = p_true_bodies[0]
    assert body["max_tokens"] == 1 and body["temperature"] == 0.0 and body["logprobs"] == 5
    assert body["prompt"].startswith("Question: ") and "\nPossible answer: " in body["prompt"]
    assert body["prompt"].endswith("(B) False\nThe possible answer is:")
    assert verbal_bodies[0]["max_tokens"] == 8 and "logprobs" not in verbal_bodies[0]
    # the greedy answer is filled in: FakeLLM's greedy answer of each question
    for body in p_true_bodies:
        question = next(q for q in QA if q in body["prompt"])
        assert f"Possible answer:  {QA[question][1]}\n" in body["prompt"]  # the server's text keeps its space
    scored = b["results"]["greedy"]
    assert scored["p_true"]["auroc"]["n"] == scored["verbalized"]["auroc"]["n"] == len(QA)
    items = [
        json.loads(x)
        for x in (tmp_path / "out/semuq/semuq_triviaqa_dpr/scores.jsonl").read_text().splitlines()
    ]
    assert [it["scores"]["p_true"] for it in items] == pytest.approx([0.25] * len(QA))  # 1 - 0.6 / 0.8
    assert [it["scores"]["verbalized"] for it in items] == pytest.approx([0.15] * len(QA))
    # the server shows its top 4 first tokens only: P(True) is flagged approximate, the verbalized one is exact
    method = "p_true_logprobs: topk_first_token_mass(k=4)"
    assert b["approximate"]["p_true"] == {"n_docs": len(QA), "methods": {method: len(QA)}}
    assert "verbalized" not in b["approximate"]


def test_semuq_api_raw_form_through_aggregator_options(stub, tmp_path):
    server = stub(ReflexiveServer())
    run_tasks(
        _api(server, tmp_path),
        tmp_path,
        n_samples=2,
        operators=["lexical"],
        bootstrap=10,
        reflexive=["p_true"],
        aggregator_options={"p_true": {"form": "raw"}},
    )
    items = [
        json.loads(x)
        for x in (tmp_path / "out/semuq/semuq_triviaqa_dpr/scores.jsonl").read_text().splitlines()
    ]
    assert [it["scores"]["p_true"] for it in items] == pytest.approx([-math.log(0.6)] * len(QA))
    assert all("verbalized" not in it["scores"] for it in items)  # not asked: not an estimator of the run


def test_semuq_api_garbage_is_unavailable_with_the_reason(stub, tmp_path):
    server = stub(ReflexiveServer(reply="very likely", p_true_garbage=True))
    lm = _api(server, tmp_path)
    run_tasks(lm, tmp_path, n_samples=2, operators=["lexical"], bootstrap=10, reflexive=REFLEXIVE)
    b = breakdown_of(tmp_path)
    (p_true_reason,) = b["unavailable"]["p_true"]["reasons"]
    assert (
        p_true_reason.startswith("the p_true follow-up failed: ") and "tokens must be a list" in p_true_reason
    )
    assert b["unavailable"]["verbalized"]["reasons"] == {
        "unparsable verbalized confidence: 'very likely'": len(QA)
    }
    assert len(_follow_up_bodies(server, "Is the possible answer:")) == 2 * len(QA)  # asked, then one retry
    # a failed follow-up is not journaled: the next run asks again (the unparsable reply is kept: it is an answer)
    before = len(server.requests)
    run_tasks(lm, tmp_path / "again", n_samples=2, operators=["lexical"], bootstrap=10, reflexive=REFLEXIVE)
    again = [r["body"] for r in server.requests[before:] if r["body"]]
    assert any("Is the possible answer:" in answer_key(x) for x in again)


def test_follow_ups_in_the_runs_chat_template_when_asked(tmp_path):
    from lm_eval.tasks import TaskManager

    from semuq_eval.models.server_requests import ChatPrompt
    from tests.fixtures.tiny_harness import TASKS_DIR, write_qa

    def task(**meta):
        tm = TaskManager(
            include_path=str(TASKS_DIR),
            include_defaults=False,
            metadata={"data_dir": str(write_qa(tmp_path / "data")), "reflexive": REFLEXIVE, **meta},
        )
        return tm.load(["semuq_triviaqa_dpr"])["tasks"]["semuq_triviaqa_dpr"]

    def render(messages):
        return f"<user>{messages[0]['content']}</user><assistant>"

    raw_task, chat_task = task(), task(reflexive_chat_template=True)
    doc = next(iter(raw_task.test_docs()))
    question = raw_task.question_of(doc)
    raw = raw_task.construct_requests(doc, "ctx", apply_chat_template=True, chat_template=render)
    assert raw[0].args[1][REFLEXIVE_KEY] == templates(question, REFLEXIVE)  # default: raw, as the papers
    chat = chat_task.construct_requests(doc, "ctx", apply_chat_template=True, chat_template=render)
    prompts = chat[0].args[1][REFLEXIVE_KEY]
    assert prompts == {m: render([{"content": t}]) for m, t in templates(question, REFLEXIVE).items()}
    assert fill_answer(prompts["p_true"], "Paris").endswith(
        "Possible answer: Paris\nIs the possible answer:\n"
        " (A) True\n (B) False\nThe possible answer is:</user><assistant>"
    )
    assert REFLEXIVE_KEY not in chat[1].args[1]  # the sampled request carries none
    with pytest.raises(ValueError, match="reflexive_chat_template: the run has no chat template"):
        chat_task.construct_requests(doc, "ctx", apply_chat_template=False, chat_template=None)
    # a server's chat endpoint wraps each follow-up in its own template: the prompts stay raw
    as_messages = chat_task.construct_requests(
        doc, "ctx", apply_chat_template=True, chat_template=lambda m: ChatPrompt(json.dumps(m))
    )
    assert as_messages[0].args[1][REFLEXIVE_KEY] == templates(question, REFLEXIVE)
    with pytest.raises(ValueError, match="metadata reflexive_chat_template must be true or false"):
        Settings.from_metadata({"reflexive_chat_template": "sometimes"})
