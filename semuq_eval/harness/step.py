"""The run step of a semuq task: where lm-eval's answers become scores and the run's files.

lm-eval calls ``task.apply_filters()`` once per rank, after generation and before ``process_results``. A semuq task's
one filter ensemble, :class:`RunStep`, is the whole run: one :class:`~semuq_eval.harness.doc.Doc` per question
(:func:`docs_from_instances`: the greedy answer and EXACTLY N samples); the pipeline on all of them at once (each item
becomes its sampled request's filtered response); the run store started with the rank's answers; then every rank's items
gathered and the run finished by the process writing the outputs (:func:`~semuq_eval.harness.finish.finish_run`), whose
breakdown the aggregations read."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from copy import deepcopy
from typing import TYPE_CHECKING, Any

from lm_eval.api.filter import FilterEnsemble
from lm_eval.api.instance import Instance

from semuq_eval.distributed import all_gather_object, process_group
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.finish import WRITE_FAILURES, RunFacts, finish_run
from semuq_eval.harness.operator_runs import OperatorRun, merge_operator_runs
from semuq_eval.harness.pipeline import process_docs
from semuq_eval.models.generation import Generation, as_generation
from semuq_eval.models.reflexive import REFLEXIVE_MODELS

if TYPE_CHECKING:
    from semuq_eval.harness.task import SemuqTask

__all__ = ["FILTER", "RunStep", "docs_from_instances"]

log = logging.getLogger(__name__)

FILTER = "none"
"""The filter name lm-eval reads the filtered responses under (and shows in its table)."""

MODEL_KEYS = ("pretrained", "model", "gguf", "revision", "dtype", "base_url", "tokenizer")
"""The model arguments (merged into the task metadata by lm-eval's CLI) the run store records."""


def docs_from_instances(
    instances: Iterable[Instance],
    n_samples: int,
    question_of: Callable[[dict], str],
    references_of: Callable[[dict], list[str]],
    key_of: Callable[[dict], str | None],
) -> list[tuple[Doc, Instance | None, Instance | None]]:
    """One :class:`Doc` per question of lm-eval's instances, in doc order, with its greedy and sampled instance.
    Greedy: the first response of request idx 0; samples: the FIRST ``n_samples`` of idx 1 (extras from data-parallel
    padding are dropped and counted in ``Doc.n_extra_responses``)."""
    by_doc: dict[int, dict[int, Instance]] = {}
    for inst in instances:
        by_doc.setdefault(inst.doc_id, {})[inst.idx] = inst
    out = []
    for doc_id in sorted(by_doc):
        greedy_inst, sample_inst = by_doc[doc_id].get(0), by_doc[doc_id].get(1)
        raw = (greedy_inst or sample_inst).doc
        g_resps = list(greedy_inst.resps) if greedy_inst is not None else []
        s_resps = list(sample_inst.resps) if sample_inst is not None else []
        extra = max(0, len(g_resps) - 1) + max(0, len(s_resps) - n_samples)
        if extra:
            log.info("doc %s: %d extra responses (data-parallel padding) dropped", doc_id, extra)
        doc = Doc(
            doc_id=doc_id,
            question=question_of(raw),
            references=references_of(raw),
            greedy=as_generation(g_resps[0], greedy=True) if g_resps else Generation("", greedy=True),
            samples=[as_generation(x, greedy=False) for x in s_resps[:n_samples]],
            key=key_of(raw),
            n_extra_responses=extra,
        )
        out.append((doc, greedy_inst, sample_inst))
    return out


class RunStep(FilterEnsemble):
    """A semuq task's one filter ensemble: the run, on all of a rank's instances (see the module docstring).
    After :meth:`apply`, :attr:`breakdown` is the finished run's breakdown on the aggregating process (None
    elsewhere)."""

    def __init__(self, task: SemuqTask) -> None:
        super().__init__(name=FILTER, filters=[])
        self.task = task
        self.breakdown: dict | None = None
        self.doc_ids: tuple[int, ...] = ()  # the questions of the breakdown, in lm-eval's order
        self.operator_runs: dict[str, OperatorRun] = {}
        self.generator: dict[str, Any] | None = None  # what generated the answers (Generation.source)

    def apply(self, instances: list[Instance]) -> None:
        task, settings = self.task, self.task.settings
        triples = docs_from_instances(
            instances, settings.n_samples, task.question_of, task.references_of, task.doc_key
        )
        docs = [doc for doc, _, _ in triples]
        if settings.reflexive and docs and all(d.greedy.reflexive is None for d in docs):
            raise RuntimeError(
                f"{task.config.task}: metadata reflexive {list(settings.reflexive)}: the model returned no "
                f"answers to the reflexive follow-ups; use {' or '.join(REFLEXIVE_MODELS)}"
            )
        self.generator = next(
            (g.source for d in docs for g in (d.greedy, *d.samples) if g.source is not None), None
        )
        result = process_docs(docs, settings, judge=task.judge)
        for (doc, greedy_inst, sample_inst), item in zip(triples, result.items, strict=True):
            if greedy_inst is not None:
                greedy_inst.filtered_resps[FILTER] = [doc.greedy]
            if sample_inst is not None:
                sample_inst.filtered_resps[FILTER] = item
        if task.store is not None and settings.store and self.writes_outputs():
            self._store_answers(docs)
        items, self.operator_runs = self._gathered(result.items, result.operator_runs)
        if items is not None:
            self.doc_ids = tuple(it["doc_id"] for it in items)
            self.breakdown = self.finish(items, store=task.store if self.writes_outputs(warn=False) else None)

    def _store_answers(self, docs: Sequence[Doc]) -> None:
        """The run store started with this rank's answers; a store that cannot be written costs an error line
        (and ``semuq-eval run``'s exit status), never lm-eval's results."""
        task = self.task
        try:
            metadata = task.config.metadata or {}
            model = {k: metadata[k] for k in MODEL_KEYS if metadata.get(k) is not None}
            task.store.begin(
                task.config.task,
                task.settings.as_dict(),
                world_size=task.dp_world,
                model=model,
                generator=self.generator,
            )
            task.store.write_generations(docs, hidden=task.settings.store_hidden)
        except OSError as err:
            WRITE_FAILURES.append(" ".join(f"{task.config.task}: {err}".split()))
            log.error("%s: could not write the run store in %s (%s)", task.config.task, task.store.root, err)

    def _gathered(
        self, items: list[dict], runs: dict[str, OperatorRun]
    ) -> tuple[list[dict] | None, dict[str, OperatorRun]]:
        """Every rank's items, in rank order (lm-eval's order), on rank 0, with the operator runs merged
        (:func:`~semuq_eval.harness.operator_runs.merge_operator_runs`); (None, runs) on the other ranks. Collective:
        lm-eval applies the filters on every rank."""
        task = self.task
        if task.dp_world <= 1:
            return items, runs
        group = process_group()
        if group is None or group[1] != task.dp_world:
            raise RuntimeError(
                f"{task.config.task}: lm-eval split the questions over {task.dp_world} ranks but no matching "
                "torch.distributed process group is initialized: the run cannot gather its questions"
            )
        gathered = all_gather_object((items, runs))
        merged = merge_operator_runs([r for _, r in gathered])
        if task.dp_rank != 0:
            return None, merged
        return [it for rank_items, _ in gathered for it in rank_items], merged

    def writes_outputs(self, warn: bool = True) -> bool:
        """False on the processes other than 0 of a multi-process launch that lm-eval did not split (the
        model is not data-parallel, e.g. ``hf`` on CPU): each evaluates every question, only process 0 writes the
        files."""
        group = process_group()
        if self.task.dp_world > 1 or group is None or group[1] <= 1:
            return True
        if group[0] == 0 and warn:
            log.warning(
                "%s: %d processes, but the model did not split the questions among them (it is not "
                "data-parallel on this device): every process evaluates every question; process 0 "
                "writes the outputs. On CPU, use --model semuq-hf for data parallelism.",
                self.task.config.task,
                group[1],
            )
        return group[0] == 0

    def finish(self, items: Sequence[dict], store: Any = None) -> dict:
        """The run finished on ``items`` (:func:`~semuq_eval.harness.finish.finish_run`), written into ``store``
        when given; a store that cannot be written costs a warning, never lm-eval's results."""
        task = self.task
        if task.store is None:
            log.warning(
                "%s: no output directory (set --output_path, metadata output_dir or $SEMUQ_OUTPUT_DIR); "
                "the full semuq breakdown is not written",
                task.config.task,
            )
        extra = {
            "generation_kwargs": deepcopy(task.config.generation_kwargs),
            "decoding": task.decoding_record(),
            **({"generator": deepcopy(self.generator)} if self.generator else {}),
        }
        facts = RunFacts(task.config.task, self.operator_runs, task.judge.info, extra=extra)
        return finish_run(items, task.settings, facts, store=store, strict=False)
