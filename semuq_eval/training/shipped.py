"""The shipped trained operator's full fine-tune (the ``enc-trained-full`` asset): trained from the committed data
by its recipe (what ships, ``enc-trained``, is its compact form: :mod:`semuq_eval.assets.delta`).

The asset cache (:mod:`semuq_eval.assets`) imports no training code: ``semuq-eval assets`` hands
:func:`build_trained_operator` to :func:`~semuq_eval.assets.prepare` as ``train``, which calls it for an asset of
recipe ``trained-operator`` that needs building.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from semuq_eval import assets
from semuq_eval.assets import ASSETS, Asset, prepare
from semuq_eval.assets.trained import load_recipe, recipe_files, recipe_path

__all__ = ["build_trained_operator"]


def build_trained_operator(
    asset: Asset, out: Path, *, cache_dir: str | os.PathLike | None, progress: bool
) -> dict[str, Any]:
    """Train the asset's operator into ``out`` (an empty folder) with its recipe; returns facts for the manifest.

    An asset backbone is prepared first (:func:`~semuq_eval.assets.prepare`). The operator trains in
    ``<cache>/training/<asset>``, the same folder on every call, so a killed build resumes from its epoch
    checkpoints (:mod:`semuq_eval.training.checkpoints`), and is then moved into ``out``."""
    from semuq_eval.training.config import TrainingConfig
    from semuq_eval.training.trainer import train_operator

    root = Path(cache_dir).expanduser() if cache_dir is not None else assets.cache_dir()
    training = root / "training" / asset.name
    path = recipe_path(asset)
    recipe = load_recipe(path)
    files = recipe_files(path)
    backbone = recipe["backbone"]
    if backbone in ASSETS:
        backbone = str(prepare([backbone], cache_dir=cache_dir, progress=progress)[backbone])
    config = TrainingConfig(
        stores=[str(f) for f in files["train"]],
        guided=[str(f) for f in files["guided"]],
        validation=[str(f) for f in files["validation"]],
        output=str(training),
        overwrite=True,
        backbone=backbone,
        progress=progress,
        command=["semuq-eval", "assets", "--only", asset.name],
        **recipe["options"],
    )
    record = train_operator(config)
    for item in training.iterdir():
        shutil.move(str(item), out / item.name)
    training.rmdir()
    return {
        "recipe": recipe,
        "training": {
            "counts": record["counts"],
            "validation": {
                k: record["validation"][k] for k in ("before_training", "best_epoch", "best_accuracy")
            },
            "deviations_from_paper": record["deviations_from_paper"],
            **{k: record["timing"][k] for k in ("train_seconds", "resumed_from", "torch_threads")},
        },
    }
