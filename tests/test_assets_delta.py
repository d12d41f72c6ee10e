"""The compact encoding of a fine-tuned encoder (semuq_eval/assets/delta.py): round trip, bounds, bytes, errors."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
import torch

from semuq_eval.assets.delta import DELTA_FORMAT, decode_delta, encode_delta, read_delta, write_delta
from tests.fixtures.tiny_encoders import tiny_st_encoder, tiny_wordpiece_dir  # noqa: F401  (fixtures)


def _weights(seed: int = 0) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """A base and a fine-tune of it: every matrix moved by about 1%, one row untouched, vectors moved too."""
    g = torch.Generator().manual_seed(seed)
    base = {
        "emb": torch.randn(50, 8, generator=g),
        "w": torch.randn(8, 8, generator=g),
        "b": torch.randn(8, generator=g),
    }
    trained = {k: v + 0.01 * torch.randn(v.shape, generator=g) for k, v in base.items()}
    trained["emb"][3] = base["emb"][3]  # a word the training never saw
    return trained, base


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_decoding_is_within_half_a_step_of_every_row(bits):
    trained, base = _weights()
    decoded = decode_delta(encode_delta(trained, base, bits=bits), base)
    levels = 2 ** (bits - 1) - 1
    for name, t in trained.items():
        err = (decoded[name] - t).abs()
        if t.ndim == 1:
            assert float(err.max()) < 1e-6  # vectors are kept exactly (float32)
            continue
        step = (t - base[name]).abs().amax(dim=1) / levels
        assert bool((err <= step[:, None] / 2 + 1e-6).all())
    assert torch.equal(decoded["emb"][3], base["emb"][3])  # an unmoved row decodes to the base exactly


def test_more_bits_are_closer():
    trained, base = _weights(1)
    errors = [
        float(
            max(
                (decode_delta(encode_delta(trained, base, bits=b), base)[k] - trained[k]).abs().max()
                for k in trained
            )
        )
        for b in (2, 4, 8)
    ]
    assert errors[0] > errors[1] > errors[2]


def test_the_file_round_trips_with_the_same_bytes_each_time(tmp_path):
    trained, base = _weights()
    arrays = encode_delta(trained, base)
    # safetensors writes its metadata in hash-map order, which changes from one call to the next: eight writes
    # would differ with odds 1 - 2**-7 if the header were not sorted; no timestamp in the gzip header either
    meta = {"base": "tiny", "bits": 4, "note": "caf\u00e9"}  # non-ASCII metadata keeps its length when sorted
    files = [write_delta(tmp_path / f"{i}.safetensors.gz", arrays, meta) for i in range(8)]
    assert len({f.read_bytes() for f in files}) == 1
    read, read_meta = read_delta(files[0])
    assert read_meta == meta and sorted(read) == sorted(arrays)
    for k in arrays:
        np.testing.assert_array_equal(read[k], arrays[k])
    assert read["w.q"].dtype == np.int8 and read["w.s"].dtype == np.float32


def test_a_wrong_file_or_base_is_named(tmp_path):
    bad = tmp_path / "bad.safetensors.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(ValueError, match=r"bad.safetensors.gz: not a weight delta"):
        read_delta(bad)
    other = tmp_path / "other.safetensors.gz"
    from safetensors.numpy import save

    other.write_bytes(gzip.compress(save({"x": np.zeros(1, np.float32)}, metadata={"format": "x"}), mtime=0))
    with pytest.raises(ValueError, match=rf"format 'x', expected '{DELTA_FORMAT}'"):
        read_delta(other)
    trained, base = _weights()
    with pytest.raises(ValueError, match="tensor 'w': not in the base model"):
        encode_delta(trained, {k: v for k, v in base.items() if k != "w"})
    with pytest.raises(ValueError, match="bits must be in 2..8"):
        encode_delta(trained, base, bits=1)


def test_a_compact_folder_rebuilds_an_encoder_that_embeds_like_the_fine_tune(tiny_st_encoder, tmp_path):  # noqa: F811
    """The fine-tune's folder -> its compact form (the delta and the other files) -> a folder sentence-transformers
    loads, whose embeddings agree with the fine-tune's (8 bits: cosine > 0.9999)."""
    import shutil

    from safetensors.torch import load_file, save_file
    from sentence_transformers import SentenceTransformer

    from semuq_eval.assets.delta import DELTA_FILE, build_from_compact, write_compact

    trained = tmp_path / "trained"
    shutil.copytree(tiny_st_encoder, trained)
    weights = load_file(str(trained / "model.safetensors"))
    g = torch.Generator().manual_seed(0)
    save_file(
        {k: v + 0.01 * v.abs().mean() * torch.randn(v.shape, generator=g) for k, v in weights.items()},
        str(trained / "model.safetensors"),
    )
    (trained / "semuq_training.json").write_text('{"format": "x"}')
    compact = write_compact(trained, tiny_st_encoder, tmp_path / "compact", bits=8, metadata={"base": "tiny"})
    assert (compact / DELTA_FILE).is_file() and not (compact / "model.safetensors").exists()
    assert (compact / "semuq_training.json").read_text() == '{"format": "x"}'
    rebuilt = tmp_path / "rebuilt"
    meta = build_from_compact(compact, tiny_st_encoder, rebuilt)
    assert meta["base"] == "tiny" and meta["bits"] == 8 and len(meta["decoded_sha256"]) == 64
    texts = ["the capital of france", "paris", "a river in africa", "the nile"]
    a = SentenceTransformer(str(trained), device="cpu").encode(texts, normalize_embeddings=True)
    b = SentenceTransformer(str(rebuilt), device="cpu").encode(texts, normalize_embeddings=True)
    base = SentenceTransformer(str(tiny_st_encoder), device="cpu").encode(texts, normalize_embeddings=True)
    assert float((a * b).sum(axis=1).min()) > 0.9999
    assert float(np.abs(a - base).max()) > 10 * float(np.abs(a - b).max())  # the training is kept, not lost
    build_from_compact(compact, tiny_st_encoder, tmp_path / "again")
    assert (tmp_path / "again" / "model.safetensors").read_bytes() == (
        rebuilt / "model.safetensors"
    ).read_bytes()


def test_a_compact_folder_on_another_base_is_refused(tiny_st_encoder, tmp_path):  # noqa: F811
    """The delta pins its base's weights and the decoded weights: another base, or a decoding that gives other
    bytes, is an error naming the file, not a silently different operator."""
    import shutil

    from safetensors.torch import load_file, save_file

    from semuq_eval.assets.delta import DELTA_FILE, build_from_compact, read_delta, write_compact, write_delta

    trained = tmp_path / "trained"
    shutil.copytree(tiny_st_encoder, trained)
    weights = load_file(str(trained / "model.safetensors"))
    save_file({k: v * 1.01 for k, v in weights.items()}, str(trained / "model.safetensors"))
    compact = write_compact(trained, tiny_st_encoder, tmp_path / "compact")
    other = tmp_path / "other"
    shutil.copytree(tiny_st_encoder, other)
    save_file({k: v * 0.5 for k, v in weights.items()}, str(other / "model.safetensors"))
    with pytest.raises(
        ValueError, match=r"other/model.safetensors: the base's weights have sha256 \w+, the compact"
    ):
        build_from_compact(compact, other, tmp_path / "out")
    arrays, meta = read_delta(compact / DELTA_FILE)
    write_delta(compact / DELTA_FILE, arrays, {**meta, "decoded_sha256": "0" * 64})
    with pytest.raises(
        ValueError, match=rf"{DELTA_FILE}: the decoded weights have sha256 \w+, the compact operator pins 0+"
    ):
        build_from_compact(compact, tiny_st_encoder, tmp_path / "out2")
