"""Reading an OpenAI-compatible server's reply: the text of a choice, and its per-token log-probabilities in either
shape (chat ``content`` list, or the completions ``tokens`` / ``token_logprobs`` / ``top_logprobs`` / ``text_offset``
lists; servers mix them), checked field by field: a wrong count or type is a :class:`MalformedLogprobs` naming the
field; a reply without what the caller reads is :class:`~semuq_eval.openai_client.Unreadable` (the transport retries
it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from semuq_eval.openai_client import Unreadable

__all__ = ["MalformedLogprobs", "TokenLogprobs", "choice_text", "first_choice", "read_logprobs"]

POSITIVE_TOLERANCE = 1e-3
"""Log-probabilities in (0, this] are rounding noise of a server and read as 0; larger positive ones are refused."""


class MalformedLogprobs(ValueError):
    """Log-probabilities whose counts or types are wrong; the message names the field."""


def first_choice(payload: Any) -> Any:
    """The first element of a reply's ``choices``, or :class:`Unreadable`."""
    try:
        return payload["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise Unreadable("the server's reply has no choices") from None


def choice_text(choice: Any, endpoint: str, where: str = "choices[0]") -> str:
    """The text of one reply choice (chat: ``message.content``; completions: ``text``), or :class:`Unreadable`
    naming the field."""
    if not isinstance(choice, Mapping):
        raise Unreadable(f"the server's reply has a choice that is not an object ({type(choice).__name__})")
    if endpoint == "chat":
        message = choice.get("message")
        if not isinstance(message, Mapping):
            raise Unreadable(f"the server's reply has no message object in {where}")
        text = message.get("content")
        field = f"{where}.message.content"
    else:
        text = choice.get("text")
        field = f"{where}.text"
    if not isinstance(text, str):
        raise Unreadable(f"the server's reply has no text: {field} is {type(text).__name__}, not a string")
    return text


@dataclass
class TokenLogprobs:
    """One choice's per-token log-probabilities, in one shape whatever the server sent.

    ``tokens`` are the tokens' text as the server spells them; ``logprobs`` log p of each (<= 0); ``top`` per token
    ``{alternative: logprob}`` of the top alternatives (empty when not returned); ``token_bytes`` per token its UTF-8
    bytes (chat ``bytes``) and ``text_offset`` its character offset (completions), else None."""

    tokens: list[str]
    logprobs: list[float]
    top: list[dict[str, float]]
    token_bytes: list[bytes | None]
    text_offset: list[int] | None = None


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MalformedLogprobs(f"{field} must be a number, got {type(value).__name__}")
    value = float(value)
    if math.isnan(value) or value > POSITIVE_TOLERANCE:
        raise MalformedLogprobs(f"{field} must be a log-probability (<= 0), got {value}")
    return min(value, 0.0)


def _token(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise MalformedLogprobs(f"{field} must be a string, got {type(value).__name__}")
    return value


def _alternative_key(entry: Mapping[str, Any], field: str) -> str:
    """An alternative's key: its text, or, when its ``bytes`` are not valid UTF-8 (part of a character), those
    bytes escaped (``"\\xe4"``): servers spell all such tokens alike (llama.cpp: ``""``), which would merge distinct
    ones."""
    token = _token(entry.get("token"), f"{field}.token")
    raw = _bytes(entry.get("bytes"), f"{field}.bytes")
    if raw is None:
        return token
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="backslashreplace")
    return token


def _top(value: Any, field: str) -> dict[str, float]:
    """Alternatives as ``{token: logprob}`` from a list of ``{token, logprob[, bytes]}`` objects or a dict.
    A token listed twice (a server adding the chosen token to its top-k) keeps its larger log-probability.

    Examples
    --------
    >>> _top([{"token": "", "bytes": [228], "logprob": -0.1}, {"token": "", "bytes": [229], "logprob": -2.0}], "top")
    {'\\\\xe4': -0.1, '\\\\xe5': -2.0}
    """
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {_token(k, f"{field} key"): _number(v, f"{field}[{k!r}]") for k, v in value.items()}
    if isinstance(value, list):
        out: dict[str, float] = {}
        for j, entry in enumerate(value):
            if not isinstance(entry, Mapping):
                raise MalformedLogprobs(f"{field}[{j}] must be an object, got {type(entry).__name__}")
            token = _alternative_key(entry, f"{field}[{j}]")
            lp = _number(entry.get("logprob"), f"{field}[{j}].logprob")
            out[token] = max(lp, out.get(token, -math.inf))
        return out
    raise MalformedLogprobs(f"{field} must be a list or an object, got {type(value).__name__}")


def _bytes(value: Any, field: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        isinstance(b, int) and not isinstance(b, bool) and 0 <= b < 256 for b in value
    ):
        raise MalformedLogprobs(f"{field} must be a list of byte values (0-255)")
    return bytes(value)


def read_logprobs(logprobs: Any, where: str = "choices[0].logprobs") -> TokenLogprobs | None:
    """A choice's ``logprobs`` in either shape (module docstring); None when the server returned none.
    Raises MalformedLogprobs naming the field whose count or type is wrong.

    Examples
    --------
    >>> read_logprobs({"content": [{"token": "Paris", "logprob": -0.1, "top_logprobs": []}]}).tokens
    ['Paris']
    >>> read_logprobs({"tokens": [" A"], "token_logprobs": [-0.5], "top_logprobs": [{" A": -0.5}]}).top
    [{' A': -0.5}]
    """
    if logprobs is None:
        return None
    if not isinstance(logprobs, Mapping):
        raise MalformedLogprobs(f"{where} must be an object, got {type(logprobs).__name__}")
    if "content" in logprobs:  # the chat shape
        content = logprobs["content"]
        if content is None:
            return None
        if not isinstance(content, list):
            raise MalformedLogprobs(f"{where}.content must be a list, got {type(content).__name__}")
        out = TokenLogprobs([], [], [], [])
        for i, entry in enumerate(content):
            field = f"{where}.content[{i}]"
            if not isinstance(entry, Mapping):
                raise MalformedLogprobs(f"{field} must be an object, got {type(entry).__name__}")
            out.tokens.append(_token(entry.get("token"), f"{field}.token"))
            out.logprobs.append(_number(entry.get("logprob"), f"{field}.logprob"))
            out.top.append(_top(entry.get("top_logprobs"), f"{field}.top_logprobs"))
            out.token_bytes.append(_bytes(entry.get("bytes"), f"{field}.bytes"))
        return out
    if "tokens" in logprobs or "token_logprobs" in logprobs:  # the completions shape
        tokens, values = logprobs.get("tokens"), logprobs.get("token_logprobs")
        tops, offsets = logprobs.get("top_logprobs"), logprobs.get("text_offset")
        for name, value in (("tokens", tokens), ("token_logprobs", values)):
            if not isinstance(value, list):
                raise MalformedLogprobs(f"{where}.{name} must be a list, got {type(value).__name__}")
        for name, value in (("top_logprobs", tops), ("text_offset", offsets)):
            if value is not None and not isinstance(value, list):
                raise MalformedLogprobs(f"{where}.{name} must be a list, got {type(value).__name__}")
        for name, value in (("token_logprobs", values), ("top_logprobs", tops), ("text_offset", offsets)):
            if value is not None and len(value) != len(tokens):
                raise MalformedLogprobs(f"{where}.{name} has {len(value)} entries for {len(tokens)} tokens")
        if offsets is not None:
            for i, o in enumerate(offsets):
                if isinstance(o, bool) or not isinstance(o, int):
                    raise MalformedLogprobs(f"{where}.text_offset[{i}] must be an integer, got {o!r:.30}")
            if any(b < a for a, b in zip(offsets, offsets[1:], strict=False)):
                raise MalformedLogprobs(f"{where}.text_offset must not decrease")
        return TokenLogprobs(
            tokens=[_token(t, f"{where}.tokens[{i}]") for i, t in enumerate(tokens)],
            logprobs=[_number(v, f"{where}.token_logprobs[{i}]") for i, v in enumerate(values)],
            top=[_top(t, f"{where}.top_logprobs[{i}]") for i, t in enumerate(tops or [None] * len(tokens))],
            token_bytes=[None] * len(tokens),
            text_offset=list(offsets) if offsets is not None else None,
        )
    raise MalformedLogprobs(f"{where} has neither 'content' (chat) nor 'tokens' (completions)")
