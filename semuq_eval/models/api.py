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
   Requests run ``concurrency`` at a time through the shared transport (`semuq_eval.openai_client`: API key from
   ``api_key_env``, retries with exponential backoff, timeouts).
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

Failures: a request that still fails after its retries (HTTP 5xx, a timeout, a reply that breaks the protocol)
gives its answers as empty text with the reason in ``Generation.error``: that question is a bad doc of the
breakdown and the run goes on. A server that cannot be reached at all (connection refused) stops the run with
a clear error: everything answered so far is in the journal. HTTP 401 / 403 / 404 stop it at once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.model import LM
from lm_eval.models.utils import normalize_gen_kwargs
from tqdm import tqdm

from semuq_eval.context import RunContext
from semuq_eval.models.capabilities import Capabilities, probe
from semuq_eval.models.generation import Generation
from semuq_eval.models.journal import GenerationJournal, journal_key, restore_groups
from semuq_eval.models.planning import PromptGroup, deliver, group_requests
from semuq_eval.models.reflexive import (
    APPROXIMATE_P_TRUE,
    VERBALIZED_MAX_TOKENS,
    check_model,
    failed,
    fill_answer,
    masses,
)
from semuq_eval.models.server_answer import answer_from_choice
from semuq_eval.models.topk import topk_method
from semuq_eval.openai_client import TRANSPORT_OPTIONS, RequestFailed, ServerClient, Unreadable
from semuq_eval.openai_replies import MalformedLogprobs, choice_text, first_choice, read_logprobs

__all__ = ["HIDDEN_STATES_REASON", "ChatPrompt", "SemuqAPILM"]

log = logging.getLogger(__name__)

HIDDEN_STATES_REASON = "OpenAI-compatible servers return no hidden states: cos_int and its estimators are unavailable (semuq-hf has them)"
STANDARD_SAMPLING = ("temperature", "top_p")
"""Sampling options of the OpenAI protocol itself; others (``top_k``, ``min_p``, ...) are sent only when the probe
found the server takes them."""
NOT_SAMPLING = ("do_sample", "until", "max_gen_toks")
LM_EVAL_ARGS = ("batch_size", "max_batch_size", "device")
"""Arguments lm-eval passes to every model; a server has no use for them."""
OFF = ("off", "none", "false", "no", "0")


class ChatPrompt(str):
    """A prompt that lm-eval's ``--apply_chat_template`` made: the chat messages as JSON (sent as ``messages``)."""

    def messages(self) -> list[dict[str, Any]]:
        return json.loads(self)


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
        Requests in flight, seconds per request, retries of a failed request and the first wait between them.
    logprobs : bool
        Ask for log-probabilities (off: text only, like lm-eval's own server models).
    top_logprobs : int
        Alternatives per token asked for the entropy estimate (0: none; servers cap it, OpenAI at 20 for chat
        and 5 for completions; the probe finds what comes back).
    max_gen_toks : int
        Token budget when a request gives none.
    seed : int
        Seed of the requests (sample i of a question without ``n``: ``seed + i``); part of the journal key.
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
        seed: int = 1234,
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
        self.seed = int(seed)
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
            self._ask_all(todo, hand_out, journal, keys, pbar)
        finally:
            pbar.close()
        failed = sum(1 for r in results if r is not None and r.error is not None)
        if failed:
            log.warning(
                "semuq-api: %d of %d answers came with an error (see the breakdown's bad_docs); they are not "
                "journaled: running the same command again asks only for them",
                failed,
                len(results),
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
                extra.update(_extra_sampling(normalize_gen_kwargs(group.gen_kwargs, self.max_gen_toks)))
        caps = probe(
            self.client, logprobs=self.logprobs, top_k=self.top_logprobs, sampling=extra, seed=self.seed
        )
        if not self.logprobs:
            caps.fallbacks.append("logprobs: off (model argument logprobs=false); answers are text only")
        self.capabilities = caps
        self.source = {
            "model": "semuq-api",
            "server_model": self.client.model,
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
            setting = self.journal
            if isinstance(setting, str) and setting.strip().lower() in OFF:
                return None
            context = RunContext.resolve()
            directory = Path(setting) if setting else context.journal_dir(self.client.model)
            if directory is None:
                log.warning(
                    "semuq-api: no output directory (--output_path): answers are not journaled, a killed run "
                    "starts over"
                )
                return None
            self._journal_obj = GenerationJournal(directory, rank=context.rank)
        return self._journal_obj

    # -- requests ----------------------------------------------------------------------------------------------
    def _units(self, group: PromptGroup) -> list[tuple[int, int]]:
        """The requests of a group as (number of answers, seed offset)."""
        if group.greedy:
            return [(1, 0)]
        assert self.capabilities is not None
        size = min(self.max_n, group.n_gen) if self.capabilities.n else 1
        return [(min(size, group.n_gen - start), start) for start in range(0, group.n_gen, size)]

    def _ask_all(self, todo, deliver, journal, keys, pbar) -> None:
        """Ask for every group of ``todo``, ``concurrency`` requests at a time; deliver and journal each group as
        soon as its requests are all answered; stop the run when the server cannot be reached."""
        parts: dict[int, dict[int, list[Generation]]] = {id(g): {} for g in todo}
        expected = {id(g): len(self._units(g)) for g in todo}
        finished = 0
        with ThreadPoolExecutor(max_workers=self.client.concurrency) as pool:
            pending: dict[Future, tuple[PromptGroup, int, int]] = {}
            for group in todo:
                for count, offset in self._units(group):
                    pending[pool.submit(self._ask, group, count, offset)] = (group, count, offset)
            while pending:
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for future in done:
                    group, count, offset = pending.pop(future)
                    try:
                        answers = future.result()
                    except RequestFailed as err:  # only an unreachable server gets here
                        for other in pending:
                            other.cancel()
                        where = (
                            f"in the journal {journal.directory}"
                            if journal is not None
                            else "lost (no journal)"
                        )
                        raise RuntimeError(
                            f"semuq-api: the server {self.client.public_url} cannot be reached ({err.reason}); "
                            f"{finished} of {len(todo)} prompts asked in this run are {where}: start the server "
                            "and run the same command again to ask only for the rest"
                        ) from err
                    except BaseException:
                        for other in pending:
                            other.cancel()
                        raise
                    parts[id(group)][offset] = answers
                    pbar.update(count)
                    if len(parts[id(group)]) == expected[id(group)]:
                        got = [a for _, chunk in sorted(parts[id(group)].items()) for a in chunk]
                        deliver(group, got)
                        finished += 1
                        if journal is not None and not any(a.error or failed(a.reflexive) for a in got):
                            journal.add([(keys[id(group)], got)])

    def _body(self, group: PromptGroup, count: int, offset: int) -> tuple[dict[str, Any], list[str], int]:
        """The request body of ``count`` answers of a group, its stop sequences and token budget."""
        caps = self.capabilities
        assert caps is not None
        gen = normalize_gen_kwargs(group.gen_kwargs, self.max_gen_toks)
        until = [u for u in gen.get("until", []) if isinstance(u, str) and u]
        fields: dict[str, Any] = {"max_tokens": int(gen["max_gen_toks"]), "seed": self.seed + offset}
        if until:
            fields["stop"] = until[:4]  # the OpenAI limit; the rest are cut here (server_answer.cut_at_stop)
        if group.greedy:
            fields["temperature"] = 0.0
        else:
            fields.update({k: gen[k] for k in STANDARD_SAMPLING if k in gen})
            fields.update({k: v for k, v in _extra_sampling(gen).items() if k in caps.sampling})
        if count > 1:
            fields["n"] = count
        if caps.logprobs:
            fields.update(self.client.logprob_fields(caps.top_logprobs))
        prompt = group.context.messages() if isinstance(group.context, ChatPrompt) else str(group.context)
        return self.client.body(prompt, **fields), until, count

    def _ask(self, group: PromptGroup, count: int, offset: int) -> list[Generation]:
        """``count`` answers of ``group``: error answers when the request fails, RequestFailed when the server
        cannot be reached."""
        body, until, count = self._body(group, count, offset)
        caps = self.capabilities
        assert caps is not None

        def read(payload: Any) -> list[Generation]:
            choices = payload.get("choices") if isinstance(payload, Mapping) else None
            if not isinstance(choices, list):
                raise Unreadable("the server's reply has no choices list")
            if len(choices) != count:
                raise Unreadable(f"choices: asked for {count} answer(s), the server returned {len(choices)}")
            if all(isinstance(c, Mapping) and isinstance(c.get("index"), int) for c in choices):
                choices = sorted(choices, key=lambda c: c["index"])
            return [
                answer_from_choice(
                    choice,
                    endpoint=self.client.endpoint,
                    until=until,
                    top_k=caps.top_logprobs,
                    want_logprobs=caps.logprobs,
                    greedy=group.greedy,
                    where=f"choices[{i}]",
                    source=self.source,
                )
                for i, choice in enumerate(choices)
            ]

        try:
            answers = self.client.send(body, read)
        except RequestFailed as err:
            if err.unreachable:
                raise
            log.warning("semuq-api: a request failed: %s", err.reason)
            answers = [
                Generation("", greedy=group.greedy, error=f"request failed: {err.reason}", source=self.source)
                for _ in range(count)
            ]
        if group.reflexive:
            answers[0].reflexive = {
                method: self._follow_up(method, fill_answer(template, answers[0].text))
                if answers[0].error is None
                else {"error": "the greedy answer failed"}
                for method, template in group.reflexive.items()
            }
        return answers

    def _follow_up(self, method: str, prompt: str) -> dict[str, Any]:
        """One reflexive follow-up (module docstring, step 4): its result, or ``{"error": reason}``; RequestFailed
        when the server cannot be reached."""
        caps = self.capabilities
        assert caps is not None
        fields: dict[str, Any] = {"temperature": 0.0, "seed": self.seed}
        if method == "verbalized":
            fields["max_tokens"] = VERBALIZED_MAX_TOKENS

            def read(payload: Any) -> dict[str, Any]:
                return {"reply": choice_text(first_choice(payload), self.client.endpoint)}

        else:
            if not caps.logprobs:
                return {"error": "the server returns no log-probabilities"}
            fields.update(max_tokens=1, **self.client.logprob_fields(caps.top_logprobs))

            def read(payload: Any) -> dict[str, Any]:
                choice = first_choice(payload)
                try:
                    parsed = read_logprobs(choice.get("logprobs") if isinstance(choice, Mapping) else None)
                except MalformedLogprobs as err:
                    raise Unreadable(str(err)) from None
                if parsed is None or not parsed.tokens:
                    raise Unreadable("the server's reply has no log-probabilities of the first token")
                first = dict(parsed.top[0]) if parsed.top else {}
                first.setdefault(parsed.tokens[0], parsed.logprobs[0])
                # the server shows the top-k first tokens only: the masses are lower bounds
                return {**masses(first), "approximate": f"{APPROXIMATE_P_TRUE}(k={len(first)})"}

        try:
            return self.client.send(self.client.body(prompt, **fields), read)
        except RequestFailed as err:
            if err.unreachable:
                raise
            log.warning("semuq-api: a %s follow-up failed: %s", method, err.reason)
            return {"error": err.reason}


def _extra_sampling(gen: Mapping[str, Any]) -> dict[str, Any]:
    """The sampling options of normalized gen kwargs that are not OpenAI's own (``top_k``, ``min_p``, ...)."""
    return {k: v for k, v in gen.items() if k not in STANDARD_SAMPLING and k not in NOT_SAMPLING}


def _with_source(answer: Generation, source: dict[str, Any] | None) -> Generation:
    answer.source = source
    return answer
