"""The requests of a ``semuq-api`` run (:mod:`semuq_eval.models.api`, steps 2-4): each prompt group's request bodies,
sent ``concurrency`` at a time through the shared transport, their replies read into answers, the reflexive
follow-ups, and each group delivered and journaled as soon as all its requests are answered."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from lm_eval.models.utils import normalize_gen_kwargs

from semuq_eval.models.capabilities import Capabilities
from semuq_eval.models.generation import Generation
from semuq_eval.models.journal import GenerationJournal
from semuq_eval.models.planning import PromptGroup
from semuq_eval.models.reflexive import APPROXIMATE_P_TRUE, VERBALIZED_MAX_TOKENS, failed, fill_answer, masses
from semuq_eval.models.server_answer import answer_from_choice
from semuq_eval.openai_client import RequestFailed, ServerClient, Unreadable
from semuq_eval.openai_replies import MalformedLogprobs, choice_text, first_choice, read_logprobs

__all__ = ["STANDARD_SAMPLING", "ChatPrompt", "ServerRequests", "extra_sampling"]

log = logging.getLogger(__name__)

STANDARD_SAMPLING = ("temperature", "top_p")
"""Sampling options of the OpenAI protocol itself; others (``top_k``, ``min_p``, ...) are sent only when the probe
found the server takes them."""
NOT_SAMPLING = ("do_sample", "until", "max_gen_toks")


class ChatPrompt(str):
    """A prompt that lm-eval's ``--apply_chat_template`` made: the chat messages as JSON (sent as ``messages``)."""

    def messages(self) -> list[dict[str, Any]]:
        return json.loads(self)


def seeded(seed: int | None, offset: int = 0) -> dict[str, int]:
    """The ``seed`` field of a request: ``seed + offset``, or none at all when the run sends no seeds.

    Examples
    --------
    >>> seeded(1234, 2), seeded(None, 2)
    ({'seed': 1236}, {})
    """
    return {} if seed is None else {"seed": int(seed) + int(offset)}


@dataclass
class ServerRequests:
    """How one run asks its server: the client, what the probe found (``capabilities``), the answers' ``source``,
    the requests' ``seed``, the most samples per request (``max_n``) and the default token budget."""

    client: ServerClient
    capabilities: Capabilities
    source: dict[str, Any] | None
    seed: int | None
    max_n: int
    max_gen_toks: int

    def units(self, group: PromptGroup) -> list[tuple[int, int]]:
        """The requests of a group as (number of answers, seed offset)."""
        if group.greedy:
            return [(1, 0)]
        size = min(self.max_n, group.n_gen) if self.capabilities.n else 1
        return [(min(size, group.n_gen - start), start) for start in range(0, group.n_gen, size)]

    def ask_all(
        self,
        todo: list[PromptGroup],
        deliver: Callable[[PromptGroup, list[Generation]], None],
        journal: GenerationJournal | None,
        keys: Mapping[int, str],
        pbar: Any,
    ) -> None:
        """Ask for every group of ``todo``, ``concurrency`` requests at a time; deliver and journal each group as
        soon as its requests are all answered; stop the run when the server cannot be reached."""
        parts: dict[int, dict[int, list[Generation]]] = {id(g): {} for g in todo}
        expected = {id(g): len(self.units(g)) for g in todo}
        finished = 0
        where = f"in the journal {journal.directory}" if journal is not None else "lost (no journal)"
        with ThreadPoolExecutor(max_workers=self.client.concurrency) as pool:
            pending: dict[Future, tuple[PromptGroup, int, int]] = {}
            for group in todo:
                for count, offset in self.units(group):
                    pending[pool.submit(self.ask, group, count, offset)] = (group, count, offset)
            while pending:
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for future in done:
                    group, count, offset = pending.pop(future)
                    try:
                        answers = future.result()
                    except BaseException as err:
                        for other in pending:
                            other.cancel()
                        if not isinstance(err, RequestFailed):
                            raise
                        # only an unreachable server gets here
                        raise RuntimeError(
                            f"semuq-api: the server {self.client.public_url} cannot be reached ({err.reason}); "
                            f"{finished} of {len(todo)} prompts asked in this run are {where}: start the server "
                            "and run the same command again to ask only for the rest"
                        ) from err
                    parts[id(group)][offset] = answers
                    pbar.update(count)
                    if len(parts[id(group)]) == expected[id(group)]:
                        got = [a for _, chunk in sorted(parts[id(group)].items()) for a in chunk]
                        deliver(group, got)
                        finished += 1
                        if journal is not None and not any(a.error or failed(a.reflexive) for a in got):
                            journal.add([(keys[id(group)], got)])

    def body(self, group: PromptGroup, count: int, offset: int) -> tuple[dict[str, Any], list[str], int]:
        """The request body of ``count`` answers of a group, its stop sequences and token budget."""
        caps = self.capabilities
        gen = normalize_gen_kwargs(group.gen_kwargs, self.max_gen_toks)
        until = [u for u in gen.get("until", []) if isinstance(u, str) and u]
        fields: dict[str, Any] = {"max_tokens": int(gen["max_gen_toks"]), **seeded(self.seed, offset)}
        if until:
            fields["stop"] = until[:4]  # the OpenAI limit; the rest are cut here (server_answer.cut_at_stop)
        if group.greedy:
            fields["temperature"] = 0.0
        else:
            fields.update({k: gen[k] for k in STANDARD_SAMPLING if k in gen})
            fields.update({k: v for k, v in extra_sampling(gen).items() if k in caps.sampling})
        if count > 1:
            fields["n"] = count
        if caps.logprobs:
            fields.update(self.client.logprob_fields(caps.top_logprobs))
        prompt = group.context.messages() if isinstance(group.context, ChatPrompt) else str(group.context)
        return self.client.body(prompt, **fields), until, count

    def ask(self, group: PromptGroup, count: int, offset: int) -> list[Generation]:
        """``count`` answers of ``group``: error answers when the request fails, RequestFailed when the server
        cannot be reached."""
        body, until, count = self.body(group, count, offset)
        caps = self.capabilities

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
                method: self.follow_up(method, fill_answer(template, answers[0].text))
                if answers[0].error is None
                else {"error": "the greedy answer failed"}
                for method, template in group.reflexive.items()
            }
        return answers

    def follow_up(self, method: str, prompt: str) -> dict[str, Any]:
        """One reflexive follow-up (module docstring, step 4): its result, or ``{"error": reason}``; RequestFailed
        when the server cannot be reached."""
        caps = self.capabilities
        fields: dict[str, Any] = {"temperature": 0.0, **seeded(self.seed)}
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


def extra_sampling(gen: Mapping[str, Any]) -> dict[str, Any]:
    """The sampling options of normalized gen kwargs that are not OpenAI's own (``top_k``, ``min_p``, ...)."""
    return {k: v for k, v in gen.items() if k not in STANDARD_SAMPLING and k not in NOT_SAMPLING}
