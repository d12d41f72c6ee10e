"""The options of a training run (:func:`~semuq_eval.training.recipe.train_operator`), checked before anything runs.

:class:`TrainingConfig` holds every option the CLI and the shipped recipes set and is recorded in the operator's
card; :func:`resolve_backbone` maps the offline backbone names to the folders ``semuq-eval assets`` prepares;
:func:`check_bf16` refuses bfloat16 training a CPU would only emulate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from semuq_eval.harness.label_sets import RUN_LABELS
from semuq_eval.training.mining import POSITIVES
from semuq_eval.training.stores import DEFAULT_TRAINING_TASK
from semuq_eval.training.triplets import NEGATIVES

__all__ = [
    "DEFAULT_BACKBONE",
    "GUIDED_TASK",
    "OFFLINE_BACKBONES",
    "SELECT_ON",
    "TrainingConfig",
    "check_bf16",
    "native_cpu_bf16",
    "resolve_backbone",
]

DEFAULT_BACKBONE = "sentence-transformers/sentence-t5-large"
"""The paper's backbone (App. B). Offline: ``offline:all-minilm-l6-v2`` or ``offline:all-mpnet-base-v2``."""

OFFLINE_BACKBONES = ("all-minilm-l6-v2", "all-mpnet-base-v2")
SELECT_ON = ("triplets", "auroc")
"""What selects the kept epoch: App. B's validation triplet accuracy, or the held-out AUROC
(:mod:`semuq_eval.training.heldout`; a named deviation)."""
GUIDED_TASK = "semuq_nqopen_train_guided"
"""The reference-guided variant of the training set (``--guided``)."""


@dataclass
class TrainingConfig:
    """Everything a training run depends on (the CLI's options; recorded in the card).

    ``question=False`` is the answer-only ablation; ``negatives`` is ``hard`` (the paper), ``random`` or ``none``;
    ``positives``, ``guided`` and ``fact_swap`` add mined texts (:mod:`semuq_eval.training.mining`; defaults: App. C);
    ``pooling`` is Eq. encoder's ``all`` or ``answer``; ``validation`` names held-out stores or files whose App. C
    triplets select the epoch instead of ``val_fraction`` of the training questions, or, with ``select_on="auroc"``,
    their mean greedy AUROC (:mod:`semuq_eval.training.heldout`); ``bf16`` trains in bfloat16 autocast on CPUs with
    native bf16; ``epochs`` is the budget (early stopping may end sooner), ``warmup_ratio`` the share of its steps
    spent warming up; ``stop_after_epoch=K`` replays a selection, training epochs 1 to K of the ``epochs`` schedule
    and keeping epoch K, so a shipped operator rebuilds to the same bytes (docs/training.md).
    """

    stores: Sequence[str]
    output: str
    labels: str = RUN_LABELS
    task: str | None = DEFAULT_TRAINING_TASK
    llm: str | None = None
    backbone: str = DEFAULT_BACKBONE
    negatives: str = "hard"
    question: bool = True
    positives: str = "samples"
    guided: Sequence[str] = ()
    fact_swap: bool = False
    validation: Sequence[str] = ()
    select_on: str = "triplets"
    bf16: bool = False
    pooling: str = "all"
    margin: float = 0.2
    lr: float = 2e-5
    epochs: int = 30
    batch_size: int = 32
    patience: int = 3
    early_stopping: bool = True
    stop_after_epoch: int | None = None
    warmup_ratio: float = 0.1
    val_fraction: float = 0.1
    val_triplets: int = 1
    seed: int = 0
    max_length: int | None = None
    device: str | None = None
    overwrite: bool = False
    progress: bool = True
    command: list[str] = field(default_factory=list)

    def check(self) -> None:
        """ValueError naming the first bad option."""
        from semuq_eval.operators.pooling import POOLINGS

        if self.negatives not in NEGATIVES:
            raise ValueError(f"negatives must be one of {NEGATIVES}, got {self.negatives!r}")
        if self.positives not in POSITIVES:
            raise ValueError(f"positives must be one of {POSITIVES}, got {self.positives!r}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if self.select_on not in SELECT_ON:
            raise ValueError(f"select_on must be one of {SELECT_ON}, got {self.select_on!r}")
        if self.select_on == "auroc" and not self.validation:
            raise ValueError(
                "select_on='auroc' scores held-out questions with their greedy verdicts: pass validation files"
            )
        if self.negatives != "hard" and (self.positives != "samples" or self.guided or self.fact_swap):
            raise ValueError("mined texts (positives, guided, fact_swap) are drawn with hard negatives only")
        for name in ("epochs", "batch_size", "patience"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.stop_after_epoch is not None and not 1 <= int(self.stop_after_epoch) <= int(self.epochs):
            raise ValueError(
                f"stop_after_epoch must be in [1, epochs={self.epochs}], got {self.stop_after_epoch}"
            )
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")
        if not self.margin >= 0:
            raise ValueError(f"margin must be >= 0, got {self.margin}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        if int(self.val_triplets) < 1:
            raise ValueError(f"val_triplets must be at least 1, got {self.val_triplets}")
        if not 0.0 < self.val_fraction < 1.0:
            raise ValueError(f"val_fraction must be in (0, 1), got {self.val_fraction}")


def native_cpu_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX-512 BF16 or AMX), as oneDNN reports it."""
    import torch

    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def check_bf16(config: TrainingConfig) -> None:
    """ValueError for ``bf16`` on a CPU without native bfloat16: autocast would emulate it, many times slower
    than float32 (docs/training-data.md has the figures)."""
    if not config.bf16:
        return
    import torch

    on_cpu = config.device == "cpu" or (config.device is None and not torch.cuda.is_available())
    if on_cpu and not native_cpu_bf16():
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
