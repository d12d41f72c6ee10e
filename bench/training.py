"""Speed of `semuq-eval train-operator` on the CPU: examples/s and epoch time for MiniLM and mpnet.

Runs the real recipe (:func:`semuq_eval.training.trainer.train_operator`: sentence-transformers' trainer,
TripletLoss, batch 32, evaluation and a checkpoint after every epoch) on a run store written here: the
first ``--questions`` NQ-Open dev questions (the offline asset; their real reference aliases) with 5 sampled
answers each, 3 "correct" (built around the question's first alias) and 2 "incorrect" (built around another
question's alias), each answer a sentence of about 20-30 words, the length of a 32-token LLM answer. The
encoder input is "question [SEP] answer", 40-70 WordPiece tokens. Early stopping is off (patience above the
budget), so every epoch runs.

Per epoch the record gives the time of the training steps alone (``epoch_train_seconds``: forward, backward,
optimizer); the full epoch adds the validation pass and the checkpoint write. Medians over the epochs (the
first epoch included: nothing is compiled). examples/s = triplets per epoch / training-step seconds.

    .venv/bin/python -m bench.training                          # MiniLM and mpnet, fp32 and bf16, 3 epochs
    .venv/bin/python -m bench.training --models all-minilm-l6-v2 --questions 640 --epochs 3

Needs `semuq-eval assets --only all-minilm-l6-v2,all-mpnet-base-v2,nq-open`. Report ``uptime``'s load with
the figures: other processes on the 2 cores slow training down.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from semuq_eval.data import load_qa
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.store import RunStore
from semuq_eval.models.generation import Generation
from semuq_eval.training.config import TrainingConfig, native_cpu_bf16
from semuq_eval.training.trainer import train_operator

CORRECT = (
    "I think the answer is {a}. The question asks {q} and as far as I know the answer would be {a}.",
    "{a}. This is what I remember from what I have read about it, so the answer should be {a}.",
    "The answer to this question is {a}, although I am not completely sure about the details of it.",
)
WRONG = (
    "I believe the answer is {a}. The question asks {q} and I would say that it is {a}.",
    "It is {a}, if I remember correctly; that is the most likely answer to this question.",
)


def write_store(root: Path, n_questions: int) -> Path:
    """A run store of ``n_questions`` NQ-Open dev questions with 3 correct and 2 incorrect answers each."""
    qa = load_qa("nq-open", "dev", limit=n_questions)
    store = RunStore(root)
    store.begin("semuq_nqopen_train", {"n_samples": 5, "judge": "string", "run_id": None})
    docs, items = [], []
    for i, rec in enumerate(qa):
        q, alias, other = rec["question"], rec["answers"][0], qa[(i + 7) % len(qa)]["answers"][0]
        answers = [t.format(a=alias, q=q) for t in CORRECT] + [t.format(a=other, q=q) for t in WRONG]
        docs.append(
            Doc(i, q, rec["answers"], Generation(answers[0], greedy=True), [Generation(a) for a in answers])
        )
        items.append({"doc_id": i, "labels": {"greedy": 1, "majority": 1}, "sample_labels": [1, 1, 1, 0, 0]})
    store.write_generations(docs, hidden=False)
    store.write_scores(items)
    store.write_breakdown({"judge": {"judge": "string", "mode": "contains"}})
    return root


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="all-minilm-l6-v2,all-mpnet-base-v2")
    p.add_argument(
        "--questions", type=int, default=None, help="NQ-Open questions (default: 160 MiniLM, 64 mpnet)"
    )
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--precisions",
        default=None,
        help="fp32 and/or bf16 (mixed precision), side by side per model (default: both where the CPU computes "
        "bfloat16 natively, else fp32; train-operator refuses emulated bf16)",
    )
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    native = native_cpu_bf16()
    precisions = args.precisions or ("fp32,bf16" if native else "fp32")
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores, CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}, native bf16: {native}"
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, precision in [(m, p) for m in args.models.split(",") for p in precisions.split(",")]:
            n_q = args.questions or (160 if "minilm" in name else 64)
            store = write_store(
                Path(tmp) / f"store-{n_q}-{name}-{precision}" / "semuq" / "semuq_nqopen_train" / "bench-llm",
                n_q,
            )
            before = load_average()
            started = time.perf_counter()
            record = train_operator(
                TrainingConfig(
                    stores=[str(store)],
                    output=str(Path(tmp) / f"op-{name}"),
                    backbone=f"offline:{name}",
                    epochs=args.epochs,
                    patience=args.epochs + 1,
                    device="cpu",
                    overwrite=True,
                    bf16=precision == "bf16",
                )
            )
            wall = time.perf_counter() - started
            timing, counts = record["timing"], record["counts"]
            steps = statistics.median(timing["epoch_train_seconds"])
            full = timing["train_seconds"] / record["validation"]["epochs_run"]
            triplets = counts["triplets_per_epoch"]
            rows.append(
                {
                    "model": name,
                    "precision": precision,
                    "triplets/epoch": triplets,
                    "val triplets": counts["val_triplets"],
                    "examples/s": triplets / steps,
                    "epoch steps s": steps,
                    "epoch incl. eval s": full,
                    "paper-size epoch s (1,720 triplets)": 1720 / (triplets / steps),
                    "load before/after": f"{before} / {load_average()}",
                    "wall s": wall,
                }
            )
    print()
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in r.values()) + " |")


if __name__ == "__main__":
    main()
