"""The shipped trained operator: its compact form in the package, and the recipe and data it is retrained from.

It ships as a weight delta from its base (:mod:`semuq_eval.assets.delta`) in ``compact/<name>/``, which the
``compact-operator`` asset decodes in seconds to the same bytes everywhere. The full fine-tune it encodes
(parameter ``full``) is a ``trained-operator`` asset, retrained from a recipe under ``training_data/``
(package data, with the data it reads) naming the training files, reference-guided files, held-out files that
select the epoch, the backbone asset and the ``train-operator`` options::

    {"backbone": "all-minilm-l6-v2",
     "train": ["natural-*.jsonl.gz"], "guided": ["guided-*.jsonl.gz"], "validation": ["natural-00250-00500.jsonl.gz"],
     "options": {"pooling": "answer", "epochs": 30, "select_on": "auroc", "stop_after_epoch": 11, "seed": 0},
     "selected": "how this configuration was chosen"}

Globs are relative to the recipe; validation files are never trained on; ``stop_after_epoch`` replays an
earlier selection. The recipe and its files, with sha256, are the asset's sources (:func:`recipe_sources`), so
new data rebuilds it; training (:func:`semuq_eval.training.shipped.build_trained_operator`) is seeded."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from semuq_eval.assets.cache import file_sha256
from semuq_eval.assets.catalogue import Asset
from semuq_eval.jsonio import read_json

__all__ = [
    "COMPACT_OPERATORS",
    "TRAINING_DATA",
    "compact_path",
    "compact_sources",
    "load_recipe",
    "recipe_files",
    "recipe_path",
    "recipe_sources",
    "trained_pooling",
]

TRAINING_DATA = Path(__file__).resolve().parent / "training_data"
"""The committed training data and the recipes (package data)."""
COMPACT_OPERATORS = Path(__file__).resolve().parent / "compact"
"""The trained operators shipped as weight deltas, one folder each (package data)."""

_KEYS = {"backbone", "train", "guided", "validation", "options", "selected"}


def recipe_path(asset: Asset) -> Path:
    """The recipe file of a ``trained-operator`` asset."""
    return TRAINING_DATA / asset.params["recipe"]


def load_recipe(path: str | os.PathLike) -> dict[str, Any]:
    """The recipe at ``path``, checked.

    Raises ValueError naming the file and the field: unknown keys, a missing backbone or training set, wrong
    list types."""
    path = Path(path)
    recipe = read_json(path)
    if not isinstance(recipe, dict):
        raise ValueError(f"{path}: a recipe is a JSON object")
    unknown = sorted(set(recipe) - _KEYS)
    if unknown:
        raise ValueError(f"{path}: unknown field(s) {unknown}; known: {sorted(_KEYS)}")
    if not isinstance(recipe.get("backbone"), str) or not recipe.get("train"):
        raise ValueError(
            f"{path}: fields 'backbone' (an asset name or folder) and 'train' (globs) are required"
        )
    for key in ("train", "guided", "validation"):
        value = recipe.setdefault(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{path}: field {key!r} must be a list of globs")
    if not isinstance(recipe.setdefault("options", {}), dict):
        raise ValueError(f"{path}: field 'options' must be an object of train-operator options")
    return recipe


def trained_pooling(name: str) -> str:
    """The pooling (``"all"`` or ``"answer"``) that the recipe of the trained operator asset ``name`` (or of the
    fine-tune a compact one encodes) trains with; its untrained counterpart must pool the same way for a
    comparison to measure training alone. Raises KeyError for an asset that is not a trained operator."""
    from semuq_eval.assets.catalogue import ASSETS

    asset = ASSETS.get(name)
    if asset is not None and asset.builder == "compact-operator":
        asset = ASSETS.get(asset.params["full"])  # the compact form pools as the fine-tune it encodes
    if asset is None or asset.builder != "trained-operator":
        raise KeyError(f"{name!r} is not a trained operator asset")
    return str(load_recipe(recipe_path(asset))["options"].get("pooling", "all"))


def recipe_files(path: str | os.PathLike) -> dict[str, list[Path]]:
    """The files each part of the recipe at ``path`` reads (``train`` without the ``validation`` files).

    Raises FileNotFoundError for a glob that matches no file."""
    path = Path(path)
    recipe = load_recipe(path)
    out: dict[str, list[Path]] = {}
    for key in ("train", "guided", "validation"):
        files: list[Path] = []
        for pattern in recipe[key]:
            hits = sorted(path.parent.glob(pattern))
            if not hits:
                raise FileNotFoundError(f"{path}: {key} pattern {pattern!r} matches no file in {path.parent}")
            files += [h for h in hits if h not in files]
        out[key] = files
    out["train"] = [f for f in out["train"] if f not in out["validation"]]
    return out


def recipe_sources(asset: Asset) -> list[dict[str, str]]:
    """The recipe and every training-data file it reads, with their sha256 (the asset's sources)."""
    path = recipe_path(asset)
    files = [path, *(f for fs in recipe_files(path).values() for f in fs)]
    return [{"file": f.relative_to(TRAINING_DATA).as_posix(), "sha256": file_sha256(f)} for f in files]


def compact_path(asset: Asset) -> Path:
    """The package folder of a ``compact-operator`` asset."""
    return COMPACT_OPERATORS / asset.params["compact"]


def compact_sources(asset: Asset) -> list[dict[str, str]]:
    """Every file of a compact operator's folder with its sha256 (the asset's sources)."""
    folder = compact_path(asset)
    files = sorted(f for f in folder.rglob("*") if f.is_file())
    if not files:
        raise FileNotFoundError(f"{asset.name}: no compact operator in {folder}")
    return [{"file": f.relative_to(COMPACT_OPERATORS).as_posix(), "sha256": file_sha256(f)} for f in files]
