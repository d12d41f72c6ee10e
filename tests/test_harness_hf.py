"""End-to-end semuq task runs with a tiny random GPT-2 built in a fixture: lm-eval's own `hf` class
(black-box: white-box estimators unavailable) and `semuq-hf` (white-box: te, se, cos@cos_int)."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.tiny_harness import TASKS_DIR, write_qa
from tests.fixtures.tiny_lm import build_tiny_gpt2

N = 3


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    return build_tiny_gpt2(tmp_path_factory.mktemp("gpt2") / "model")


def _run(model, model_args, tmp_path):
    import lm_eval
    from lm_eval.tasks import TaskManager

    import semuq_eval.models  # noqa: F401  (registers semuq-hf)

    meta = {
        "n_samples": N,
        "operators": ["lexical", "cos_int"],
        "bootstrap": 30,
        "data_dir": str(write_qa(tmp_path / "data")),
        "output_dir": str(tmp_path / "out"),
    }
    results = lm_eval.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=["semuq_triviaqa_dpr"],
        device="cpu",
        batch_size=4,
        gen_kwargs="max_gen_toks=8",
        bootstrap_iters=0,
        task_manager=TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta),
    )
    breakdown = json.loads((tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr" / "breakdown.json").read_text())
    return results, breakdown


def test_black_box_hf(tiny_gpt2, tmp_path):
    from lm_eval.utils import make_table

    results, b = _run("hf", f"pretrained={tiny_gpt2}", tmp_path)
    print(make_table(results))
    assert {"te", "se@lexical", "cos@cos_int"} <= set(b["unavailable"])
    assert "kle_heat@lexical" in b["results"]["greedy"]
    assert b["results"]["greedy"]["kle_heat@lexical"]["auroc"]["n"] == 6
    assert "acc_greedy,none" in results["results"]["semuq_triviaqa_dpr"]


def test_white_box_semuq_hf(tiny_gpt2, tmp_path):
    import numpy as np
    from lm_eval.utils import make_table

    from semuq_eval import aggregators as A
    from semuq_eval.harness.store import open_store
    from semuq_eval.operators import get

    results, b = _run("semuq-hf", f"pretrained={tiny_gpt2}", tmp_path)
    print(make_table(results))
    for name in ("te", "se@lexical", "cos@cos_int", "kle_heat@cos_int", "msp", "perplexity", "length"):
        assert name in b["results"]["greedy"], b["unavailable"].get(name)
    # issue 23's estimators: greedy-anchored (lexical compares the greedy answer in its pass) and log-prob ones
    for name in ("consistency@lexical", "cocoa@lexical", "semantic_density@lexical", "sentence_sar@lexical"):
        assert name in b["results"]["greedy"], b["unavailable"].get(name)
    assert {"snne@lexical", "eigenscore@cos_int"} <= set(b["results"]["greedy"])
    assert "te" not in b["unavailable"]
    # every question's scores are the aggregators applied to what the model returned (read back from the store)
    store = tmp_path / "out" / "semuq" / "semuq_triviaqa_dpr"
    records, items = open_store(store).docs(), open_store(store).items
    assert len(records) == 6
    for rec in records:
        scores, greedy, samples = items[rec.doc_id]["scores"], rec.greedy, rec.samples
        assert len(samples) == N and len(greedy.token_ids) > 0
        assert scores["te"] == pytest.approx(float(np.mean(greedy.token_entropies)), rel=1e-6)
        assert scores["msp"] == pytest.approx(
            -float(np.sum(greedy.token_logprobs, dtype=np.float64)), rel=1e-6
        )
        assert scores["length"] == len(greedy.token_ids)
        hidden = np.stack([g.hidden for g in samples]).astype(np.float64)
        gram = get("cos_int")([rec.question], [[g.text for g in samples]], hidden_states=[hidden]).matrices[0]
        assert scores["cos@cos_int"] == pytest.approx(A.cos(gram), rel=1e-5)
        lexical = get("lexical")([rec.question], [[g.text for g in samples]]).matrices[0]
        seq = np.array([g.seq_logprob for g in samples])
        assert scores["se@lexical"] == pytest.approx(A.se(lexical, seq), rel=1e-6, abs=1e-9)


def test_killed_semuq_hf_run_resumes(tiny_gpt2, tmp_path, monkeypatch):
    """A run killed during generation, restarted with the same arguments, generates only the prompts it
    had not finished (the journal) and still reports every question."""
    from semuq_eval.models.hf import SemuqHFLM

    original = SemuqHFLM._semuq_generate_batch
    generated: list[str] = []

    def generate_batch(self, batch, eos, fail_after=None):
        if fail_after is not None and len(generated) >= fail_after:
            raise KeyboardInterrupt("killed")
        generated.extend(g.context for g in batch)
        return original(self, batch, eos)

    args = f"pretrained={tiny_gpt2},journal={tmp_path / 'journal'}"
    monkeypatch.setattr(
        SemuqHFLM,
        "_semuq_generate_batch",
        lambda self, batch, eos: generate_batch(self, batch, eos, fail_after=7),
    )
    with pytest.raises(KeyboardInterrupt):
        _run("semuq-hf", args, tmp_path)
    first = list(generated)
    assert 7 <= len(first) < 12  # 6 greedy prompts + 6 sampled prompts; killed part-way through

    generated.clear()
    monkeypatch.setattr(
        SemuqHFLM, "_semuq_generate_batch", lambda self, batch, eos: generate_batch(self, batch, eos)
    )
    _, b = _run("semuq-hf", args, tmp_path)
    assert len(first) + len(generated) == 12
    assert b["n_docs"] == 6 and b["results"]["greedy"]["te"]["auroc"]["n"] == 6
