"""The one transport to OpenAI-compatible servers (vLLM, SGLang, TGI, llama.cpp's server, OpenAI itself).

Used by the ``openai`` judge and the ``semuq-api`` model to build (:meth:`ServerClient.body`: chat messages or a raw
completions prompt, log-probabilities asked in the endpoint's shape), send (:meth:`ServerClient.send`) and read
(:mod:`semuq_eval.openai_replies`) requests. The API key is read from ``api_key_env`` at each request, never stored,
logged or sent to another host. ``timeout`` bounds the whole request. Timeouts, refused connections, HTTP 429 / 5xx and
unreadable replies (:class:`Unreadable`) are retried ``max_retries`` times, with exponential backoff and jitter or as
``Retry-After`` asks (at most :data:`RETRY_AFTER_CAP`), then raise :class:`RequestFailed` (counted in
:attr:`ServerClient.failures`); HTTP 401 / 403 / 404 raise :class:`ServerRefused` at once."""

from __future__ import annotations

import email.utils
import functools
import http.client
import io
import json
import math
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, TypeVar

__all__ = [
    "ENDPOINTS",
    "FATAL_STATUS",
    "REFUSED_STATUS",
    "RETRY_AFTER_CAP",
    "RequestFailed",
    "ServerClient",
    "ServerRefused",
    "TRANSPORT_OPTIONS",
    "Unreadable",
    "retry_after",
]

ENDPOINTS = {"chat": "/chat/completions", "completions": "/completions"}
FATAL_STATUS = (401, 403, 404)
REFUSED_STATUS = (400, 413, 422)
"""Statuses of a request the server will not take as it is (an unknown field, a value out of range)."""
RETRY_AFTER_CAP = 60.0
"""The longest wait, in seconds, that a ``Retry-After`` header of an HTTP 429 / 503 reply obtains."""
BUSY_STATUS = (429, 503)

TRANSPORT_OPTIONS = ("endpoint", "api_key_env", "concurrency", "timeout", "max_retries", "backoff")
"""The :class:`ServerClient` options every caller (judge, model, rewriter) passes through as they are."""

T = TypeVar("T")


class ServerRefused(RuntimeError):
    """The server refuses the configuration (key, model or URL): every request would fail."""


class RequestFailed(RuntimeError):
    """A request still failing after every retry; ``unreachable`` when the last try found no server at all
    (connection refused or reset)."""

    def __init__(self, reason: str, *, unreachable: bool = False, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.unreachable = unreachable
        self.status = status


class Unreadable(ValueError):
    """A reply whose structure is not what was asked for (retried like a failed request)."""


class ServerClient:
    """Where and how to send requests to one OpenAI-compatible server (module docstring).

    ``base_url`` is the API root, e.g. ``http://127.0.0.1:8080/v1`` (a full ``.../completions`` URL also works);
    ``endpoint`` ``"chat"`` (the server applies its chat template) or ``"completions"`` (a raw prompt); ``api_key_env``
    the variable holding the key (unset or empty: none sent); ``concurrency`` the requests in flight in :meth:`map`;
    ``timeout`` the deadline of a whole request in seconds; ``backoff`` the first wait between the ``max_retries``
    retries, doubling each time (with jitter)."""

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
    ) -> None:
        if endpoint not in ENDPOINTS:
            raise ValueError(f"endpoint must be one of {sorted(ENDPOINTS)}, got {endpoint!r}")
        if not str(base_url).startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        for key, value, low in (("concurrency", concurrency, 1), ("max_retries", max_retries, 0)):
            if int(value) < low:
                raise ValueError(f"{key} must be >= {low}, got {value}")
        if not float(timeout) > 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        if not float(backoff) >= 0:
            raise ValueError(f"backoff must be >= 0, got {backoff}")
        self.base_url = str(base_url).rstrip("/")
        self.model = str(model)
        self.endpoint = endpoint
        self.api_key_env = api_key_env
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.failures: dict[str, int] = {}
        """Requests that failed after their retries, by reason, in the order first seen."""
        self.unreachable = 0
        """Of those, the requests whose last try found no server (connection refused or reset, unknown host)."""
        self._count_lock = threading.Lock()

    @classmethod
    def take(cls, base_url: str, model: str, options: dict[str, Any], **defaults: Any) -> ServerClient:
        """A client built from the :data:`TRANSPORT_OPTIONS` in ``options``, which are removed from it (the rest
        stays for the caller); ``defaults`` are the caller's own defaults of those options.

        Examples
        --------
        >>> options = {"timeout": 5, "max_tokens": 4}
        >>> client = ServerClient.take("http://127.0.0.1:8080/v1", "local", options, concurrency=8)
        >>> client.timeout, client.concurrency, options
        (5.0, 8, {'max_tokens': 4})
        """
        unknown = sorted(set(defaults) - set(TRANSPORT_OPTIONS))
        if unknown:
            raise TypeError(f"ServerClient.take: {unknown} are not transport options {TRANSPORT_OPTIONS}")
        chosen = {**defaults, **{k: options.pop(k) for k in TRANSPORT_OPTIONS if k in options}}
        return cls(base_url, model, **chosen)

    @property
    def url(self) -> str:
        """The endpoint's full URL."""
        if self.base_url.endswith(tuple(ENDPOINTS.values())):
            return self.base_url
        return self.base_url + ENDPOINTS[self.endpoint]

    @property
    def public_url(self) -> str:
        """``url`` without any user name or password it holds: what may be logged or written."""
        parts = urllib.parse.urlsplit(self.url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    # ------------------------------------------------------------------ building
    def body(self, prompt: str | list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
        """A request body: the model, the prompt (chat: ``messages``, a string becoming one user message;
        completions: ``prompt``) and ``fields`` (decoding, log-probabilities, ...)."""
        body: dict[str, Any] = {"model": self.model}
        if self.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        else:
            if not isinstance(prompt, str):
                raise ValueError("the completions endpoint takes a text prompt, not chat messages")
            body["prompt"] = prompt
        body.update(fields)
        return body

    def logprob_fields(self, top: int) -> dict[str, Any]:
        """The fields asking for each generated token's log-probability and its ``top`` alternatives."""
        if self.endpoint == "chat":
            return {"logprobs": True, **({"top_logprobs": int(top)} if top > 0 else {})}
        return {"logprobs": int(top)}

    # ------------------------------------------------------------------ sending
    def post(self, body: Mapping[str, Any]) -> Any:
        """One POST of ``body`` within the ``timeout`` deadline; the decoded JSON reply (urllib, socket and JSON
        errors propagate; :class:`TimeoutError` once the deadline has passed)."""
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        request.deadline = time.monotonic() + self.timeout  # read by the connections of _OPENER
        with _OPENER.open(request, timeout=self.timeout) as response:
            text = response.read().decode("utf-8")
        try:
            return json.loads(text)
        except RecursionError:  # a reply nested too deep: unreadable like any other non-JSON body
            raise json.JSONDecodeError("nested too deep", "", 0) from None

    @property
    def failed(self) -> int:
        """How many requests failed after their retries (:attr:`failures`)."""
        with self._count_lock:
            return sum(self.failures.values())

    @property
    def first_failure(self) -> str | None:
        """The reason of the first request that failed after its retries, or None."""
        with self._count_lock:
            return next(iter(self.failures), None)

    def server_version(self) -> str | None:
        """The server's own version where it reports one (vLLM: ``GET /version`` beside ``/v1``), else None;
        one short request (with the key, to the same host only), never an error."""
        parts = urllib.parse.urlsplit(self.base_url)
        root = parts.path.rstrip("/")
        root = root[: -len("/v1")] if root.endswith("/v1") else root
        url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, root + "/version", "", ""))
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        try:
            with _OPENER.open(
                urllib.request.Request(url, headers=headers, method="GET"), timeout=5
            ) as response:
                found = json.loads(response.read(4096).decode("utf-8"))
        except (OSError, ValueError):
            return None
        version = found.get("version") if isinstance(found, dict) else None
        return str(version)[:100] if isinstance(version, (str, int, float)) else None

    def send(self, body: Mapping[str, Any], read: Callable[[Any], T], *, retry_refused: bool = True) -> T:
        """POST ``body`` and return ``read(reply)``, retrying as the module docstring says (with
        ``retry_refused=False``, HTTP 400 / 413 / 422 fail at once, uncounted: a capability probe changes the request
        instead). Raises :class:`ServerRefused` for HTTP 401 / 403 / 404, :class:`RequestFailed` (counted in
        :attr:`failures`) when still failing after ``max_retries`` retries."""
        failure = RequestFailed("no attempt")
        wait: float | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(
                    self.backoff * 2 ** (attempt - 1) * (0.5 + random.random()) if wait is None else wait
                )
            try:
                return read(self.post(body))
            except _FAILED_TRY as exc:
                failure, wait = self._failure(exc)
                failure.__cause__ = exc
            if not retry_refused and failure.status in REFUSED_STATUS:
                raise failure
        reason = f"{failure.reason} (after {self.max_retries} retries)"
        with self._count_lock:
            self.failures[reason] = self.failures.get(reason, 0) + 1
            self.unreachable += failure.unreachable
        raise RequestFailed(
            reason, unreachable=failure.unreachable, status=failure.status
        ) from failure.__cause__

    def _failure(self, exc: BaseException) -> tuple[RequestFailed, float | None]:
        """What one failed try (an exception of :data:`_FAILED_TRY`) says: the reason (unreachable, HTTP
        status) and the wait ``Retry-After`` asks (None: the backoff's); ServerRefused for HTTP 401 / 403 / 404."""
        if isinstance(exc, urllib.error.HTTPError):
            detail = _detail(exc)
            if exc.code in FATAL_STATUS:
                raise ServerRefused(
                    f"server {self.public_url} answered HTTP {exc.code} for model {self.model!r}: "
                    f"{detail} (check base_url, model and the key in ${self.api_key_env})"
                ) from exc
            wait = retry_after(exc.headers.get("Retry-After")) if exc.code in BUSY_STATUS else None
            reason = f"HTTP {exc.code}: {detail[:120]}" if detail else f"HTTP {exc.code}"
            return RequestFailed(reason, status=exc.code), wait
        if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
            return RequestFailed("the server's reply is not JSON"), None
        if isinstance(exc, Unreadable):
            return RequestFailed(str(exc)), None
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, TimeoutError):
            return RequestFailed(f"request failed: no complete reply within timeout={self.timeout:g} s"), None
        unreachable = isinstance(reason, (ConnectionError, socket.gaierror)) or isinstance(
            exc, ConnectionError
        )
        return RequestFailed(f"request failed: {reason}", unreachable=unreachable), None

    def map(self, fn: Callable[[Any], T], items: Iterable[Any]) -> list[T]:
        """``[fn(x) for x in items]`` with ``concurrency`` calls in flight, in order."""
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(fn, items))


_FAILED_TRY = (OSError, http.client.HTTPException, json.JSONDecodeError, UnicodeDecodeError, Unreadable)
"""What a try that failed raises: urllib's and the socket's errors (timeouts, refused or reset connections, HTTP
errors), a cut or garbled HTTP reply, a body that is not JSON, a reply the caller cannot read."""


def retry_after(value: str | None) -> float | None:
    """The wait a ``Retry-After`` header asks, in seconds (a number of seconds or an HTTP date), within
    [0, :data:`RETRY_AFTER_CAP`]; None when there is none or it cannot be read.

    Examples
    --------
    >>> retry_after("1"), retry_after("3600"), retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), retry_after("soon")
    (1.0, 60.0, 0.0, None)
    """
    if not value or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
    return min(max(seconds, 0.0), RETRY_AFTER_CAP) if math.isfinite(seconds) else None


def _detail(exc: urllib.error.HTTPError) -> str:
    """The start of an HTTP error's body on one line, or "" when it cannot be read within the deadline."""
    try:
        raw = exc.read(200) if exc.fp else b""
    except (OSError, http.client.HTTPException):
        return ""
    return " ".join(raw.decode("utf-8", "replace").split())


# ---------------------------------------------------------------------------------------------------- deadlines
def _time_left(deadline: float) -> float:
    """Seconds until ``deadline`` (:func:`time.monotonic`), or TimeoutError when it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the request's deadline has passed")
    return left


class _DeadlineReader(io.RawIOBase):
    """A socket's reader whose every read waits at most until the deadline."""

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self.raw, self.sock, self.deadline = raw, sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self.sock.settimeout(_time_left(self.deadline))
        return self.raw.readinto(buffer)

    def fileno(self) -> int:
        return self.raw.fileno()

    def close(self) -> None:
        self.raw.close()  # releases the socket (urllib closes the connection before the reply is read)
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    """An HTTP reply whose status line, headers and body are read before the request's deadline."""

    def __init__(self, sock: socket.socket, *args: Any, deadline: float, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.fp = io.BufferedReader(_DeadlineReader(self.fp.detach(), sock, deadline))


class _DeadlineConnection:
    """Mixed into http.client's connections: connecting, sending and the reply end by ``deadline``."""

    def __init__(self, *args: Any, deadline: float, timeout: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, timeout=_time_left(deadline), **kwargs)
        self.deadline = deadline
        self.response_class = functools.partial(_DeadlineResponse, deadline=deadline)

    def send(self, data: Any) -> None:
        if self.sock is None:
            self.connect()
        self.sock.settimeout(_time_left(self.deadline))
        super().send(data)


class _DeadlineHTTPConnection(_DeadlineConnection, http.client.HTTPConnection):
    pass


class _DeadlineHTTPSConnection(_DeadlineConnection, http.client.HTTPSConnection):
    pass


def _deadline(request: urllib.request.Request) -> float:
    """A request's deadline: the one :meth:`ServerClient.post` set, else ``timeout`` from now."""
    found = getattr(request, "deadline", None)
    return found if found is not None else time.monotonic() + float(request.timeout or 60.0)


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_DeadlineHTTPConnection, deadline=_deadline(req)), req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_DeadlineHTTPSConnection, deadline=_deadline(req)), req)


class _NoCredentialsAcrossHosts(urllib.request.HTTPRedirectHandler):
    """Follows a redirect, but never sends the API key to another host (urllib copies every header)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and getattr(req, "deadline", None) is not None:
            new.deadline = req.deadline  # a redirect spends the same request's time
        if (
            new is not None
            and urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc
        ):
            new.headers.pop("Authorization", None)
            new.unredirected_hdrs.pop("Authorization", None)
        return new


_OPENER = urllib.request.build_opener(_NoCredentialsAcrossHosts, _DeadlineHTTPHandler, _DeadlineHTTPSHandler)


# ---------------------------------------------------------------------------------------------------- reading
