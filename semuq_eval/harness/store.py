"""The run store: per-question records of a run, for ``judge`` / ``rescore`` without regenerating.

Location: ``<output_dir>/semuq/<task>/`` (``<output_dir>/semuq/<task>/<run_id>/`` with metadata
``run_id``), where ``output_dir`` is resolved by :meth:`Settings.resolved_output_dir` (metadata
``output_dir`` > ``$SEMUQ_OUTPUT_DIR`` > lm-eval's ``--output_path``). Files (no pickle anywhere):

=============================  ============================================================================
``manifest.json``              format (``semuq-store/1``), task, settings, written by every rank at start
``generations.rank<R>.jsonl``  one JSON object per question, written by the filter of rank R:
                               ``{"doc_id", "id", "question", "references", "n_extra_responses",
                               "greedy": Generation.to_record(include_hidden=False), "samples": [...]}``
``hidden.rank<R>.npz``         hidden vectors of rank R (``np.savez``; load with ``allow_pickle=False``):
                               ``d<doc_id>.greedy`` (d,) and ``d<doc_id>.samples`` (N, d)
``scores.jsonl``               one item per question (rank 0, after aggregation): labels (greedy,
                               majority), every estimator's score (null = unavailable) and the reasons
``breakdown.json``             the full breakdown (:mod:`semuq_eval.harness.report`)
=============================  ============================================================================

A rank truncates its own files when its filter starts (rank 0 also removes those of ranks that the run
does not have), so a re-run with the same arguments overwrites its store. Under data parallelism each rank
holds its share of the questions and ``load_store`` reads every rank's files. Generation happens inside the model's ``generate_until`` before the task sees anything, so
resuming a killed run is the model's job: ``semuq-hf`` journals every prompt's answers as they are
generated (:mod:`semuq_eval.models.journal`, ``<output_dir>/semuq/_journal/``) and a restarted run
generates only the missing ones, then writes this store in full.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from semuq_eval.harness.scoring import DocInputs
from semuq_eval.models.generation import Generation

__all__ = ["STORE_FORMAT", "RunStore", "json_safe", "load_store", "rank", "store_dir"]

STORE_FORMAT = "semuq-store/1"


def rank() -> int:
    """This process's data-parallel rank (accelerate / torchrun set ``RANK``)."""
    return int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0)


def store_dir(output_dir: str | os.PathLike, task: str, run_id: str | None = None) -> Path:
    path = Path(output_dir).expanduser() / "semuq" / task
    return path / run_id if run_id else path


def json_safe(obj: Any) -> Any:
    """Recursively replace NaN/inf by None and numpy scalars/arrays by Python values."""
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def _dump(path: Path, obj: Any) -> None:
    # one temporary file per process: the ranks of a data-parallel run write the manifest at the same time
    tmp = path.with_suffix(f"{path.suffix}.{os.getpid()}.tmp")
    tmp.write_text(
        json.dumps(json_safe(obj), indent=1, allow_nan=False, ensure_ascii=False), encoding="utf-8"
    )
    tmp.replace(path)


class RunStore:
    """Writer of one task's store directory (see the module docstring)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def begin(
        self, task: str, settings: Mapping[str, Any], *, rank_: int | None = None, world_size: int = 1
    ) -> None:
        """Create the directory, write the manifest, truncate this rank's files. Rank 0 also removes the
        files of ranks >= ``world_size`` left by an earlier run with more ranks (they would be read back)."""
        r = rank() if rank_ is None else rank_
        self.root.mkdir(parents=True, exist_ok=True)
        _dump(self.root / "manifest.json", {"format": STORE_FORMAT, "task": task, "settings": settings})
        (self.root / f"generations.rank{r}.jsonl").write_text("", encoding="utf-8")
        (self.root / f"hidden.rank{r}.npz").unlink(missing_ok=True)
        if r == 0:
            for old in [*self.root.glob("generations.rank*.jsonl"), *self.root.glob("hidden.rank*.npz")]:
                stem = old.name.split(".rank", 1)[1].split(".", 1)[0]
                if stem.isdigit() and int(stem) >= max(1, int(world_size)):
                    old.unlink(missing_ok=True)

    def write_generations(
        self,
        docs: Sequence[DocInputs],
        ids: Sequence[str | None],
        *,
        hidden: bool = True,
        rank_: int | None = None,
    ) -> None:
        r = rank() if rank_ is None else rank_
        arrays: dict[str, np.ndarray] = {}
        with open(self.root / f"generations.rank{r}.jsonl", "a", encoding="utf-8") as fh:
            for d, key in zip(docs, ids, strict=True):
                rec = {
                    "doc_id": int(d.doc_id),
                    "id": key,
                    "question": d.question,
                    "references": list(d.references),
                    "n_extra_responses": int(d.n_extra_responses),
                    "greedy": d.greedy.to_record(include_hidden=False),
                    "samples": [g.to_record(include_hidden=False) for g in d.samples],
                }
                fh.write(json.dumps(json_safe(rec), ensure_ascii=False, allow_nan=False) + "\n")
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
        if arrays:
            np.savez(self.root / f"hidden.rank{r}.npz", **arrays)

    def write_scores(self, items: Iterable[Mapping[str, Any]]) -> None:
        with open(self.root / "scores.jsonl", "w", encoding="utf-8") as fh:
            for it in sorted(items, key=lambda x: x["doc_id"]):
                fh.write(json.dumps(json_safe(it), ensure_ascii=False, allow_nan=False) + "\n")

    def write_breakdown(self, breakdown: Mapping[str, Any], name: str = "breakdown.json") -> Path:
        path = self.root / name
        _dump(path, breakdown)
        return path

    def _write_json(self, path: Path, obj: Any) -> Path:
        _dump(Path(path), obj)
        return Path(path)


def load_store(path: str | os.PathLike) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(manifest, records)``: records sorted by doc_id, each with ``greedy`` / ``samples`` rebuilt as
    :class:`Generation` (hidden vectors restored from the .npz files) and, when present, the stored
    ``item`` (labels and scores) from ``scores.jsonl``."""
    root = Path(path)
    manifest_path = root / "manifest.json"
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{root} is not a semuq run store (no manifest.json)")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if manifest.get("format") != STORE_FORMAT:
        raise ValueError(f"{manifest_path}: unknown store format {manifest.get('format')!r}")
    hidden: dict[str, np.ndarray] = {}
    for npz in sorted(root.glob("hidden.rank*.npz")):
        with np.load(npz, allow_pickle=False) as data:
            hidden.update({k: data[k] for k in data.files})
    items = {}
    if (root / "scores.jsonl").is_file():
        for line in (root / "scores.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                it = json.loads(line)
                items[it["doc_id"]] = it
    records: dict[int, dict[str, Any]] = {}
    for gen_file in sorted(root.glob("generations.rank*.jsonl")):
        for n, line in enumerate(gen_file.read_text(encoding="utf-8").splitlines()):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{gen_file}:{n + 1}: malformed JSON line ({err.msg})") from None
            did = rec["doc_id"]
            greedy = dict(rec["greedy"], hidden=_as_list(hidden.get(f"d{did}.greedy")))
            rec["greedy"] = Generation.from_record(greedy)
            stack = hidden.get(f"d{did}.samples")
            rec["samples"] = [
                Generation.from_record(dict(s, hidden=_as_list(stack[i]) if stack is not None else None))
                for i, s in enumerate(rec["samples"])
            ]
            rec["item"] = items.get(did)
            records[did] = rec  # a later line for the same doc wins
    return manifest, [records[k] for k in sorted(records)]


def _as_list(arr: np.ndarray | None):
    return None if arr is None else arr.astype(np.float64).tolist()
