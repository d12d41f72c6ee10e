"""Greedy accuracy of the offline LLMs on the offline QA sets, with and without the chat template.

Which LLM and which question set give a demo with enough correct AND incorrect answers? For each of
SmolLM2-135M-Instruct and gemma-3-270m (the LLMs `semuq-eval assets` prepares) on semuq_triviaqa_dpr,
semuq_nqopen and semuq_webquestions, this runs the semuq task on the first ``--limit`` questions with the
string judge (contains), N = 1 (only the greedy label is read), and prints greedy accuracy with a 95% Wilson
interval. Each configuration runs in its own process; answers are journaled, so an interrupted run resumes.

    .venv/bin/python -m experiments.offline_accuracy --limit 100 --output /tmp/offline-accuracy
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

MODELS = ("smollm2-135m-instruct", "gemma-3-270m")
TASKS = ("semuq_triviaqa_dpr", "semuq_nqopen", "semuq_webquestions")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion k / n."""
    if n == 0:
        return math.nan, math.nan
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def has_chat_template(model_dir: Path) -> bool:
    config = model_dir / "tokenizer_config.json"
    if (model_dir / "chat_template.jinja").is_file():
        return True
    return config.is_file() and bool(json.loads(config.read_text(encoding="utf-8")).get("chat_template"))


def run_one(model: str, task: str, chat: bool, limit: int, out: Path, max_gen_toks: int) -> dict:
    from semuq_eval.assets import locate
    from semuq_eval.context import model_slug

    path = locate(model)
    if chat and not has_chat_template(path):
        return {"model": model, "task": task, "chat": chat, "skipped": "the tokenizer has no chat template"}
    folder = out / f"{model}-{'chat' if chat else 'plain'}"
    meta = {"n_samples": 1, "operators": ["lexical"], "aggregators": ["msp"], "bootstrap": 10, "limit": limit}
    cmd = [
        sys.executable, "-m", "semuq_eval", "run", "--model", "semuq-hf",
        "--model_args", f"pretrained={path},dtype=float32", "--device", "cpu", "--batch_size", "16",
        "--tasks", task, "--limit", str(limit), "--gen_kwargs", f"max_gen_toks={max_gen_toks}",
        "--metadata", json.dumps(meta), "--output_path", str(folder),
    ] + (["--apply_chat_template"] if chat else [])  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    breakdown = folder / "semuq" / task / model_slug(path) / "breakdown.json"
    if done.returncode != 0 or not breakdown.is_file():
        return {"model": model, "task": task, "chat": chat, "error": done.stderr[-2000:]}
    labels = json.loads(breakdown.read_text(encoding="utf-8"))["labels"]["greedy"]
    low, high = wilson(labels["n_correct"], labels["n"])
    return {
        "model": model, "task": task, "chat": chat, "n": labels["n"], "n_correct": labels["n_correct"],
        "accuracy": labels["accuracy"], "ci_low": low, "ci_high": high, "seconds": round(seconds, 1),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--max_gen_toks", type=int, default=32)
    parser.add_argument("--output", type=Path, default=Path("offline-accuracy"))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--tasks", default=",".join(TASKS))
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    rows = []
    print(f"load average at start {os.getloadavg()[0]:.2f}", flush=True)
    for model in args.models.split(","):
        for task in args.tasks.split(","):
            for chat in (True, False):
                row = run_one(model, task, chat, args.limit, args.output, args.max_gen_toks)
                rows.append(row)
                print(json.dumps(row), flush=True)
    (args.output / "offline_accuracy.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(f"\nload average at end {os.getloadavg()[0]:.2f}\n")
    print("| LLM | set | chat template | correct / n | greedy accuracy [95% CI] | time |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if "n" in r:
            print(
                f"| {r['model']} | {r['task']} | {'yes' if r['chat'] else 'no'} | {r['n_correct']} / {r['n']} | "
                f"{r['accuracy']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}] | {r['seconds']:.0f} s |"
            )
        else:
            print(
                f"| {r['model']} | {r['task']} | {'yes' if r['chat'] else 'no'} | - | {r.get('skipped') or 'failed'} | - |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
