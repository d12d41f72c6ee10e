"""A fine-tuned encoder as a compact difference from its base: what ships in the package instead of the full weights.

Fine-tuning moves weights little, so ``trained - base`` is small and compresses well: each matrix's difference
is stored row by row in ``bits``-bit integers with a float32 scale per row (``q = round(d / s)``,
``s = max|d_row| / (2**(bits-1) - 1)``), vectors exactly in float32; decoding is ``base + q * s``. The file is
gzip-compressed safetensors with a fixed header (same weights, same bytes); ``python -m
tools.encode_operator`` measures the decoded encoder against the full fine-tune (docs/training.md, "The
shipped operator: compact and full").

Examples
--------
>>> import torch
>>> base = {"w": torch.zeros(2, 3), "b": torch.zeros(3)}
>>> trained = {"w": torch.tensor([[0.0, 0.7, -0.7], [0.0, 0.0, 0.0]]), "b": torch.tensor([0.1, 0.2, 0.3])}
>>> decoded = decode_delta(encode_delta(trained, base, bits=4), base)
>>> decoded["w"].tolist(), [round(x, 6) for x in decoded["b"].tolist()]
([[0.0, 0.699999988079071, -0.699999988079071], [0.0, 0.0, 0.0]], [0.1, 0.2, 0.3])
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from semuq_eval.durable import replace_file

__all__ = [
    "DELTA_FILE",
    "DELTA_FORMAT",
    "build_from_compact",
    "decode_delta",
    "encode_delta",
    "read_delta",
    "write_compact",
    "write_delta",
]

DELTA_FORMAT = "semuq-weight-delta/1"
_META = "__metadata__"


def encode_delta(
    trained: Mapping[str, Any], base: Mapping[str, Any], *, bits: int = 4
) -> dict[str, np.ndarray]:
    """The arrays of ``trained - base`` (module docstring): ``<name>.q`` (int8, values in ``[-L, L]``, ``L =
    2**(bits-1) - 1``) and ``<name>.s`` (float32 row scales) per matrix, ``<name>.d`` (float32) per vector.
    Raises ValueError for ``bits`` outside 2..8, or tensors of ``trained`` missing from ``base`` or of another
    shape."""
    if not 2 <= int(bits) <= 8:
        raise ValueError(f"bits must be in 2..8, got {bits}")
    levels = 2 ** (int(bits) - 1) - 1
    out: dict[str, np.ndarray] = {}
    for name in sorted(trained):
        t = _float32(trained[name])
        if name not in base or tuple(_float32(base[name]).shape) != t.shape:
            raise ValueError(f"tensor {name!r}: not in the base model, or of another shape")
        d = t - _float32(base[name])
        if d.ndim != 2:
            out[f"{name}.d"] = d
            continue
        scale = (np.abs(d).max(axis=1) / levels).astype(np.float32)
        q = np.zeros(d.shape, dtype=np.int8)
        moved = scale > 0
        q[moved] = np.clip(np.rint(d[moved] / scale[moved, None]), -levels, levels).astype(np.int8)
        out[f"{name}.q"], out[f"{name}.s"] = q, scale
    return out


def decode_delta(arrays: Mapping[str, np.ndarray], base: Mapping[str, Any]) -> dict[str, Any]:
    """The weights ``base + delta`` (float32 torch tensors) of every tensor the delta holds."""
    import torch

    out = {}
    for key in sorted(arrays):
        name, kind = key.rsplit(".", 1)
        if kind == "s":
            continue
        b = _float32(base[name])
        if kind == "d":
            w = b + arrays[key]
        else:
            w = b + arrays[key].astype(np.float32) * arrays[f"{name}.s"][:, None]
        out[name] = torch.from_numpy(np.ascontiguousarray(w, dtype=np.float32))
    return out


def write_delta(
    path: str | os.PathLike, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]
) -> Path:
    """``arrays`` as gzip-compressed safetensors (fixed header: the same arrays give the same bytes), with
    ``metadata`` (JSON) and the format in the safetensors header."""
    from safetensors.numpy import save

    meta = {"format": DELTA_FORMAT, "metadata": json.dumps(dict(metadata), sort_keys=True)}
    payload = _sorted_header(
        save({k: np.ascontiguousarray(v) for k, v in sorted(arrays.items())}, metadata=meta)
    )
    return replace_file(path, gzip.compress(payload, compresslevel=9, mtime=0))


def _sorted_header(payload: bytes) -> bytes:
    """``payload`` with its safetensors header's keys sorted: safetensors writes ``__metadata__`` in hash-map order,
    which differs from call to call. The same JSON reordered and space-padded to the header's length, so no
    offset moves; a header that would not fit is an error, never a corrupt file."""
    n = int.from_bytes(payload[:8], "little")
    header = json.dumps(
        json.loads(payload[8 : 8 + n]), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    if len(header) > n:
        raise ValueError(f"the sorted safetensors header takes {len(header)} bytes, more than its {n}")
    return payload[:8] + header.ljust(n, b" ") + payload[8 + n :]


def read_delta(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``(arrays, metadata)`` of a file :func:`write_delta` wrote; ValueError naming the file otherwise."""
    from safetensors.numpy import load

    path = Path(path)
    try:
        payload = gzip.decompress(path.read_bytes())
        arrays = load(payload)
        header_len = int.from_bytes(payload[:8], "little")
        header = json.loads(payload[8 : 8 + header_len]).get(_META) or {}
    except (OSError, EOFError, ValueError, gzip.BadGzipFile) as err:
        raise ValueError(f"{path}: not a weight delta ({type(err).__name__}: {err})") from None
    if header.get("format") != DELTA_FORMAT:
        raise ValueError(f"{path}: format {header.get('format')!r}, expected {DELTA_FORMAT!r}")
    return arrays, json.loads(header.get("metadata") or "{}")


def _float32(tensor: Any) -> np.ndarray:
    """A torch tensor or an array as a float32 numpy array."""
    if hasattr(tensor, "detach"):
        tensor = tensor.detach().to("cpu").float().numpy()
    return np.asarray(tensor, dtype=np.float32)


WEIGHTS = "model.safetensors"
DELTA_FILE = "weights.delta.safetensors.gz"
"""In a compact operator folder: the weight delta; every other file of the encoder folder is kept beside it as it is
(gzip-compressed when over 100 kB, e.g. ``tokenizer.json.gz``), its weights left out."""
_COMPRESS_OVER = 100_000


def write_compact(
    trained_dir: str | os.PathLike,
    base_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    bits: int = 4,
    metadata: Mapping[str, Any] | None = None,
) -> Path:
    """The compact form of the sentence-encoder folder ``trained_dir`` (fine-tuned from ``base_dir``) in
    ``out_dir``: :data:`DELTA_FILE` and the folder's other files (module docstring). The delta's metadata pins the
    sha256 of the base's weights and of the decoded weights, which :func:`build_from_compact` checks."""
    from safetensors.torch import load_file

    trained_dir, base_dir, out = Path(trained_dir), Path(base_dir), Path(out_dir)
    base = load_file(str(base_dir / WEIGHTS))
    arrays = encode_delta(load_file(str(trained_dir / WEIGHTS)), base, bits=bits)
    pins = {
        "bits": int(bits),
        "base_sha256": hashlib.sha256((base_dir / WEIGHTS).read_bytes()).hexdigest(),
        "decoded_sha256": hashlib.sha256(_weights_file(decode_delta(arrays, base))).hexdigest(),
    }
    out.mkdir(parents=True, exist_ok=True)
    write_delta(out / DELTA_FILE, arrays, {**dict(metadata or {}), **pins})
    _copy_files(trained_dir, out, lambda name: name != WEIGHTS and not name.startswith("."), pack=True)
    return out


def _copy_files(src: Path, out: Path, keep: Callable[[str], bool], *, pack: bool) -> None:
    """The files of ``src`` whose names ``keep`` accepts, copied under ``out``: those over :data:`_COMPRESS_OVER`
    bytes gzip-compressed to ``<name>.gz`` when ``pack``, else the ``.gz`` ones decompressed."""
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if not path.is_file() or not keep(rel.name):
            continue
        target, data = out / rel, path.read_bytes()
        target.parent.mkdir(parents=True, exist_ok=True)
        if pack and len(data) > _COMPRESS_OVER:
            replace_file(target.with_name(target.name + ".gz"), gzip.compress(data, compresslevel=9, mtime=0))
        elif not pack and rel.name.endswith(".gz"):
            replace_file(target.with_name(rel.name[:-3]), gzip.decompress(data))
        else:
            replace_file(target, data)


def _weights_file(weights: Mapping[str, Any]) -> bytes:
    """The bytes of ``model.safetensors`` holding ``weights`` (what :func:`build_from_compact` writes)."""
    from safetensors.torch import save

    return save(dict(weights), metadata={"format": "pt"})


def build_from_compact(
    compact_dir: str | os.PathLike, base_dir: str | os.PathLike, out_dir: str | os.PathLike
) -> dict[str, Any]:
    """Write the sentence-encoder folder a compact folder encodes to ``out_dir``: its files (decompressed) and the
    weights decoded onto ``base_dir``'s (:func:`decode_delta`). Returns the delta's metadata. Raises
    ValueError naming the file when the base's or the decoded weights do not have the sha256 the delta pins."""
    from safetensors.torch import load_file

    compact, out = Path(compact_dir), Path(out_dir)
    arrays, meta = read_delta(compact / DELTA_FILE)
    base_file = Path(base_dir) / WEIGHTS
    _check_pin(base_file.read_bytes(), meta.get("base_sha256"), f"{base_file}: the base's weights")
    payload = _weights_file(decode_delta(arrays, load_file(str(base_file))))
    _check_pin(payload, meta.get("decoded_sha256"), f"{compact / DELTA_FILE}: the decoded weights")
    out.mkdir(parents=True, exist_ok=True)
    replace_file(out / WEIGHTS, payload)
    _copy_files(compact, out, lambda name: name != DELTA_FILE, pack=False)
    return meta


def _check_pin(data: bytes, expected: str | None, what: str) -> None:
    """ValueError when ``expected`` is given and is not the sha256 of ``data``."""
    got = hashlib.sha256(data).hexdigest()
    if expected is not None and got != expected:
        raise ValueError(f"{what} have sha256 {got}, the compact operator pins {expected}")
