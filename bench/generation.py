"""Benchmark: generated tokens per second for N samples + 1 greedy answer per question, against the machine's
arithmetic limit: `semuq-hf` in float32 and bfloat16, lm-eval's stock `hf` (float32), `semuq-vllm` (vLLM in-process,
float32), `semuq-api` on llama.cpp and on ``vllm serve``.

Run it from the repository with ``python -m bench.generation``:

    python -m bench.generation                      # every configuration, 20 questions, N = 20, 3 repeats
    python -m bench.generation --questions 2 --n 2 --repeats 1 --hf-batch-sizes 20   # smoke run
    python -m bench.generation --configs semuq-hf-fp32,semuq-api-llamacpp --threads 1 --json out.json

One model, SmolLM2-135M-Instruct by default: the local HF folder (the `smollm2-135m-instruct` asset) and, for
llama.cpp, the GGUF that folder keeps (the asset's float32 weights were converted from it). ``--model`` may name a
folder that holds a GGUF only (``--model ~/.cache/semuq-eval/models/qwen2.5-coder-1.5b-instruct``): transformers
then reads the config, tokenizer and weights from that GGUF (dequantized to the row's dtype) for the `semuq-hf`
rows, and llama.cpp serves the GGUF as it is. The same 20
TriviaQA-like questions, the model's chat template applied to each (one prompt string for every
configuration), the same decoding: N samples at temperature 1, top-p 0.9, top-k 50, plus the greedy answer,
max_gen_toks 32. The requests are built as lm-eval's evaluator builds them: per question one greedy Instance
(repeats 1) and one sampled Instance added N times (the same object), then ONE `lm.generate_until(requests)`.

Configurations (``--configs``, comma-separated):
- ``semuq-hf-fp32``, ``semuq-hf-bf16``: `semuq-hf` with ``dtype=float32`` / ``dtype=bfloat16``,
  ``--batch-size`` prompts per call;
- ``hf``: lm-eval's stock `hf` (float32), once per ``--hf-batch-sizes`` entry (sequences per call);
- ``semuq-api-llamacpp``: `semuq-api` (completions endpoint, log-probabilities with 20 alternatives, journal
  off, ``--slots`` requests in flight) against llama.cpp's own server (``python -m semuq_eval.models.llamacpp``:
  the prebuilt xllamacpp wheel, the server `semuq-llamacpp` runs in-process; tests/fixtures/llama_process.py, the
  tests' server) serving the GGUF on loopback with ``--slots`` parallel slots (default N + 1: a question's samples,
  asked with ``n``, and its greedy answer decode as one batch), started with ``--threads`` threads and stopped at
  the end, even on error;
  ``semuq-api-llamacpp-text``: the same with ``logprobs=false`` (text only: what log-probabilities cost);
- ``semuq-vllm-fp32``, ``semuq-vllm-bf16``: `semuq-vllm` (vLLM in this process; on a CPU its CPU build) with
  ``dtype=float32`` / ``dtype=bfloat16``, 20
  log-probabilities per token, eager mode, the engine's threads bound to ``--threads`` cores
  (``VLLM_CPU_OMP_THREADS_BIND``), no hidden states;
- ``semuq-api-vllm``: `semuq-api` (completions endpoint, 20 alternatives, ``--slots`` requests in flight) against
  ``vllm serve`` of the HF folder in float32 (tests/fixtures/vllm_process.py, the tests' server), its threads bound
  the same way; the requests carry no seed (``seed=none``: vLLM's CPU build stops its engine on a seeded request
  whose prefill is split over steps).

Each run is a subprocess of its own (its peak memory is its own); ``--repeats`` rounds run every configuration
in turn and the medians are kept. Per configuration:
- ``tok/s``: answer tokens / wall time of `generate_until` (model loading and a one-request warm-up excluded),
  the answer tokens being the returned answers re-tokenized with the model's tokenizer (stock `hf` returns
  text only: one count for all); ``x fp32``: tok/s over `semuq-hf` float32's;
- ``% limit``: tok/s over the arithmetic ceiling of its weights' dtype (below); llama.cpp's quantized weights
  have no torch matmul to measure, its row is set against the float32 ceiling;
- ``peak gen MB``: peak resident memory during `generate_until` (the high-water mark reset after the warm-up;
  for llama.cpp the server's); ``peak all MB``: the same process's peak, loading included; ``tok/ans``: mean
  answer length (sampling differs between runs: tok/s compares equal work, gen s only if the lengths are
  close).

The arithmetic limit: FLOPs per generated token ~= 2 x the parameters that take part in a matmul per token,
counted on the model's config (a tied input/output embedding matrix counted once, as the output projection; an
untied input embedding is a lookup and not counted; attention over the context and the prompt's prefill not
counted), and the peak FLOP/s of dense ``torch.matmul`` per dtype with ``torch.set_num_threads(cores)`` in
this process: square matrices, doubled from 256 until one product takes ``--matmul-seconds`` or reaches
``--matmul-max-size``, median of ``--matmul-repeats``; the best of three operand layouts, ``a@b``, ``a@b.T``
(nn.Linear's) and ``a.T@b``, all printed (without native bf16 they differ by an order of magnitude).
Ceiling tok/s = peak FLOP/s / FLOPs per token. The report also says whether the CPU has native bf16
(``avx512_bf16`` or ``amx_bf16`` in /proc/cpuinfo); without it torch emulates bfloat16.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.timing import median_time
from semuq_eval.models.cpu_dtype import NATIVE_BF16_FLAGS, native_bf16
from tests.fixtures.llama_process import ALIAS, LlamaServer, gguf_in
from tests.fixtures.vllm_process import VLLMServer, vllm_env

ROOT = Path(__file__).resolve().parents[1]
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
CONFIGS = {
    "semuq-hf-fp32": ("semuq-hf", "float32"),
    "semuq-hf-bf16": ("semuq-hf", "bfloat16"),
    "hf": ("hf", "float32"),
    "semuq-api-llamacpp": ("semuq-api", "gguf"),
    "semuq-api-llamacpp-text": ("semuq-api", "gguf-text"),
    "semuq-vllm-fp32": ("semuq-vllm", "float32"),
    "semuq-vllm-bf16": ("semuq-vllm", "bfloat16"),
    "semuq-api-vllm": ("semuq-api", "vllm"),
}
"""Configuration name -> (worker kind, weights' dtype; ``gguf``: the GGUF file's own quantization, ``gguf-text``:
the same without log-probabilities; ``vllm``: the HF folder served by ``vllm serve`` in float32)."""
SERVED = ("gguf", "gguf-text", "vllm")
"""The dtypes of the `semuq-api` rows: a server generates."""
LAYOUTS = {"a@b": lambda a, b: (a, b), "a@b.T": lambda a, b: (a, b.t()), "a.T@b": lambda a, b: (a.t(), b)}
"""Operand layouts of the matmul peak (``a@b.T`` is nn.Linear's: x @ W.T). Without native bf16, torch's
bfloat16 products differ by an order of magnitude between them; float32's barely: the best is the peak."""


def _default_model() -> str:
    from semuq_eval.assets import locate

    return str(locate("smollm2-135m-instruct"))


# -- the arithmetic limit ------------------------------------------------------------------------------------
def gguf_only(model_dir: str) -> dict[str, str]:
    """``{"gguf_file": name}`` for a folder that holds a GGUF and no Hugging Face config (the Qwen assets):
    transformers then reads the config, the tokenizer and the weights from the GGUF; ``{}`` otherwise."""
    folder = Path(model_dir)
    if (folder / "config.json").is_file():
        return {}
    return {"gguf_file": gguf_in(folder).name}


def flops_per_token(model_dir: str) -> tuple[int, str]:
    """(parameters counted, how): FLOPs per generated token ~= 2 x the parameters counted (module doc)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(
            AutoConfig.from_pretrained(model_dir, **gguf_only(model_dir))
        )
    counted = sum(p.numel() for p in model.parameters())  # a tied matrix once
    embedding = model.get_input_embeddings().weight
    output = model.get_output_embeddings()
    if output is not None and output.weight is embedding:
        return counted, "the tied input/output embedding matrix counted once, as the output projection"
    return (
        counted - embedding.numel(),
        "the input embedding (a lookup) not counted, the output projection counted",
    )


def matmul_peak(
    dtype: str, layout: str, threads: int, max_size: int, seconds: float, repeats: int, device: str = "cpu"
) -> tuple[float, int]:
    """(FLOP/s, size): one square ``torch.matmul`` in ``dtype`` and operand ``layout`` (LAYOUTS) on ``device``,
    the size doubled from 256 until a product takes ``seconds`` or reaches ``max_size``; the median of ``repeats``
    products at that size (on a GPU each product waits for the device)."""
    import torch

    torch.set_num_threads(threads)
    wait = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def product(size: int):
        operands = (torch.randn(size, size, device=device).to(getattr(torch, dtype)) for _ in range(2))
        a, b = LAYOUTS[layout](*operands)
        return lambda: (torch.matmul(a, b), wait())

    size = 256
    while median_time(product(size), 1) < seconds and size < max_size:  # the first product warms up too
        size *= 2
    return 2 * size**3 / median_time(product(size), repeats), size


def cpu_info() -> tuple[str, list[str]]:
    """(CPU model name, the native bf16 flags it has) from /proc/cpuinfo."""
    name = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                name = value.strip()
                break
    return name, native_bf16()


# -- one run (the worker subprocess) -------------------------------------------------------------------------
def _rss_mb(field: str, pid: str = "self") -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak_rss(pid: str = "self") -> bool:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def build_requests(tokenizer, n: int, max_gen_toks: int, questions: list[str]) -> list:
    """lm-eval's requests for ``questions``: per question the greedy Instance, then the sampled one N
    times."""
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
        messages = [{"role": "user", "content": INSTRUCTION + q}]
        # what HFLM.apply_chat_template makes; semuq-api's completions endpoint sends it as it is (a model without a
        # chat template, such as the tiny fixture model of python -m bench.gpu_check, gets the raw text)
        if getattr(tokenizer, "chat_template", None):
            ctx = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        else:
            ctx = INSTRUCTION + q + "\nAnswer:"
        doc = {"question": q}
        g = Instance("generate_until", doc, (ctx, dict(greedy)), 0, ("bench", doc_id, 1))
        s = Instance("generate_until", doc, (ctx, dict(sampled)), 1, ("bench", doc_id, n))
        # evaluator.py: cloned_reqs.extend([req] * req.repeats)
        requests.extend([g] + [s] * n)
    return requests


def _load(args: argparse.Namespace):
    """The lm-eval model of the run's kind."""
    if args.worker == "semuq-api":
        from semuq_eval.models.api import SemuqAPILM

        return SemuqAPILM(
            model=ALIAS,
            base_url=args.base_url,
            # vLLM's CPU build stops its engine on a seeded request whose prefill is split (docs/serving.md)
            seed="none" if args.dtype == "vllm" else args.seed,
            journal="off",
            concurrency=args.slots,
            timeout=600,
            logprobs=args.dtype != "gguf-text",
        )
    if args.worker == "semuq-vllm":
        from semuq_eval.models.vllm_engine import SemuqVLLM

        return SemuqVLLM(
            pretrained=args.model, dtype=args.dtype, max_model_len=1024, enforce_eager=True, journal="off",
            seed=args.seed,
        )  # fmt: skip
    if args.worker == "semuq-hf":
        from semuq_eval.models.hf import SemuqHFLM as cls
    else:
        from lm_eval.models.huggingface import HFLM as cls
    return cls(
        pretrained=args.model,
        device=args.device,
        batch_size=args.batch_size,
        dtype=args.dtype,
        **gguf_only(args.model),
    )


def _generating_pid(root: str | None) -> str:
    """The process that generates: the largest of ``root`` (None: this one) and its children (vLLM's engine core
    runs in a child process of the model or of ``vllm serve``)."""
    import psutil

    proc = psutil.Process(int(root) if root else None)
    biggest = max([proc, *proc.children(recursive=True)], key=lambda c: c.memory_info().rss)
    return "self" if biggest.pid == os.getpid() else str(biggest.pid)


def worker(args: argparse.Namespace) -> dict:
    """One configuration's run: load, warm up, time one `generate_until`; the figures as a dict."""
    import torch
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(args.model, **gguf_only(args.model))
    t0 = time.perf_counter()
    lm = _load(args)
    load_s = time.perf_counter() - t0
    questions = QUESTIONS[: args.questions]
    requests = build_requests(tokenizer, args.n, args.max_gen_toks, questions)
    # warm-up (pages the weights in, initializes kernels; semuq-api: probes the server), same for every run
    lm.generate_until(build_requests(tokenizer, 1, 2, questions[:1])[:1], disable_tqdm=True)
    torch.manual_seed(args.seed)
    pid = _generating_pid(args.server_pid)
    peak_before = _rss_mb("VmHWM", pid)
    reset = _reset_peak_rss(pid)
    t0 = time.perf_counter()
    c0 = time.process_time()
    answers = lm.generate_until(requests, disable_tqdm=True)
    gen_s = time.perf_counter() - t0
    cpu_s = time.process_time() - c0
    peak_gen = _rss_mb("VmHWM", pid) if reset else float("nan")
    if pid != "self":
        peak_all = max(peak_before, peak_gen)
    else:
        peak_all = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n_tok = [len(tokenizer(str(a), add_special_tokens=False)["input_ids"]) for a in answers]
    return {
        "requests": len(requests),
        "answers": len(answers),
        "errors": sum(1 for a in answers if getattr(a, "error", None)),
        "load_s": round(load_s, 2),
        "gen_s": round(gen_s, 3),
        "cpu_s": round(cpu_s, 2),
        "tokens": sum(n_tok),
        "tok_s": sum(n_tok) / gen_s,
        "load_avg": round(os.getloadavg()[0], 2),
        "peak_gen_mb": round(peak_gen, 1),
        "peak_all_mb": round(peak_all, 1),
        "tok_per_answer": round(sum(n_tok) / max(1, len(n_tok)), 2),
        "greedy_first": str(answers[0])[:60],
    }


def _run(kind: str, dtype: str, batch_size: int, args: argparse.Namespace, server: Any) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "bench.generation",
        "--worker",
        kind,
        "--model",
        args.model,
        "--dtype",
        dtype,
    ]
    cmd += ["--n", str(args.n), "--max-gen-toks", str(args.max_gen_toks), "--questions", str(args.questions)]
    cmd += ["--seed", str(args.seed), "--batch-size", str(batch_size), "--threads", str(args.threads)]
    cmd += ["--slots", str(args.slots), "--device", args.device]
    if server is not None:
        cmd += ["--base-url", server.url, "--server-pid", str(server.proc.pid)]
    env = dict(vllm_env(args.threads), TOKENIZERS_PARALLELISM="false")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"worker {kind} ({dtype}, batch_size={batch_size}) failed")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


# -- the whole benchmark -------------------------------------------------------------------------------------
def _configs(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[tuple[str, str, str, int]]:
    """(name, kind, dtype, batch size) of every run configuration asked for."""
    names = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = sorted(set(names) - set(CONFIGS))
    if unknown or not names:
        parser.error(f"--configs: unknown {unknown}; choose among {', '.join(CONFIGS)}")
    runs = []
    for name in names:
        kind, dtype = CONFIGS[name]
        sizes = (
            [int(x) for x in args.hf_batch_sizes.split(",") if x.strip()]
            if kind == "hf"
            else [args.batch_size]
        )
        runs += [(name, kind, dtype, size) for size in sizes]
    return runs


def _limit(args: argparse.Namespace, dtypes: set[str]) -> dict:
    """The arithmetic limit: parameters counted, and per torch dtype the matmul peak and the ceiling tok/s."""
    cores = len(os.sched_getaffinity(0))
    params, how = flops_per_token(args.model)
    peaks = {}
    for dtype in sorted(dtypes | {"float32"}):
        layouts = {}
        for layout in LAYOUTS:
            flops, size = matmul_peak(
                dtype,
                layout,
                cores,
                args.matmul_max_size,
                args.matmul_seconds,
                args.matmul_repeats,
                args.device,
            )
            layouts[layout] = {"flops": flops, "size": size}
        best = max(layouts, key=lambda layout: layouts[layout]["flops"])
        flops = layouts[best]["flops"]
        peaks[dtype] = {
            "flops": flops,
            "layout": best,
            "layouts": layouts,
            "ceiling_tok_s": flops / (2 * params),
        }
    cpu, native = cpu_info()
    import torch

    return {
        "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None,
        "cpu": cpu,
        "cores": cores,
        "native_bf16": native,
        "params": params,
        "counted": how,
        "peaks": peaks,
    }


def _report(args: argparse.Namespace, limit: dict, rows: list[dict], gguf: Path | None) -> None:
    params = limit["params"]
    print(f"model={args.model}" + (f"\ngguf={gguf} (served by llama.cpp)" if gguf else ""))
    print(
        f"questions={args.questions} N={args.n} (+1 greedy) max_gen_toks={args.max_gen_toks} "
        f"generation threads={args.threads} (torch and llama.cpp) repeats={args.repeats}"
    )
    native = ", ".join(limit["native_bf16"])
    print(
        f"CPU: {limit['cpu']}, {limit['cores']} cores; native bf16: "
        + (
            f"yes ({native})"
            if native
            else f"no (neither {' nor '.join(NATIVE_BF16_FLAGS)}: torch emulates bfloat16)"
        )
    )
    print(
        f"arithmetic limit: FLOPs per generated token = 2 x {params / 1e6:.1f}M parameters = "
        f"{2 * params / 1e6:.0f} MFLOP ({limit['counted']}; attention over the context and prefill not "
        "counted)"
    )
    if limit.get("gpu"):
        print(f"GPU: {limit['gpu']} (the semuq-hf / hf rows and the matmul peak below run on {args.device})")
    for dtype, peak in limit["peaks"].items():
        each = ", ".join(
            f"{layout} {m['flops'] / 1e9:.3g} ({m['size']})" for layout, m in peak["layouts"].items()
        )
        print(
            f"  {dtype:<9} torch.matmul GFLOP/s (side), {limit['cores']} threads, median of "
            f"{args.matmul_repeats}: {each} -> peak {peak['flops'] / 1e9:.3g} -> ceiling "
            f"{peak['ceiling_tok_s']:.3g} tok/s"
        )
    base = next((r for r in rows if r["config"] == "semuq-hf-fp32"), None)
    header = (
        f"{'config':<24}{'weights':>9}{'batch':>6}{'gen s':>9}{'tokens':>8}{'tok/s':>9}{'x fp32':>8}"
        f"{'ceiling':>9}{'% limit':>9}{'peak gen MB':>13}{'peak all MB':>13}{'tok/ans':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        ratio = f"{r['tok_s'] / base['tok_s']:.2f}x" if base else "-"
        print(
            f"{r['config']:<24}{r['weights']:>9}{r['batch_size']:>6}{r['gen_s']:>9.2f}{r['tokens']:>8}"
            f"{r['tok_s']:>9.2f}{ratio:>8}{r['ceiling_tok_s']:>9.3g}{100 * r['fraction']:>8.3g}%"
            f"{r['peak_gen_mb']:>13.0f}{r['peak_all_mb']:>13.0f}{r['tok_per_answer']:>9.1f}"
        )
    print(
        "tok/s = answer tokens / generate_until wall time; x fp32 = over semuq-hf-fp32; ceiling = tok/s at "
        "the matmul peak of the weights' dtype (llama.cpp's GGUF: the float32 peak); % limit = tok/s / "
        f"ceiling; semuq-api keeps {args.slots} requests in flight on {args.slots} llama.cpp slots"
    )
    print(
        f"medians of {args.repeats} interleaved runs; gen s of each: "
        + "; ".join(f"{r['config']}/{r['batch_size']}: {r['all_gen_s']}" for r in rows)
    )
    errors = sum(r["errors"] for r in rows)
    if errors:
        print(f"WARNING: {errors} answers came with an error (semuq-api): their tokens are missing")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="local HF folder (default: the smollm2-135m-instruct asset)")
    p.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help=f"configurations to run, comma-separated (default: all of {','.join(CONFIGS)})",
    )
    p.add_argument("--n", type=int, default=20, help="samples per question")
    p.add_argument("--max-gen-toks", type=int, default=32)
    p.add_argument("--questions", type=int, default=len(QUESTIONS), help=f"at most {len(QUESTIONS)}")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--batch-size", type=int, default=1, help="semuq-hf: prompts per generate call")
    p.add_argument(
        "--hf-batch-sizes", default="1,20", help="stock hf batch sizes (sequences per call), comma-separated"
    )
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads per run and llama.cpp's server threads (0: torch's default here). On a shared "
        "machine use 1: with 2 threads, any other busy process stalls the threads' barriers and times grow "
        "10x or more",
    )
    p.add_argument(
        "--slots",
        type=int,
        default=0,
        help="llama.cpp's parallel slots and semuq-api's requests in flight (0: N + 1, a question's samples and "
        "its greedy answer decoded as one batch; 1: one request at a time)",
    )
    p.add_argument("--repeats", type=int, default=3, help="interleaved repetitions (median kept)")
    p.add_argument("--matmul-max-size", type=int, default=4096, help="largest matrix side of the matmul peak")
    p.add_argument(
        "--matmul-seconds", type=float, default=0.5, help="the matmul size doubles until a product takes this"
    )
    p.add_argument("--matmul-repeats", type=int, default=5, help="matmul products timed (median kept)")
    p.add_argument(
        "--device",
        default="cpu",
        help="the semuq-hf and hf rows' device (cuda: the limit is the GPU's matmul peak)",
    )
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--dtype", default="float32", help=argparse.SUPPRESS)
    p.add_argument("--base-url", default=None, help=argparse.SUPPRESS)
    p.add_argument("--server-pid", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.model is None:
        args.model = _default_model()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    import torch

    if not 1 <= args.questions <= len(QUESTIONS):
        p.error(f"--questions must be 1..{len(QUESTIONS)}")
    configs = _configs(args, p)
    args.threads = args.threads or torch.get_num_threads()
    args.slots = args.slots or args.n + 1
    limit = _limit(args, {dtype for _, _, dtype, _ in configs if dtype not in SERVED})
    served = {dtype for _, _, dtype, _ in configs if dtype in SERVED}
    gguf = gguf_in(Path(args.model)) if served - {"vllm"} else None
    # interleaved repetitions; the median of each configuration is kept (the machine is shared and noisy).
    # Peak memory does not depend on load: the max over repetitions is kept.
    trials: dict[tuple[str, int], list[dict]] = {(c[0], c[3]): [] for c in configs}
    servers: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-generation-") as tmp:
        try:
            if gguf is not None:
                servers["gguf"] = LlamaServer(
                    gguf, Path(tmp) / "server.log", threads=args.threads, slots=args.slots
                )
            if "vllm" in served:
                servers["vllm"] = VLLMServer(
                    Path(args.model), Path(tmp) / "vllm.log", env=vllm_env(args.threads)
                )
            for rep in range(args.repeats):
                for name, kind, dtype, bs in configs:
                    server = servers.get("vllm" if dtype == "vllm" else "gguf") if dtype in SERVED else None
                    r = _run(kind, dtype, bs, args, server)
                    trials[(name, bs)].append(r)
                    print(
                        f"  [{rep + 1}/{args.repeats}] {name} batch={bs}: {r['gen_s']} s, "
                        f"{r['tok_s']:.2f} tok/s, {r['peak_gen_mb']} MB, load {r['load_avg']}",
                        file=sys.stderr,
                    )
        finally:
            for server in servers.values():
                server.stop()
    rows = []
    for name, _kind, dtype, bs in configs:
        runs = trials[(name, bs)]
        weights = gguf.stem.rsplit(".", 1)[-1] if dtype in ("gguf", "gguf-text") else dtype
        weights = "float32" if dtype == "vllm" else weights
        ceiling = limit["peaks"]["float32" if dtype in SERVED else dtype]["ceiling_tok_s"]
        tok_s = statistics.median(r["tok_s"] for r in runs)
        rows.append(
            {
                "config": name,
                "weights": weights,
                "batch_size": bs,
                "gen_s": statistics.median(r["gen_s"] for r in runs),
                "tokens": round(statistics.median(r["tokens"] for r in runs)),
                "tok_s": tok_s,
                "ceiling_tok_s": ceiling,
                "fraction": tok_s / ceiling,
                "peak_gen_mb": max(r["peak_gen_mb"] for r in runs),
                "peak_all_mb": max(r["peak_all_mb"] for r in runs),
                "tok_per_answer": statistics.median(r["tok_per_answer"] for r in runs),
                "errors": sum(r["errors"] for r in runs),
                "all_gen_s": [r["gen_s"] for r in runs],
                "runs": runs,
            }
        )
    _report(args, limit, rows, gguf)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "limit": limit, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
