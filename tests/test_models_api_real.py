"""`semuq-api` against a real server: llama.cpp's, on loopback, serving SmolLM2-135M-Instruct's GGUF from the assets
(tests/fixtures/llama_server.py). A semuq task runs end to end: samples with log-probabilities, `se`, `msp`,
`perplexity` and `te` (approximate, flagged) in the breakdown next to the text operator's estimators, `cos_int`
unavailable with its reason; the server is killed mid-run and the run, started again against a new server,
asks only for what its journal lacks. The stub server covers what llama.cpp does not do (tests/test_models_api.py).
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from semuq_eval.harness.store import open_store
from semuq_eval.models.api import SemuqAPILM
from semuq_eval.models.topk import topk_method
from tests.fixtures.llama_process import ALIAS, LlamaServer
from tests.fixtures.llama_server import llama_server, smollm2_gguf  # noqa: F401
from tests.fixtures.stub_openai import SERVER_ESTIMATORS
from tests.fixtures.tiny_harness import QA, TASKS_DIR, breakdown_of, write_qa

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.subprocess]

N = 3
TOP = 5
PROMPTS = 2 * len(QA)  # a greedy and a sampled prompt per question
META = {"n_samples": N, "operators": ["lexical", "cos_int"], "bootstrap": 20}


def _model(url: str, tmp_path, **kwargs) -> SemuqAPILM:
    options = dict(model=ALIAS, base_url=url, top_logprobs=TOP, concurrency=1, timeout=300, backoff=0.1)
    return SemuqAPILM(**{**options, "journal": str(tmp_path / "journal"), **kwargs})


def _evaluate(lm: SemuqAPILM, tmp_path, chat: bool = False, **meta) -> None:
    """One semuq_triviaqa_dpr run of the tiny QA set, answers of at most 12 tokens (the task's budget is 128)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    meta = {**META, "data_dir": str(write_qa(tmp_path / "data")), "output_dir": str(tmp_path / "out"), **meta}
    lm_eval.simple_evaluate(
        model=lm,
        tasks=["semuq_triviaqa_dpr"],
        gen_kwargs="max_gen_toks=12",
        apply_chat_template=chat,
        bootstrap_iters=0,
        task_manager=TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta),
    )


def _kill_when_journaled(server: LlamaServer, journal, lines: int, stop: threading.Event) -> threading.Thread:
    """Kill the server once the journal holds ``lines`` prompts: mid-run, whatever the machine's speed."""

    def watch() -> None:
        while not stop.is_set():
            if journal.is_file() and len(journal.read_text().splitlines()) >= lines:
                server.kill()
                return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_semuq_api_on_llama_cpp_end_to_end_and_resume_after_the_server_is_killed(real_asset, tmp_path):
    gguf = smollm2_gguf(real_asset)
    journal = tmp_path / "journal" / "rank0.jsonl"
    first = LlamaServer(gguf, tmp_path / "server1.log")
    stop = threading.Event()
    try:
        watcher = _kill_when_journaled(first, journal, 2, stop)
        with pytest.raises(
            RuntimeError, match=r"cannot be reached .* in the journal .*run the same command again"
        ):
            _evaluate(_model(first.url, tmp_path, max_retries=1), tmp_path)
        watcher.join(timeout=30)
    finally:
        stop.set()
        first.stop()
    kept = len(journal.read_text().splitlines())
    assert 2 <= kept < PROMPTS
    # another server on another port: the journal is keyed by the model's name, not its URL
    second = LlamaServer(gguf, tmp_path / "server2.log")
    try:
        _evaluate(_model(second.url, tmp_path), tmp_path)
    finally:
        second.stop()
    keys = [json.loads(line)["key"] for line in journal.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == PROMPTS  # nothing journaled before was asked again

    b = breakdown_of(tmp_path)
    reader = open_store(tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr")
    manifest, records = reader.manifest, reader.docs()
    # SmolLM2 on the raw prompt sometimes answers nothing at once ("\n\n"): an empty answer, never an error
    problems = {p for d in b["bad_docs"] for p in d["problems"]}
    assert problems <= {"empty greedy answer", "all sampled answers are empty"}, b["bad_docs"]
    answered = sum(1 for rec in records if rec.greedy.text.strip())
    assert b["n_docs"] == len(QA) and answered >= 2, [rec.greedy.text for rec in records]
    scored = b["results"]["greedy"]
    for name in SERVER_ESTIMATORS:
        assert name in scored and scored[name]["auroc"]["n"] >= answered, (name, b["unavailable"].get(name))
    te_n = scored["te"]["auroc"]["n"]
    assert b["approximate"]["te"]["methods"] == {f"token_entropies: {topk_method(TOP)}": te_n}
    assert any("hidden states" in r for r in b["unavailable"]["cos@cos_int"]["reasons"])
    generator = b["generator"]
    caps = generator["capabilities"]
    assert caps["logprobs"] is True and caps["top_logprobs"] == TOP
    # llama.cpp's native server: the N samples in one request (n), no echo of the prompt; the probe found both
    assert caps["n"] is True and caps["echo"] is False
    assert not any(f.startswith("n:") for f in generator["fallbacks"])
    assert generator["model"] == "semuq-api"  # the server was started apart (semuq-llamacpp names itself)

    assert manifest["generator"]["base_url"].startswith("http://127.0.0.1:")
    for rec in records:
        assert len(rec.samples) == N
        for gen in [rec.greedy, *rec.samples]:
            if not gen.text:
                continue
            assert gen.error is None and len(gen.token_logprobs) == len(gen.token_entropies) > 0
            assert (gen.token_logprobs <= 0).all() and (gen.token_entropies >= 0).all()
            assert gen.token_offsets[-1][1] == len(gen.text)
    assert len({rec.greedy.text for rec in records}) > 1  # real answers, one per question


def test_semuq_api_chat_endpoint_on_llama_cpp(llama_server, tmp_path):  # noqa: F811
    """The chat endpoint, the server applying SmolLM2's chat template to lm-eval's messages."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    from tests.fixtures.tiny_harness import TASKS_DIR, write_qa

    meta = {
        **META,
        "n_samples": 2,
        "data_dir": str(write_qa(tmp_path / "data")),
        "output_dir": str(tmp_path / "out"),
    }
    lm_eval.simple_evaluate(
        model=_model(llama_server, tmp_path, endpoint="chat", max_gen_toks=8),
        tasks=["semuq_triviaqa_dpr"],
        apply_chat_template=True,
        bootstrap_iters=0,
        task_manager=TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta),
    )
    b = breakdown_of(tmp_path)
    assert not [d for d in b["bad_docs"] if set(d["problems"]) - {"empty greedy answer"}], b["bad_docs"]
    assert b["generator"]["capabilities"]["echo"] is None and b["generator"]["endpoint"] == "chat"
    assert {"msp", "perplexity", "te", "se@lexical"} <= set(b["results"]["greedy"])
    assert b["approximate"]["te"]["n_docs"] == b["results"]["greedy"]["te"]["auroc"]["n"] >= 2


def test_semuq_llamacpp_serves_a_gguf_in_process_with_the_samples_in_one_batch(real_asset, tmp_path):
    """`semuq-llamacpp`: llama.cpp started inside the run from the asset's GGUF, read as `semuq-api` reads a
    server; the N samples go in one request (``n``), the GGUF's identity is in the record, a second run asks for
    nothing its journal holds."""
    from semuq_eval.models.llamacpp import SemuqLlamaCppLM

    gguf = smollm2_gguf(real_asset)

    def run(journal_lines_before: int) -> dict:
        lm = SemuqLlamaCppLM(
            gguf=str(gguf), threads=1, slots=N + 1, top_logprobs=TOP, journal=str(tmp_path / "journal")
        )
        try:
            _evaluate(lm, tmp_path)
        finally:
            lm.server.stop()
        journal = tmp_path / "journal" / "rank0.jsonl"
        assert len(journal.read_text().splitlines()) == PROMPTS >= journal_lines_before
        return breakdown_of(tmp_path)

    b = run(0)
    generator = b["generator"]
    assert generator["model"] == "semuq-llamacpp" and generator["capabilities"]["n"] is True
    facts = generator["llama_cpp"]
    assert (
        facts["gguf"]["file"] == gguf.name
        and len(facts["gguf"]["sha256"]) == 64
        and facts["slots"] == N + 1
        and facts["threads"] == 1
    )
    assert {"se@lexical", "msp", "te"} <= set(b["results"]["greedy"])
    assert any("hidden states" in r for r in b["unavailable"]["cos@cos_int"]["reasons"])
    again = run(PROMPTS)
    assert (
        again["results"]["greedy"]["msp"] == b["results"]["greedy"]["msp"]
    )  # the same answers, from the journal


def test_semuq_llamacpp_refuses_what_it_cannot_serve(tmp_path):
    from semuq_eval.models.llamacpp import SemuqLlamaCppLM

    with pytest.raises(ValueError, match="needs gguf="):
        SemuqLlamaCppLM()
    with pytest.raises(ValueError, match=r"\['base_url'\] name the server it starts itself"):
        SemuqLlamaCppLM(gguf="x.gguf", base_url="http://127.0.0.1:1/v1")
    with pytest.raises(
        FileNotFoundError, match="neither a .gguf file, a folder holding one, nor an asset name"
    ):
        SemuqLlamaCppLM(gguf=str(tmp_path / "missing.gguf"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no .gguf file"):
        SemuqLlamaCppLM(gguf=str(tmp_path / "empty"))
