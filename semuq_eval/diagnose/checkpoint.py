"""Per-operator checkpoints of a diagnosis: a killed run resumes at the operator it was on.

Each operator's outcome goes to the folder's journal ``diagnosis.jsonl`` (:mod:`semuq_eval.journal`) as soon as it
is measured; a rerun reads it back when its fingerprint matches: a SHA-256 over the operator's identity (``info``,
with the weights' revision for a local model), its options, the settings that change the figures and every text,
label, token offset and hidden vector of the questions and pairs. An entry that does not read is scored again.

Examples
--------
>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> sims = {"trap:context": np.array([0.5, np.nan])}
>>> keep(folder, "lexical", "f" * 64, Outcome(sims, {}, {"operator": "lexical"}, 1.5)).name
'diagnosis.jsonl'
>>> float(resume(folder, "lexical", "f" * 64).sims["trap:context"][0])
0.5
>>> resume(folder, "lexical", "0" * 64) is None  # other questions, weights or settings
True
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from semuq_eval.diagnose.localization import Localization
from semuq_eval.journal import Journal, decode_array, encode_array

__all__ = ["Outcome", "fingerprint", "keep", "resume"]

log = logging.getLogger(__name__)

JOURNAL = "diagnosis.jsonl"
"""The journal in a checkpoint folder: one entry per operator outcome (:mod:`semuq_eval.journal`)."""


@dataclass
class Outcome:
    """What one operator's part of a diagnosis measured: pair similarities per pair set (NaN where the
    operator could not score a pair), the counts of such pairs per reason, its identity and the seconds it took;
    ``located`` is its token localization (None for an operator without token weights)."""

    sims: dict[str, np.ndarray]
    unavailable: dict[str, int]
    info: dict[str, Any]
    seconds: float
    located: Localization | None = None


def _update(h: Any, value: Any) -> None:
    if isinstance(value, np.ndarray):
        h.update(f"array{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (list, tuple)):
        h.update(f"[{len(value)}".encode())
        for v in value:
            _update(h, v)
    else:
        h.update(json.dumps(value, sort_keys=True, default=str).encode() + b"\x00")


def fingerprint(
    name: str,
    info: Mapping[str, Any],
    options: Mapping[str, Any] | None,
    questions: Sequence[Any],
    pair_sets: Mapping[str, Sequence[Any]],
    settings: Mapping[str, Any],
) -> str:
    """SHA-256 (hex) of everything an operator's outcome depends on (module docstring)."""
    h = hashlib.sha256()
    _update(h, [name, dict(info), dict(options or {}), dict(settings)])
    for q in questions:
        _update(h, [q.uid, q.question, q.references, q.greedy, q.greedy_label, q.samples, q.sample_labels])
        _update(h, [q.greedy_offsets, q.greedy_hidden, q.sample_hidden])
    for key in sorted(pair_sets):
        _update(h, key)
        for p in pair_sets[key]:
            _update(h, [p.uid, p.question, p.a, p.b, p.sample_a, p.sample_b, p.hidden_a, p.hidden_b])
    return h.hexdigest()


def _journal(folder: str | os.PathLike) -> Journal:
    return Journal(Path(folder) / JOURNAL, "diagnosis", hold=False)


def keep(folder: str | os.PathLike, name: str, key: str, outcome: Outcome) -> Path:
    """Append ``outcome`` of operator ``name`` under fingerprint ``key`` to the folder's journal (flushed: a run
    killed while writing leaves the entries before it)."""
    loc = outcome.located
    value = {
        "unavailable": outcome.unavailable,
        "info": json.loads(json.dumps(outcome.info, default=str)),
        "seconds": outcome.seconds,
        "located": None
        if loc is None
        else {**loc.as_dict(), "hits": encode_array(loc.hits), "uids": loc.uids},
        "sims": {k: encode_array(v) for k, v in outcome.sims.items()},
    }
    journal = _journal(folder)
    journal.add([(f"{name}:{key}", value)])
    return journal.path


def resume(folder: str | os.PathLike, name: str, key: str) -> Outcome | None:
    """The kept outcome of operator ``name`` when its fingerprint is ``key``; None when there is none, it
    was measured on something else, or the entry does not read (logged)."""
    if not (Path(folder) / JOURNAL).is_file():
        return None
    value = _journal(folder).get(f"{name}:{key}")
    if value is None:
        return None
    try:
        located = value["located"]
        return Outcome(
            {str(k): decode_array(v) for k, v in value["sims"].items()},
            {str(k): int(v) for k, v in value["unavailable"].items()},
            dict(value["info"]),
            float(value["seconds"]),
            None
            if located is None
            else Localization.from_dict({**located, "hits": decode_array(located["hits"])}),
        )
    except Exception as err:  # a broken entry costs a rescoring, never the run
        log.warning(
            "diagnose: the journal entry of %s in %s does not read (%s: %s); scoring again",
            name,
            Path(folder) / JOURNAL,
            type(err).__name__,
            err,
        )
        return None
