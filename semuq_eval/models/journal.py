"""The generation journal: what `semuq-hf` has generated, appended as it goes, so that a killed run
restarted with the same arguments generates only what is missing.

lm-eval hands a run's every request to one `generate_until` call, so the models append each prompt's answers as
soon as they exist and look every prompt up first (docs/running.md). Location:
``<output_dir>/semuq/_journal/<model>/rank<R>.jsonl`` (``journal=DIR`` or ``journal=off``), a line per prompt (no
pickle): ``{"key": "<sha256>", "generations": [Generation.to_record(include_hidden=False) + {"hidden_f32": "<base64
of little-endian float32>"}, ...]}``. The key hashes all that decides what is generated (model name, revision,
dtype, maximum length, hidden states kept; prompt; decoding; image contents; number of samples; torch's seed), so
changing any generates afresh. A line cut short by a kill is skipped with a warning."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from semuq_eval.context import RunContext
from semuq_eval.journal import Journal, decode_array, encode_array
from semuq_eval.models.generation import Generation

__all__ = ["GenerationJournal", "journal_key", "open_journal", "progress", "restore_groups"]

OFF = ("off", "none", "false", "no", "0")
"""Values of the model argument ``journal`` that turn the journal off."""

log = logging.getLogger(__name__)


def _content_digest(value: Any) -> Any:
    """A stable stand-in for a request's extra argument (images are hashed by their pixels)."""
    if isinstance(value, dict):
        return {str(k): _content_digest(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_content_digest(v) for v in value]
    if hasattr(value, "tobytes"):  # PIL images, numpy arrays, tensors
        h = hashlib.sha256(value.tobytes())
        h.update(repr((getattr(value, "mode", None), getattr(value, "size", None))).encode())
        h.update(repr(getattr(value, "shape", None)).encode())
        return "sha256:" + h.hexdigest()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def journal_key(
    model: dict[str, Any], context: str, gen_kwargs: dict, aux: Any, n_answers: int, seed: int | None
) -> str:
    """The SHA-256 identifying one prompt's answers (see the module docstring)."""
    payload = {
        "model": model,
        "context": context,
        "gen_kwargs": _content_digest(gen_kwargs),
        "aux": _content_digest(aux),
        "n": int(n_answers),
        "seed": None if seed is None else int(seed),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=repr).encode("utf-8")).hexdigest()


def _encode(gen: Generation) -> dict[str, Any]:
    rec = gen.to_record(include_hidden=False)
    if gen.hidden is not None:
        rec["hidden_f32"] = encode_array(gen.hidden, "<f4")
    return rec


def _decode(rec: dict[str, Any]) -> Generation:
    gen = Generation.from_record(rec)
    if rec.get("hidden_f32") is not None:
        gen.hidden = decode_array(rec["hidden_f32"], "<f4").astype(np.float32)
    return gen


class GenerationJournal:
    """One rank's generation journal in ``directory`` (a :class:`~semuq_eval.journal.Journal`); lookups see every
    rank's file."""

    def __init__(self, directory: str | os.PathLike, rank: int = 0) -> None:
        self.directory = Path(directory)
        self._journal = Journal(
            self.directory / f"rank{int(rank)}.jsonl",
            "generation journal",
            also=sorted(self.directory.glob("rank*.jsonl")),
            field="generations",
        )
        self.path = self._journal.path

    def __len__(self) -> int:
        return len(self._journal)

    def get(self, key: str, n_answers: int) -> list[Generation] | None:
        """The stored answers of ``key``, or None when absent or not ``n_answers`` long."""
        records = self._journal.get(key)
        if not isinstance(records, list) or len(records) != n_answers:
            return None
        return [_decode(r) for r in records]

    def group_keys(self, groups: Sequence[Any], identity: dict[str, Any], seed: int | None) -> dict[int, str]:
        """Each prompt group's :func:`journal_key` by ``id(group)`` (``identity``: the model's)."""
        return {
            id(g): journal_key(identity, g.context, g.request_kwargs, g.aux, g.n_gen, seed) for g in groups
        }

    def add(self, entries: Iterable[tuple[str, Sequence[Generation]]]) -> None:
        """Append answers and flush, so that they survive the process being killed."""
        self._journal.add((key, [_encode(g) for g in gens]) for key, gens in entries)


def restore_groups(
    groups: Sequence[Any],
    journal: GenerationJournal | None,
    keys: dict[int, str],
    restored: Any,
    *,
    model: str,
) -> list[Any]:
    """The prompt groups still to generate: each group the journal holds (under ``keys[id(group)]``) is handed to
    ``restored(group, answers)`` instead, and the count is logged once (``model`` names the lm-eval model)."""
    todo = []
    for group in groups:
        stored = journal.get(keys[id(group)], group.n_gen) if journal is not None else None
        if stored is None:
            todo.append(group)
        else:
            restored(group, stored)
    if journal is not None and len(todo) < len(groups):
        log.info(
            "%s: %d of %d prompts restored from the journal %s",
            model,
            len(groups) - len(todo),
            len(groups),
            journal.directory,
        )
    return todo


def progress(groups: Sequence[Any], todo: Sequence[Any], model: str, disable: bool) -> tqdm:
    """A progress bar in answers (a prompt with N samples counts N: the rate, and the ETA, stay steady whether
    greedy or sampled prompts come first), started at the answers of the groups not in ``todo``."""
    total = sum(g.n_gen for g in groups)
    return tqdm(
        total=total,
        initial=total - sum(g.n_gen for g in todo),
        disable=disable,
        desc=f"{model}: {len(groups)} prompts",
        unit=" answers",
    )


def open_journal(setting: str | None, name: str, *, model: str) -> GenerationJournal | None:
    """This process's journal for model ``name``, or None when off or when the run writes nothing.

    ``setting`` is the model argument ``journal``: a folder, one of :data:`OFF`, or None for
    ``<output_dir>/semuq/_journal/<name>/`` (`semuq_eval.context`). ``model`` names the lm-eval model in messages.
    The file is the process's rank's: two processes that lm-eval both calls rank 0 never append to one file."""
    if isinstance(setting, str) and setting.strip().lower() in OFF:
        return None
    context = RunContext.resolve()
    directory = Path(setting) if setting else context.journal_dir(name)
    if directory is None:
        log.warning(
            "%s: no output directory (--output_path): answers are not journaled, a killed run starts over",
            model,
        )
        return None
    journal = GenerationJournal(directory, rank=context.rank)
    if len(journal):
        log.info("%s: journal %s holds %d prompts", model, directory, len(journal))
    return journal
