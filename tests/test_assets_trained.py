"""The trained-operator asset: `semuq-eval assets --only enc-trained` rebuilds the shipped operator from the
committed training data and the recipe beside it; seeded (the same bytes twice on one machine), rebuilt when the
data or the recipe change, and a broken recipe is a clear error. Trained here on the tiny encoder and tiny data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semuq_eval import assets
from semuq_eval.assets import ASSETS, Asset, AssetError, trained
from semuq_eval.assets import cache as asset_cache
from semuq_eval.training.data_files import export_store
from semuq_eval.training.shipped import build_trained_operator
from tests.fixtures.tiny_encoders import (  # noqa: F401  (pytest fixtures)
    tiny_st_encoder,
    tiny_wordpiece_dir,
)
from tests.fixtures.training_stores import guided_rows, natural_rows, write_store


@pytest.fixture
def data_dir(tmp_path, monkeypatch, tiny_st_encoder) -> Path:  # noqa: F811
    """A training_data folder with natural, guided and held-out files, a recipe on the tiny encoder, and the asset
    ``enc-tiny`` registered for it."""
    root = tmp_path / "training_data"
    folder = root / "tiny"
    rows = natural_rows(10)
    for i in range(0, 10, 2):
        rows[i][2][1] = (f"Author {i} wrote it.", 1)
    export_store(write_store(tmp_path / "n" / "llm", rows[:8]), folder / "natural-0.jsonl.gz")
    export_store(write_store(tmp_path / "v" / "llm", rows[8:]), folder / "natural-1.jsonl.gz")
    export_store(
        write_store(tmp_path / "g" / "llm", guided_rows(10), task="semuq_nqopen_train_guided"),
        folder / "guided-0.jsonl.gz",
    )
    recipe = {
        "backbone": str(tiny_st_encoder),
        "train": ["natural-*.jsonl.gz"],
        "guided": ["guided-*.jsonl.gz"],
        "validation": ["natural-1.jsonl.gz"],
        "options": {"pooling": "answer", "epochs": 2, "batch_size": 4, "seed": 0, "device": "cpu"},
        "selected": "a test",
    }
    (folder / "enc.json").write_text(json.dumps(recipe), encoding="utf-8")
    monkeypatch.setattr(trained, "TRAINING_DATA", root)
    asset = Asset(
        "enc-tiny",
        "sentence-encoder",
        (),
        "trained-operator",
        "test",
        "MIT",
        1,
        params={"recipe": "tiny/enc.json"},
        default=False,
    )
    monkeypatch.setitem(ASSETS, "enc-tiny", asset)
    monkeypatch.setenv("SEMUQ_EVAL_CACHE", str(tmp_path / "cache"))
    return folder


def _weights(path: Path) -> dict[str, str]:
    manifest = json.loads((path / ".semuq-asset.json").read_text())
    return {
        k: v["sha256"] for k, v in manifest["files"].items() if not k.endswith(".json") and k != "README.md"
    }


def test_the_trained_operator_is_rebuilt_from_the_recipe_the_same_bytes_every_time(data_dir):
    path = assets.prepare(["enc-tiny"], progress=False, train=build_trained_operator)["enc-tiny"]
    manifest = json.loads((path / ".semuq-asset.json").read_text())
    assert manifest["recipe"]["selected"] == "a test"
    assert manifest["training"]["counts"]["train_questions"] == 8  # the validation file is never trained on
    assert manifest["training"]["counts"]["added_guided"] == 16
    assert [s["file"] for s in manifest["sources"]] == [
        "tiny/enc.json",
        "tiny/natural-0.jsonl.gz",
        "tiny/guided-0.jsonl.gz",
        "tiny/natural-1.jsonl.gz",
    ]
    card = json.loads((path / "semuq_training.json").read_text())
    assert card["hyperparameters"]["pooling"] == "answer"
    first = _weights(path)
    assert any(k.endswith(".safetensors") for k in first)
    assert assets.locate("enc-tiny") == path
    again = assets.prepare(["enc-tiny"], progress=False, train=build_trained_operator, force=True)["enc-tiny"]
    assert _weights(again) == first  # seeded: byte-identical on the same machine


def test_more_data_or_another_recipe_rebuilds_it(data_dir):
    path = assets.prepare(["enc-tiny"], progress=False, train=build_trained_operator)["enc-tiny"]
    asset = ASSETS["enc-tiny"]
    assert asset_cache._check(path, asset, deep=False) is None
    (data_dir / "natural-0.jsonl.gz").replace(data_dir / "natural-00.jsonl.gz")
    export_store(
        write_store(data_dir.parent.parent / "x" / "llm", natural_rows(3)), data_dir / "natural-2.jsonl.gz"
    )
    assert "other sources" in asset_cache._check(path, asset, deep=False)


class _Killed(Exception):
    """Stands for a kill in the middle of an epoch."""


def test_a_killed_build_resumes_from_its_epoch_checkpoints(data_dir, monkeypatch, tmp_path):
    from semuq_eval.training import trainer

    first = _weights(assets.prepare(["enc-tiny"], progress=False, train=build_trained_operator)["enc-tiny"])
    original = trainer._EpochRows.__call__

    def killed_in_epoch_2(self, batch):
        if self.in_epoch and self.epoch == 1:
            raise _Killed
        return original(self, batch)

    monkeypatch.setattr(trainer._EpochRows, "__call__", killed_in_epoch_2)
    with pytest.raises(AssetError, match="_Killed"):
        assets.prepare(["enc-tiny"], progress=False, train=build_trained_operator, force=True)
    assert list((tmp_path / "cache" / "training" / ".enc-tiny.checkpoints").glob("checkpoint-*"))
    monkeypatch.setattr(trainer._EpochRows, "__call__", original)
    path = assets.prepare(["enc-tiny"], progress=False, train=build_trained_operator, force=True)["enc-tiny"]
    manifest = json.loads((path / ".semuq-asset.json").read_text())
    assert manifest["training"]["resumed_from"].startswith("checkpoint-")
    assert _weights(path) == first  # the resumed build trains the same bytes
    assert not list((tmp_path / "cache" / "training").iterdir())  # nothing left behind


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"epochs_typo": 3}, "unknown field"),
        ({"train": []}, "'train'"),
        ({"guided": ["nothing-*.jsonl.gz"]}, "matches no file"),
        ({"validation": "natural-1.jsonl.gz"}, "must be a list"),
    ],
)
def test_a_broken_recipe_is_a_clear_error(data_dir, change, message):
    recipe = json.loads((data_dir / "enc.json").read_text())
    (data_dir / "enc.json").write_text(json.dumps({**recipe, **change}), encoding="utf-8")
    with pytest.raises((AssetError, ValueError, FileNotFoundError), match=message):
        assets.prepare(["enc-tiny"], progress=False, train=build_trained_operator)


def test_without_a_train_function_a_trained_operator_is_not_built_but_a_prepared_one_is_found(data_dir):
    with pytest.raises(AssetError, match="built by training.*build_trained_operator") as err:
        assets.prepare(["enc-tiny"], progress=False)
    assert err.value.prepared == {}
    with pytest.raises(FileNotFoundError, match="not prepared"):
        assets.locate("enc-tiny")
    path = assets.prepare(["enc-tiny"], progress=False, train=build_trained_operator)["enc-tiny"]
    assert assets.prepare(["enc-tiny"], progress=False) == {"enc-tiny": path}  # verified, not rebuilt


def test_the_committed_recipe_reads_committed_files_only():
    files = trained.recipe_files(trained.TRAINING_DATA / ASSETS["enc-trained-full"].params["recipe"])
    assert files["train"] and files["validation"]
    assert not set(files["train"]) & set(files["validation"])
    assert all(f.is_relative_to(trained.TRAINING_DATA) for fs in files.values() for f in fs)
    # the guided answers of the held-out questions are never trained on either
    ranges = {f.name.split("-", 1)[1] for f in files["validation"]}
    assert files["guided"] and not {f.name.split("-", 1)[1] for f in files["guided"]} & ranges


def test_the_untrained_counterpart_pools_as_the_committed_recipe_trains():
    assert trained.trained_pooling("enc-trained-full") == "answer"
    assert trained.trained_pooling("enc-trained") == "answer"  # the compact form pools as the fine-tune
    with pytest.raises(KeyError, match="not a trained operator asset"):
        trained.trained_pooling("all-minilm-l6-v2")


@pytest.fixture
def compact_asset(data_dir, tmp_path, monkeypatch, tiny_st_encoder) -> Asset:  # noqa: F811
    """``enc-tiny`` trained, then shipped as a compact operator ``enc-tiny-compact`` on the tiny encoder."""
    from semuq_eval.assets.delta import write_compact

    full = assets.prepare(["enc-tiny"], progress=False, train=build_trained_operator)["enc-tiny"]
    monkeypatch.setattr(trained, "COMPACT_OPERATORS", tmp_path / "compact")
    write_compact(full, tiny_st_encoder, tmp_path / "compact" / "enc-tiny", bits=4, metadata={"base": "tiny"})
    asset = Asset(
        "enc-tiny-compact",
        "sentence-encoder",
        (),
        "compact-operator",
        "test",
        "MIT",
        1,
        params={"compact": "enc-tiny", "base": str(tiny_st_encoder), "full": "enc-tiny"},
        default=False,
    )
    monkeypatch.setitem(ASSETS, asset.name, asset)
    return asset


def test_a_compact_operator_is_decoded_without_training_and_pools_as_its_fine_tune(compact_asset):
    import hashlib

    from sentence_transformers import SentenceTransformer

    path = assets.prepare([compact_asset.name], progress=False)[compact_asset.name]  # no train function
    manifest = json.loads((path / ".semuq-asset.json").read_text())
    weights = (path / "model.safetensors").read_bytes()
    assert manifest["compact"]["decoded_sha256"] == hashlib.sha256(weights).hexdigest()
    assert manifest["compact"]["bits"] == 4 and manifest["compact"]["base"] == "tiny"
    assert [s["file"] for s in manifest["sources"]][0].startswith("enc-tiny/")
    full = assets.locate("enc-tiny")
    assert json.loads((path / "semuq_training.json").read_text()) == json.loads(
        (full / "semuq_training.json").read_text()
    )  # the training record travels with the weights
    texts = ["who wrote it [SEP] Author 2 wrote it.", "who wrote it [SEP] nobody"]
    a = SentenceTransformer(str(full), device="cpu").encode(texts, normalize_embeddings=True)
    b = SentenceTransformer(str(path), device="cpu").encode(texts, normalize_embeddings=True)
    assert float((a * b).sum(axis=1).min()) > 0.999
    assert trained.trained_pooling(compact_asset.name) == "answer"
    again = assets.prepare([compact_asset.name], progress=False, force=True)[compact_asset.name]
    assert (again / "model.safetensors").read_bytes() == weights


def test_a_changed_or_tampered_compact_operator_is_rebuilt_or_refused(compact_asset, tmp_path):
    from semuq_eval.assets.delta import DELTA_FILE, read_delta, write_delta

    path = assets.prepare([compact_asset.name], progress=False)[compact_asset.name]
    delta = tmp_path / "compact" / "enc-tiny" / DELTA_FILE
    arrays, meta = read_delta(delta)
    write_delta(delta, arrays, {**meta, "decoded_sha256": "f" * 64})
    assert "other sources" in asset_cache._check(path, compact_asset, deep=False)
    with pytest.raises(
        AssetError, match=rf"enc-tiny-compact: .*{DELTA_FILE}: the decoded weights have sha256"
    ):
        assets.prepare([compact_asset.name], progress=False)
