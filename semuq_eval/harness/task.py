"""The semuq lm-eval task: a greedy request plus N sampled requests per question.

Used from YAML (``tasks/*.yaml``)::

    task: semuq_triviaqa
    class: !function utils.SemuqTask        # tasks/utils.py re-exports this class
    output_type: generate_until
    doc_to_text: "Answer the following question.\\n{{question}}"   # App. E.2
    doc_to_target: answers                  # the reference aliases (a list of strings)
    generation_kwargs: {do_sample: true, temperature: 1.0, top_p: 0.9, top_k: 50, until: ["\\n\\n"]}
    metadata: {n_samples: 20, operators: [...], ...}   # see semuq_eval.harness.settings

Per question, :meth:`SemuqTask.construct_requests` returns

- a greedy Instance (idx 0, repeats 1, ``do_sample: false``, same ``until`` / ``max_gen_toks``);
- a sampled Instance (idx 1, repeats N) with the task's ``generation_kwargs`` (App. E.2: temperature
  1.0, top-p 0.9, top-k 50), which ``--gen_kwargs`` overrides,

so ``process_results`` receives ``[[greedy], [s_1..s_N]]``. ``apply_filters`` runs the batched
:class:`~semuq_eval.harness.filters.SemuqFilter` (exactly N samples, every operator once per rank) and
writes the run store (each rank its own files); under data parallelism it also gathers every rank's operator
runs, so that the breakdown reports the cost of the whole run (:func:`~semuq_eval.harness.filters.merge_operator_runs`); ``process_results`` scores every estimator and labels the question (string judge,
greedy and majority); the aggregation functions compute AUROC / ECE with CIs over all questions
(:mod:`semuq_eval.harness.report`), return a few summary scalars for lm-eval's table, and write the full
breakdown (``breakdown.json``) and ``scores.jsonl`` to the run store directory.
"""

from __future__ import annotations

import functools
import logging
import math
from copy import deepcopy
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from semuq_eval.distributed import all_gather_object, process_group
from semuq_eval.harness.filters import SemuqFilter, compute_operators, merge_operator_runs
from semuq_eval.harness.labels import StringJudge, label_doc
from semuq_eval.harness.report import doc_item, summarize, summary_keys, summary_scalars
from semuq_eval.harness.scoring import DocInputs, estimators, score_doc
from semuq_eval.harness.settings import Settings
from semuq_eval.harness.store import RunStore, store_dir
from semuq_eval.models.generation import Generation, as_generation
from semuq_eval.paths import safe_name

__all__ = ["SemuqTask", "references_of"]

log = logging.getLogger(__name__)

GREEDY_KEYS = ("until", "max_gen_toks")


def references_of(target: Any) -> list[str]:
    """Reference answers as a list of non-empty strings, from a string, a list of strings, or VQA-style
    ``[{"answer": ...}, ...]`` lists (duplicates removed, order kept)."""
    if target is None:
        return []
    if isinstance(target, (str, int, float)):
        target = [target]
    out: list[str] = []
    for t in target:
        if isinstance(t, dict):
            t = t.get("answer", t.get("text"))
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            t = str(t)
        if isinstance(t, str) and t.strip() and t.strip() not in out:
            out.append(t.strip())
    return out


class SemuqTask(ConfigurableTask):
    """See the module docstring."""

    def __init__(self, data_dir=None, cache_dir=None, download_mode=None, config: dict | None = None) -> None:
        config = dict(config or {})
        config.pop("class", None)  # lm-eval's PY_TASK route leaves it in; TaskConfig rejects it
        super().__init__(data_dir=data_dir, cache_dir=cache_dir, download_mode=download_mode, config=config)
        self.settings = Settings.from_metadata(self.config.metadata)
        self.judge = StringJudge(self.settings.label_mode, self.settings.f1_threshold)
        self._filters = []  # apply_filters below replaces lm-eval's filter ensembles
        self.operator_runs: dict[str, Any] = {}
        self._summary_cache: dict[tuple, dict] = {}
        self.breakdown_path = None
        self._dp_rank, self._dp_world = 0, 1  # lm-eval's split of the questions (build_all_requests)

    def build_all_requests(self, *args, **kwargs) -> None:
        # remember how lm-eval split the questions: world_size > 1 means data parallelism (this rank holds
        # 1 / world_size of them); world_size 1 in a multi-process group means every process holds them all
        self._dp_rank = int(kwargs.get("rank", 0) or 0)
        self._dp_world = int(kwargs.get("world_size", 1) or 1)
        return super().build_all_requests(*args, **kwargs)

    # -- requests -----------------------------------------------------------------------------------
    def construct_requests(self, doc: dict, ctx: str, **kwargs) -> list[Instance]:
        kwargs.pop("apply_chat_template", None)
        kwargs.pop("chat_template", None)
        task, doc_id, _ = kwargs.pop("metadata", (self.config.task, None, 1))
        sampled = deepcopy(self.config.generation_kwargs or {})
        sampled.setdefault("do_sample", True)
        greedy = {k: deepcopy(sampled[k]) for k in GREEDY_KEYS if k in sampled}
        greedy.update(do_sample=False, temperature=0.0)
        extra = ()
        if self.config.doc_to_image:
            extra = ({"visual": self.doc_to_image(doc)},)
        n = self.settings.n_samples
        return [
            Instance(
                request_type="generate_until",
                doc=doc,
                arguments=(ctx, greedy, *extra),
                idx=0,
                metadata=(task, doc_id, 1),
                **kwargs,
            ),
            Instance(
                request_type="generate_until",
                doc=doc,
                arguments=(ctx, sampled, *extra),
                idx=1,
                metadata=(task, doc_id, n),
                **kwargs,
            ),
        ]

    # -- doc fields ---------------------------------------------------------------------------------
    def question_of(self, doc: dict) -> str:
        q = doc.get(self.settings.question_field)
        if isinstance(q, str) and q.strip():
            return q.strip()
        text = self.doc_to_text(doc)
        return text if isinstance(text, str) else str(text)

    def references_of(self, doc: dict) -> list[str]:
        try:
            return references_of(self.doc_to_target(doc))
        except Exception as err:  # a malformed doc has no references: labels are missing
            log.warning("%s: no references for a doc (%s)", self.config.task, err)
            return []

    # -- filter -------------------------------------------------------------------------------------
    def apply_filters(self):
        filt = SemuqFilter(self.settings, self.question_of, self.references_of)
        docs = filt.apply_instances(self._instances)
        self.operator_runs = self._gather_operator_runs(filt.operator_runs)
        root, writer = self._store_root(), self._writes_outputs()
        if root is not None and self.settings.store and writer:
            try:
                store = RunStore(root)
                store.begin(self.config.task, self.settings.as_dict(), world_size=self._dp_world)
                ids = [self._doc_key(inst.doc) for inst in self._first_instances(docs)]
                store.write_generations(docs, ids, hidden=self.settings.store_hidden)
            except OSError as err:
                log.warning("%s: could not write the run store in %s (%s)", self.config.task, root, err)
        return None

    def _gather_operator_runs(self, runs: dict[str, Any]) -> dict[str, Any]:
        """Every rank's operator runs merged (summed cost, max wall time, per-rank values) under data
        parallelism; this rank's runs otherwise. Collective: lm-eval calls apply_filters on every rank."""
        if self._dp_world <= 1:
            return runs
        group = process_group()
        if group is None or group[1] != self._dp_world:
            log.warning(
                "%s: lm-eval split the questions over %d ranks but no matching torch.distributed "
                "process group is initialized: the operator cost reported is rank %d's only",
                self.config.task,
                self._dp_world,
                self._dp_rank,
            )
            return runs
        return merge_operator_runs(all_gather_object(runs))

    def _writes_outputs(self, warn: bool = True) -> bool:
        """False on the processes other than 0 of a multi-process launch that lm-eval did not split (the
        model is not data-parallel, e.g. lm-eval's `hf` on CPU): each process evaluates every question, and
        only process 0 writes the run store and the breakdown (the others would write the same files)."""
        group = process_group()
        if self._dp_world > 1 or group is None or group[1] <= 1:
            return True
        if group[0] == 0 and warn:
            log.warning(
                "%s: %d processes, but the model did not split the questions among them (it is not "
                "data-parallel on this device): every process evaluates every question; process 0 "
                "writes the outputs. On CPU, use --model semuq-hf for data parallelism.",
                self.config.task,
                group[1],
            )
        return group[0] == 0

    def _first_instances(self, docs: list[DocInputs]):
        by_id = {inst.doc_id: inst for inst in self._instances}
        return [by_id[d.doc_id] for d in docs]

    def _doc_key(self, doc: dict) -> str | None:
        v = doc.get("id", doc.get("question_id"))
        return None if v is None else str(v)

    def _store_root(self):
        out = self.settings.resolved_output_dir()
        if not out:
            return None
        metadata = self.config.metadata or {}
        # lm-eval's CLI merges model_args into metadata: by default each model gets its own folder,
        # so runs of several LLMs into one --output_path never overwrite each other.
        run_id = metadata.get("run_id") or metadata.get("pretrained")
        if run_id:
            run_id = safe_name(run_id)
        return store_dir(out, self.config.task, run_id or None)

    # -- per question -------------------------------------------------------------------------------
    def process_results(self, doc: dict, results: list) -> dict[str, Any]:
        greedy_resps = results[0] if results else []
        samples = results[1] if len(results) > 1 else []
        inputs = getattr(samples, "inputs", None)
        if inputs is None:  # filter bypassed (e.g. responses restored from a pickle): compute for this doc
            greedy = (
                as_generation(greedy_resps[0], greedy=True) if greedy_resps else Generation("", greedy=True)
            )
            inputs = DocInputs(
                self.question_of(doc),
                greedy,
                [as_generation(s) for s in list(samples)[: self.settings.n_samples]],
                references=self.references_of(doc),
            )
            compute_operators([inputs], self.settings)
        kinds = {name: run.kind for name, run in self.operator_runs.items() if run.kind is not None}
        for name in self.settings.operators:  # keep unavailable operators visible as estimators
            kinds.setdefault(name, _default_kind(name))
        est = estimators(kinds, self.settings.aggregators)
        scores, reasons = score_doc(
            inputs, est, tau=self.settings.tau, aggregator_options=self.settings.aggregator_options
        )
        labels = label_doc(
            self.judge,
            inputs.question,
            inputs.greedy.text,
            [g.text for g in inputs.samples],
            inputs.references,
        )
        item = doc_item(
            inputs, scores, reasons, labels, _problems(inputs, self.settings.n_samples), self._doc_key(doc)
        )
        return {key: item for key in summary_keys(self.settings)}

    # -- over all questions -------------------------------------------------------------------------
    def aggregation(self) -> dict[str, Any]:
        return {key: functools.partial(self._aggregate, key) for key in summary_keys(self.settings)}

    def higher_is_better(self) -> dict[str, bool]:
        return {key: not key.startswith("ece") for key in summary_keys(self.settings)}

    def _aggregate(self, key: str, items: list[dict]) -> float:
        fingerprint = (len(items), tuple(it["doc_id"] for it in items))
        if fingerprint not in self._summary_cache:
            self._summary_cache[fingerprint] = self.full_breakdown(items)
        value = summary_scalars(self._summary_cache[fingerprint]).get(key, math.nan)
        return float(value)

    def full_breakdown(self, items: list[dict]) -> dict:
        """Compute the breakdown of all items and write it (with scores.jsonl) to the store directory."""
        breakdown = summarize(
            items,
            self.settings,
            task=self.config.task,
            operators=self.operator_runs,
            judge=self.judge.info,
            extra={"generation_kwargs": deepcopy(self.config.generation_kwargs)},
        )
        root = self._store_root()
        if root is not None and self._writes_outputs(warn=False):
            try:
                store = RunStore(root)
                root.mkdir(parents=True, exist_ok=True)
                if self.settings.store:
                    store.write_scores(items)
                self.breakdown_path = store.write_breakdown(breakdown)
                log.info("%s: full semuq breakdown written to %s", self.config.task, self.breakdown_path)
            except OSError as err:
                log.warning("%s: could not write the breakdown to %s (%s)", self.config.task, root, err)
        elif root is None:
            log.warning(
                "%s: no output directory (set --output_path, metadata output_dir or $SEMUQ_OUTPUT_DIR); "
                "the full semuq breakdown is not written",
                self.config.task,
            )
        return breakdown


def _default_kind(name: str) -> str | None:
    try:
        from semuq_eval.operators import operator_registry

        return getattr(operator_registry.get(name), "kind", None)
    except Exception:
        return None


def _problems(inputs: DocInputs, n: int) -> list[str]:
    out = []
    if not inputs.references:
        out.append("no reference answers: labels missing")
    if not inputs.greedy.text.strip():
        out.append("empty greedy answer")
    if len(inputs.samples) < n:
        out.append(f"only {len(inputs.samples)} of {n} sampled answers")
    elif inputs.samples and all(not g.text.strip() for g in inputs.samples):
        out.append("all sampled answers are empty")
    lp = inputs.greedy.token_logprobs
    if lp is not None and len(lp) and not all(math.isfinite(float(v)) for v in lp):
        out.append("greedy answer has NaN or infinite token log-probabilities")
    bad = [
        i
        for i, g in enumerate(inputs.samples)
        if g.seq_logprob is not None and not math.isfinite(g.seq_logprob)
    ]
    if bad:
        out.append(f"samples {bad[:10]} have NaN or infinite log-probabilities")
    return out
