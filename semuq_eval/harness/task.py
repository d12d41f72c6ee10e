"""The semuq lm-eval task: a greedy request plus N sampled requests per question, scored by the pipeline.

Used from YAML (``tasks/*.yaml``)::

    task: semuq_triviaqa
    class: !function utils.SemuqTask        # tasks/utils.py re-exports this class
    output_type: generate_until
    doc_to_text: "Answer the following question.\\n{{question}}"   # App. E.2
    doc_to_target: answers                  # the reference aliases (a list of strings)
    generation_kwargs: {do_sample: true, temperature: 1.0, top_p: 0.9, top_k: 50, until: ["\\n\\n"]}
    metadata: {n_samples: 20, operators: [...], ...}   # see semuq_eval.harness.settings

Per question, :meth:`SemuqTask.construct_requests` returns a greedy Instance (idx 0, ``do_sample: false``, same
``until`` / ``max_gen_toks``) and a sampled one (idx 1, repeats N, the task's ``generation_kwargs``, App. E.2). With
setting ``reflexive`` the greedy Instance also carries the follow-up prompts under the reserved key ``semuq_reflexive``,
which the model (``semuq-hf``, ``semuq-api``) asks once it has the greedy answer (:mod:`semuq_eval.models.reflexive`);
other models are refused. The run itself is the task's filter ensemble (:class:`~semuq_eval.harness.step.RunStep`);
``process_results`` hands each item on and each aggregation returns one scalar of its breakdown."""

from __future__ import annotations

import functools
import logging
import math
from copy import deepcopy
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from semuq_eval.context import RunContext, cli_model
from semuq_eval.harness.breakdown import summary_keys, summary_scalars
from semuq_eval.harness.overlap import warn_training_overlap
from semuq_eval.harness.settings import Settings
from semuq_eval.harness.step import RunStep
from semuq_eval.harness.store import RunStore
from semuq_eval.logs import share_lm_eval_logging
from semuq_eval.models.reflexive import REFLEXIVE_KEY, check_model, templates
from semuq_eval.writes import check_writable

__all__ = ["SemuqTask", "references_of"]

log = logging.getLogger(__name__)

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


GREEDY_KEYS = ("until", "max_gen_toks")


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
        self.step = RunStep(self)
        self._filters = [self.step]  # lm-eval's apply_filters runs the step (harness/step.py)
        self._summary_cache: dict[tuple, dict] = {}
        self.dp_rank, self.dp_world = 0, 1  # lm-eval's split of the questions (build_all_requests)

    def build_all_requests(self, *args, **kwargs) -> None:
        # remember how lm-eval split the questions: world_size > 1 means data parallelism (this rank holds
        # 1 / world_size of them); world_size 1 in a multi-process group means every process holds them all
        self.dp_rank = int(kwargs.get("rank", 0) or 0)
        self.dp_world = int(kwargs.get("world_size", 1) or 1)
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
        extra = ({"visual": self.doc_to_image(doc)},) if self.config.doc_to_image else ()
        return [
            Instance(
                request_type="generate_until",
                doc=doc,
                arguments=(ctx, gen_kwargs, *extra),
                idx=idx,
                metadata=(task, doc_id, repeats),
                **kwargs,
            )
            for idx, gen_kwargs, repeats in ((0, greedy, 1), (1, sampled, self.settings.n_samples))
        ]

    @staticmethod
    def _chat_rendered(
        prompts: dict[str, str], apply_chat_template: Any, chat_template: Any
    ) -> dict[str, str]:
        """The follow-up prompts as one user turn in the run's chat template (setting reflexive_chat_template).

        ``{answer}`` passes through the template as text. ``semuq-api``'s chat endpoint already sends each follow-up as
        a user message in the server's template, so its prompts stay as they are."""
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
                self.doc_key(doc) or str(doc.get("question", "?"))[:60],
                type(err).__name__,
                err,
            )
            return []

    def doc_key(self, doc: dict) -> str | None:
        """The dataset's own id of a question (its ``id`` or ``question_id``), or None."""
        v = doc.get("id", doc.get("question_id"))
        return None if v is None else str(v)

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
        """One summary scalar of the run the step finished; of ``items`` finished anew (nothing written) if
        lm-eval aggregates other items than the step's."""
        fingerprint = tuple(it["doc_id"] for it in items)
        if fingerprint not in self._summary_cache:
            step = self.step
            finished = step.breakdown is not None and fingerprint == step.doc_ids
            self._summary_cache[fingerprint] = step.breakdown if finished else step.finish(items)
        return float(summary_scalars(self._summary_cache[fingerprint]).get(key, math.nan))

    def decoding_record(self) -> dict[str, Any]:
        """The run's decoding, as the breakdown records it."""
        from semuq_eval.models.decoding import NEUTRAL_DECODING

        greedy, sampled = self.decoding()
        return {
            "greedy": greedy,
            "sampled": sampled,
            "semuq_models_set_as_well": dict(NEUTRAL_DECODING),
            "note": "semuq-hf / semuq-hf-multimodal pass every other decoding option at its neutral value, so the "
            "model's generation_config cannot change the decoding; other lm-eval models apply their own defaults",
        }
