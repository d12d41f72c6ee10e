"""Data parallelism: a 2-process CPU run (accelerate launch, gloo) of the semuq task with `semuq-hf`, and the
merge of the ranks' operator runs.

On CPU, `accelerate launch --multi_gpu --num_processes 2` starts the processes (torchrun) and semuq-eval selects
accelerate's CPU state (gloo); `accelerate launch --cpu --num_processes 2` would start a single process (accelerate
needs MPI for several CPU processes). With --limit 5, lm-eval gives rank 0 questions 0, 2, 4 and rank 1 questions
1, 3, and pads rank 1's requests (its last request is re-added), so one question receives extra samples.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from semuq_eval.harness.operator_runs import OperatorRun, merge_operator_runs
from tests.fixtures.tiny_harness import write_qa
from tests.fixtures.tiny_lm import build_tiny_gpt2

REPO = Path(__file__).resolve().parents[1]
N = 3
LIMIT = 5
ADDITIVE = ("forward_passes", "pairs_scored", "duplicates_skipped")


def _gloo_available() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_gloo_available()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_merge_operator_runs_sums_cost_and_keeps_each_rank():
    r0 = OperatorRun(
        "nli",
        kind="equivalence",
        info={"model": "m"},
        n_questions=3,
        n_unavailable=1,
        reasons={"no sampled answers": 1},
        cost={"forward_passes": 10, "pairs_scored": 4, "duplicates_skipped": 2, "wall_time_s": 1.5},
        status="partial",
    )
    r1 = OperatorRun(
        "nli",
        kind="equivalence",
        info={"model": "m"},
        n_questions=2,
        cost={"forward_passes": 7, "pairs_scored": 3, "duplicates_skipped": 0, "wall_time_s": 2.5},
    )
    idle = OperatorRun("nli", kind="equivalence", status="unavailable")  # a rank without questions
    merged = merge_operator_runs([{"nli": r0}, {"nli": r1}, {"nli": idle}])["nli"]
    assert merged.cost == {
        "forward_passes": 17,
        "pairs_scored": 7,
        "duplicates_skipped": 2,
        "wall_time_s": 2.5,
    }
    assert (merged.n_questions, merged.n_unavailable, merged.status) == (5, 1, "partial")
    assert merged.reasons == {"no sampled answers": 1} and merged.info == {"model": "m"}
    assert [p["rank"] for p in merged.per_rank] == [0, 1, 2]
    assert merged.per_rank[1]["cost"]["forward_passes"] == 7 and merged.per_rank[0]["status"] == "partial"
    d = merged.as_dict()
    assert d["per_rank"] == merged.per_rank and "per_rank" not in r0.as_dict()  # single process: unchanged

    down = OperatorRun("nli", status="unavailable", n_questions=2, n_unavailable=2, reasons={"no model": 2})
    assert merge_operator_runs([{"nli": down}, {"nli": down}])["nli"].status == "unavailable"


def test_store_begin_removes_files_of_ranks_the_run_does_not_have(tmp_path):
    from semuq_eval.harness.store import RunStore

    for r in (0, 1, 2):
        (tmp_path / f"generations.rank{r}.jsonl").write_text("stale\n", encoding="utf-8")
        (tmp_path / f"hidden.rank{r}.npz").write_bytes(b"stale")
    RunStore(tmp_path, rank=0).begin("t", {}, world_size=2)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        ".semuq-unfinished",  # until the run's last file
        "generations.rank0.jsonl",
        "generations.rank1.jsonl",
        "hidden.rank1.npz",
        "manifest.json",
    ]
    assert (tmp_path / "generations.rank0.jsonl").read_text(encoding="utf-8") == ""


def test_multi_process_launch_without_gpu_selects_the_cpu(monkeypatch):
    import torch

    from semuq_eval.commands import run as launch

    accel = getattr(torch, "accelerator", None)
    if accel.is_available() if accel is not None else torch.cuda.is_available():
        pytest.skip("a GPU / accelerator is present: accelerate uses it")
    monkeypatch.delenv("ACCELERATE_USE_CPU", raising=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    launch.prepare_distributed()
    assert os.environ["ACCELERATE_USE_CPU"] == "1"
    monkeypatch.setenv("ACCELERATE_USE_CPU", "false")  # the user's choice is kept
    launch.prepare_distributed()
    assert os.environ["ACCELERATE_USE_CPU"] == "false"


@pytest.mark.slow
@pytest.mark.skipif(not _gloo_available(), reason="torch.distributed's gloo backend is not available")
@pytest.mark.subprocess
def test_two_process_cpu_run(tmp_path):
    from semuq_eval.context import model_slug
    from semuq_eval.harness.rescore import rescore
    from semuq_eval.operators.base import normalize_answer

    model = build_tiny_gpt2(tmp_path / "gpt2")
    data = write_qa(tmp_path / "data")
    out = tmp_path / "out"
    port = _free_port()
    meta = {"data_dir": str(data), "n_samples": N, "operators": ["lexical", "cos_int"], "bootstrap": 30}
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(port),
        "-m",
        "semuq_eval",
        "run",
        "--model",
        "semuq-hf",
        "--model_args",
        f"pretrained={model}",
        "--tasks",
        "semuq_triviaqa_dpr",
        "--metadata",
        json.dumps(meta),
        "--output_path",
        str(out),
        "--gen_kwargs",
        "max_gen_toks=8",
        "--batch_size",
        "2",
        "--limit",
        str(LIMIT),
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("SEMUQ_OUTPUT_DIR", "ACCELERATE_USE_CPU")}
    env.update(
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        CUDA_VISIBLE_DEVICES="",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
    )
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - start
    log = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, log
    assert "on rank 1" in done.stdout + done.stderr, (
        log
    )  # lm-eval built rank 1's share: the run is data-parallel

    store = out / "semuq" / "semuq_triviaqa_dpr" / model_slug(model)  # one folder per model (run_id)
    for r in (0, 1):
        assert (store / f"generations.rank{r}.jsonl").is_file(), sorted(p.name for p in store.iterdir())
        assert (store / f"hidden.rank{r}.npz").is_file()
    journal = list((out / "semuq" / "_journal").glob("*/rank*.jsonl"))
    assert sorted(p.name for p in journal) == ["rank0.jsonl", "rank1.jsonl"]

    # every question stored once, by the rank that held it, with exactly N samples
    per_rank = {}
    for r in (0, 1):
        lines = (store / f"generations.rank{r}.jsonl").read_text(encoding="utf-8").splitlines()
        per_rank[r] = [json.loads(line) for line in lines if line.strip()]
    assert sorted(rec["doc_id"] for rec in per_rank[0]) == [0, 2, 4]
    assert sorted(rec["doc_id"] for rec in per_rank[1]) == [1, 3]
    assert all(len(rec["samples"]) == N for recs in per_rank.values() for rec in recs)

    b = json.loads((store / "breakdown.json").read_text(encoding="utf-8"))
    assert b["n_docs"] == LIMIT
    assert b["n_extra_responses_dropped"] > 0  # the data-parallel padding happened, and was dropped
    for name in ("te", "se@lexical", "kle_heat@lexical", "cos@cos_int"):
        assert b["results"]["greedy"][name]["auroc"]["n"] == LIMIT, name
    scores = [json.loads(line) for line in (store / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(it["doc_id"] for it in scores) == list(range(LIMIT))
    assert all(it["n_samples"] == N for it in scores)
    from semuq_eval.harness.record import RECORD_NAME, read_record

    record = read_record(store / RECORD_NAME)  # rank 0 writes the run record: every rank's questions
    assert [q["doc_id"] for q in record.questions] == list(range(LIMIT)) and record["n_samples"] == N

    # operator cost: the sum over both ranks (wall time: the max), with each rank's own values
    for name in ("lexical", "cos_int"):
        op = b["operators"][name]
        ranks = op["per_rank"]
        assert [p["rank"] for p in ranks] == [0, 1]
        assert [p["n_questions"] for p in ranks] == [3, 2] and op["n_questions"] == LIMIT
        for key in ADDITIVE:
            assert op["cost"][key] == sum(p["cost"][key] for p in ranks), (name, key)
        assert op["cost"]["wall_time_s"] == max(p["cost"]["wall_time_s"] for p in ranks)
    # and the per-rank values are the ranks' own: pairs / duplicates recomputed from each rank's answers (the
    # greedy answer is one more answer of the pass: lexical's greedy-anchored comparisons)
    for r, recs in per_rank.items():
        pairs = dups = 0
        for rec in recs:
            keys = [normalize_answer(s["text"]) for s in [*rec["samples"], rec["greedy"]]]
            distinct = {k for k in keys if k}
            pairs += len(distinct) * (len(distinct) - 1) // 2
            dups += sum(1 for k in keys if k) - len(distinct)
        lexical = b["operators"]["lexical"]["per_rank"][r]["cost"]
        assert (lexical["pairs_scored"], lexical["duplicates_skipped"]) == (pairs, dups), r

    # rescore reads every rank's files (answers and hidden vectors)
    again = rescore(store, operators=["lexical", "cos_int"], bootstrap=10)
    assert again["n_docs"] == LIMIT
    assert again["results"]["greedy"]["cos@cos_int"]["auroc"]["n"] == LIMIT
    assert "per_rank" not in again["operators"]["lexical"]
    print(f"2-process accelerate run: {elapsed:.1f} s")
