"""Benchmark: N samples + 1 greedy answer per question, `semuq-hf` vs lm-eval's stock `hf` with repeats.

Same model (SmolLM2-135M-Instruct, a local HF folder), same 20 TriviaQA-like questions, same decoding
(N = 20 samples at temperature 1, top-p 0.9, top-k 50, plus the greedy answer; max_gen_toks 32; chat template
applied). The requests are built as lm-eval's evaluator builds them: per question one greedy Instance
(repeats 1) and one sampled Instance added N times (the same object), then ONE `lm.generate_until(requests)`.

Each configuration runs in its own subprocess so that its peak memory is its own. Reported per run:
- `gen s`: wall time of `generate_until` (model loading excluded), median of `--repeats` interleaved runs;
  `cpu s`: process CPU time of the same call (median);
- `peak gen MB`: peak resident memory (VmHWM) during `generate_until`, the high-water mark being reset
  (`/proc/self/clear_refs`) after loading and a one-request warm-up (which pages the memory-mapped weights in);
  `peak all MB`: peak RSS of the whole process (`ru_maxrss`, loading included);
- `tok/ans`: mean answer length in tokens (sampling differs between runs; the time compares equal work only if
  the lengths are close).
Ratios are stock / semuq-hf for time and semuq-hf / stock for memory.

    .venv/bin/python -m bench.generation                     # default model: semuq_eval.assets.locate(...)
    .venv/bin/python -m bench.generation --model DIR --n 20 --hf-batch-sizes 1,20 --batch-size 1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUESTIONS = [
    "What is the capital of France?",
    "Who wrote the play Romeo and Juliet?",
    "What is the largest planet in our solar system?",
    "In which year did the Second World War end?",
    "What is the chemical symbol for gold?",
    "Who painted the Mona Lisa?",
    "What is the longest river in Africa?",
    "How many continents are there on Earth?",
    "What is the hardest natural substance?",
    "Which country is home to the kangaroo?",
    "Who was the first person to walk on the Moon?",
    "What is the smallest prime number?",
    "Which planet is known as the Red Planet?",
    "What language is mainly spoken in Brazil?",
    "Who developed the theory of relativity?",
    "What is the freezing point of water in degrees Celsius?",
    "Which ocean is the largest?",
    "What is the currency of Japan?",
    "Who composed the Fifth Symphony that begins with four famous notes?",
    "What gas do plants absorb from the air?",
]
INSTRUCTION = "Answer the following question.\n"


def _default_model() -> str:
    from semuq_eval.assets import locate

    return str(locate("smollm2-135m-instruct"))


def _rss_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def build_requests(lm, n: int, max_gen_toks: int, questions: list[str]):
    from lm_eval.api.instance import Instance

    sampled = {
        "until": ["\n\n"],
        "do_sample": True,
        "temperature": 1.0,
        "top_p": 0.9,
        "top_k": 50,
        "max_gen_toks": max_gen_toks,
    }
    greedy = {"until": ["\n\n"], "do_sample": False, "max_gen_toks": max_gen_toks}
    requests = []
    for doc_id, q in enumerate(questions):
        ctx = lm.apply_chat_template([{"role": "user", "content": INSTRUCTION + q}])
        doc = {"question": q}
        g = Instance("generate_until", doc, (ctx, dict(greedy)), 0, ("bench", doc_id, 1))
        s = Instance("generate_until", doc, (ctx, dict(sampled)), 1, ("bench", doc_id, n))
        # evaluator.py: cloned_reqs.extend([req] * req.repeats)
        requests.extend([g] + [s] * n)
    return requests


def worker(args: argparse.Namespace) -> dict:
    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.kind == "semuq-hf":
        from semuq_eval.models.hf import SemuqHFLM as cls
    else:
        from lm_eval.models.huggingface import HFLM as cls
    t0 = time.perf_counter()
    lm = cls(pretrained=args.model, device="cpu", batch_size=args.batch_size, dtype="float32")
    load_s = time.perf_counter() - t0
    questions = QUESTIONS[: args.questions]
    requests = build_requests(lm, args.n, args.max_gen_toks, questions)
    # warm-up (pages the memory-mapped weights in, initializes kernels), same for both models
    warm = build_requests(lm, 1, 2, questions[:1])[:1]
    lm.generate_until(warm, disable_tqdm=True)
    torch.manual_seed(args.seed)
    model_mb = _rss_mb("VmRSS")
    reset = _reset_peak_rss()
    t0 = time.perf_counter()
    c0 = time.process_time()
    answers = lm.generate_until(requests, disable_tqdm=True)
    gen_s = time.perf_counter() - t0
    cpu_s = time.process_time() - c0
    peak_gen = _rss_mb("VmHWM") if reset else float("nan")
    peak_all = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n_tok = [len(lm.tokenizer(str(a), add_special_tokens=False)["input_ids"]) for a in answers]
    return {
        "kind": args.kind,
        "batch_size": args.batch_size,
        "requests": len(requests),
        "answers": len(answers),
        "load_s": round(load_s, 2),
        "gen_s": round(gen_s, 2),
        "cpu_s": round(cpu_s, 2),
        "load_avg": round(os.getloadavg()[0], 2),
        "model_mb": round(model_mb, 1),
        "peak_gen_mb": round(peak_gen, 1),
        "peak_all_mb": round(peak_all, 1),
        "tok_per_answer": round(sum(n_tok) / max(1, len(n_tok)), 2),
        "greedy_first": str(answers[0])[:60],
        "threads": torch.get_num_threads(),
    }


def _run(kind: str, batch_size: int, args: argparse.Namespace) -> dict:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        kind,
        "--model",
        args.model,
        "--n",
        str(args.n),
        "--max-gen-toks",
        str(args.max_gen_toks),
        "--questions",
        str(args.questions),
        "--seed",
        str(args.seed),
        "--batch-size",
        str(batch_size),
        "--threads",
        str(args.threads),
    ]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"worker {kind} (batch_size={batch_size}) failed")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="local HF folder (default: the smollm2-135m-instruct asset)")
    p.add_argument("--n", type=int, default=20, help="samples per question")
    p.add_argument("--max-gen-toks", type=int, default=32)
    p.add_argument("--questions", type=int, default=len(QUESTIONS))
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--batch-size", type=int, default=1, help="semuq-hf: prompts per generate call")
    p.add_argument(
        "--hf-batch-sizes", default="1,20", help="stock hf batch sizes (sequences per call), comma-separated"
    )
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads per run (0: torch's default). On a shared machine use 1: with 2 threads, any "
        "other busy process stalls torch's thread barriers and times grow 10x or more",
    )
    p.add_argument("--repeats", type=int, default=3, help="interleaved repetitions (median kept)")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.model is None:
        args.model = _default_model()
    if args.worker:
        args.kind = args.worker
        print(json.dumps(worker(args)))
        return

    configs = [("semuq-hf", args.batch_size)]
    configs += [("hf", int(x)) for x in args.hf_batch_sizes.split(",") if x.strip()]
    # interleaved repetitions; the median of each configuration is kept (the machine is shared and noisy).
    # Peak memory does not depend on load: the max over repetitions is kept.
    trials: dict[tuple[str, int], list[dict]] = {c: [] for c in configs}
    for rep in range(args.repeats):
        for kind, bs in configs:
            r = _run(kind, bs, args)
            trials[(kind, bs)].append(r)
            print(
                f"  [{rep + 1}/{args.repeats}] {kind} batch={bs}: {r['gen_s']} s, {r['peak_gen_mb']} MB, "
                f"load {r['load_avg']}",
                file=sys.stderr,
            )
    runs = []
    for c in configs:
        ranked = sorted(trials[c], key=lambda r: r["gen_s"])
        row = dict(ranked[(len(ranked) - 1) // 2])
        row["gen_s"] = statistics.median(r["gen_s"] for r in trials[c])
        row["cpu_s"] = statistics.median(r["cpu_s"] for r in trials[c])
        row["peak_gen_mb"] = max(r["peak_gen_mb"] for r in trials[c])
        row["peak_all_mb"] = max(r["peak_all_mb"] for r in trials[c])
        row["all_gen_s"] = [r["gen_s"] for r in trials[c]]
        runs.append(row)
    ours = runs[0]
    print(
        f"model={args.model}\nquestions={args.questions} N={args.n} (+1 greedy) max_gen_toks={args.max_gen_toks} "
        f"threads={ours['threads']}"
    )
    header = (
        f"{'model':<10}{'batch':>6}{'gen s':>9}{'cpu s':>9}{'peak gen MB':>13}{'peak all MB':>13}"
        f"{'tok/ans':>9}{'speed-up':>10}{'mem ratio':>11}"
    )
    print(header)
    print("-" * len(header))
    for r in runs:
        speed = r["gen_s"] / ours["gen_s"]
        mem = ours["peak_gen_mb"] / r["peak_gen_mb"]
        print(
            f"{r['kind']:<10}{r['batch_size']:>6}{r['gen_s']:>9.2f}{r['cpu_s']:>9.2f}{r['peak_gen_mb']:>13.0f}"
            f"{r['peak_all_mb']:>13.0f}{r['tok_per_answer']:>9.1f}{speed:>9.2f}x{mem:>10.2f}x"
        )
    print("speed-up = stock time / semuq-hf time; mem ratio = semuq-hf peak (gen) / stock peak (gen)")
    print(
        f"gen s: median of {args.repeats} interleaved runs; all: "
        + "; ".join(f"{r['kind']}/{r['batch_size']}: {r['all_gen_s']}" for r in runs)
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
