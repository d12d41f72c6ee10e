"""The three ways to run a semuq task give the same run: lm-eval's command line (`lm_eval`), lm-eval's Python API
(`lm_eval.simple_evaluate`, the output folder given in the task metadata) and `semuq-eval run`, on one tiny GPT-2
built in a fixture, with lm-eval's default seeds. Every question's stored answers must be equal, and its scores and
the breakdowns' results equal up to float32 rounding (a process's thread count changes the order of sums)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.tiny_harness import write_qa
from tests.fixtures.tiny_lm import build_tiny_gpt2

TASK = "semuq_triviaqa_dpr"
GEN_KWARGS = "max_gen_toks=8"


def _meta(data: Path) -> dict:
    return {"data_dir": str(data), "n_samples": 3, "operators": ["lexical"], "bootstrap": 20}


def _command(model: Path, meta: dict, output: Path) -> list[str]:
    return [
        "--model", "semuq-hf", "--model_args", f"pretrained={model}", "--tasks", TASK, "--device", "cpu",
        "--batch_size", "4", "--gen_kwargs", GEN_KWARGS, "--limit", "4", "--metadata", json.dumps(meta),
        "--output_path", str(output),
    ]  # fmt: skip


def _subprocess(argv: list[str], cwd: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    run = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env)
    assert run.returncode == 0, run.stderr[-3000:]


def _simple_evaluate(model: Path, meta: dict, output: Path) -> None:
    import lm_eval
    from lm_eval.tasks import TaskManager

    import semuq_eval.models  # noqa: F401  (registers semuq-hf)
    from semuq_eval.task_files import tasks_dir

    lm_eval.simple_evaluate(
        model="semuq-hf",
        model_args=f"pretrained={model}",
        tasks=[TASK],
        device="cpu",
        batch_size=4,
        gen_kwargs=GEN_KWARGS,
        limit=4,
        task_manager=TaskManager(
            include_path=str(tasks_dir()),
            include_defaults=False,
            metadata={**meta, "output_dir": str(output)},
        ),
    )


def _run_of(output: Path) -> tuple[dict, dict]:
    """The breakdown's results and, per question, the stored answers and scores of the one store under output."""
    from semuq_eval.harness.store import open_store

    (breakdown,) = (output / "semuq" / TASK).rglob("breakdown.json")
    store = open_store(breakdown.parent)
    answers = {d.doc_id: [d.greedy.text, *(g.text for g in d.samples)] for d in store.docs()}
    scores = {doc_id: item["scores"] for doc_id, item in store.items.items()}
    return json.loads(breakdown.read_text())["results"], {"answers": answers, "scores": scores}


@pytest.mark.slow
@pytest.mark.subprocess
def test_lm_eval_its_python_api_and_semuq_eval_run_give_the_same_run(tmp_path):
    model = build_tiny_gpt2(tmp_path / "model")
    meta = _meta(write_qa(tmp_path / "data"))
    cli, api, ours = tmp_path / "lm_eval", tmp_path / "simple_evaluate", tmp_path / "semuq_eval_run"
    _subprocess([sys.executable, "-m", "lm_eval", *_command(model, meta, cli)], tmp_path)
    _simple_evaluate(model, meta, api)
    _subprocess([sys.executable, "-m", "semuq_eval", "run", *_command(model, meta, ours)], tmp_path)
    results, per_question = _run_of(cli)
    assert results["greedy"] and len(per_question["answers"]) == 4
    for other in (api, ours):
        other_results, other_questions = _run_of(other)
        assert other_questions["answers"] == per_question["answers"], other
        assert other_questions["scores"] == _approx(per_question["scores"]), other
        assert other_results == _approx(results), other


def _approx(value):
    """``value`` with every float compared to a relative 1e-5 (NaN equal to NaN), for ``==``."""
    if isinstance(value, dict):
        return {k: _approx(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_approx(v) for v in value]
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-5, abs=1e-9, nan_ok=True)
    return value
