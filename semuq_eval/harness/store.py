"""The run store: per-question records of a run, for ``judge`` / ``rescore`` without regenerating.

Location: ``<output_dir>/semuq/<task>/<run_id>/`` (:meth:`semuq_eval.context.RunContext.store_dir`). Files (no pickle
anywhere):

=============================  =========================================================================================
``manifest.json``              format (``semuq-store/1``), task, settings, the LLM under test (``model``: ``pretrained``
                               or ``model``, ``revision``, ... as lm-eval's model_args gave them) and, when the model
                               reports it, what generated the answers (``generator``: ``Generation.source``, e.g. a
                               server's capabilities and fallbacks), written by every rank at start
``generations.rank<R>.jsonl``  one JSON object per question, written by rank R's filter: ``{"doc_id", "id", "question",
                               "references", "n_extra_responses", "greedy": Generation.to_record(include_hidden=False),
                               "samples": [...]}``
``hidden.rank<R>.npz``         rank R's hidden vectors (``np.savez``; load with ``allow_pickle=False``):
                               ``d<doc_id>.greedy`` (d,) and ``d<doc_id>.samples`` (N, d)
``scores.jsonl``               one item per question (rank 0, :func:`~semuq_eval.harness.finish.finish_run`): labels
                               (one per label strategy), every estimator's score (null = unavailable) and the reasons
``breakdown.json``             the full breakdown (:mod:`semuq_eval.harness.breakdown`)
``record.jsonl.gz``            the run record: labels and scores, text only (:mod:`semuq_eval.harness.record`)
``.semuq-unfinished``          present from the run's start to its last file (``breakdown.json``): readers refuse the
                               store while it is there (:mod:`semuq_eval.durable`)
=============================  =========================================================================================

Each rank truncates its own files when its filter starts, so a re-run overwrites the store. Resuming a killed run is the
model's job (``semuq-hf`` journals answers, :mod:`semuq_eval.models.journal`)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from semuq_eval.durable import (
    UNFINISHED,
    WriteFailed,
    check_finished,
    clean_temporary,
    hold_writer_lock,
    replace_file,
)
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.schemas import GenerationsLine, Manifest, ScoresLine, check_line
from semuq_eval.jsonio import is_id, read_json, read_jsonl, write_json, write_jsonl
from semuq_eval.models.generation import Generation

__all__ = [
    "BREAKDOWN",
    "MANIFEST",
    "SCORES",
    "STORE_FORMAT",
    "RunStore",
    "StoreReader",
    "open_store",
    "read_breakdown",
]

STORE_FORMAT = "semuq-store/1"
MANIFEST = "manifest.json"
SCORES = "scores.jsonl"
BREAKDOWN = "breakdown.json"
GENERATIONS_GLOB = "generations.rank*.jsonl"
HIDDEN_GLOB = "hidden.rank*.npz"
UNFINISHED_HOW = "run the command that wrote it again (a run resumes from its generation journal)"


class RunStore:
    """Writer of one task's store directory (see the module docstring), as process ``rank`` of the run."""

    def __init__(self, root: str | os.PathLike, rank: int = 0) -> None:
        self.root = Path(root)
        self.rank = int(rank)
        self.manifest: dict[str, Any] | None = None
        """The manifest :meth:`begin` wrote."""

    def begin(
        self,
        task: str,
        settings: Mapping[str, Any],
        *,
        world_size: int = 1,
        model: Mapping[str, Any] | None = None,
        generator: Mapping[str, Any] | None = None,
    ) -> None:
        """Create the directory, write the manifest, truncate this rank's files. Rank 0 also removes the
        files of ranks >= ``world_size`` of an earlier run. ``model``: the LLM as lm-eval's CLI gave it (empty under
        ``simple_evaluate``)."""
        r = self.rank
        self.mark_unfinished()
        manifest = {"format": STORE_FORMAT, "task": task, "settings": settings, "model": dict(model or {})}
        if generator:
            manifest["generator"] = dict(generator)
        write_json(self.root / MANIFEST, manifest)
        self.manifest = manifest
        replace_file(self.root / f"generations.rank{r}.jsonl", b"")
        (self.root / f"hidden.rank{r}.npz").unlink(missing_ok=True)
        if r == 0:
            for old in [*self.root.glob(GENERATIONS_GLOB), *self.root.glob(HIDDEN_GLOB)]:
                stem = old.name.split(".rank", 1)[1].split(".", 1)[0]
                if stem.isdigit() and int(stem) >= max(1, int(world_size)):
                    old.unlink(missing_ok=True)

    def write_generations(self, docs: Sequence[Doc], *, hidden: bool = True) -> None:
        """This rank's questions with their answers (and hidden vectors, unless ``hidden=False``)."""
        r = self.rank
        records = [
            {
                "doc_id": int(d.doc_id),
                "id": d.key,
                "question": d.question,
                "references": list(d.references),
                "n_extra_responses": int(d.n_extra_responses),
                "greedy": d.greedy.to_record(include_hidden=False),
                "samples": [g.to_record(include_hidden=False) for g in d.samples],
            }
            for d in docs
        ]
        arrays: dict[str, np.ndarray] = {}
        for d in docs if hidden else ():
            if d.greedy.hidden is not None:
                arrays[f"d{d.doc_id}.greedy"] = np.asarray(d.greedy.hidden, dtype=np.float32)
            if d.samples and all(g.hidden is not None for g in d.samples):
                with contextlib.suppress(ValueError):  # answers of unequal hidden sizes: none kept
                    arrays[f"d{d.doc_id}.samples"] = np.stack([g.hidden for g in d.samples], dtype=np.float32)
        write_jsonl(self.root / f"generations.rank{r}.jsonl", records)
        if arrays:
            replace_file(self.root / f"hidden.rank{r}.npz", lambda fh: np.savez(fh, **arrays))

    def copy_generations(self, source: str | os.PathLike) -> None:
        """Every rank's answers and hidden vectors of the store at ``source``, as they are (after :meth:`begin`,
        in place of this rank's empty file): a rescored store keeps the answers it was made from."""
        (self.root / f"generations.rank{self.rank}.jsonl").unlink(missing_ok=True)
        for path in [*Path(source).glob(GENERATIONS_GLOB), *Path(source).glob(HIDDEN_GLOB)]:
            with open(path, "rb") as src:
                replace_file(self.root / path.name, lambda dst, src=src: shutil.copyfileobj(src, dst))

    def write_scores(self, items: Iterable[Mapping[str, Any]]) -> None:
        """``scores.jsonl``: one item per question, in doc order."""
        write_jsonl(self.root / SCORES, sorted(items, key=lambda x: x["doc_id"]))

    def write_breakdown(self, breakdown: Mapping[str, Any], name: str = BREAKDOWN) -> Path:
        """The breakdown as ``name`` in the store directory; returns its path. ``breakdown.json`` is a store's
        last file: with it the store is finished (:meth:`mark_finished`)."""
        path = write_json(self.root / name, breakdown)
        if name == BREAKDOWN:
            self.mark_finished()
        return path

    def mark_unfinished(self) -> None:
        """Create the folder and mark it unfinished (:data:`~semuq_eval.durable.UNFINISHED`) until
        :meth:`mark_finished`, so readers never take a killed run as complete. This process becomes the store's one
        writer; killed writers' temporary files are removed first."""
        # one writer per store; under data parallelism each rank is the one writer of its own files
        hold_writer_lock(self.root if self.rank == 0 else self.root / f"rank{self.rank}", "run store")
        self.root.mkdir(parents=True, exist_ok=True)
        clean_temporary(self.root)
        replace_file(self.root / UNFINISHED, f"{os.getpid()}\n")

    def mark_finished(self) -> None:
        """The store's last file is written: remove the unfinished marker."""
        try:
            (self.root / UNFINISHED).unlink(missing_ok=True)
        except OSError as err:
            raise WriteFailed(self.root / UNFINISHED, err) from None


def open_store(path: str | os.PathLike) -> StoreReader:
    """The run store at ``path``, opened for reading (nothing is read until asked; every file is checked
    against its schema when read).

    Examples
    --------
    >>> open_store("/nonexistent").manifest
    Traceback (most recent call last):
    ...
    FileNotFoundError: /nonexistent is not a semuq run store (no manifest.json)
    """
    return StoreReader(Path(path))


class StoreReader:
    """Reader of one run store: the only code that opens its files (the module docstring lists them)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST

    @property
    def is_store(self) -> bool:
        """Whether the folder holds a manifest (a store, finished or not)."""
        return self.manifest_path.is_file()

    @property
    def has_scores(self) -> bool:
        """Whether the run finished its scoring (``scores.jsonl`` exists)."""
        return (self.root / SCORES).is_file()

    @property
    def has_breakdown(self) -> bool:
        return (self.root / BREAKDOWN).is_file()

    @cached_property
    def manifest(self) -> dict[str, Any]:
        """``manifest.json``, checked: FileNotFoundError when missing, ValueError naming the field otherwise."""
        path = self.manifest_path
        if not path.is_file():
            raise FileNotFoundError(f"{self.root} is not a semuq run store (no {MANIFEST})")
        check_finished(self.root, "run store", UNFINISHED_HOW)
        manifest = read_json(path)
        if not isinstance(manifest, dict):
            raise ValueError(f"{path}: a manifest is a JSON object, got {type(manifest).__name__}")
        if manifest.get("format") != STORE_FORMAT:
            raise ValueError(f"{path}: store format {manifest.get('format')!r}, expected {STORE_FORMAT!r}")
        check_line(Manifest, manifest, path)
        return manifest

    @cached_property
    def items(self) -> dict[int, dict[str, Any]]:
        """The scored items of ``scores.jsonl`` by doc id (labels, scores, problems), checked line by line;
        empty when the run has not scored. A later line for the same doc wins."""
        self.manifest  # noqa: B018  (checked first: an unfinished store is refused)
        path, items = self.root / SCORES, {}
        if path.is_file():
            for number, item in read_jsonl(path):
                check_line(ScoresLine, item, path, number)
                items[item["doc_id"]] = item
        return items

    def fingerprint(self) -> str:
        """sha256 over the answers and the run's labels and scores (what every figure is computed from)."""
        h = hashlib.sha256()
        for f in [*sorted(self.root.glob(GENERATIONS_GLOB)), self.root / SCORES]:
            if f.is_file():
                h.update(f.name.encode())
                h.update(f.read_bytes())
        return h.hexdigest()

    def breakdown(self) -> dict[str, Any] | None:
        """``breakdown.json`` (None when the run has not aggregated); see :func:`read_breakdown`."""
        return read_breakdown(self.root / BREAKDOWN) if self.has_breakdown else None

    def docs(self, *, hidden: bool = True) -> list[Doc]:
        """Every stored question as a :class:`Doc`, by doc id, with its answers rebuilt as :class:`Generation`
        (hidden vectors unless ``hidden=False``). A later line for the same doc wins."""
        # a store is read after its manifest is checked
        n_samples = self.manifest["settings"].get("n_samples")
        vectors = self._vectors() if hidden else {}
        docs: dict[int, Doc] = {}
        for gen_file in sorted(self.root.glob(GENERATIONS_GLOB)):
            for number, rec in read_jsonl(gen_file):
                check_line(GenerationsLine, rec, gen_file, number)
                if is_id(n_samples) and len(rec["samples"]) > n_samples:
                    raise ValueError(
                        f"{gen_file}:{number}: doc {rec['doc_id']}: field samples holds {len(rec['samples'])} "
                        f"answers, more than the manifest's settings n_samples ({n_samples}, {self.manifest_path})"
                    )
                docs[rec["doc_id"]] = _doc(rec, vectors, f"{gen_file}:{number}")
        return [docs[k] for k in sorted(docs)]

    def _vectors(self) -> dict[str, np.ndarray]:
        vectors: dict[str, np.ndarray] = {}
        for npz in sorted(self.root.glob(HIDDEN_GLOB)):
            try:
                with np.load(npz, allow_pickle=False) as data:
                    vectors.update({k: data[k] for k in data.files})
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
                raise ValueError(f"{npz}: unreadable hidden vectors ({type(err).__name__}: {err})") from None
        return vectors


def read_breakdown(path: str | os.PathLike) -> dict[str, Any]:
    """A breakdown file (a store's ``breakdown.json`` or one ``rescore --output`` wrote): a JSON object, else
    ValueError naming the file (its readers check its fields)."""
    breakdown = read_json(path)
    if not isinstance(breakdown, dict):
        raise ValueError(f"{path}: a breakdown is a JSON object, got {type(breakdown).__name__}")
    return breakdown


def _doc(rec: dict[str, Any], vectors: Mapping[str, np.ndarray], where: str) -> Doc:
    """The :class:`Doc` of a checked generations line, with its hidden vectors when ``vectors`` has them."""
    did = rec["doc_id"]
    try:
        greedy = Generation.from_record(dict(rec["greedy"], hidden=_as_list(vectors.get(f"d{did}.greedy"))))
        stack = vectors.get(f"d{did}.samples")
        samples = [
            Generation.from_record(dict(s, hidden=_as_list(stack[i]) if stack is not None else None))
            for i, s in enumerate(rec["samples"])
        ]
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise ValueError(f"{where}: doc {did}: a malformed answer ({type(err).__name__}: {err})") from None
    return Doc(
        doc_id=did,
        question=rec.get("question", ""),
        references=list(rec.get("references", [])),
        greedy=greedy,
        samples=samples,
        key=rec.get("id"),
        n_extra_responses=rec.get("n_extra_responses", 0),
    )


def _as_list(arr: np.ndarray | None):
    return None if arr is None else arr.astype(np.float64).tolist()
