"""The asset cache: where prepared assets live, their manifests, and how they are checked.

:func:`locate` checks an asset's manifest, sizes and sha256 at run time, hashing a file once per *stamp*
(size, mtime): verified stamps are kept in memory and in ``.<asset>.verified.json`` beside the folder (not on
a read-only cache), so only a file written since is hashed again (docs/offline.md).
:func:`~semuq_eval.assets.prepare` hashes every file before it skips an asset."""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from semuq_eval.assets.catalogue import ASSETS, Asset, _get_asset
from semuq_eval.assets.progress import _bar, _stream
from semuq_eval.jsonio import read_json, write_json

log = logging.getLogger(__name__)

MANIFEST = ".semuq-asset.json"
MANIFEST_FORMAT = 1

#: files verified by this process: path -> (size, mtime_ns, sha256) at verification
_VERIFIED: dict[Path, tuple[int, int, str]] = {}


def cache_dir() -> Path:
    """Root of the prepared assets.

    ``$SEMUQ_EVAL_CACHE``, else ``$XDG_CACHE_HOME/semuq-eval``, else ``~/.cache/semuq-eval``."""
    env = os.environ.get("SEMUQ_EVAL_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "semuq-eval"


def _root(explicit: str | os.PathLike | None) -> Path:
    return Path(explicit).expanduser() if explicit is not None else cache_dir()


def _asset_dir(root: Path, asset: Asset) -> Path:
    return root / asset.subdir / asset.name


def locate(name: str, *, cache_dir: str | os.PathLike | None = None) -> Path:
    """Path of a prepared asset, checked cheaply so that it can run before every evaluation.

    Manifest present, every file with its recorded size and sha256 (hashed only at an unverified stamp).
    Returns a model folder loadable offline or a QA folder of ``<split>.jsonl`` files. Raises
    FileNotFoundError when the asset is missing, incomplete or damaged (naming the file and the command that
    prepares it again), ValueError for an unknown name."""
    asset = _get_asset(name)
    root = _root(cache_dir)
    path = _asset_dir(root, asset)
    problem = _check(path, asset, deep=False)
    if problem is not None:
        damaged = problem.endswith(DAMAGED)
        raise FileNotFoundError(
            f"asset {name!r} is {'damaged' if damaged else 'not prepared'} in {path} ({problem}); run: "
            f"semuq-eval assets --only {name}"
            + (f" --cache-dir {root}" if cache_dir is not None else "")
            + (" --force" if damaged else "")
        )
    return path


def file_sha256(path: Path, *, progress: bool = False, desc: str | None = None) -> str:
    """The sha256 of a file, read in 1 MiB blocks (a progress bar for a file over 50 MB when ``progress``)."""
    digest = hashlib.sha256()
    size = path.stat().st_size
    with (
        open(path, "rb") as fh,
        _bar(size, desc or f"sha256 {path.name}", progress and size > 50_000_000) as bar,
    ):
        _stream(fh, digest.update, bar)
    return digest.hexdigest()


def _sources(asset: Asset) -> list[dict[str, str]]:
    """The pinned wheels, or for a trained operator its recipe and training data, or for a compact one the files
    shipped in the package (changed: rebuilt)."""
    if asset.builder in ("trained-operator", "compact-operator"):
        from semuq_eval.assets.trained import compact_sources, recipe_sources

        return recipe_sources(asset) if asset.builder == "trained-operator" else compact_sources(asset)
    return [
        {"project": w.project, "version": w.version, "filename": w.filename, "sha256": w.sha256}
        for w in asset.wheels
    ]


DAMAGED = "does not match its sha256"


def _check(path: Path, asset: Asset, *, deep: bool, progress: bool = False) -> str | None:
    """None when ``path`` holds a complete, current copy of ``asset``, else the reason it does not. Every file
    is hashed when ``deep``, else only those whose stamp was not verified (module docstring)."""
    if not path.is_dir():
        return "not found"
    if not (path / MANIFEST).is_file():
        return "incomplete: no manifest"
    try:
        man = read_json(path / MANIFEST)
        if not isinstance(man, dict) or not isinstance(man.get("files"), dict):
            raise ValueError("manifest has no file list")
    except (OSError, ValueError) as err:
        return f"unreadable manifest: {err}"
    if man.get("format") != MANIFEST_FORMAT or man.get("name") != asset.name:
        return "manifest of another format or asset"
    if man.get("revision") != asset.revision or man.get("sources") != _sources(asset):
        return "prepared by an older builder or from other sources"
    for rel, info in man["files"].items():
        f = path / rel
        if not f.is_file():
            return f"missing file {rel}"
        if f.stat().st_size != info.get("size"):
            return f"file {rel} has size {f.stat().st_size}, expected {info.get('size')}"
    stamps = _read_stamps(path)
    hashed = False
    for rel, info in man["files"].items():
        f = path / rel
        stat = f.stat()
        stamp = (stat.st_size, stat.st_mtime_ns, info.get("sha256"))
        if not deep and (_VERIFIED.get(f) == stamp or stamps.get(rel) == _stamp_entry(stamp)):
            _VERIFIED[f] = stamp
            continue
        if file_sha256(f, progress=progress, desc=f"verify {asset.name}/{rel}") != stamp[2]:
            _VERIFIED.pop(f, None)
            return f"file {f} {DAMAGED}"
        _VERIFIED[f], stamps[rel], hashed = stamp, _stamp_entry(stamp), True
    if hashed:
        _write_stamps(path, stamps)
    return None


def _stamp_entry(stamp: tuple[int, int, str | None]) -> dict[str, Any]:
    return {"size": stamp[0], "mtime_ns": stamp[1], "sha256": stamp[2]}


def _stamps_file(path: Path) -> Path:
    """Beside the asset folder ``path``: ``{"format": 1, "files": {file: {"size", "mtime_ns", "sha256"}}}``, the
    stamps at which each file's content was found to match the manifest."""
    return path.parent / f".{path.name}.verified.json"


def _read_stamps(path: Path) -> dict[str, Any]:
    """The verified stamps of the asset folder ``path`` (none when unwritten or unreadable)."""
    try:
        data = read_json(_stamps_file(path))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get("format") == 1 else None
    return dict(files) if isinstance(files, dict) else {}


def _write_stamps(path: Path, files: dict[str, Any]) -> None:
    """Record the verified stamps; a cache that cannot be written (read-only) keeps none, and is hashed again by
    the next process."""
    try:
        write_json(_stamps_file(path), {"format": 1, "files": files})
    except OSError as err:
        log.debug("%s: verified stamps not kept (%s)", path, err)


def _write_manifest(
    out: Path, asset: Asset, *, seconds: float, extra: dict[str, Any], progress: bool
) -> None:
    files = {}
    umask = os.umask(0)
    os.umask(umask)
    for f in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = f.relative_to(out).as_posix()
        if rel == MANIFEST:
            continue
        f.chmod(0o666 & ~umask)  # some writers (safetensors) create 0600 files; a cache may be shared
        files[rel] = {
            "size": f.stat().st_size,
            "sha256": file_sha256(f, progress=progress, desc=f"sha256 {rel}"),
        }
    man = {
        "format": MANIFEST_FORMAT,
        "name": asset.name,
        "kind": asset.kind,
        "revision": asset.revision,
        "description": asset.description,
        "license": asset.license,
        "sources": _sources(asset),
        "prepared_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(seconds, 1),
        "python": sys.version.split()[0],
        **extra,
        "files": files,
    }
    write_json(out / MANIFEST, man, indent=1)


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def status(*, cache_dir: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """The state of every asset in the cache, for ``semuq-eval assets --list``.

    One dict per asset: ``name``, ``kind``, ``path``, ``prepared``, ``problem`` (why not prepared), ``size``
    (on disk, else approximate) and ``download`` (bytes of the pinned wheels)."""
    root = _root(cache_dir)
    rows = []
    for asset in ASSETS.values():
        path = _asset_dir(root, asset)
        problem = _check(path, asset, deep=False)
        rows.append(
            {
                "name": asset.name,
                "kind": asset.kind,
                "path": path,
                "prepared": problem is None,
                "problem": problem,
                "size": _dir_size(path) if problem is None else asset.approx_size,
                "download": asset.download_size,
            }
        )
    return rows
