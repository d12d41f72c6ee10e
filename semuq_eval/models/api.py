"""`semuq-api`: an lm-eval model for OpenAI-compatible servers (vLLM, SGLang, TGI, llama.cpp, OpenAI) that
returns `Generation`s with the log-probabilities the server gives.

A run, step by step (docs/serving.md is the user's page): 1. a **probe** (`semuq_eval.models.capabilities`) finds
what the server supports, the fallbacks recorded in ``Generation.source``; 2. **requests**
(`semuq_eval.models.server_requests`): a question's N samples in one request (``n=N``, split at ``max_n``; without
``n``: N requests, seeds ``seed + i``), its greedy answer at temperature 0, ``concurrency`` at a time; 3.
**answers** (`semuq_eval.models.server_answer`): the text, its tokens' spans, log-probabilities and top-k entropy
estimates, no token ids or hidden states; 4. **reflexive follow-ups**: one request each at temperature 0 after the
greedy answer; 5. the **journal** keeps each prompt's complete, error-free answers, so a restarted run asks only
for what is missing. A request failing after its retries gives empty answers with the reason in
``Generation.error``; an unreachable server stops the run, HTTP 401 / 403 / 404 at once."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from functools import partial
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.model import LM
from lm_eval.models.utils import normalize_gen_kwargs

from semuq_eval.models.capabilities import Capabilities, probe
from semuq_eval.models.generation import Generation
from semuq_eval.models.journal import OFF, GenerationJournal, open_journal, progress, restore_groups
from semuq_eval.models.planning import PromptGroup, deliver, group_requests
from semuq_eval.models.reflexive import check_model
from semuq_eval.models.server_requests import ChatPrompt, ServerRequests, extra_sampling
from semuq_eval.models.topk import topk_method
from semuq_eval.openai_client import TRANSPORT_OPTIONS, ServerClient

__all__ = ["HIDDEN_STATES_REASON", "SemuqAPILM"]

log = logging.getLogger(__name__)

HIDDEN_STATES_REASON = "OpenAI-compatible servers return no hidden states: cos_int and its estimators are unavailable (semuq-hf has them)"
LM_EVAL_ARGS = ("batch_size", "max_batch_size", "device")
"""Arguments lm-eval passes to every model; a server has no use for them."""
NO_LOGLIKELIHOOD = "semuq-api serves generate_until (the semuq tasks); for {} use lm-eval's local-completions"


class SemuqAPILM(LM):
    """lm-eval model ``semuq-api`` (module docstring).

    Arguments (docs/serving.md, "Options"): ``model`` (the served model's name; names the journal folder) and
    ``base_url`` (the API root, e.g. ``http://127.0.0.1:8000/v1``), required; ``endpoint``, ``api_key_env``,
    ``concurrency``, ``timeout``, ``max_retries`` and ``backoff``, the transport's
    (:class:`~semuq_eval.openai_client.ServerClient`; the API key is never a model argument: lm-eval writes those
    into its results); ``logprobs``; ``top_logprobs`` (alternatives per token for the entropy estimate, 0: none);
    ``max_gen_toks`` (the budget when a request gives none); ``seed`` (sample i without ``n``: ``seed + i``; part of
    the journal key; ``none``: no seed sent); ``max_n`` (most samples per request); ``journal`` (a folder, ``off``,
    or None for ``<output_dir>/semuq/_journal/<model>/``)."""

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        logprobs: bool | str = True,
        top_logprobs: int = 20,
        max_gen_toks: int = 256,
        seed: int | str = 1234,
        max_n: int = 64,
        journal: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if "api_key" in kwargs:
            raise ValueError(
                "semuq-api: do not pass the API key as a model argument (lm-eval writes model arguments into its "
                "results); put it in an environment variable and name it with api_key_env=NAME (now "
                f"{kwargs.get('api_key_env', 'OPENAI_API_KEY')})"
            )
        transport = {k: kwargs.pop(k) for k in TRANSPORT_OPTIONS if k in kwargs}
        if unknown := sorted(set(kwargs) - set(LM_EVAL_ARGS)):
            raise ValueError(f"semuq-api: unknown model argument(s) {unknown}; see docs/serving.md")
        if not model or not base_url:
            raise ValueError("semuq-api needs model=NAME and base_url=http://HOST:PORT/v1 in --model_args")
        for name, value, low in (("top_logprobs", top_logprobs, 0), ("max_gen_toks", max_gen_toks, 1)):
            if int(value) < low:
                raise ValueError(f"semuq-api: {name} must be >= {low}, got {value}")
        if int(max_n) < 1:
            raise ValueError(f"semuq-api: max_n must be >= 1, got {max_n}")
        self.client = ServerClient.take(
            base_url, str(model), transport, endpoint="completions", concurrency=4, timeout=120.0
        )
        self.logprobs = str(logprobs).strip().lower() not in OFF
        self.top_logprobs = int(top_logprobs) if self.logprobs else 0
        self.max_gen_toks = int(max_gen_toks)
        self.seed = None if str(seed).strip().lower() in OFF else int(seed)
        self.max_n = int(max_n)
        self.journal = journal
        self.capabilities: Capabilities | None = None
        self.source: dict[str, Any] | None = None
        self._journal_obj: GenerationJournal | None = None

    # -- lm-eval's interface ----------------------------------------------------------------------------------
    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError(NO_LOGLIKELIHOOD.format("log-likelihood tasks"))

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError(NO_LOGLIKELIHOOD.format("rolling log-likelihoods"))

    @property
    def tokenizer_name(self) -> str:
        return f"semuq-api:{self.client.model}"

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> ChatPrompt:
        """The messages as they are: the server applies its own chat template (``endpoint=chat`` only)."""
        if self.client.endpoint != "chat":
            raise ValueError(
                "semuq-api: --apply_chat_template needs endpoint=chat (the server applies its chat template); "
                "endpoint=completions sends the raw prompt"
            )
        return ChatPrompt(json.dumps(chat_history, ensure_ascii=False))

    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[Generation]:
        if not requests:
            return []
        groups = group_requests(requests, self.max_gen_toks, str)
        check_model(sorted({m for g in groups for m in g.reflexive or ()}), "semuq-api")
        self._start(groups)
        results: list[Generation | None] = [None] * len(requests)
        hand_out = partial(deliver, results, self.cache_hook, self.source)
        journal = self._journal()
        keys = journal.group_keys(groups, self._identity(), self.seed) if journal is not None else {}
        todo = restore_groups(groups, journal, keys, hand_out, model="semuq-api")
        pbar = progress(groups, todo, "semuq-api", disable_tqdm)
        try:
            assert self.capabilities is not None
            asker = ServerRequests(
                self.client, self.capabilities, self.source, self.seed, self.max_n, self.max_gen_toks
            )
            asker.ask_all(todo, hand_out, journal, keys, pbar)
        finally:
            pbar.close()
        failed = sum(1 for r in results if r is not None and r.error is not None)
        if failed:
            log.warning(
                "semuq-api: %d of %d answers came with an error (see the breakdown's bad_docs; %d requests "
                "failed after their retries, first: %s); they are not journaled: running the same command "
                "again asks only for them",
                failed,
                len(results),
                self.client.failed,
                self.client.first_failure,
            )
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    # -- the run's start ---------------------------------------------------------------------------------------
    def _start(self, groups: list[PromptGroup]) -> None:
        """Probe the server once (module docstring, step 1)."""
        if self.capabilities is not None:
            return
        extra: dict[str, Any] = {}
        for group in groups:
            if not group.greedy:
                extra.update(extra_sampling(normalize_gen_kwargs(group.gen_kwargs, self.max_gen_toks)))
        caps = probe(
            self.client, logprobs=self.logprobs, top_k=self.top_logprobs, sampling=extra, seed=self.seed
        )
        if not self.logprobs:
            caps.fallbacks.append("logprobs: off (model argument logprobs=false); answers are text only")
        self.capabilities = caps
        self.source = {
            "model": "semuq-api",
            "server_model": self.client.model,
            "server_version": self.client.server_version(),
            "base_url": self.client.public_url,
            "endpoint": self.client.endpoint,
            "capabilities": {k: v for k, v in asdict(caps).items() if k != "fallbacks"},
            "fallbacks": list(caps.fallbacks),
            "token_entropies": topk_method(caps.top_logprobs) if caps.top_logprobs else None,
            "unavailable": {
                "hidden_states": HIDDEN_STATES_REASON,
                "token_ids": "servers return token text, not ids: the length estimator is unavailable",
            },
        }
        log.info(
            "semuq-api: %s (%s endpoint): n %s, logprobs %s, top_logprobs %d, echo %s (%d probe request(s))",
            self.client.public_url,
            self.client.endpoint,
            "yes" if caps.n else "no",
            "yes" if caps.logprobs else "no",
            caps.top_logprobs,
            {None: "n/a", True: "yes", False: "no"}[caps.echo],
            caps.probe_requests,
        )
        for fallback in caps.fallbacks:
            log.warning("semuq-api: fallback: %s", fallback)
        if caps.top_logprobs:
            log.info(
                "semuq-api: token entropies are estimated (%s): te / te_enc are flagged approximate",
                topk_method(caps.top_logprobs),
            )
        log.info("semuq-api: %s", HIDDEN_STATES_REASON)

    def _identity(self) -> dict[str, Any]:
        caps = self.capabilities
        return {
            "name": self.client.model,
            "api": "openai-compatible",
            "endpoint": self.client.endpoint,
            "logprobs": bool(caps and caps.logprobs),
            "top_logprobs": caps.top_logprobs if caps else 0,
        }

    def _journal(self) -> GenerationJournal | None:
        """The generation journal (model argument ``journal``), or None when off or nothing is written."""
        if self._journal_obj is None:
            self._journal_obj = open_journal(self.journal, self.client.model, model="semuq-api")
        return self._journal_obj
