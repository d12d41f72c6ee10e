"""A local model folder's revision: what names the exact weights a run used when no hub commit does.

A local folder (an asset model, a trained operator) has no commit and the same path can hold other weights later, so its
revision is the sha256 of its ``config.json`` and weight files. That reads every byte, so callers compute it once per
loaded model (docs/speed.md)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["local_revision"]

WEIGHT_PATTERNS = ("*.safetensors", "*.bin")


def local_revision(model: str | os.PathLike) -> str | None:
    """``local-<16 hex>`` for a local model folder, None for anything else (a hub id).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "model.safetensors").write_bytes(b"weights")
    >>> local_revision(folder)
    'local-8dc0c4c3e902f6d9'
    >>> _ = (folder / "model.safetensors").write_bytes(b"other weights")
    >>> local_revision(folder) != 'local-8dc0c4c3e902f6d9', local_revision("org/hub-model")
    (True, None)
    """
    folder = Path(model).expanduser()
    if not folder.is_dir():
        return None
    h = hashlib.sha256((folder / "config.json").read_bytes() if (folder / "config.json").is_file() else b"")
    for f in (f for pattern in WEIGHT_PATTERNS for f in sorted(folder.glob(pattern))):
        h.update(f"{f.name}:".encode())
        with open(f, "rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
    return "local-" + h.hexdigest()[:16]
