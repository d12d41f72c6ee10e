"""`semuq-api`: an lm-eval model for OpenAI-compatible servers (vLLM, SGLang, TGI, llama.cpp, OpenAI) that
returns `Generation`s with the log-probabilities the server gives.

A run, in the order things happen (docs/serving.md is the user's page):

1. **Probe** (first `generate_until`): one request tells what the server supports: ``n``, log-probabilities, top-k
   alternatives, ``echo`` (`semuq_eval.models.capabilities`). What the run falls back to is logged and recorded
   once, in ``Generation.source``, which the task writes into the run store's manifest and the breakdown
   (``generator``). Hidden states never come from a server: ``cos_int`` is unavailable, said once there.
2. **Requests**: lm-eval's requests are grouped by prompt (`semuq_eval.models.planning`, as `semuq-hf` does). The
   N samples of a question go in one request (``n=N``, split into requests of at most ``max_n``) when the server
   supports ``n``, else in N requests with seeds ``seed + i``; the greedy answer is one request at temperature 0.
   Requests run ``concurrency`` at a time (`semuq_eval.models.server_requests`) through the shared transport
   (`semuq_eval.openai_client`: API key from ``api_key_env``, retries with exponential backoff or the server's
   ``Retry-After``, a deadline on each whole request).
3. **Answers** (`semuq_eval.models.server_answer`): the text, the tokens that make it up with their character
   spans, their log-probabilities (so ``se``, ``msp``, ``perplexity``) and token entropies estimated from the
   top-k (`semuq_eval.models.topk`: ``te`` / ``te_enc`` are flagged approximate in the breakdown). No token ids.
4. **Reflexive follow-ups** (setting ``reflexive``, `semuq_eval.models.reflexive`): once a greedy answer is in, one
   request per follow-up at temperature 0, in the same worker: P(True) asks for one token with its top
   alternatives and reads the True-ish / False-ish mass at the first position from them (an alternative outside
   the server's top-k counts as no mass); the verbalized reply is the text of at most 8 tokens. The prompt is raw
   text on ``endpoint=completions`` and one user message on ``endpoint=chat`` (the server's chat template wraps
   it). A follow-up that fails (after its retries, or a reply that cannot be read) is recorded with its reason and
   its estimator is unavailable for that question; the answer is then not journaled.
5. **Journal**: every prompt's answers are appended to the generation journal (`semuq_eval.models.journal`) as soon
   as they are complete, and looked up before asking, so a run killed (or whose server went away) restarts
   without asking the server again for what it has. Answers with an error are not journaled.

Failures: a request that still fails after its retries (HTTP 5xx, no complete reply within ``timeout``, a reply
that breaks the protocol) gives its answers as empty text with the reason in ``Generation.error``: that question is
a bad doc of the breakdown, the run goes on and ends by saying how many requests failed and the first reason. A
server that cannot be reached at all (connection refused or reset, an unknown host) stops the run with a clear
error: everything answered so far is in the journal. HTTP 401 / 403 / 404 stop it at once.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.model import LM
from lm_eval.models.utils import normalize_gen_kwargs
from tqdm import tqdm

from semuq_eval.models.capabilities import Capabilities, probe
from semuq_eval.models.generation import Generation
from semuq_eval.models.journal import OFF, GenerationJournal, journal_key, open_journal, restore_groups
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


class SemuqAPILM(LM):
    """lm-eval model ``semuq-api`` (module docstring).

    Parameters
    ----------
    model : str
        The model name the server serves (sent with every request; names the journal folder).
    base_url : str
        The server's API root, e.g. ``http://127.0.0.1:8000/v1``.
    endpoint : {"completions", "chat"}
        (A transport option, like the next five: :class:`~semuq_eval.openai_client.ServerClient`.) The raw prompt (default; as `semuq-hf` without a chat template) or chat messages (the server applies its
        chat template; with ``--apply_chat_template`` lm-eval's messages are sent as they are).
    api_key_env : str
        The environment variable holding the API key (never a model argument: lm-eval writes those into its
        results).
    concurrency, timeout, max_retries, backoff :
        Requests in flight, the deadline of a whole request in seconds (connecting, sending, the whole reply),
        retries of a failed request and the first wait between them (an HTTP 429 / 503 ``Retry-After`` header
        overrides it, within a cap).
    logprobs : bool
        Ask for log-probabilities (off: text only, like lm-eval's own server models).
    top_logprobs : int
        Alternatives per token asked for the entropy estimate (0: none; servers cap it, OpenAI at 20 for chat
        and 5 for completions; the probe finds what comes back).
    max_gen_toks : int
        Token budget when a request gives none.
    seed : int or "none"
        Seed of the requests (sample i of a question without ``n``: ``seed + i``); part of the journal key.
        ``none``: requests carry no seed (docs/serving.md: vLLM's CPU build).
    max_n : int
        Most samples asked in one request.
    journal : str, optional
        The journal folder, ``off``, or None for ``<output_dir>/semuq/_journal/<model>/``.
    """

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
        kwargs = dict(kwargs)
        transport = {k: kwargs.pop(k) for k in TRANSPORT_OPTIONS if k in kwargs}
        unknown = sorted(set(kwargs) - set(LM_EVAL_ARGS))
        if unknown:
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
        raise NotImplementedError(
            "semuq-api serves generate_until (the semuq tasks); for log-likelihood tasks use lm-eval's "
            "local-completions"
        )

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError(
            "semuq-api serves generate_until (the semuq tasks); for rolling log-likelihoods use lm-eval's "
            "local-completions"
        )

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

        def hand_out(group: PromptGroup, answers: list[Generation]) -> None:
            deliver(results, group, answers, self.cache_hook)

        journal = self._journal()
        identity = self._identity()
        keys = {
            id(g): journal_key(identity, g.context, g.request_kwargs, g.aux, g.n_gen, self.seed)
            for g in groups
        }
        todo = restore_groups(
            groups,
            journal,
            keys,
            lambda group, stored: hand_out(group, [_with_source(g, self.source) for g in stored]),
            model="semuq-api",
        )
        pbar = tqdm(
            total=sum(g.n_gen for g in groups),
            initial=sum(g.n_gen for g in groups) - sum(g.n_gen for g in todo),
            disable=disable_tqdm,
            desc=f"semuq-api: {len(groups)} prompts",
            unit=" answers",
        )
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
            "capabilities": {k: v for k, v in caps.as_dict().items() if k != "fallbacks"},
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


def _with_source(answer: Generation, source: dict[str, Any] | None) -> Generation:
    answer.source = source
    return answer
