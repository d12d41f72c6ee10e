"""Training questions read from run stores: each question's sampled answers with their per-sample verdicts,
and where they came from (generating LLM, task, dataset and split, judge).

A run store (:mod:`semuq_eval.harness.store`) holds the N sampled answers of every question; a label set
(:mod:`semuq_eval.harness.label_sets`, ``"run"`` = the run's own judge) holds one verdict per sampled answer,
in stored order. :func:`read_store` pairs them into :class:`LabelledQuestion` records; :func:`find_stores`
expands the ``--stores`` arguments (store folders, output folders holding stores, globs).

Examples
--------
>>> q = LabelledQuestion("s", Doc.of_texts("Capital of France?", ("Paris", "Lyon")), (1, 0))
>>> q.key, q.answers, q.greedy
('capital of france?', ('Paris', 'Lyon'), None)
"""

from __future__ import annotations

import glob
import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from semuq_eval.harness.doc import NO_GREEDY, Doc
from semuq_eval.harness.label_sets import RUN_LABELS, read_label_set
from semuq_eval.harness.store import MANIFEST, StoreReader, open_store
from semuq_eval.models.generation import Generation
from semuq_eval.task_files import dataset_of_task

__all__ = [
    "DEFAULT_TRAINING_TASK",
    "LabelledQuestion",
    "StoreData",
    "find_stores",
    "labelled_questions",
    "question_key",
    "read_store",
]

log = logging.getLogger(__name__)

DEFAULT_TRAINING_TASK = "semuq_nqopen_train"
"""The training set of the paper's recipe (App. C: NQ-Open, kept apart from every evaluation set)."""


def question_key(question: str) -> str:
    """The identity of a question across stores: lower-cased, whitespace collapsed.

    Examples
    --------
    >>> question_key("  Who wrote  Hamlet? ")
    'who wrote hamlet?'
    """
    return re.sub(r"\s+", " ", question).strip().lower()


@dataclass(frozen=True)
class LabelledQuestion:
    """A view of one question, :class:`~semuq_eval.harness.doc.Doc` ``doc`` (of a run store, or rebuilt from a
    training-data file), with the verdict on each sampled answer (1 / 0 / None) in stored order: what training reads.
    ``origins`` names each answer's source when :func:`semuq_eval.training.mining.mine` added texts (empty: all
    samples); ``greedy`` and ``greedy_label`` (None when not stored) are read by the held-out AUROC only."""

    store: str
    doc: Doc
    labels: tuple[int | None, ...]
    greedy_label: int | None = None
    origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "origins", tuple(self.origins))

    @property
    def doc_id(self) -> int:
        return int(self.doc.doc_id)

    @property
    def question(self) -> str:
        return str(self.doc.question)

    @cached_property
    def answers(self) -> tuple[str, ...]:
        """The sampled answers' texts (with any mined ones), in stored order."""
        return tuple(str(g.text or "") for g in self.doc.samples)

    @property
    def references(self) -> tuple[str, ...]:
        return tuple(str(r) for r in self.doc.references)

    @property
    def greedy(self) -> str | None:
        """The greedy answer's text; None when the source kept none."""
        return None if self.doc.greedy.error == NO_GREEDY else str(self.doc.greedy.text or "")

    def with_answers(
        self, answers: Sequence[str], labels: Sequence[int | None], origins: Sequence[str]
    ) -> LabelledQuestion:
        """The same question with ``answers`` in place of its samples (the stored ones first, as stored; mined
        texts after them), their verdicts and origins."""
        kept = self.doc.samples[: len(answers)]
        samples = [g if g.text == a else Generation(a) for g, a in zip(kept, answers, strict=False)]
        samples += [Generation(a) for a in answers[len(samples) :]]
        doc = replace(self.doc, samples=samples, matrices={}, extras={}, unavailable={})
        return replace(self, doc=doc, labels=tuple(labels), origins=tuple(origins))

    def origin(self, index: int) -> str:
        """Where answer ``index`` came from (``"sample"`` unless mined)."""
        return self.origins[index] if self.origins else "sample"

    @property
    def key(self) -> str:
        """:func:`question_key` of the question (the validation split groups by it)."""
        return question_key(self.question)


@dataclass
class StoreData:
    """The labelled questions of one store and its provenance (written into the operator's card)."""

    path: str
    provenance: dict[str, Any]
    questions: list[LabelledQuestion] = field(default_factory=list)
    n_unlabelled: int = 0
    n_label_mismatch: int = 0


def find_stores(patterns: Sequence[str], task: str | None = DEFAULT_TRAINING_TASK) -> list[Path]:
    """Run store folders named by ``patterns`` (paths or globs).

    A folder holding ``manifest.json`` is a store and is always used; any other folder is searched for stores of
    ``task`` (``None``: every task) below it (an lm-eval ``--output_path``: ``semuq/<task>/<run_id>/``). Raises
    FileNotFoundError when a pattern matches nothing, or no store is found."""
    found: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(os.path.expanduser(pattern)))
        if not matches:
            raise FileNotFoundError(f"--stores {pattern!r}: no such file or folder")
        for match in map(Path, matches):
            if open_store(match).is_store:
                found.append(match)
                continue
            if not match.is_dir():
                raise FileNotFoundError(f"{match}: not a run store folder (no manifest.json)")
            below = [
                p.parent
                for p in sorted(match.rglob(MANIFEST))
                if "_journal" not in p.parts and (task is None or _manifest_task(p.parent) == task)
            ]
            if not below:
                which = f" of task {task!r}" if task else ""
                raise FileNotFoundError(
                    f"{match}: no run store{which} found below it (a store is a folder with manifest.json, "
                    "written by `semuq-eval run ... --output_path DIR` under DIR/semuq/<task>/<run_id>/)"
                )
            found.extend(below)
    unique = list(dict.fromkeys(p.resolve() for p in found))
    if not unique:
        raise FileNotFoundError("no run store given")
    return unique


def _manifest_task(root: Path) -> str | None:
    try:
        return open_store(root).manifest.get("task")
    except (OSError, ValueError):
        return None


def read_store(path: str | os.PathLike, labels: str = RUN_LABELS, *, llm: str | None = None) -> StoreData:
    """The labelled questions of the store at ``path`` under label set ``labels``, with its provenance.

    Questions without a label record, or whose label count differs from their stored samples, are counted and left
    out. Raises FileNotFoundError (no store, or no such label set) or ValueError (the label set holds no per-sample
    verdicts)."""
    root, reader = Path(path), open_store(path)
    docs = reader.docs(hidden=False)
    if not docs:
        raise FileNotFoundError(f"{root}: the store holds no generations (generations.rank*.jsonl)")
    label_set = read_label_set(root, labels)
    if label_set.records and not any(r["samples"] for r in label_set.records.values()):
        raise ValueError(
            f"{root}: label set {labels!r} has no per-sample labels (this store was written before the verdict "
            "on every sampled answer was kept); label its answers again with a judge into a named label set "
            "(`semuq-eval judge STORE --name NAME`) and pass --labels NAME, or rerun the generation"
        )
    data = StoreData(str(root), store_provenance(reader, label_set.provenance, labels, llm=llm))
    for doc in docs:
        label = label_set.records.get(int(doc.doc_id))
        if label is None or not label["samples"]:
            data.n_unlabelled += 1
        elif len(label["samples"]) != len(doc.samples):
            data.n_label_mismatch += 1
        else:
            data.questions.append(LabelledQuestion(str(root), doc, label["samples"], label.get("greedy")))
    data.provenance["n_questions"] = len(docs)
    return data


def store_provenance(
    reader: StoreReader, label_provenance: Mapping[str, Any], label_set: str, *, llm: str | None = None
) -> dict[str, Any]:
    """What the card records about one store: the generating LLM (and where that name came from), the task,
    its dataset and split, the decoding and N, and the judge of the label set."""
    root, manifest = reader.root, reader.manifest
    settings = dict(manifest.get("settings") or {})
    breakdown = _read_optional(reader)
    task = manifest.get("task")
    sources = {"manifest": manifest, "manifest settings": settings, "breakdown": breakdown}
    llm_name, llm_source = _llm_of(root, sources, llm)
    return {
        "path": str(root),
        "task": task,
        **dataset_of_task(task, settings),
        "llm": llm_name,
        "llm_source": llm_source,
        "n_samples": settings.get("n_samples"),
        "decoding": (breakdown.get("decoding") or {}).get("sampled") or breakdown.get("generation_kwargs"),
        "label_set": label_set,
        "judge": dict(label_provenance.get("judge") or {}),
        "labels_created": label_provenance.get("created"),
    }


def _read_optional(reader: StoreReader) -> dict[str, Any]:
    """The store's breakdown, or nothing when it has none or it cannot be read (the card then says less)."""
    try:
        return reader.breakdown() or {}
    except (OSError, ValueError):
        return {}


def _llm_of(root: Path, sources: Mapping[str, Mapping], given: str | None) -> tuple[str | None, str]:
    """(LLM name, where it came from). The store records the model explicitly when a newer harness wrote it
    (``model`` / ``pretrained``, in one of ``sources``); else the folder name: the run id, the model's slug unless
    metadata set one."""
    if given:
        return given, "--llm"
    for source, mapping in sources.items():
        for key in ("model", "pretrained", "llm"):
            value = mapping.get(key)
            if isinstance(value, Mapping):
                value = value.get("pretrained") or value.get("name")
            if isinstance(value, str) and value:
                return value, f"{source} {key!r}"
    if not (run_id := sources["manifest settings"].get("run_id")):
        return root.name, "store folder name (the run id: the model's slug)"
    log.warning(
        "%s: the store does not name its LLM and its run id %r was chosen by hand; pass --llm NAME to record it",
        root,
        run_id,
    )
    return None, "unknown (metadata run_id was set; pass --llm)"


def labelled_questions(stores: Iterable[StoreData]) -> list[LabelledQuestion]:
    """Every labelled question of ``stores``, in store then doc order."""
    return [q for s in stores for q in s.questions]
