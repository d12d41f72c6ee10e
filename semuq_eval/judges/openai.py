"""The ``openai`` judge: any OpenAI-compatible server (vLLM, llama.cpp's server, TGI, OpenAI itself).

Each prompt is one request to ``/chat/completions`` (``endpoint="chat"``, the prompt as the user message)
or ``/completions`` (``endpoint="completions"``, the raw prompt), at temperature 0 with a few tokens. When
the server returns log-probabilities, ``p_correct`` is the mass on "yes" over the mass on "yes" and "no"
among the top tokens of the reply's first position, and the label is ``p_correct > 0.5``; otherwise the
reply is parsed strictly (:func:`~semuq_eval.judges.prompts.parse_yes_no`). A reply that cannot be read is
an unknown label with the reply kept; a request that still fails after ``max_retries`` retries (timeout,
connection refused, HTTP 429 / 5xx, garbage body) is an unknown label with the reason, not cached, so the
next run asks again. HTTP 401 / 403 / 404 (wrong key, model or URL) stop the judge at once with a clear
error. ``concurrency`` requests run in parallel. The API key is read from the environment variable named by
``api_key_env`` (no key: no Authorization header, as local servers expect).

Example
-------
::

    python -m llama_cpp.server --model model.gguf --host 127.0.0.1 --port 8080 &
    semuq-eval judge STORE --judge openai \\
        --judge_args base_url=http://127.0.0.1:8080/v1,model=local,endpoint=completions --name llamacpp
"""

from __future__ import annotations

import json
import math
import os
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from semuq_eval.judges.base import Verdict
from semuq_eval.judges.prompted import PromptedJudge
from semuq_eval.judges.prompts import parse_yes_no

__all__ = ["JudgeServerError", "OpenAIJudge", "yes_no_probability"]

ENDPOINTS = {"chat": "/chat/completions", "completions": "/completions"}
FATAL_STATUS = (401, 403, 404)


class JudgeServerError(RuntimeError):
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
    yes = no = 0.0
    for token, logprob in top.items():
        word = str(token).strip().lower()
        if logprob is None or not math.isfinite(float(logprob)):
            continue
        if word == "yes":
            yes += math.exp(float(logprob))
        elif word == "no":
            no += math.exp(float(logprob))
    return yes / (yes + no) if yes + no > 0.0 else None


class OpenAIJudge(PromptedJudge):
    """An OpenAI-compatible server as judge (module docstring).

    Parameters
    ----------
    base_url : str
        The server's API root, e.g. ``http://127.0.0.1:8080/v1`` (a full ``.../completions`` URL also works).
    model : str
        The model name sent with every request.
    endpoint : {"chat", "completions"}
        Chat messages (the server applies its chat template) or a raw prompt.
    api_key_env : str
        The environment variable holding the API key (default ``OPENAI_API_KEY``; unset: no key sent).
    concurrency : int
        Requests in flight at once.
    timeout : float
        Seconds per request.
    max_retries : int
        Retries of a failed request, waiting ``backoff * 2**attempt`` seconds (with jitter) in between.
    backoff : float
        The first wait, in seconds.
    logprobs : bool
        Ask for the top log-probabilities of the reply's first tokens (read when the server returns them).
    max_tokens : int
        Tokens in the reply.
    **options
        Prompt and cache options of :class:`~semuq_eval.judges.prompted.PromptedJudge`.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        endpoint: str = "chat",
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        logprobs: bool = True,
        max_tokens: int = 4,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        if endpoint not in ENDPOINTS:
            raise ValueError(f"endpoint must be one of {sorted(ENDPOINTS)}, got {endpoint!r}")
        if not str(base_url).startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        for key, value, low in (
            ("concurrency", concurrency, 1),
            ("max_retries", max_retries, 0),
            ("max_tokens", max_tokens, 1),
        ):
            if int(value) < low:
                raise ValueError(f"{key} must be >= {low}, got {value}")
        if not float(timeout) > 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.base_url = str(base_url).rstrip("/")
        self.model = str(model)
        self.endpoint = endpoint
        self.api_key_env = api_key_env
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.logprobs = bool(logprobs)
        self.max_tokens = int(max_tokens)

    @property
    def url(self) -> str:
        if self.base_url.endswith(tuple(ENDPOINTS.values())):
            return self.base_url
        return self.base_url + ENDPOINTS[self.endpoint]

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "judge": self.name,
            "model": self.model,
            "endpoint": self.endpoint,
            "decoding": f"temperature 0, max_tokens {self.max_tokens}; yes/no log-probabilities when returned, "
            "else the reply parsed strictly",
        }

    @property
    def info(self) -> dict[str, Any]:
        return {**super().info, "base_url": self.base_url}

    # ------------------------------------------------------------------ requests
    def _body(self, prompt: str) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "temperature": 0.0, "max_tokens": self.max_tokens}
        if self.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": prompt}]
            if self.logprobs:
                body.update(logprobs=True, top_logprobs=10)
        else:
            body["prompt"] = prompt
            if self.logprobs:
                body["logprobs"] = 10
        return body

    def _post(self, body: Mapping[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        with _OPENER.open(request, timeout=self.timeout) as response:
            return json.loads(response.read().decode("utf-8"))

    def _ask(self, prompt: str) -> Verdict:
        error = "no attempt"
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1) * (0.5 + random.random()))
            try:
                return self._read(self._post(self._body(prompt)))
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:200].decode("utf-8", "replace") if exc.fp else ""
                if exc.code in FATAL_STATUS:
                    raise JudgeServerError(
                        f"judge server {self.url} answered HTTP {exc.code} for model {self.model!r}: {detail.strip()} "
                        f"(check base_url, model and the key in ${self.api_key_env})"
                    ) from exc
                error = f"HTTP {exc.code}"
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                error = f"request failed: {getattr(exc, 'reason', exc)}"
            except (json.JSONDecodeError, UnicodeDecodeError):
                error = "the server's reply is not JSON"
            except _Unreadable as exc:
                error = str(exc)
        return Verdict(None, error=f"{error} (after {self.max_retries} retries)")

    def _read(self, payload: Mapping[str, Any]) -> Verdict:
        try:
            choice = payload["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise _Unreadable("the server's reply has no choices") from None
        if not isinstance(choice, Mapping):
            raise _Unreadable(
                f"the server's reply has a choice that is not an object ({type(choice).__name__})"
            )
        if self.endpoint == "chat":
            message = choice.get("message")
            if not isinstance(message, Mapping):
                raise _Unreadable("the server's reply has no message object")
            text = message.get("content")
            top = _chat_top(choice.get("logprobs"))
        else:
            text = choice.get("text")
            top = _completion_top(choice.get("logprobs"))
        if not isinstance(text, str):
            raise _Unreadable("the server's reply has no text")
        p = yes_no_probability(top) if top else None
        if p is not None:
            return Verdict(p > 0.5, p, text)
        label = parse_yes_no(text)
        if label is None:
            return Verdict(None, reply=text, error="unreadable reply")
        return Verdict(label, None, text)

    def judge_prompts(self, prompts: Sequence[str], questions: Sequence[int]) -> list[Verdict]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._ask, prompts))


class _Unreadable(ValueError):
    """A reply whose structure is not an OpenAI completion (retried like a failed request)."""


class _NoCredentialsAcrossHosts(urllib.request.HTTPRedirectHandler):
    """Follows a redirect, but never sends the API key to another host (urllib copies every header)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if (
            new is not None
            and urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc
        ):
            new.headers.pop("Authorization", None)
            new.unredirected_hdrs.pop("Authorization", None)
        return new


_OPENER = urllib.request.build_opener(_NoCredentialsAcrossHosts)


def _chat_top(logprobs: Any) -> dict[str, float]:
    """``{token: logprob}`` of the first position of a chat reply's ``logprobs.content``."""
    try:
        first = logprobs["content"][0]
        top = first.get("top_logprobs") or [first]
        return {str(t["token"]): float(t["logprob"]) for t in top}
    except (AttributeError, KeyError, IndexError, TypeError, ValueError):
        return {}


def _completion_top(logprobs: Any) -> dict[str, float]:
    """``{token: logprob}`` of the first non-blank position of a completion's legacy ``logprobs``."""
    try:
        tokens, tops = logprobs.get("tokens") or [], logprobs.get("top_logprobs") or []
        for token, top in zip(tokens, tops, strict=False):
            if str(token).strip():
                return {str(k): float(v) for k, v in (top or {}).items()}
    except (AttributeError, TypeError, ValueError):
        pass
    return {}
