"""The run store: per-question records of a run, for ``judge`` / ``rescore`` without regenerating.

Location: ``<output_dir>/semuq/<task>/<run_id>/``, resolved by the run context
(:meth:`semuq_eval.context.RunContext.store_dir`: the run id is the model's slug unless metadata ``run_id``
says otherwise). Files (no pickle anywhere):

=============================  ============================================================================
``manifest.json``              format (``semuq-store/1``), task, settings, the LLM under test (``model``:
                               ``pretrained`` or ``model``, ``revision``, ... as lm-eval's model_args gave
                               them) and, when the model reports it, what generated the answers
                               (``generator``: ``Generation.source``, e.g. a server's capabilities and
                               fallbacks), written by every rank at start
``generations.rank<R>.jsonl``  one JSON object per question, written by the filter of rank R:
                               ``{"doc_id", "id", "question", "references", "n_extra_responses",
                               "greedy": Generation.to_record(include_hidden=False), "samples": [...]}``
``hidden.rank<R>.npz``         hidden vectors of rank R (``np.savez``; load with ``allow_pickle=False``):
                               ``d<doc_id>.greedy`` (d,) and ``d<doc_id>.samples`` (N, d)
``scores.jsonl``               one item per question (rank 0, :func:`~semuq_eval.harness.run.finish_run`): labels (one per label
                               strategy), every estimator's score (null = unavailable) and the reasons
``breakdown.json``             the full breakdown (:mod:`semuq_eval.harness.report`)
``record.jsonl.gz``            the run record: labels and scores, text only (:mod:`semuq_eval.harness.record`)
=============================  ============================================================================

A rank truncates its own files when its filter starts (rank 0 also removes those of ranks that the run
does not have), so a re-run with the same arguments overwrites its store. Under data parallelism each rank
holds its share of the questions and ``load_store`` reads every rank's files. Generation happens inside the model's ``generate_until`` before the task sees anything, so
resuming a killed run is the model's job: ``semuq-hf`` journals every prompt's answers as they are
generated (:mod:`semuq_eval.models.journal`, ``<output_dir>/semuq/_journal/``) and a restarted run
generates only the missing ones, then writes this store in full.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from semuq_eval.harness.doc import Doc
from semuq_eval.harness.schemas import GenerationsLine, Manifest, ScoresLine, check_line
from semuq_eval.jsonio import read_json, read_jsonl, write_json, write_jsonl
from semuq_eval.models.generation import Generation

__all__ = ["STORE_FORMAT", "RunStore", "load_store"]

STORE_FORMAT = "semuq-store/1"


class RunStore:
    """Writer of one task's store directory (see the module docstring), as process ``rank`` of the run."""

    def __init__(self, root: str | os.PathLike, rank: int = 0) -> None:
        self.root = Path(root)
        self.rank = int(rank)

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
        files of ranks >= ``world_size`` left by an earlier run with more ranks (they would be read back).
        ``model`` names the LLM under test (``pretrained`` / ``model``, ``revision``, ...), as lm-eval's CLI gave
        it (lm-eval's CLI merges model_args into the task metadata; ``simple_evaluate`` does not: then it is empty)."""
        r = self.rank
        self.root.mkdir(parents=True, exist_ok=True)
        manifest = {"format": STORE_FORMAT, "task": task, "settings": settings, "model": dict(model or {})}
        if generator:
            manifest["generator"] = dict(generator)
        write_json(self.root / "manifest.json", manifest)
        (self.root / f"generations.rank{r}.jsonl").write_text("", encoding="utf-8")
        (self.root / f"hidden.rank{r}.npz").unlink(missing_ok=True)
        if r == 0:
            for old in [*self.root.glob("generations.rank*.jsonl"), *self.root.glob("hidden.rank*.npz")]:
                stem = old.name.split(".rank", 1)[1].split(".", 1)[0]
                if stem.isdigit() and int(stem) >= max(1, int(world_size)):
                    old.unlink(missing_ok=True)

    def write_generations(self, docs: Sequence[Doc], *, hidden: bool = True) -> None:
        """This rank's questions with their answers (and hidden vectors, unless ``hidden=False``)."""
        r = self.rank
        arrays: dict[str, np.ndarray] = {}
        records = []
        for d in docs:
            records.append(
                {
                    "doc_id": int(d.doc_id),
                    "id": d.key,
                    "question": d.question,
                    "references": list(d.references),
                    "n_extra_responses": int(d.n_extra_responses),
                    "greedy": d.greedy.to_record(include_hidden=False),
                    "samples": [g.to_record(include_hidden=False) for g in d.samples],
                }
            )
            if hidden:
                if d.greedy.hidden is not None:
                    arrays[f"d{d.doc_id}.greedy"] = np.asarray(d.greedy.hidden, dtype=np.float32)
                if d.samples and all(g.hidden is not None for g in d.samples):
                    try:
                        arrays[f"d{d.doc_id}.samples"] = np.stack([g.hidden for g in d.samples]).astype(
                            np.float32
                        )
                    except ValueError:
                        pass
        write_jsonl(self.root / f"generations.rank{r}.jsonl", records)
        if arrays:
            np.savez(self.root / f"hidden.rank{r}.npz", **arrays)

    def copy_generations(self, source: str | os.PathLike) -> None:
        """Every rank's answers and hidden vectors of the store at ``source``, as they are (after :meth:`begin`,
        in place of this rank's empty file): a store rescored elsewhere keeps the answers it was made from."""
        (self.root / f"generations.rank{self.rank}.jsonl").unlink(missing_ok=True)
        for path in [*Path(source).glob("generations.rank*.jsonl"), *Path(source).glob("hidden.rank*.npz")]:
            shutil.copyfile(path, self.root / path.name)

    def write_scores(self, items: Iterable[Mapping[str, Any]]) -> None:
        """``scores.jsonl``: one item per question, in doc order."""
        write_jsonl(self.root / "scores.jsonl", sorted(items, key=lambda x: x["doc_id"]))

    def write_breakdown(self, breakdown: Mapping[str, Any], name: str = "breakdown.json") -> Path:
        """The breakdown as ``name`` in the store directory; returns its path."""
        return write_json(self.root / name, breakdown)


def load_store(
    path: str | os.PathLike, *, hidden: bool = True
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(manifest, records)``: records sorted by doc_id, each with ``greedy`` / ``samples`` rebuilt as
    :class:`Generation` (hidden vectors restored from the .npz files unless ``hidden=False``, which skips
    reading them: text-only consumers such as operator training) and, when present, the stored ``item``
    (labels and scores) from ``scores.jsonl``."""
    root = Path(path)
    manifest_path = root / "manifest.json"
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{root} is not a semuq run store (no manifest.json)")
    manifest = read_json(manifest_path)
    if not isinstance(manifest, dict):
        raise ValueError(f"{manifest_path}: a manifest is a JSON object, got {type(manifest).__name__}")
    if manifest.get("format") != STORE_FORMAT:
        raise ValueError(f"{manifest_path}: unknown store format {manifest.get('format')!r}")
    check_line(Manifest, manifest, manifest_path)
    vectors: dict[str, np.ndarray] = {}
    for npz in sorted(root.glob("hidden.rank*.npz")) if hidden else []:
        try:
            with np.load(npz, allow_pickle=False) as data:
                vectors.update({k: data[k] for k in data.files})
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
            raise ValueError(f"{npz}: unreadable hidden vectors ({type(err).__name__}: {err})") from None
    items = {}
    if (root / "scores.jsonl").is_file():
        for number, it in read_jsonl(root / "scores.jsonl"):
            check_line(ScoresLine, it, root / "scores.jsonl", number)
            items[it["doc_id"]] = it
    records: dict[int, dict[str, Any]] = {}
    for gen_file in sorted(root.glob("generations.rank*.jsonl")):
        for number, rec in read_jsonl(gen_file):
            check_line(GenerationsLine, rec, gen_file, number)
            did = rec["doc_id"]
            try:
                greedy = dict(rec["greedy"], hidden=_as_list(vectors.get(f"d{did}.greedy")))
                rec["greedy"] = Generation.from_record(greedy)
                stack = vectors.get(f"d{did}.samples")
                rec["samples"] = [
                    Generation.from_record(dict(s, hidden=_as_list(stack[i]) if stack is not None else None))
                    for i, s in enumerate(rec["samples"])
                ]
            except (KeyError, TypeError, ValueError, IndexError) as err:
                raise ValueError(
                    f"{gen_file}:{number}: doc {did}: a malformed answer ({type(err).__name__}: {err})"
                ) from None
            rec["item"] = items.get(did)
            records[did] = rec  # a later line for the same doc wins
    return manifest, [records[k] for k in sorted(records)]


def _as_list(arr: np.ndarray | None):
    return None if arr is None else arr.astype(np.float64).tolist()
