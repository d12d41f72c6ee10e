"""The two exceptions of ``semuq-eval assets``.

Kept apart so that every step (download, unpacking, builders, conversion) can raise them without importing the
others."""

from __future__ import annotations

from pathlib import Path


class AssetError(RuntimeError):
    """An asset could not be prepared.

    ``message`` names the asset or file; ``prepared`` maps the assets of the same
    :func:`~semuq_eval.assets.prepare` call that did succeed to their paths, so a caller can still use them."""

    def __init__(self, message: str, prepared: dict[str, Path] | None = None):
        super().__init__(message)
        self.prepared = dict(prepared or {})


class ChecksumError(AssetError):
    """A downloaded or reassembled file does not have its pinned sha256."""
