"""The ``openai`` judge: any OpenAI-compatible server (vLLM, llama.cpp's server, TGI, OpenAI itself).

Each prompt is one request to ``/chat/completions`` (``endpoint="chat"``) or ``/completions``, at temperature 0 with
a few tokens. When the server returns log-probabilities, ``p_correct`` is the "yes" mass over the "yes" and "no"
mass among the top tokens of the reply's first position (label ``p_correct > 0.5``); otherwise the reply is parsed
strictly (:func:`~semuq_eval.judges.prompts.parse_yes_no`). An unreadable reply, or a request that fails after
``max_retries`` retries, is an unknown label with its reason (counted in ``stats``, never cached); HTTP 401 / 403 /
404 stop the judge at once. The transport is :mod:`semuq_eval.openai_client`, as for ``semuq-api`` (docs/judges.md).

Example
-------
::

    python -m semuq_eval.models.llamacpp model.gguf --port 8080 &
    semuq-eval judge STORE --judge openai \\
        --judge_args base_url=http://127.0.0.1:8080/v1,model=local,endpoint=completions --name llamacpp
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from semuq_eval.judges.base import Verdict
from semuq_eval.judges.prompted import PromptedJudge
from semuq_eval.judges.prompts import parse_yes_no
from semuq_eval.openai_client import TRANSPORT_OPTIONS, RequestFailed, ServerClient, ServerRefused, Unreadable
from semuq_eval.openai_replies import MalformedLogprobs, choice_text, first_choice, read_logprobs

__all__ = ["JudgeServerError", "OpenAIJudge", "yes_no_probability"]

JudgeServerError = ServerRefused
"""The server refuses the judge's configuration (key, model or URL): every request would fail."""


def yes_no_probability(top: Mapping[str, float]) -> float | None:
    """p(yes) / (p(yes) + p(no)) from one position's top tokens ``{token: logprob}``; None without either.

    Examples
    --------
    >>> round(yes_no_probability({" Yes": math.log(0.6), "No": math.log(0.2), "Maybe": math.log(0.2)}), 2)
    0.75
    >>> yes_no_probability({"Maybe": -0.1}) is None
    True
    """
    mass = {"yes": 0.0, "no": 0.0}
    for token, logprob in top.items():
        word = str(token).strip().lower()
        if logprob is not None and math.isfinite(float(logprob)) and word in mass:
            mass[word] += math.exp(float(logprob))
    total = mass["yes"] + mass["no"]
    return mass["yes"] / total if total > 0.0 else None


class OpenAIJudge(PromptedJudge):
    """An OpenAI-compatible server as judge (module docstring).

    ``base_url``: the server's API root, e.g. ``http://127.0.0.1:8080/v1`` (a full ``.../completions`` URL works);
    ``model``: the model name sent; ``logprobs``: ask for the top log-probabilities of the reply's first tokens;
    ``max_tokens``: tokens in the reply; ``**options``: the transport's (``endpoint``, ``api_key_env``,
    ``concurrency`` (default 8 here), ``timeout``, ``max_retries``, ``backoff``:
    :class:`~semuq_eval.openai_client.ServerClient`) and the prompt and cache options of
    :class:`~semuq_eval.judges.prompted.PromptedJudge`."""

    forwarded_options = TRANSPORT_OPTIONS
    """Taken through ``**options`` by the transport (:class:`~semuq_eval.openai_client.ServerClient`)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        logprobs: bool = True,
        max_tokens: int = 4,
        **options: Any,
    ) -> None:
        if int(max_tokens) < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        options = dict(options)
        self.client = ServerClient.take(base_url, model, options, concurrency=8, timeout=60.0)
        super().__init__(**options)
        self.logprobs = bool(logprobs)
        self.max_tokens = int(max_tokens)

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "judge": self.name,
            "model": self.client.model,
            "endpoint": self.client.endpoint,
            "decoding": f"temperature 0, max_tokens {self.max_tokens}; yes/no log-probabilities when returned, "
            "else the reply parsed strictly",
        }

    @property
    def info(self) -> dict[str, Any]:
        return {**super().info, "base_url": self.client.base_url}

    # ------------------------------------------------------------------ requests
    def _ask(self, prompt: str) -> Verdict:
        logprobs = self.client.logprob_fields(10) if self.logprobs else {}
        body = self.client.body(prompt, temperature=0.0, max_tokens=self.max_tokens, **logprobs)
        try:
            return self.client.send(body, self._read)
        except RequestFailed as exc:
            return Verdict(None, error=str(exc))

    def _read(self, payload: Any) -> Verdict:
        choice = first_choice(payload)
        text = choice_text(choice, self.client.endpoint)
        p = yes_no_probability(_first_top(choice.get("logprobs"), self.client.endpoint))
        if p is not None:
            return Verdict(p > 0.5, p, text)
        if not text.strip():
            raise Unreadable("the server's reply is empty")
        label = parse_yes_no(text)
        if label is None:
            return Verdict(None, reply=text, error="unreadable reply")
        return Verdict(label, None, text)

    def judge_prompts(self, prompts: Sequence[str], questions: Sequence[int]) -> list[Verdict]:
        verdicts = self.client.map(self._ask, prompts)
        self.stats["failures"] = dict(self.client.failures)
        self.stats["unreachable"] = self.client.unreachable
        return verdicts


def _first_top(logprobs: Any, endpoint: str) -> dict[str, float]:
    """``{token: logprob}`` at the reply's first position (chat) or first non-blank one (completions); empty
    when the server returned none or they cannot be read (the text then decides)."""
    try:
        parsed = read_logprobs(logprobs)
    except MalformedLogprobs:
        return {}
    if parsed is None:
        return {}
    for i, token in enumerate(parsed.tokens):
        if endpoint == "chat" or token.strip():
            return parsed.top[i] or {token: parsed.logprobs[i]}
    return {}
