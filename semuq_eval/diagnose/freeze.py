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
from semuq_eval.harness.store import STORE_FORMAT, RunStore, open_store

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
    reader = open_store(source)
    manifest, docs = reader.manifest, reader.docs(hidden=False)
    if max_questions is not None:
        docs = docs[: int(max_questions)]
    label_set = read_label_set(source, labels)
    gens, items = [], []
    for d in docs:
        lab = label_set.records.get(d.doc_id)
        if lab is None or len(lab.get("samples") or []) != len(d.samples):
            raise ValueError(
                f"{source}: label set {labels!r} has no per-sample verdicts for doc {d.doc_id}; "
                "freeze a store written with per-sample labels (or write a label set with `semuq-eval judge`)"
            )
        g = d.greedy
        gens.append(
            {
                "doc_id": int(d.doc_id),
                "id": d.key,
                "question": d.question,
                "references": list(d.references),
                "n_extra_responses": int(d.n_extra_responses),
                "greedy": {
                    "text": g.text,
                    "greedy": True,
                    "token_offsets": None if g.token_offsets is None else g.token_offsets.tolist(),
                },
                "samples": [{"text": s.text, "greedy": False} for s in d.samples],
            }
        )
        items.append(
            {
                "doc_id": int(d.doc_id),
                "id": d.key,
                "scores": {},
                "reasons": {},
                "labels": {"greedy": lab["greedy"], "majority": lab["majority"]},
                "sample_labels": list(lab["samples"]),
                "n_missing_verdicts": int(lab.get("n_missing_verdicts", 0)),
                "n_samples": len(d.samples),
                "n_extra_responses": int(d.n_extra_responses),
                "problems": [],
            }
        )
    settings = dict(manifest.get("settings") or {})
    settings["store_hidden"] = False
    decoding = (reader.breakdown() or {}).get("decoding")
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
    manifest = {"format": STORE_FORMAT, "task": manifest.get("task"), "settings": settings, "frozen": frozen}
    RunStore(dest).write_as_is(manifest, gens, items)
    return frozen
