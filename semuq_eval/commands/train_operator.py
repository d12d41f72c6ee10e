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

from semuq_eval.commands.arguments import CommandParser, number, whole
from semuq_eval.durable import writer_lock
from semuq_eval.harness.label_sets import RUN_LABELS
from semuq_eval.operators.pooling import POOLINGS
from semuq_eval.training.config import DEFAULT_BACKBONE, SELECT_ON, TrainingConfig, resolve_backbone
from semuq_eval.training.mining import POSITIVES
from semuq_eval.training.prepare import TooFewQuestionsError, prepare_data
from semuq_eval.training.recipe import train_operator
from semuq_eval.training.stores import DEFAULT_TRAINING_TASK
from semuq_eval.training.triplets import NEGATIVES

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
    """The command's argument parser."""
    p = CommandParser(
        prog="semuq-eval train-operator",
        description="Train the question-conditioned enc operator on a generating LLM's own labelled answers.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _data_arguments(p.add_argument_group("training data"))
    _recipe_arguments(p.add_argument_group("recipe (App. B, C)"))
    _selection_arguments(p.add_argument_group("epoch selection"))
    _run_arguments(p.add_argument_group("run"))
    return p


def _data_arguments(p: argparse._ArgumentGroup) -> None:
    """Where the labelled answers come from and where the operator goes."""
    p.add_argument(
        "--stores",
        nargs="+",
        required=True,
        help="run store folders, folders holding stores (an --output_path), training-data files "
        "(`semuq-eval train-data export`), or globs",
    )
    p.add_argument(
        "--output", required=True, help="folder to write the trained sentence-transformers model to"
    )
    p.add_argument("--labels", default=RUN_LABELS, help="label set with per-sample verdicts (default: run)")
    p.add_argument(
        "--task",
        default=DEFAULT_TRAINING_TASK,
        help=f"keep the stores of this task when searching folders (default {DEFAULT_TRAINING_TASK}; 'any': all)",
    )
    p.add_argument(
        "--llm", help="name of the generating LLM, when the store cannot tell (metadata run_id was set)"
    )


def _recipe_arguments(p: argparse._ArgumentGroup) -> None:
    """The backbone, the triplets and the optimizer (App. B, C) and their recorded variants."""
    p.add_argument(
        "--backbone",
        default=DEFAULT_BACKBONE,
        help=f"sentence-transformers model to start from: hub id or folder (default: the paper's {DEFAULT_BACKBONE}); "
        "offline:all-minilm-l6-v2 or offline:all-mpnet-base-v2 for the assets `semuq-eval assets` prepares",
    )
    p.add_argument("--negatives", choices=NEGATIVES, default="hard", help="negatives (default: hard)")
    p.add_argument(
        "--no_question",
        action="store_true",
        help="answer-only ablation: no question prepended (recorded; enc evaluates it answer-only too)",
    )
    p.add_argument(
        "--positives",
        choices=POSITIVES,
        default="samples",
        help="where positives come from: the LLM's correct samples (App. C, default), the dataset's references "
        "(raw and as a sentence, with wrong answers rendered alike as negatives), or both",
    )
    p.add_argument(
        "--guided",
        nargs="+",
        default=[],
        metavar="STORE",
        help="run stores or training-data files of semuq_nqopen_train_guided: their correct answers that do not "
        "echo the prompt join the same questions' positives",
    )
    p.add_argument(
        "--fact_swap",
        action="store_true",
        help="add fact-swapped texts: correct answers with a wrong fact swapped in (negatives) and wrong answers "
        "with the reference swapped in (positives)",
    )
    p.add_argument(
        "--pooling",
        choices=POOLINGS,
        default="all",
        help="all: Eq. encoder's mean over question and answer tokens (default); answer: mean over the answer's "
        "tokens only (recorded in the trained folder)",
    )
    p.add_argument(
        "--margin", type=number(0, open_low=True), default=0.2, help="triplet margin (default 0.2)"
    )
    p.add_argument(
        "--lr", type=number(0, open_low=True), default=2e-5, help="peak learning rate (default 2e-5)"
    )
    p.add_argument("--epochs", type=whole(1), default=30, help="epoch budget (default 30)")
    p.add_argument("--batch_size", type=whole(1), default=32, help="triplets per batch (default 32)")
    p.add_argument(
        "--warmup_ratio", type=number(0, 1), default=0.1, help="share of the steps spent warming up (0.1)"
    )


def _selection_arguments(p: argparse._ArgumentGroup) -> None:
    """Which epoch is kept: early stopping on held-out questions, or a replay."""
    p.add_argument(
        "--patience", type=whole(0), default=3, help="epochs without a validation gain before stopping (3)"
    )
    p.add_argument(
        "--no_early_stopping",
        action="store_true",
        help="train the whole epoch budget and keep the last epoch (a deviation from App. B, for when a few "
        "held-out questions make early stopping follow noise); validation accuracy is still recorded",
    )
    p.add_argument(
        "--stop_after_epoch",
        type=whole(1),
        default=None,
        metavar="K",
        help="replay a selection already made: train epochs 1-K of the --epochs schedule, keep epoch K, score "
        "only before and after training (how the shipped operator is rebuilt)",
    )
    p.add_argument(
        "--val_fraction",
        type=number(0, 1, open_low=True),
        default=0.1,
        help="share of the questions held out (0.1)",
    )
    p.add_argument(
        "--validation",
        nargs="+",
        default=[],
        metavar="STORE",
        help="held-out stores or training-data files of the training distribution: their App. C triplets "
        "(natural samples only, so the same whatever the options) select the epoch instead of --val_fraction",
    )
    p.add_argument(
        "--select_on",
        choices=SELECT_ON,
        default="triplets",
        help="what selects the kept epoch: triplets (App. B: validation triplet accuracy, the default) or auroc "
        "(mean greedy AUROC of the eight graph aggregators CAE, NumSets, KLE heat and Matern, COS, EigV, Deg, "
        "Ecc on every --validation question; a recorded deviation)",
    )
    p.add_argument(
        "--val_triplets",
        type=whole(1),
        default=1,
        help="distinct validation triplets per held-out question (1; more steady early stopping on few questions)",
    )


def _run_arguments(p: argparse._ArgumentGroup) -> None:
    """Limits, seed, device, precision, overwriting and progress."""
    p.add_argument(
        "--max_length", type=whole(1), help="token limit of the encoder inputs (default: the backbone's)"
    )
    p.add_argument(
        "--seed", type=whole(0), default=0, help="seed of the split, the triplets and the trainer (0)"
    )
    p.add_argument("--device", help="cpu, cuda, ... (default: the trainer's choice)")
    p.add_argument(
        "--bf16",
        action="store_true",
        help="bfloat16 mixed-precision training (faster on CPUs and GPUs with native bf16; recorded)",
    )
    p.add_argument(
        "--force",
        "--overwrite",
        dest="overwrite",
        action="store_true",
        help="replace a non-empty --output folder",
    )
    p.add_argument("--no_progress", action="store_true", help="no progress bars")


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit code (2 for bad input, with the reason on stderr)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    config = TrainingConfig(
        stores=args.stores,
        output=args.output,
        labels=args.labels,
        task=None if args.task in ("any", "*") else args.task,
        llm=args.llm,
        backbone=args.backbone,
        negatives=args.negatives,
        question=not args.no_question,
        positives=args.positives,
        guided=args.guided,
        fact_swap=args.fact_swap,
        pooling=args.pooling,
        validation=args.validation,
        select_on=args.select_on,
        bf16=args.bf16,
        margin=args.margin,
        lr=args.lr,
        epochs=args.epochs,
        batch_size=args.batch_size,
        patience=args.patience,
        early_stopping=not args.no_early_stopping,
        stop_after_epoch=args.stop_after_epoch,
        warmup_ratio=args.warmup_ratio,
        val_fraction=args.val_fraction,
        val_triplets=args.val_triplets,
        max_length=args.max_length,
        seed=args.seed,
        device=args.device,
        overwrite=args.overwrite,
        progress=not args.no_progress,
        command=["semuq-eval", "train-operator", *argv],
    )
    try:  # bad input: a one-line reason, no traceback
        config.check()
        data = prepare_data(config)
        resolve_backbone(config.backbone)
    except (FileNotFoundError, TooFewQuestionsError, ValueError) as err:
        print(f"semuq-eval train-operator: {err}", file=sys.stderr)
        return 2
    try:
        with writer_lock(args.output, "trained operator"):
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
