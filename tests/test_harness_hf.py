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

    meta = {"n_samples": N, "operators": ["lexical", "cos_int"], "bootstrap": 30,
            "data_dir": str(write_qa(tmp_path / "data")), "output_dir": str(tmp_path / "out")}
    results = lm_eval.simple_evaluate(
        model=model, model_args=model_args, tasks=["semuq_triviaqa"], device="cpu", batch_size=4,
        gen_kwargs="max_gen_toks=8", bootstrap_iters=0,
        task_manager=TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta),
    )
    breakdown = json.loads((tmp_path / "out" / "semuq" / "semuq_triviaqa" / "breakdown.json").read_text())
    return results, breakdown


def test_black_box_hf(tiny_gpt2, tmp_path):
    from lm_eval.utils import make_table

    results, b = _run("hf", f"pretrained={tiny_gpt2}", tmp_path)
    print(make_table(results))
    assert {"te", "se@lexical", "cos@cos_int"} <= set(b["unavailable"])
    assert "kle_heat@lexical" in b["results"]["greedy"]
    assert b["results"]["greedy"]["kle_heat@lexical"]["auroc"]["n"] == 6
    assert "acc_greedy,none" in results["results"]["semuq_triviaqa"]


def test_white_box_semuq_hf(tiny_gpt2, tmp_path):
    from lm_eval.utils import make_table

    results, b = _run("semuq-hf", f"pretrained={tiny_gpt2}", tmp_path)
    print(make_table(results))
    for name in ("te", "se@lexical", "cos@cos_int", "kle_heat@cos_int"):
        assert name in b["results"]["greedy"], b["unavailable"].get(name)
    assert "te" not in b["unavailable"]
