"""One choice of a server's reply as a `Generation`: the text, the tokens that make it up and their signals.

As in `semuq-hf` (`semuq_eval.models.generation`): the text is the server's, cut at the first of the request's
stop sequences (some servers keep it, or take only four); the kept tokens are those whose characters make up that
text, their spans found by spelling the reply with the tokens' text (their UTF-8 ``bytes`` when sent; a token
spelled with nothing gets an empty span, the next one at most :data:`MAX_SKIP` skipped characters); a token partly
kept is clipped. The signals: the kept tokens' log-probabilities and top-k entropy estimates
(`semuq_eval.models.topk`); no token ids, no hidden states. Log-probabilities that break the protocol leave the text
only, the reason in ``Generation.error``."""

from __future__ import annotations

import codecs
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from semuq_eval.models.generation import Generation
from semuq_eval.models.topk import topk_entropies, topk_method
from semuq_eval.openai_replies import MalformedLogprobs, TokenLogprobs, choice_text, read_logprobs

__all__ = ["MAX_SKIP", "KeptTokens", "answer_from_choice", "answer_from_tokens", "cut_at_stop", "token_spans"]

MAX_SKIP = 4
"""Characters a token may have to skip to find its text in the reply (characters no token spelled)."""


def cut_at_stop(text: str, until: Sequence[str]) -> str:
    """``text`` up to the first occurrence of any non-empty stop sequence.

    Examples
    --------
    >>> cut_at_stop("Paris\\n\\nQuestion:", ["\\n\\n", "Q:"])
    'Paris'
    """
    return text[: min((i for stop in until if stop and (i := text.find(stop)) >= 0), default=len(text))]


def _pieces(parsed: TokenLogprobs) -> list[str]:
    """Each token's contribution to the text: its bytes decoded incrementally when every token has bytes,
    else its text as the server spelled it."""
    if parsed.token_bytes and all(b is not None for b in parsed.token_bytes):
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return [decoder.decode(b) for b in parsed.token_bytes]  # type: ignore[arg-type]
    return list(parsed.tokens)


def token_spans(pieces: Sequence[str], text: str) -> list[tuple[int, int]] | None:
    """The [start, end) span of each token piece in ``text`` (module docstring), or None when they do not spell it.

    Pieces past the end of ``text`` get the empty span (len(text), len(text)).

    Examples
    --------
    >>> token_spans([" Par", "is", "\\n\\n"], " Paris")
    [(0, 4), (4, 6), (6, 6)]
    >>> token_spans(["caf", "", "", " au"], "café au")
    [(0, 3), (3, 3), (3, 3), (3, 7)]
    >>> token_spans(["London"], "Paris") is None
    True
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for piece in pieces:
        if not piece or pos >= len(text):
            spans.append((pos, pos))
            continue
        j = text.find(piece, pos, pos + MAX_SKIP + len(piece))
        if j >= 0:
            spans.append((pos, j + len(piece)))
            pos = j + len(piece)
        elif piece.startswith(text[pos:]):  # the text ends inside this token
            spans.append((pos, len(text)))
            pos = len(text)
        else:
            return None
    if pos < len(text):
        if len(text) - pos > MAX_SKIP or not spans:
            return None
        spans[-1] = (spans[-1][0], len(text))  # characters at the end that no token spelled
    return spans


def answer_from_choice(
    choice: Any,
    *,
    endpoint: str,
    until: Sequence[str],
    top_k: int,
    want_logprobs: bool,
    greedy: bool,
    where: str = "choices[0]",
    source: Mapping[str, Any] | None = None,
) -> Generation:
    """The `Generation` of one reply choice (module docstring).

    ``endpoint``: ``"chat"`` or ``"completions"``; ``until``: the request's stop sequences; ``top_k``: alternatives
    asked per token (0: no entropies); ``want_logprobs``: asked for, so their absence is an error; ``where``: the
    choice's place in the reply, for messages; ``source``: `Generation.source`. Raises
    `semuq_eval.openai_client.Unreadable` when the choice has no text (worth retrying)."""
    raw = choice_text(choice, endpoint, where)
    text = cut_at_stop(raw, until)

    def text_only(error: str | None) -> Generation:
        return Generation(text, greedy=greedy, error=error, source=source)

    if not want_logprobs:
        return text_only(None)
    field = f"{where}.logprobs"
    try:
        parsed = read_logprobs(choice.get("logprobs"), field)
    except MalformedLogprobs as err:
        return text_only(str(err))
    if parsed is None:
        return text_only(f"the server returned no log-probabilities ({field} is missing or null)")
    spans = token_spans(_pieces(parsed), raw)
    if spans is None:
        return text_only(f"the tokens of {field} do not spell the reply's text")
    kept = [i for i, (start, _) in enumerate(spans) if start < len(text)]
    offsets = np.array([(spans[i][0], min(spans[i][1], len(text))) for i in kept], dtype=np.int64)
    tokens = KeptTokens(
        text, offsets.reshape(len(kept), 2), [parsed.logprobs[i] for i in kept], [parsed.top[i] for i in kept]
    )
    return answer_from_tokens(tokens, top_k=top_k, greedy=greedy, where=field, source=source)


class KeptTokens(NamedTuple):
    """An answer's text and the tokens an engine reported for it, cut to the answer.

    ``offsets``: (T, 2) spans of the kept tokens in ``text``; ``logprobs``: the log-probability of each;
    ``top``: each one's ``{alternative: logprob}`` (alternatives as text or token ids); ``token_ids``: their ids,
    when the engine gives them (servers give text only)."""

    text: str
    offsets: np.ndarray
    logprobs: Sequence[float]
    top: Sequence[Mapping[Any, float]]
    token_ids: Sequence[int] | None = None


def answer_from_tokens(
    tokens: KeptTokens,
    *,
    top_k: int,
    greedy: bool,
    where: str,
    source: Mapping[str, Any] | None = None,
) -> Generation:
    """The `Generation` of an answer's kept tokens with the log-probabilities an engine reported for them.

    The one path from top-k log-probabilities to a `Generation` (`semuq-api`, `semuq-llamacpp`, `semuq-vllm`):
    entropies estimated from each position's top ``top_k`` alternatives (`semuq_eval.models.topk`, flagged in
    ``Generation.approximate``; ``top_k=0``: none). A position with fewer than ``min(2, top_k)`` alternatives keeps the
    log-probabilities and loses the entropies, with the reason; ``where`` names the answer in messages.

    Examples
    --------
    >>> import math
    >>> kept = KeptTokens("ab", np.array([[0, 1], [1, 2]]), [-0.1, -0.2],
    ...                   [{"a": -0.1, "b": -2.4}, {"b": -0.2, "c": -1.7}])
    >>> g = answer_from_tokens(kept, top_k=2, greedy=True, where="x")
    >>> round(g.seq_logprob, 3), g.approximate
    (-0.3, {'token_entropies': 'topk_renormalized(k=2)'})
    """
    text, offsets, logprobs, top, token_ids = tokens
    logprobs_arr = np.asarray(logprobs, dtype=np.float64)
    ids = None if token_ids is None else np.asarray(token_ids, dtype=np.int64)
    entropies, approximate, error = None, {}, None
    if top_k > 0:
        short = next((i for i, alts in enumerate(top) if len(alts) < min(2, top_k)), None)
        if short is None:
            entropies = topk_entropies(top, top_k)
            approximate = {"token_entropies": topk_method(top_k)}
        else:
            error = f"{where}: token {short} has {len(top[short])} top alternative(s), {top_k} were asked for"
    return Generation(
        text,
        token_ids=ids,
        token_logprobs=logprobs_arr,
        token_entropies=entropies,
        token_offsets=np.asarray(offsets, dtype=np.int64).reshape(len(logprobs_arr), 2),
        greedy=greedy,
        approximate=approximate,
        error=error,
        source=source,
    )
