"""Freeze a real run store into the small, JSON-only store that ``check-operator`` reads.

:func:`freeze_store` keeps what the diagnostics and the operator checks read and drops the rest:

- per question: ``doc_id``, ``id``, ``question``, ``references``; the greedy answer's text and the generating
  model's token offsets (token localization on the generator's tokens); every sampled answer's text;
- the labels of one label set: greedy, majority and the verdict on every sample (``scores.jsonl``, with the
  estimator scores emptied: the check recomputes the ones it tracks);
- dropped: hidden vectors (``hidden.rank*.npz``), token ids, log-probabilities and entropies, the breakdown.

The manifest keeps the source run's settings (with ``store_hidden`` false) and adds ``frozen``: where it came
from, the label set and its judge, which questions, and the package version, so ``tools/freeze_store.py``
reproduces it byte for byte from the same source.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from semuq_eval.harness.label_sets import RUN_LABELS, read_label_set
from semuq_eval.harness.store import STORE_FORMAT, load_store
from semuq_eval.jsonio import read_json, write_json, write_jsonl

__all__ = ["freeze_store"]


def freeze_store(
    source: str | os.PathLike,
    dest: str | os.PathLike,
    *,
    max_questions: int | None = None,
    labels: str = RUN_LABELS,
    source_name: str | None = None,
) -> dict[str, Any]:
    """Write the frozen copy of run store ``source`` into ``dest``; returns its ``frozen`` provenance.

    Parameters
    ----------
    source : path-like
        A finished run store with per-sample labels (``sample_labels`` in ``scores.jsonl``, or ``labels``).
    dest : path-like
        The folder to write (its store files are replaced).
    max_questions : int, optional
        Keep the first questions only (by doc id).
    labels : str
        The label set to freeze (default: the run's own).
    source_name : str, optional
        How the provenance names the source (default: its path).

    Raises
    ------
    ValueError
        When the source's label set lacks per-sample verdicts.
    """
    from semuq_eval import __version__

    source, dest = Path(source), Path(dest)
    manifest, records = load_store(source)
    if max_questions is not None:
        records = records[: int(max_questions)]
    label_set = read_label_set(source, labels)
    gens, items = [], []
    for r in records:
        lab = label_set.records.get(r["doc_id"])
        if lab is None or len(lab.get("samples") or []) != len(r["samples"]):
            raise ValueError(
                f"{source}: label set {labels!r} has no per-sample verdicts for doc {r['doc_id']}; "
                "freeze a store written with per-sample labels (or write a label set with `semuq-eval judge`)"
            )
        g = r["greedy"]
        gens.append(
            {
                "doc_id": int(r["doc_id"]),
                "id": r.get("id"),
                "question": r["question"],
                "references": list(r["references"]),
                "n_extra_responses": int(r.get("n_extra_responses", 0)),
                "greedy": {
                    "text": g.text,
                    "greedy": True,
                    "token_offsets": None if g.token_offsets is None else g.token_offsets.tolist(),
                },
                "samples": [{"text": s.text, "greedy": False} for s in r["samples"]],
            }
        )
        items.append(
            {
                "doc_id": int(r["doc_id"]),
                "id": r.get("id"),
                "scores": {},
                "reasons": {},
                "labels": {"greedy": lab["greedy"], "majority": lab["majority"]},
                "sample_labels": list(lab["samples"]),
                "n_missing_verdicts": int(lab.get("n_missing_verdicts", 0)),
                "n_samples": len(r["samples"]),
                "n_extra_responses": int(r.get("n_extra_responses", 0)),
                "problems": [],
            }
        )
    settings = dict(manifest.get("settings") or {})
    settings["store_hidden"] = False
    breakdown = source / "breakdown.json"
    decoding = read_json(breakdown).get("decoding") if breakdown.is_file() else None
    frozen = {
        "source": source_name or str(source),
        "task": manifest.get("task"),
        "run_id": source.name,
        "decoding": decoding,
        "label_set": labels,
        "judge": label_set.judge,
        "n_questions": len(gens),
        "doc_ids": [gens[0]["doc_id"], gens[-1]["doc_id"]] if gens else [],
        "n_samples": settings.get("n_samples"),
        "kept": "question, references, answer texts, the greedy answer's token offsets, labels",
        "semuq_eval_version": __version__,
    }
    dest.mkdir(parents=True, exist_ok=True)
    for old in [*dest.glob("generations.rank*.jsonl"), *dest.glob("hidden.rank*.npz")]:
        old.unlink()
    write_json(
        dest / "manifest.json",
        {"format": STORE_FORMAT, "task": manifest.get("task"), "settings": settings, "frozen": frozen},
    )
    write_jsonl(dest / "generations.rank0.jsonl", gens)
    write_jsonl(dest / "scores.jsonl", items)
    return frozen
