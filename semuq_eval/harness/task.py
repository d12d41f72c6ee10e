"""The semuq lm-eval task: a greedy request plus N sampled requests per question, scored by the pipeline.

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
  1.0, top-p 0.9, top-k 50), which ``--gen_kwargs`` overrides.

With the setting ``reflexive`` (e.g. ``[p_true, verbalized]``), the greedy Instance's generation kwargs also carry
the follow-up prompts, the question filled in and ``{answer}`` left open, under the reserved key
``semuq_reflexive``: lm-eval builds every request before any is answered, so the model (``semuq-hf`` or
``semuq-api``) asks them once it has the greedy answer (:mod:`semuq_eval.models.reflexive`). Another model is
refused when the task is built if the command line names it (``--model``), else when its answers come back
without the follow-ups.

The task is an adapter between lm-eval's instances and the pipeline's docs; a run goes down the path of
:mod:`semuq_eval.harness.finish`. The run context (output folder, run id, rank) and the run store are resolved once,
when lm-eval builds the task. lm-eval then calls :meth:`SemuqTask.apply_filters` once per rank, on all of the
rank's instances: it builds one :class:`~semuq_eval.harness.doc.Doc` per question (the greedy answer and EXACTLY
N samples: lm-eval's data-parallel padding repeats a rank's last request, and the extra responses are dropped and
counted), runs the pipeline on all of them at once (:func:`~semuq_eval.harness.pipeline.process_docs`: operators
batched, scores, labels), starts the run store with the rank's answers, and leaves each question's JSON-safe
item as the filtered response of its sampled request. ``process_results`` only hands that item on; the first
aggregation call finishes the run on all items (:func:`~semuq_eval.harness.finish.finish_run`: AUROC / ECE with
CIs, ``breakdown.json``, ``scores.jsonl``, the run record), and every aggregation call returns one summary
scalar of it for lm-eval's table.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from semuq_eval.context import RunContext, cli_model
from semuq_eval.distributed import all_gather_object, process_group
from semuq_eval.harness.breakdown import summary_keys, summary_scalars
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.finish import WRITE_FAILURES, RunFacts, finish_run
from semuq_eval.harness.operator_runs import OperatorRun, merge_operator_runs
from semuq_eval.harness.overlap import warn_training_overlap
from semuq_eval.harness.pipeline import process_docs
from semuq_eval.harness.settings import Settings
from semuq_eval.harness.store import RunStore
from semuq_eval.logs import share_lm_eval_logging
from semuq_eval.models.generation import Generation, as_generation
from semuq_eval.models.reflexive import REFLEXIVE_KEY, REFLEXIVE_MODELS, check_model, templates
from semuq_eval.writes import check_writable

__all__ = ["SemuqTask", "docs_from_instances", "references_of"]

log = logging.getLogger(__name__)

MODEL_KEYS = ("pretrained", "model", "gguf", "revision", "dtype", "base_url", "tokenizer")
RUN_MODEL_KEYS = ("pretrained", "gguf", "model")
"""The model arguments that name the LLM, in order: its run id (`semuq_eval.context.model_slug`) comes from the
first one given: ``pretrained`` (semuq-hf, semuq-vllm, hf, vllm), ``gguf`` (semuq-llamacpp), ``model`` (semuq-api
and lm-eval's server clients)."""


def run_model(metadata: dict | None) -> str | None:
    """The LLM a run's metadata names (:data:`RUN_MODEL_KEYS`), or None.

    Examples
    --------
    >>> run_model({"model": "smollm2", "base_url": "http://127.0.0.1:8000/v1"})
    'smollm2'
    >>> run_model({"pretrained": "org/m", "model": "ignored"})
    'org/m'
    """
    for key in RUN_MODEL_KEYS:
        value = (metadata or {}).get(key)
        if value not in (None, ""):
            return str(value)
    return None


"""The model_args (which lm-eval merges into the task metadata) that name the LLM under test in the store."""

GREEDY_KEYS = ("until", "max_gen_toks")
FILTER = "none"
"""The filter name lm-eval reads the filtered responses under (the task has no filter ensembles)."""


def references_of(target: Any) -> list[str]:
    """Reference answers as a list of non-empty strings, from a string, a list of strings, or VQA-style
    ``[{"answer": ...}, ...]`` lists (duplicates removed, order kept).

    Examples
    --------
    >>> references_of([{"answer": "cat"}, "cat", " dog ", 3])
    ['cat', 'dog', '3']
    """
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


def docs_from_instances(
    instances: Iterable[Instance],
    n_samples: int,
    question_of: Callable[[dict], str],
    references_of: Callable[[dict], list[str]],
    key_of: Callable[[dict], str | None],
) -> list[tuple[Doc, Instance | None, Instance | None]]:
    """One :class:`Doc` per question of lm-eval's instances, with its greedy and sampled instance.

    The greedy answer is the first response of request idx 0; the samples are the FIRST ``n_samples``
    responses of request idx 1. lm-eval's data-parallel padding repeats a rank's last request, so that
    question receives extra responses: they are dropped and counted in ``Doc.n_extra_responses``.
    """
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


class SemuqTask(ConfigurableTask):
    """See the module docstring."""

    def __init__(self, data_dir=None, cache_dir=None, download_mode=None, config: dict | None = None) -> None:
        config = dict(config or {})
        config.pop("class", None)  # lm-eval's PY_TASK route leaves it in; TaskConfig rejects it
        super().__init__(data_dir=data_dir, cache_dir=cache_dir, download_mode=download_mode, config=config)
        share_lm_eval_logging()  # plain `lm_eval` runs show semuq-eval's INFO lines (where the breakdown went)
        self.settings = Settings.from_metadata(self.config.metadata)
        check_model(self.settings.reflexive, cli_model())
        self.judge = self.settings.make_judge()
        # a trained operator (enc) that was trained on this run's LLM or dataset: warn once, before generating
        llm = run_model(self.config.metadata)
        warn_training_overlap(self.settings, llm=llm, task=self.config.task)
        # where this run writes and as which process; lm-eval's CLI merges model_args into the metadata, so each
        # model gets its own folder by default
        self.run_context = RunContext.resolve(
            output_dir=self.settings.output_dir, run_id=self.settings.run_id, model=llm
        )
        root = self.run_context.store_dir(self.config.task)
        if root is not None:  # before any answer is generated: an hour of answers needs somewhere to go
            check_writable(root, f"{self.config.task}: the run store folder")
        self.store = None if root is None else RunStore(root, rank=self.run_context.rank)
        self._filters = []  # apply_filters below replaces lm-eval's filter ensembles
        self.operator_runs: dict[str, OperatorRun] = {}
        self._summary_cache: dict[tuple, dict] = {}
        self.generator: dict[str, Any] | None = None  # what generated the answers (Generation.source)
        self._dp_rank, self._dp_world = 0, 1  # lm-eval's split of the questions (build_all_requests)

    def build_all_requests(self, *args, **kwargs) -> None:
        # remember how lm-eval split the questions: world_size > 1 means data parallelism (this rank holds
        # 1 / world_size of them); world_size 1 in a multi-process group means every process holds them all
        self._dp_rank = int(kwargs.get("rank", 0) or 0)
        self._dp_world = int(kwargs.get("world_size", 1) or 1)
        return super().build_all_requests(*args, **kwargs)

    # -- requests -----------------------------------------------------------------------------------
    def construct_requests(self, doc: dict, ctx: str, **kwargs) -> list[Instance]:
        apply_chat_template = kwargs.pop("apply_chat_template", None)
        chat_template = kwargs.pop("chat_template", None)
        task, doc_id, _ = kwargs.pop("metadata", (self.config.task, None, 1))
        greedy, sampled = self.decoding()
        if self.settings.reflexive:
            prompts = templates(self.question_of(doc), self.settings.reflexive)
            if self.settings.reflexive_chat_template:
                prompts = self._chat_rendered(prompts, apply_chat_template, chat_template)
            greedy[REFLEXIVE_KEY] = prompts
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

    @staticmethod
    def _chat_rendered(
        prompts: dict[str, str], apply_chat_template: Any, chat_template: Any
    ) -> dict[str, str]:
        """The follow-up prompts as one user turn in the run's chat template (setting reflexive_chat_template).

        The ``{answer}`` placeholder passes through the template as text. A server's chat endpoint (``semuq-api``)
        already sends each follow-up as a user message in the server's template: its prompts stay as they are.
        """
        if not apply_chat_template or chat_template is None:
            raise ValueError(
                "metadata reflexive_chat_template: the run has no chat template; pass --apply_chat_template"
            )
        rendered = {m: chat_template([{"role": "user", "content": p}]) for m, p in prompts.items()}
        from semuq_eval.models.server_requests import ChatPrompt

        if any(isinstance(r, ChatPrompt) for r in rendered.values()):
            return prompts
        return {m: str(r) for m, r in rendered.items()}

    def decoding(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The greedy and the sampled request's generation kwargs (the sampled: the task's, after
        ``--gen_kwargs``; the greedy: its stop sequences and budget, ``do_sample`` false)."""
        sampled = deepcopy(self.config.generation_kwargs or {})
        sampled.setdefault("do_sample", True)
        greedy = {k: deepcopy(sampled[k]) for k in GREEDY_KEYS if k in sampled}
        greedy.update(do_sample=False, temperature=0.0)
        return greedy, sampled

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
        except Exception as err:  # a malformed doc has no references: labels are missing, the run goes on
            log.warning(
                "%s: doc %s: no references (%s: %s); its answers get no label",
                self.config.task,
                self._doc_key(doc) or str(doc.get("question", "?"))[:60],
                type(err).__name__,
                err,
            )
            return []

    def _doc_key(self, doc: dict) -> str | None:
        v = doc.get("id", doc.get("question_id"))
        return None if v is None else str(v)

    # -- the pipeline, once per rank ------------------------------------------------------------------
    def apply_filters(self):
        triples = docs_from_instances(
            self._instances, self.settings.n_samples, self.question_of, self.references_of, self._doc_key
        )
        docs = [doc for doc, _, _ in triples]
        if self.settings.reflexive and docs and all(d.greedy.reflexive is None for d in docs):
            raise RuntimeError(
                f"{self.config.task}: metadata reflexive {list(self.settings.reflexive)}: the model returned no "
                f"answers to the reflexive follow-ups; use {' or '.join(REFLEXIVE_MODELS)}"
            )
        self.generator = next(
            (g.source for d in docs for g in (d.greedy, *d.samples) if g.source is not None), None
        )
        result = process_docs(docs, self.settings, judge=self.judge)
        self.operator_runs = self._gather_operator_runs(result.operator_runs)
        for (doc, greedy_inst, sample_inst), item in zip(triples, result.items, strict=True):
            if greedy_inst is not None:
                greedy_inst.filtered_resps[FILTER] = [doc.greedy]
            if sample_inst is not None:
                sample_inst.filtered_resps[FILTER] = item
        if self.store is not None and self.settings.store and self._writes_outputs():
            try:
                metadata = self.config.metadata or {}
                model = {k: metadata[k] for k in MODEL_KEYS if metadata.get(k) is not None}
                self.store.begin(
                    self.config.task,
                    self.settings.as_dict(),
                    world_size=self._dp_world,
                    model=model,
                    generator=self.generator,
                )
                self.store.write_generations(docs, hidden=self.settings.store_hidden)
            except OSError as err:
                WRITE_FAILURES.append(" ".join(f"{self.config.task}: {err}".split()))
                log.error(
                    "%s: could not write the run store in %s (%s)", self.config.task, self.store.root, err
                )
        return None

    def _gather_operator_runs(self, runs: dict[str, OperatorRun]) -> dict[str, OperatorRun]:
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

    # -- per question -------------------------------------------------------------------------------
    def process_results(self, doc: dict, results: list) -> dict[str, Any]:
        item = results[1] if len(results) > 1 else None
        if not isinstance(item, dict) or "scores" not in item:
            raise RuntimeError(
                f"{self.config.task}: the semuq pipeline did not run for this question (got "
                f"{type(item).__name__}); semuq tasks must be evaluated by lm-eval's evaluator, which calls "
                "apply_filters before process_results"
            )
        return {key: item for key in summary_keys(self.settings)}

    # -- over all questions -------------------------------------------------------------------------
    def aggregation(self) -> dict[str, Any]:
        return {key: functools.partial(self._aggregate, key) for key in summary_keys(self.settings)}

    def higher_is_better(self) -> dict[str, bool]:
        return summary_keys(self.settings)

    def _aggregate(self, key: str, items: list[dict]) -> float:
        fingerprint = (len(items), tuple(it["doc_id"] for it in items))
        if fingerprint not in self._summary_cache:
            self._summary_cache[fingerprint] = self._finish(items)
        value = summary_scalars(self._summary_cache[fingerprint]).get(key, math.nan)
        return float(value)

    def _decoding_record(self) -> dict[str, Any]:
        from semuq_eval.models.decoding import NEUTRAL_DECODING

        greedy, sampled = self.decoding()
        return {
            "greedy": greedy,
            "sampled": sampled,
            "semuq_models_set_as_well": dict(NEUTRAL_DECODING),
            "note": "semuq-hf / semuq-hf-multimodal pass every other decoding option at its neutral value, so the "
            "model's generation_config cannot change the decoding; other lm-eval models apply their own defaults",
        }

    def _finish(self, items: list[dict]) -> dict:
        """The run finished on all items (:func:`~semuq_eval.harness.finish.finish_run`), written by the process
        that writes the outputs; a store that cannot be written costs a warning, never lm-eval's results."""
        if self.store is None:
            log.warning(
                "%s: no output directory (set --output_path, metadata output_dir or $SEMUQ_OUTPUT_DIR); "
                "the full semuq breakdown is not written",
                self.config.task,
            )
        extra = {
            "generation_kwargs": deepcopy(self.config.generation_kwargs),
            "decoding": self._decoding_record(),
            **({"generator": deepcopy(self.generator)} if self.generator else {}),
        }
        return finish_run(
            items,
            self.settings,
            RunFacts(self.config.task, self.operator_runs, self.judge.info, extra=extra),
            store=self.store if self._writes_outputs(warn=False) else None,
            strict=False,
        )
