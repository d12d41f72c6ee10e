"""`semuq-api` against a stub OpenAI-compatible server on loopback (tests/fixtures/stub_openai.py's `FakeLLM`):
the capability probe and its fallbacks, n > 1 or one request per sample, the chat log-probability shapes,
malformed replies, a failing server (retries), a lying one (one clear error naming the field; the run goes on),
the journal (a run stopped by a vanished server resumes without asking again) and the API key (sent, never
written). The real server (llama.cpp) is tests/test_models_api_real.py's.
"""

from __future__ import annotations

import json
import math
import pickle
import threading
from pathlib import Path

import numpy as np
import pytest

from semuq_eval.harness.store import open_store
from semuq_eval.models.api import SemuqAPILM
from semuq_eval.models.capabilities import probe
from semuq_eval.models.generation import Generation
from semuq_eval.models.server_answer import answer_from_choice, cut_at_stop, token_spans
from semuq_eval.models.topk import topk_entropies, topk_method
from semuq_eval.openai_client import ServerClient
from semuq_eval.openai_replies import MalformedLogprobs, read_logprobs
from tests.fixtures.stub_openai import SERVER_ESTIMATORS, FakeLLM
from tests.fixtures.tiny_encoders import tiny_st_encoder, tiny_wordpiece_dir  # noqa: F401  (fixtures)
from tests.fixtures.tiny_harness import QA, breakdown_of, run_tasks

N = 3
N_QUESTIONS = len(QA)


def _model(server, tmp_path, **kwargs) -> SemuqAPILM:
    options = {"model": "fake", "base_url": server.base_url, "journal": str(tmp_path / "journal")}
    options.update(backoff=0.01, max_retries=2, concurrency=2, top_logprobs=5, max_gen_toks=16)
    return SemuqAPILM(**{**options, **kwargs})


def _run(lm, tmp_path, **meta):
    meta = {"n_samples": N, "operators": ["lexical", "cos_int"], "bootstrap": 20, **meta}
    run_tasks(lm, tmp_path, **meta)
    return breakdown_of(tmp_path)


def _generation_calls(server) -> list[dict]:
    return [
        r["body"]
        for r in server.requests
        if r["body"] and "capital of France is" not in json.dumps(r["body"])
    ]


@pytest.mark.slow
# ---------------------------------------------------------------------------------------------- end to end
@pytest.mark.parametrize(
    "endpoint,shape,n",
    [
        ("completions", "standard", True),
        ("chat", "standard", True),
        ("chat", "dict_top", False),
        ("chat", "legacy", True),
    ],
)
def test_a_semuq_run_through_a_server_gives_logprob_estimators_and_flags_te(
    stub, tmp_path, endpoint, shape, n
):
    server = stub(FakeLLM(n=n, chat_shape=shape))
    b = _run(_model(server, tmp_path, endpoint=endpoint), tmp_path)
    scored = b["results"]["greedy"]
    for name in SERVER_ESTIMATORS:
        assert name in scored and scored[name]["auroc"]["n"] == N_QUESTIONS, name
    assert b["bad_docs"] == [] and b["n_docs"] == N_QUESTIONS
    assert b["approximate"]["te"] == {
        "n_docs": N_QUESTIONS,
        "methods": {"token_entropies: " + topk_method(5): N_QUESTIONS},
    }
    assert "msp" not in b["approximate"] and "se@lexical" not in b["approximate"]
    assert any("hidden states" in r for r in b["unavailable"]["cos@cos_int"]["reasons"])
    generator = b["generator"]
    assert generator["model"] == "semuq-api" and generator["capabilities"]["n"] is n
    assert generator["unavailable"]["hidden_states"].startswith("OpenAI-compatible servers return no hidden")
    assert generator["capabilities"]["echo"] is (True if endpoint == "completions" else None)
    # one request per sampled question with n, N without; one greedy request each; one probe
    calls = _generation_calls(server)
    assert len(calls) == N_QUESTIONS * (1 + (1 if n else N))
    assert len(server.requests) == len(calls) + 1
    store = tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr"
    reader = open_store(store)
    assert reader.manifest["generator"]["server_model"] == "fake"
    records = reader.docs()
    sample = records[0].samples[0]
    assert sample.token_logprobs is not None and len(sample.token_logprobs) == len(sample.token_offsets) > 0
    assert sample.token_ids is None and sample.hidden is None
    assert sample.approximate == {"token_entropies": topk_method(5)}
    assert sample.seq_logprob == pytest.approx(float(np.sum(sample.token_logprobs)))
    for gen in records[0].samples:  # the spans spell the text
        assert "".join(gen[s:e] for s, e in gen.token_offsets) == gen.text


@pytest.mark.slow
def test_te_enc_on_server_answers_is_flagged_approximate_too(stub, tmp_path, tiny_st_encoder):  # noqa: F811
    """te_enc@enc maps the encoder's token weights onto the server's tokens through their character spans."""
    server = stub(FakeLLM())
    options = {"enc": {"model": str(tiny_st_encoder)}}
    b = _run(_model(server, tmp_path), tmp_path, operators=["enc"], operator_options=options)
    assert b["results"]["greedy"]["te_enc@enc"]["auroc"]["n"] == N_QUESTIONS
    assert b["approximate"]["te_enc@enc"]["methods"] == {"token_entropies: " + topk_method(5): N_QUESTIONS}
    assert "kle_heat@enc" in b["results"]["greedy"] and "kle_heat@enc" not in b["approximate"]


@pytest.mark.slow
def test_samples_without_n_use_one_seed_each_and_the_greedy_answer_temperature_zero(stub, tmp_path):
    server = stub(FakeLLM(n=False))
    _run(_model(server, tmp_path), tmp_path)
    calls = _generation_calls(server)
    greedy = [c for c in calls if c["temperature"] == 0.0]
    sampled = [c for c in calls if c["temperature"] != 0.0]
    assert len(greedy) == N_QUESTIONS and len(sampled) == N_QUESTIONS * N
    assert sorted({c["seed"] for c in sampled}) == [1234, 1235, 1236]
    assert all("n" not in c for c in calls)
    assert all(c["top_k"] == 50 and c["top_p"] == 0.9 for c in sampled)  # the task's decoding (App. E.2)
    assert all("top_k" not in c and "top_p" not in c for c in greedy)


@pytest.mark.slow
def test_tokens_past_the_stop_sequence_are_dropped(stub, tmp_path):
    server = stub(FakeLLM(stop_token=True))
    _run(_model(server, tmp_path), tmp_path)
    for rec in open_store(tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr").docs():
        for gen in [rec.greedy, *rec.samples]:
            assert len(gen.token_logprobs) == len(gen.text.split())


# ---------------------------------------------------------------------------------------------- capabilities
def _client(server, endpoint="completions"):
    return ServerClient(server.base_url, "fake", endpoint=endpoint, max_retries=0, backoff=0.01)


def test_probe_finds_everything_in_one_request(stub):
    server = stub(FakeLLM())
    caps = probe(_client(server), top_k=5, sampling={"top_k": 50})
    assert (caps.n, caps.logprobs, caps.top_logprobs, caps.echo) == (True, True, 5, True)
    assert caps.sampling == {"top_k": 50} and caps.fallbacks == [] and caps.probe_requests == 1
    assert len(server.requests) == 1
    body = server.requests[0]["body"]
    assert body["n"] == 2 and body["logprobs"] == 5 and body["echo"] is True and body["top_k"] == 50


@pytest.mark.parametrize(
    "fake,expect",
    [
        (FakeLLM(n=False), {"n": False, "fallback": "n: asked for 2 choices, got 1"}),
        (FakeLLM(logprobs=False), {"logprobs": False, "fallback": "logprobs: the server returned none"}),
        (FakeLLM(refuse=("echo",)), {"echo": False, "fallback": "asked again without echo", "requests": 2}),
        (FakeLLM(refuse=("top_k",)), {"sampling": {}, "fallback": "without sampling:top_k", "requests": 2}),
    ],
)
def test_probe_reports_what_the_run_falls_back_to(stub, fake, expect):
    caps = probe(_client(stub(fake)), top_k=5, sampling={"top_k": 50})
    for key in ("n", "logprobs", "echo", "sampling"):
        if key in expect:
            assert getattr(caps, key) == expect[key]
    assert any(expect["fallback"] in f for f in caps.fallbacks), caps.fallbacks
    assert caps.probe_requests == expect.get("requests", 1)


def test_probe_of_a_server_that_is_not_there_is_one_clear_error(stub):
    server = stub(FakeLLM())
    client = _client(server)
    server.close()
    with pytest.raises(RuntimeError, match="capability probe of http://127.0.0.1:.*request failed"):
        probe(client, top_k=5)


@pytest.mark.slow
def test_a_server_without_logprobs_gives_text_estimators_and_says_why(stub, tmp_path):
    server = stub(FakeLLM(logprobs=False))
    b = _run(_model(server, tmp_path), tmp_path)
    assert "kle_heat@lexical" in b["results"]["greedy"] and "msp" not in b["results"]["greedy"]
    assert b["bad_docs"] == [] and b["approximate"] == {}
    assert any("returned none" in f for f in b["generator"]["fallbacks"])
    assert all("logprobs" not in body for body in _generation_calls(server))


@pytest.mark.slow
# ---------------------------------------------------------------------------------------------- failing, lying
def test_a_failing_server_is_retried(stub, tmp_path):
    server = stub(FakeLLM(status={2: 500, 3: 503, 7: 502}))
    b = _run(_model(server, tmp_path, concurrency=1), tmp_path)
    assert b["bad_docs"] == [] and "msp" in b["results"]["greedy"]
    assert len(server.requests) == 1 + 2 * N_QUESTIONS + 3  # three answered with 5xx, each asked again


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind,message",
    [
        ("count", "choices: asked for 3 answer(s), the server returned 2"),
        ("type", "choices[0].logprobs.token_logprobs[1] must be a number, got str"),
        ("top_count", "choices[0].logprobs.top_logprobs has"),
    ],
)
def test_a_lying_server_spoils_one_question_with_one_clear_error(stub, tmp_path, kind, message):
    server = stub(FakeLLM(lies={"Hamlet": kind}))
    b = _run(_model(server, tmp_path, max_retries=1), tmp_path)
    assert b["n_docs"] == N_QUESTIONS
    (bad,) = b["bad_docs"]
    assert bad["id"] == "q1" and any(message in p for p in bad["problems"]), bad
    assert "kle_heat@lexical" in b["results"]["greedy"]  # the other questions are scored
    assert b["results"]["greedy"]["msp"]["auroc"]["n"] >= N_QUESTIONS - 1


@pytest.mark.parametrize(
    "logprobs,message",
    [
        ({"content": "x"}, "choices[0].logprobs.content must be a list, got str"),
        ({"content": [{"token": 3, "logprob": -1}]}, "choices[0].logprobs.content[0].token must be a string"),
        ({"content": [{"token": "a", "logprob": 0.5}]}, "content[0].logprob must be a log-probability"),
        (
            {"content": [{"token": "a", "logprob": -1, "top_logprobs": [1]}]},
            "top_logprobs[0] must be an object",
        ),
        (
            {"content": [{"token": "a", "logprob": -1, "bytes": [300]}]},
            "content[0].bytes must be a list of byte",
        ),
        ({"tokens": ["a", "b"], "token_logprobs": [-1.0]}, "token_logprobs has 1 entries for 2 tokens"),
        (
            {"tokens": ["a"], "token_logprobs": [-1.0], "text_offset": ["0"]},
            "text_offset[0] must be an integer",
        ),
        ({"tokens": "ab", "token_logprobs": []}, "choices[0].logprobs.tokens must be a list, got str"),
        ({"something": []}, "has neither 'content' (chat) nor 'tokens' (completions)"),
        ([1, 2], "choices[0].logprobs must be an object, got list"),
    ],
)
def test_malformed_logprobs_name_the_field(logprobs, message):
    with pytest.raises(MalformedLogprobs) as err:
        read_logprobs(logprobs, "choices[0].logprobs")
    assert message in str(err.value)
    answer = answer_from_choice(
        {"message": {"content": "a"}, "logprobs": logprobs},
        endpoint="chat", until=[], top_k=5, want_logprobs=True, greedy=True,
    )  # fmt: skip
    assert answer.text == "a" and answer.token_logprobs is None and message in answer.error


def test_tokens_that_do_not_spell_the_text_lose_the_signals_not_the_text():
    choice = {
        "text": " Paris",
        "logprobs": {"tokens": [" London"], "token_logprobs": [-0.1], "top_logprobs": [{}]},
    }
    answer = answer_from_choice(
        choice, endpoint="completions", until=[], top_k=5, want_logprobs=True, greedy=False
    )
    assert answer == " Paris" and answer.token_logprobs is None and "do not spell" in answer.error


def test_too_few_top_alternatives_is_an_error_on_the_answer():
    lp = {"tokens": [" Paris"], "token_logprobs": [-0.1], "top_logprobs": [{" Paris": -0.1}]}
    answer = answer_from_choice(
        {"text": " Paris", "logprobs": lp},
        endpoint="completions",
        until=[],
        top_k=5,
        want_logprobs=True,
        greedy=True,
    )
    assert answer.token_entropies is None and answer.token_logprobs is not None
    assert "token 0 has 1 top alternative(s), 5 were asked for" in answer.error


def test_alternatives_that_are_parts_of_characters_stay_apart():
    # llama.cpp's chat reply when an answer turns to Hebrew: the first byte of "\u05de" (0xd7 0x9e) is a token, and
    # it and each of its alternatives (other first bytes) is spelled "" with distinct bytes. Keyed by their text
    # the three alternatives would merge into one, and the answer would lose its signals.
    mem = "\u05de".encode()
    firsts = [
        {"token": "", "bytes": [b], "logprob": lp} for b, lp in ((0xD7, -0.2), (0xD6, -2.0), (0xD8, -3.0))
    ]
    lp = {
        "content": [
            {"token": " ", "logprob": -0.1, "bytes": [32], "top_logprobs": [
                {"token": " ", "bytes": [32], "logprob": -0.1}, {"token": " A", "bytes": [32, 65], "logprob": -3.0},
                {"token": " B", "bytes": [32, 66], "logprob": -4.0}]},
            {"token": "", "logprob": -0.2, "bytes": [mem[0]], "top_logprobs": firsts},
            {"token": "", "logprob": -0.01, "bytes": [mem[1]], "top_logprobs": [
                {"token": "", "bytes": [mem[1]], "logprob": -0.01}, {"token": "", "bytes": [0x90], "logprob": -5.0},
                {"token": "", "bytes": [0x91], "logprob": -6.0}]},
        ]
    }  # fmt: skip
    parsed = read_logprobs(lp)
    assert [len(top) for top in parsed.top] == [3, 3, 3]
    assert parsed.top[1] == {"\\xd7": -0.2, "\\xd6": -2.0, "\\xd8": -3.0}
    answer = answer_from_choice(
        {"message": {"content": " \u05de"}, "logprobs": lp}, endpoint="chat", until=[], top_k=3, want_logprobs=True,
        greedy=False,
    )  # fmt: skip
    assert answer.error is None and answer.token_offsets.tolist() == [[0, 1], [1, 1], [1, 2]]
    assert answer.token_entropies[1] == pytest.approx(
        topk_entropies([{"a": -0.2, "b": -2.0, "c": -3.0}], 3)[0]
    )
    assert answer.token_entropies[1] > 0.1


@pytest.mark.slow
# ---------------------------------------------------------------------------------------------- journal, key
def test_a_run_stopped_by_a_vanished_server_resumes_without_asking_again(stub, tmp_path):
    """The server goes away after a few prompts: the run stops with a clear error; the server back on its address,
    the same run asks only for what the journal does not hold."""
    state = {"server": None}
    fake = FakeLLM()

    def vanishing(body, call):
        if call == 5:  # the probe and three prompts answered; this one, and all later ones, find no server
            threading.Thread(target=state["server"].close).start()
            return 200, b"", 0.5
        return fake(body, call)

    first = stub(vanishing)
    state["server"] = first
    with pytest.raises(
        RuntimeError, match=r"cannot be reached .* in the journal .*run the same command again"
    ):
        _run(_model(first, tmp_path, concurrency=1, max_retries=1), tmp_path)
    journal = tmp_path / "journal" / "rank0.jsonl"
    kept = len(journal.read_text().splitlines())
    assert kept == 3
    back = stub(FakeLLM(), first.port)
    b = _run(_model(back, tmp_path, concurrency=1), tmp_path)
    assert b["bad_docs"] == [] and b["n_docs"] == N_QUESTIONS
    assert len(_generation_calls(back)) == 2 * N_QUESTIONS - kept  # only what the journal lacked
    keys = [json.loads(line)["key"] for line in journal.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 2 * N_QUESTIONS
    # once everything is journaled, a third run asks the server for nothing but the probe
    again = stub(FakeLLM())
    _run(_model(again, tmp_path), tmp_path)
    assert len(again.requests) == 1


@pytest.mark.slow
def test_the_api_key_is_sent_and_never_written(stub, tmp_path, monkeypatch):
    secret = "sk-semuq-test-7f3a9c"
    monkeypatch.setenv("SEMUQ_TEST_KEY", secret)
    server = stub(FakeLLM())
    _run(_model(server, tmp_path, api_key_env="SEMUQ_TEST_KEY"), tmp_path)
    assert {r["auth"] for r in server.requests} == {f"Bearer {secret}"}
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and not [p for p in written if secret.encode() in p.read_bytes()]
    with pytest.raises(ValueError, match="do not pass the API key as a model argument"):
        SemuqAPILM(model="m", base_url=server.base_url, api_key=secret)


def test_model_argument_errors(stub):
    url = "http://127.0.0.1:9/v1"
    with pytest.raises(ValueError, match=r"unknown model argument\(s\) \['temprature'\]"):
        SemuqAPILM(model="m", base_url=url, temprature=1)
    with pytest.raises(ValueError, match="needs model=NAME and base_url"):
        SemuqAPILM(model="m")
    with pytest.raises(ValueError, match="endpoint must be one of"):
        SemuqAPILM(model="m", base_url=url, endpoint="responses")
    with pytest.raises(ValueError, match="--apply_chat_template needs endpoint=chat"):
        SemuqAPILM(model="m", base_url=url).apply_chat_template([{"role": "user", "content": "hi"}])
    lm = SemuqAPILM(model="m", base_url=url, endpoint="chat", batch_size=1, device="cpu")
    prompt = lm.apply_chat_template([{"role": "user", "content": "hi"}])
    assert prompt.messages() == [{"role": "user", "content": "hi"}]
    with pytest.raises(NotImplementedError, match="generate_until"):
        lm.loglikelihood([])


# ---------------------------------------------------------------------------------------------- the pieces
def test_topk_entropy_by_hand():
    # p = (0.5, 0.25, 0.25) given: H = 1.5 log 2; the top 2 renormalised: (2/3, 1/3)
    top = {"a": math.log(0.5), "b": math.log(0.25), "c": math.log(0.25)}
    assert topk_entropies([top], 3)[0] == pytest.approx(1.5 * math.log(2))
    q = np.array([2 / 3, 1 / 3])
    assert topk_entropies([top], 2)[0] == pytest.approx(float(-(q * np.log(q)).sum()))
    assert topk_entropies([{"a": -3.0}], 5)[0] == 0.0
    with pytest.raises(ValueError, match="position 0 has no top log-probabilities"):
        topk_entropies([{}], 5)


def test_spans_from_bytes_give_a_split_character_to_the_token_that_completes_it():
    e_acute = "é".encode()
    lp = {
        "content": [
            {"token": " caf", "logprob": -0.1, "bytes": list(b" caf"), "top_logprobs": []},
            {"token": "\\xc3", "logprob": -0.2, "bytes": [e_acute[0]], "top_logprobs": []},
            {"token": "\\xa9", "logprob": -0.3, "bytes": [e_acute[1]], "top_logprobs": []},
        ]
    }
    answer = answer_from_choice(
        {"message": {"content": " café"}, "logprobs": lp}, endpoint="chat", until=[], top_k=0, want_logprobs=True,
        greedy=True,
    )  # fmt: skip
    assert answer.token_offsets.tolist() == [[0, 4], [4, 4], [4, 5]]
    assert answer.seq_logprob == pytest.approx(-0.6) and answer.token_entropies is None


def test_cut_and_spans():
    assert cut_at_stop("a\n\nb", ["\n\n"]) == "a" and cut_at_stop("abc", []) == "abc"
    assert token_spans([" Paris", ".\n"], " Paris.") == [(0, 6), (6, 7)]  # a token only partly kept
    assert token_spans([], "") == []


def test_a_generation_keeps_its_approximation_and_error_through_records_and_pickle():
    g = Generation(
        "a", token_logprobs=[-0.1], token_entropies=[0.2], approximate={"token_entropies": "m"}, error="e",
        source={"model": "semuq-api"},
    )  # fmt: skip
    rec = g.to_record()
    assert rec["approximate"] == {"token_entropies": "m"} and rec["error"] == "e" and "source" not in rec
    back = Generation.from_record(rec)
    assert back.approximate == {"token_entropies": "m"} and back.error == "e" and back.source is None
    again = pickle.loads(pickle.dumps(g))
    assert again.approximate == g.approximate and again.source == {"model": "semuq-api"}
    assert "approximate" not in Generation("plain").to_record()
    with pytest.raises(ValueError, match="approximate names unknown fields"):
        Generation("a", approximate={"nonsense": "x"})


def test_semuq_api_is_registered_in_lm_eval():
    from lm_eval.api.registry import get_model

    import semuq_eval.models  # noqa: F401

    assert get_model("semuq-api") is SemuqAPILM


@pytest.mark.slow
def test_the_journal_folder_follows_the_output_directory(stub, tmp_path, monkeypatch):
    monkeypatch.setenv("SEMUQ_OUTPUT_DIR", str(tmp_path / "out"))
    server = stub(FakeLLM())
    _run(_model(server, tmp_path, journal=None), tmp_path)
    assert (tmp_path / "out" / "semuq" / "_journal" / "fake" / "rank0.jsonl").is_file()
    assert Path(tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr" / "breakdown.json").is_file()
