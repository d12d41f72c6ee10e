"""What an OpenAI-compatible server can give `semuq-api`, found by one probe request at the start of a run.

One two-token request asks for everything the run would use (``n=2``, log-probabilities with ``top_k``
alternatives, ``echo`` on completions, the task's sampling options beyond OpenAI's own) and finds what came back. A
refused probe (HTTP 400 / 413 / 422) is asked again without one feature at a time: the one its error names, else,
in order, ``echo``, the extra sampling options, more than 5 alternatives (OpenAI's completions limit), ``n``, the
alternatives, the log-probabilities. Each fallback is logged and recorded (``Generation.source``; docs/serving.md,
"Capability detection and fallbacks")."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from semuq_eval.openai_client import RequestFailed, ServerClient, Unreadable
from semuq_eval.openai_replies import MalformedLogprobs, read_logprobs

__all__ = ["PROBE_PROMPT", "Capabilities", "probe"]

log = logging.getLogger(__name__)

PROBE_PROMPT = "The capital of France is"
OPENAI_COMPLETIONS_TOP = 5


@dataclass
class Capabilities:
    """What the probe found (module docstring); ``fallbacks`` says, in words, what the run does without."""

    n: bool
    logprobs: bool
    top_logprobs: int
    echo: bool | None
    sampling: dict[str, Any] = field(default_factory=dict)
    fallbacks: list[str] = field(default_factory=list)
    probe_requests: int = 0


def _choices(payload: Any) -> list:
    choices = payload.get("choices") if isinstance(payload, Mapping) else None
    if not isinstance(choices, list) or not choices:
        raise Unreadable("the server's reply to the capability probe has no choices")
    return choices


def _generated_logprobs(logprobs: Any, echo: bool) -> Any:
    """The completions shape without the echoed prompt's positions (whose first log-prob is null)."""
    if not echo or not isinstance(logprobs, Mapping) or "tokens" not in logprobs:
        return logprobs
    values = logprobs.get("token_logprobs")
    if not isinstance(values, list):
        return logprobs
    keep = [i for i, v in enumerate(values) if v is not None]
    out = dict(logprobs)
    for key in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
        if isinstance(logprobs.get(key), list) and len(logprobs[key]) == len(values):
            out[key] = [logprobs[key][i] for i in keep]
    return out


def _read(payload: Any, asked: dict[str, Any], endpoint: str) -> Capabilities:
    choices = _choices(payload)
    first = choices[0]
    if not isinstance(first, Mapping):
        raise Unreadable("the server's reply to the capability probe has a choice that is not an object")
    # chat has no echo; a completions server that refused it: False
    echo = None if endpoint == "chat" else False
    caps = Capabilities(n=False, logprobs=False, top_logprobs=0, echo=echo, sampling=dict(asked["sampling"]))
    fallbacks = caps.fallbacks
    if asked["n"]:
        caps.n = len(choices) >= 2
        if not caps.n:
            fallbacks.append(f"n: asked for 2 choices, got {len(choices)}; one request per sample instead")
    if asked["echo"]:
        text = first.get("text")
        caps.echo = isinstance(text, str) and text.startswith(PROBE_PROMPT)
    if not asked["logprobs"]:
        return caps
    try:
        parsed = read_logprobs(_generated_logprobs(first.get("logprobs"), bool(caps.echo)))
    except MalformedLogprobs as err:
        parsed, missing = None, f"unreadable ({err})"
    else:
        missing = "the server returned none"
    caps.logprobs = parsed is not None and bool(parsed.tokens)
    if not caps.logprobs:
        fallbacks.append(f"logprobs: {missing}; answers are text only")
    elif asked["top"] > 0:
        returned = max(len(top) for top in parsed.top)
        caps.top_logprobs = min(returned, asked["top"])
        got = f"top_logprobs: asked for {asked['top']} alternatives, got {returned}; "
        if caps.top_logprobs < 2:
            caps.top_logprobs = 0
            fallbacks.append(got + "no token entropies (te, te_enc unavailable)")
        elif caps.top_logprobs < asked["top"]:
            fallbacks.append(got + f"token entropies from the top {caps.top_logprobs}")
    return caps


_DROPS = {
    "echo": {"echo": False},
    "top_logprobs>5": {"top": OPENAI_COMPLETIONS_TOP},
    "n": {"n": False},
    "top_logprobs": {"top": 0},
    "logprobs": {"logprobs": False, "top": 0},
}
"""What dropping each feature changes in the probe's request (`_drop_next`)."""


def _drop_next(asked: dict[str, Any], message: str) -> str | None:
    """Remove one feature from ``asked`` (named in ``message`` first, else in the documented order); its name."""
    text = message.lower()
    named = [
        ("echo", "echo" in text and asked["echo"]),
        ("top_logprobs", "top_logprobs" in text and asked["top"] > 0),
        *[(f"sampling:{k}", k.lower() in text) for k in asked["sampling"]],
    ]
    order = [
        ("echo", asked["echo"]),
        *[(f"sampling:{k}", True) for k in asked["sampling"]],
        ("top_logprobs>5", asked["top"] > OPENAI_COMPLETIONS_TOP),
        ("n", asked["n"]),
        ("top_logprobs", asked["top"] > 0),
        ("logprobs", asked["logprobs"]),
    ]
    choice = next((name for name, hit in named if hit), None) or next((n for n, ok in order if ok), None)
    if choice is not None and choice.startswith("sampling:"):
        asked["sampling"].pop(choice.split(":", 1)[1])
    elif choice is not None:
        asked.update(_DROPS[choice])
    return choice


def probe(
    client: ServerClient,
    *,
    logprobs: bool = True,
    top_k: int,
    sampling: Mapping[str, Any] | None = None,
    seed: int | None = 1234,
) -> Capabilities:
    """Probe ``client``'s server (module docstring); raise RuntimeError when even a plain request fails.

    ``logprobs``: ask for log-probabilities at all; ``top_k``: alternatives per token wanted (0: none); ``sampling``:
    the extra sampling options the run would send (e.g. ``{"top_k": 50}``); ``seed``: None sends none."""
    asked: dict[str, Any] = {
        "n": True,
        "logprobs": bool(logprobs),
        "top": int(top_k) if logprobs else 0,
        "echo": client.endpoint == "completions",
        "sampling": dict(sampling or {}),
    }
    refused: list[str] = []
    for requests in range(1, 8):
        fields: dict[str, Any] = {"max_tokens": 2, "temperature": 1.0, **asked["sampling"]}
        if seed is not None:
            fields["seed"] = int(seed)
        if asked["n"]:
            fields["n"] = 2
        if asked["logprobs"]:
            fields.update(client.logprob_fields(asked["top"]))
        if asked["echo"]:
            fields["echo"] = True
        try:
            payload = client.send(client.body(PROBE_PROMPT, **fields), _choices_ok, retry_refused=False)
        except RequestFailed as err:
            dropped = _drop_next(asked, err.reason) if err.status is not None else None
            if dropped is None:
                raise RuntimeError(
                    f"semuq-api: the capability probe of {client.public_url} failed: {err.reason}"
                ) from err
            refused.append(f"the server refused the probe ({err.reason}); asked again without {dropped}")
            continue
        caps = _read(payload, asked, client.endpoint)
        caps.fallbacks[:0] = refused
        caps.probe_requests = requests
        return caps
    raise RuntimeError(f"semuq-api: the capability probe of {client.public_url} was refused 7 times")


def _choices_ok(payload: Any) -> Any:
    _choices(payload)
    return payload
