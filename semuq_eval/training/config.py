"""The options of a training run (:func:`~semuq_eval.training.trainer.train_operator`), checked as they are given.

:class:`TrainingConfig`'s fields are ``semuq-eval train-operator``'s flags and docs/training.md's table; it is
recorded in the operator's card.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import model_validator

from semuq_eval.harness.label_sets import RUN_LABELS
from semuq_eval.options import OptionError, Options, option
from semuq_eval.training.mining import POSITIVES
from semuq_eval.training.stores import DEFAULT_TRAINING_TASK
from semuq_eval.training.triplets import NEGATIVES

__all__ = [
    "DEFAULT_BACKBONE",
    "GUIDED_TASK",
    "OFFLINE_BACKBONES",
    "TrainingConfig",
    "check_bf16",
    "native_cpu_bf16",
    "resolve_backbone",
]

DEFAULT_BACKBONE = "sentence-transformers/sentence-t5-large"
"""The paper's backbone (App. B). Offline: ``offline:all-minilm-l6-v2`` or ``offline:all-mpnet-base-v2``."""

OFFLINE_BACKBONES = ("all-minilm-l6-v2", "all-mpnet-base-v2")
GUIDED_TASK = "semuq_nqopen_train_guided"
"""The reference-guided variant of the training set (``--guided``)."""


class TrainingConfig(Options):
    """Everything a training run depends on (the CLI's options; recorded in the card, in this field order).

    The defaults are App. B-C's; ``positives``, ``guided`` and ``fact_swap`` add mined texts, ``select_on="auroc"``
    selects on held-out AUROC; ``stop_after_epoch=K`` replays a selection so that a shipped operator rebuilds to the
    same bytes (docs/training.md).
    """

    stores: list[str] = option(
        ...,
        "run store folders, folders holding stores (an --output_path), training-data files "
        "(`semuq-eval train-data export`), or globs",
        parse="many",
    )
    output: str = option(..., "folder to write the trained sentence-transformers model to")
    labels: str = option(RUN_LABELS, "label set with per-sample verdicts")
    task: str | None = option(
        DEFAULT_TRAINING_TASK, "keep the stores of this task when searching folders; any: every task"
    )
    llm: str | None = option(
        None, "name of the generating LLM, when the store cannot tell (metadata run_id was set)"
    )
    backbone: str = option(
        DEFAULT_BACKBONE,
        "sentence-transformers model to start from (the paper's by default): hub id, folder, or "
        "offline:all-minilm-l6-v2 / offline:all-mpnet-base-v2 for the assets `semuq-eval assets` prepares",
    )
    negatives: Literal[NEGATIVES] = option(
        "hard", "hard (App. C), another question's answer, or none (positive pairs, cosine-similarity loss)"
    )
    question: bool = option(
        True,
        "answer-only ablation: no question prepended (recorded; enc evaluates it answer-only too)",
        flag="--no_question",
    )
    positives: Literal[POSITIVES] = option(
        "samples",
        "where positives come from: the LLM's correct samples (App. C), the dataset's references "
        "(raw and as a sentence, with wrong answers rendered alike as negatives), or both",
    )
    guided: list[str] = option(
        [],
        "run stores or training-data files of semuq_nqopen_train_guided: their correct answers that do not "
        "echo the prompt join the same questions' positives",
        parse="many",
    )
    fact_swap: bool = option(
        False,
        "add fact-swapped texts: correct answers with a wrong fact swapped in (negatives) and wrong answers "
        "with the reference swapped in (positives)",
    )
    validation: list[str] = option(
        [],
        "held-out stores or training-data files of the training distribution: their App. C triplets "
        "(natural samples only, so the same whatever the options) select the epoch instead of --val_fraction",
        parse="many",
    )
    select_on: Literal["triplets", "auroc"] = option(
        "triplets",
        "what selects the kept epoch: triplets (App. B: validation triplet accuracy) or auroc "
        "(mean greedy AUROC of the eight graph aggregators CAE, NumSets, KLE heat and Matern, COS, EigV, Deg, "
        "Ecc on every --validation question; a recorded deviation)",
    )
    bf16: bool = option(
        False, "bfloat16 mixed-precision training (faster on CPUs and GPUs with native bf16; recorded)"
    )
    pooling: Literal["all", "answer"] = option(
        "all",
        "all: Eq. encoder's mean over question and answer tokens; answer: mean over the answer's "
        "tokens only (recorded in the trained folder)",
    )
    margin: float = option(0.2, "triplet margin", gt=0, allow_inf_nan=False)
    lr: float = option(2e-5, "peak learning rate", gt=0, allow_inf_nan=False)
    epochs: int = option(30, "epoch budget (early stopping may end sooner)", ge=1)
    batch_size: int = option(32, "triplets per batch", ge=1)
    patience: int = option(3, "epochs without a validation gain before stopping", ge=1)
    early_stopping: bool = option(
        True,
        "train the whole epoch budget and keep the last epoch (a deviation from App. B, for when a few "
        "held-out questions make early stopping follow noise); validation accuracy is still recorded",
        flag="--no_early_stopping",
    )
    stop_after_epoch: int | None = option(
        None,
        "replay a selection already made: train epochs 1-K of the --epochs schedule, keep epoch K, score "
        "only before and after training (how the shipped operator is rebuilt)",
        ge=1,
    )
    warmup_ratio: float = option(0.1, "share of the steps spent warming up", ge=0, lt=1)
    val_fraction: float = option(0.1, "share of the questions held out", gt=0, lt=1)
    val_triplets: int = option(
        1,
        "distinct validation triplets per held-out question (more steady early stopping on few questions)",
        ge=1,
    )
    seed: int = option(0, "seed of the split, the triplets and the trainer", ge=0)
    max_length: int | None = option(None, "token limit of the encoder inputs (default: the backbone's)", ge=1)
    device: str | None = option(None, "cpu, cuda, ... (default: the trainer's choice)")
    overwrite: bool = option(False, "replace a non-empty --output folder", flag="--force --overwrite")
    progress: bool = option(True, "no progress bars", flag="--no_progress")
    command: list[str] = option([], "the command line, recorded in the card", cli=False)

    @model_validator(mode="after")
    def _consistent(self) -> TrainingConfig:
        """The rules between options: AUROC selection needs held-out files, mined texts hard negatives, a replay
        an epoch of the budget."""
        if self.select_on == "auroc" and not self.validation:
            raise OptionError(
                "select_on",
                "auroc scores held-out questions with their greedy verdicts: pass validation files",
            )
        if self.negatives != "hard" and (self.positives != "samples" or self.guided or self.fact_swap):
            raise OptionError(
                "negatives", "mined texts (positives, guided, fact_swap) are drawn with hard negatives only"
            )
        if self.stop_after_epoch is not None and self.stop_after_epoch > self.epochs:
            raise OptionError(
                "stop_after_epoch", f"must be in [1, epochs={self.epochs}], got {self.stop_after_epoch}"
            )
        return self


def native_cpu_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX-512 BF16 or AMX), as oneDNN reports it."""
    import torch

    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def _on_cpu(config: TrainingConfig) -> bool:
    """Whether the training runs on the CPU: asked for, or no GPU when no device is given."""
    import torch

    return config.device == "cpu" or (config.device is None and not torch.cuda.is_available())


def check_bf16(config: TrainingConfig) -> None:
    """ValueError for ``bf16`` on a CPU without native bfloat16: autocast would emulate it, many times slower
    than float32 (docs/training-data.md has the figures)."""
    if config.bf16 and _on_cpu(config) and not native_cpu_bf16():
        import torch

        raise ValueError(
            f"bf16: this CPU has no native bfloat16 (torch reports {torch.backends.cpu.get_cpu_capability()}), "
            "so bf16 training would be emulated and many times slower than float32: train without --bf16"
        )


def resolve_backbone(name: str) -> tuple[str, str]:
    """(name to record, path or hub id to load): ``offline:NAME`` and the bare offline asset names resolve
    to the folders ``semuq-eval assets`` prepares; anything else is passed to sentence-transformers as is.
    Raises FileNotFoundError for an offline backbone that is not prepared (the message gives the command)."""
    asset = name.removeprefix("offline:")
    if name.startswith("offline:") or (asset in OFFLINE_BACKBONES and not Path(name).exists()):
        if asset not in OFFLINE_BACKBONES:
            raise ValueError(
                f"--backbone {name}: offline backbones are {[f'offline:{b}' for b in OFFLINE_BACKBONES]}"
            )
        from semuq_eval.assets import locate

        return asset, str(locate(asset))
    return name, name
