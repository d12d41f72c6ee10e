"""The real pipeline, offline: SmolLM2-135M-Instruct + all-MiniLM-L6-v2 on 10 TriviaQA questions (marked `real`)."""

from __future__ import annotations

import json

import pytest

from semuq_eval.commands import demo
from semuq_eval.harness.rescore import rescore


@pytest.mark.real
@pytest.mark.slow
def test_demo_on_ten_questions(real_asset, tmp_path, capsys):
    for name in ("smollm2-135m-instruct", "all-minilm-l6-v2", "enc-trained", "triviaqa"):
        real_asset(name)  # skip (or fail under SEMUQ_REQUIRE_ASSETS=1) when not prepared
    args = [
        "--llm",
        "smollm2-135m-instruct",
        "--task",
        "semuq_triviaqa_dpr",
        "--limit",
        "10",
        "--n_samples",
        "5",
    ]
    assert demo.main([*args, "--max_gen_toks", "16", "--output_path", str(tmp_path)]) == 0
    run_dir = tmp_path / "semuq" / "semuq_triviaqa_dpr" / "smollm2-135m-instruct"
    breakdown = json.loads((run_dir / "breakdown.json").read_text())
    assert breakdown["n_docs"] == 10
    operators = {op: v["status"] for op, v in breakdown["operators"].items()}
    assert operators == dict.fromkeys(["lexical", "cos_int", "cos_ext", "enc", "enc_untrained"], "ok")
    # the offline profile's enc is the shipped trained operator
    trained = breakdown["operators"]["enc"]["info"]
    assert trained["model"].rstrip("/").endswith("enc-trained")
    assert breakdown["operators"]["enc_untrained"]["info"]["model"].rstrip("/").endswith("all-minilm-l6-v2")
    assert breakdown["settings"]["profile"] == "offline" and breakdown["decoding"]["sampled"]["top_p"] == 0.9
    assert breakdown["operators"]["enc"]["info"]["dtype"] == "float32"
    greedy = breakdown["results"]["greedy"]
    for estimator in ("kle_heat@enc", "se@cos_ext", "cos@cos_int", "cae@lexical", "te", "te_enc@enc"):
        assert set(greedy[estimator]) == {"auroc", "ece", "prr", "auarc"}, estimator
        assert greedy[estimator]["ece"]["n"] == 10
        assert greedy[estimator]["auroc"]["reliable"] is False  # 10 questions: always flagged
    generations = [
        json.loads(line) for line in (run_dir / "generations.rank0.jsonl").read_text().splitlines()
    ]
    assert all(len(g["samples"]) == 5 and g["greedy"]["text"].strip() for g in generations)
    assert (run_dir / "auroc.png").stat().st_size > 0
    assert "kle_heat@enc" in capsys.readouterr().out
    again = rescore(run_dir, operators=["lexical"], n_samples=3)
    assert (
        "kle_heat@lexical" in again["results"]["greedy"] and "kle_heat@enc" not in again["results"]["greedy"]
    )
