"""``semuq-eval train-operator``: train the ``enc`` operator on run stores with per-sample labels.

Examples
--------
>>> parser().parse_args(["--stores", "out/", "--output", "ops/enc", "--negatives", "random"]).negatives
'random'
"""

from __future__ import annotations

import argparse
import logging
import sys

from semuq_eval.commands.arguments import CommandParser
from semuq_eval.durable import writer_lock
from semuq_eval.options import add_options, parse_options
from semuq_eval.training.config import TrainingConfig, resolve_backbone
from semuq_eval.training.prepare import TooFewQuestionsError, prepare_data
from semuq_eval.training.trainer import train_operator

__all__ = ["main", "parser"]

EPILOG = """\
Recipe (paper App. B-C): questions with >= 2 correct and >= 1 incorrect sampled answers; one triplet per
question per epoch, drawn anew every epoch (anchor, positive: two distinct correct answers; negative: an
incorrect answer to the same question; the question prepended by enc's own formatting); TripletLoss on cosine
distance, margin 0.2, batch 32, lr 2e-5 with linear warm-up and decay, up to 30 epochs, early stopping after 3
epochs without a gain in validation triplet accuracy (questions split by question), best epoch kept.

Example (offline):
  semuq-eval run --model semuq-hf --model_args pretrained=/path/llm --tasks semuq_nqopen_train \\
      --metadata '{"profile": "offline", "n_samples": 10}' --output_path out/
  semuq-eval train-operator --stores out/ --backbone offline:all-minilm-l6-v2 --output ops/enc-llm
  semuq-eval run ... --tasks semuq_triviaqa_dpr --metadata '{"operator_options": {"enc": {"model": "ops/enc-llm"}}}'
"""


def parser() -> argparse.ArgumentParser:
    """The command's argument parser: :class:`TrainingConfig`'s flags."""
    p = CommandParser(
        prog="semuq-eval train-operator",
        description="Train the question-conditioned enc operator on a generating LLM's own labelled answers.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(p, TrainingConfig)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit code (2 for bad input, with the reason on stderr)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:  # bad input: a one-line reason, no traceback
        config = parse_options(TrainingConfig, args)
        config.command = ["semuq-eval", "train-operator", *argv]
        if config.task in ("any", "*"):
            config.task = None
        data = prepare_data(config)
        resolve_backbone(config.backbone)
    except (FileNotFoundError, TooFewQuestionsError, ValueError) as err:
        print(f"semuq-eval train-operator: {err}", file=sys.stderr)
        return 2
    try:
        with writer_lock(config.output, "trained operator"):
            record = train_operator(config, data)
    except FileExistsError as err:
        print(f"semuq-eval train-operator: {err}", file=sys.stderr)
        return 2
    val = record["validation"]
    counts = record["counts"]
    added = ", ".join(
        f"{k.removeprefix('added_')} {v}" for k, v in counts.items() if k.startswith("added_") and v
    )
    print(
        f"trained enc operator written to {record['output']}\n"
        f"  questions kept {counts['kept']} of {counts['seen']} (train {counts['train_questions']}, "
        f"validation {counts['val_questions']}); {val['epochs_run']} epoch(s)"
        f"{' (stopped early)' if val['stopped_early'] else ''}\n"
        + (f"  texts added to the samples: {added}\n" if added else "")
        + f"  validation triplet accuracy: {val['before_training']:.3f} before training, "
        f"{val['best_accuracy']:.3f} at the kept epoch ({val['best_epoch']})\n"
        f'  use it: --metadata \'{{"operator_options": {{"enc": {{"model": "{record["output"]}"}}}}}}\''
    )
    return 0
