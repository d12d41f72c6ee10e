"""Token / character alignment: which generated tokens make up the returned text, and their spans.

The returned text is HFLM's (the decoded tokens cut at the first stop sequence, thinking prefix removed), and a
`Generation`'s arrays must describe exactly those characters: `token_char_ends` finds each token's character end in
the decoded text, `kept_token_range` the tokens covering the kept characters `full[a:b]`, `kept_token_offsets` their
spans clipped to the text; `align_answer` does it all for one row (the rules: `semuq_eval.models.generation`)."""

from __future__ import annotations

import os.path
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from lm_eval.models.utils import postprocess_generated_text

__all__ = [
    "AlignedAnswer",
    "align_answer",
    "hflm_postprocess",
    "kept_token_offsets",
    "kept_token_range",
    "token_char_ends",
]


def _incremental_ends(decode: Callable[[list[int]], str], ids: Sequence[int]) -> tuple[list[int], str]:
    """Character end of each token, by incremental detokenization with a short context window.

    Text is emitted once the window decodes to more than its previous part and does not end in U+FFFD (an incomplete
    UTF-8 sequence), as in vLLM's incremental detokenizer; tokens that complete nothing get an empty span."""
    ends: list[int] = []
    text = ""
    prefix, read = 0, 0
    for t in range(len(ids)):
        prefix_text = decode(list(ids[prefix:read])) if read > prefix else ""
        new_text = decode(list(ids[prefix : t + 1]))
        if len(new_text) > len(prefix_text) and not new_text.endswith("\ufffd"):
            text += new_text[len(prefix_text) :]
            prefix, read = read, t + 1
        ends.append(len(text))
    return ends, text


def _prefix_ends(
    batch_decode: Callable[[list[list[int]]], list[str]], ids: Sequence[int], full: str, stop_at: int
) -> list[int]:
    """Character end of each token as the common prefix of decode(ids[:t+1]) with `full` (exact, O(T^2))."""
    ends: list[int] = []
    prev = 0
    chunk = 64
    for c0 in range(0, len(ids), chunk):
        texts = batch_decode([list(ids[: t + 1]) for t in range(c0, min(len(ids), c0 + chunk))])
        for p in texts:
            prev = max(prev, len(os.path.commonprefix([p, full])))
            ends.append(prev)
        if prev >= stop_at:
            break
    ends.extend([prev] * (len(ids) - len(ends)))
    return ends


def token_char_ends(
    decode: Callable[[list[int]], str],
    batch_decode: Callable[[list[list[int]]], list[str]],
    ids: Sequence[int],
    full: str,
    stop_at: int | None = None,
) -> list[int]:
    """End offset in `full` (= decode(ids)) of each token's text; non-decreasing, last = len(full).

    Incremental detokenization when it reproduces `full`, else (decoding that rewrites spaces, an unfinished UTF-8
    sequence at the end) the exact prefix method, computed up to `stop_at`."""
    if not ids:
        return []
    ends, text = _incremental_ends(decode, ids)
    if text == full:
        return ends
    return _prefix_ends(batch_decode, ids, full, len(full) if stop_at is None else stop_at)


def kept_token_range(
    ends: Sequence[int], a: int, b: int, special_ids: set[int], ids: Sequence[int]
) -> tuple[int, int]:
    """Half-open range [lo, hi) of the tokens whose characters make up full[a:b] (empty when a == b).

    lo: the first token ending after a, extended back over empty-span non-special tokens (the first bytes of a
    character split by byte-level BPE); hi - 1: the first token ending at or after b."""
    if b <= a or not ends:
        return 0, 0
    lo = next(t for t, e in enumerate(ends) if e > a)
    while lo > 0:
        p = lo - 1
        p_begin = ends[p - 1] if p > 0 else 0
        if ends[p] != p_begin or ids[p] in special_ids or p_begin < a:
            break
        lo = p
    hi = next(t for t, e in enumerate(ends) if e >= b) + 1
    return lo, hi


def kept_token_offsets(ends: Sequence[int], lo: int, hi: int, a: int, b: int) -> np.ndarray:
    """(hi - lo, 2) int64 [start, end) spans of tokens lo..hi-1 inside the text full[a:b], clipped to it."""
    begins = [0, *ends[:-1]]
    return np.asarray(
        [[min(max(begins[t], a), b) - a, min(max(ends[t], a), b) - a] for t in range(lo, hi)],
        dtype=np.int64,
    ).reshape(-1, 2)


def hflm_postprocess(full: str, until: list[str], think_end_token: int | str | None) -> tuple[str, int]:
    """HFLM's text post-processing of `full` (the decode of the generated tokens); returns (text, start).

    `text` is exactly HFLM's (stop sequences cut, thinking prefix removed) and equals `full[start:start + len(text)]`,
    so that the tokens making it up can be found."""
    s, start = full, 0
    if isinstance(think_end_token, int):
        s = full.lstrip()
        start = len(full) - len(s)
    think = think_end_token if isinstance(think_end_token, str) else None
    if think:
        after = s.split(think)[-1].lstrip()
        start += len(s) - len(after)
    text = postprocess_generated_text(generation=s, stop=until, think_end_token=think)
    return text, start


@dataclass(frozen=True)
class AlignedAnswer:
    """One generated row's answer: the text and the tokens that make it up.

    `text`: the post-processed answer; `token_ids`: (T,) int64 kept tokens; `token_offsets`: (T, 2) int64 their spans
    in `text`; `token_idx`: (T,) their indices among the row's generated tokens; `last_read`: the generated token
    after which the hidden state is taken (the last kept token; for an empty answer the last token before it, -1: the
    last prompt token)."""

    text: str
    token_ids: np.ndarray
    token_offsets: np.ndarray
    token_idx: np.ndarray
    last_read: int


def align_answer(
    tokens: list[int],
    *,
    decode: Callable[[list[int]], str],
    batch_decode: Callable[[list[list[int]]], list[str]],
    postprocess: Callable[[str], tuple[str, int]],
    special_ids: set[int],
    think_end_id: int | None = None,
) -> AlignedAnswer:
    """Text and kept tokens of one row of generated `tokens` (already cut to the budget).

    `decode`, `batch_decode`: the tokenizer's decoding (special tokens skipped); `postprocess`: the model's text
    post-processing, (text, start) with text == full[start:start + len(text)]; `special_ids`: the tokenizer's special
    token ids; `think_end_id`: a thinking-end token id (the answer is what follows its last occurrence)."""
    start_tok = 0
    if think_end_id is not None and think_end_id in tokens:
        start_tok = len(tokens) - tokens[::-1].index(think_end_id)
    body = tokens[start_tok:]
    full = decode(body)
    text, a = postprocess(full)
    if full[a : a + len(text)] != text:  # defensive: locate the text if a rule above missed it
        a = max(0, full.find(text))
    b = a + len(text)
    ends = token_char_ends(decode, batch_decode, body, full, stop_at=b) if b > a else []
    lo, hi = kept_token_range(ends, a, b, special_ids, body)
    return AlignedAnswer(
        text=text,
        token_ids=np.asarray(body[lo:hi], dtype=np.int64),
        token_offsets=kept_token_offsets(ends, lo, hi, a, b),
        token_idx=np.arange(start_tok + lo, start_tok + hi),
        last_read=start_tok + hi - 1 if hi > lo else start_tok - 1,
    )
