"""Token weights of an answer: the encoder's token norms (:class:`TokenNorms`) and their alignment onto another
tokenization of the same text (paper Sec. 4.2, Eq. te_enc).

The encoder's norms ||h_t|| reach the generating model's tokens through character offsets: each encoder
token's value is split over the generating tokens overlapping it, in proportion to the characters shared; a
generating token's weight is the sum of its shares, normalized to 1 (0 where it overlaps no encoder token).
When nothing reaches any generating token the weights are uniform, 1/T, so TE_Enc falls back to plain TE."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class TokenNorms(NamedTuple):
    """The encoder's tokens of one answer: character ``spans`` (K, 2) relative to the answer
    string, and ``norms`` (K,) = ||h_t||_2 of their last hidden states (Sec. 4.2); question, separator and
    special tokens excluded."""

    spans: np.ndarray
    norms: np.ndarray


EMPTY_TOKEN_NORMS = TokenNorms(np.zeros((0, 2), dtype=np.int64), np.zeros(0))


def as_spans(spans: np.ndarray, *, name: str = "spans", text_length: int | None = None) -> np.ndarray:
    """Validate an (n, 2) array of [start, end) character spans; return it as int64."""
    arr = np.asarray(spans)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be an (n, 2) integer array of character spans, got shape {arr.shape}")
    arr = arr.astype(np.int64)
    if np.any(arr[:, 0] < 0) or np.any(arr[:, 1] < arr[:, 0]):
        raise ValueError(f"{name} must satisfy 0 <= start <= end")
    if text_length is not None and np.any(arr[:, 1] > text_length):
        raise ValueError(f"{name} reach past the end of the text (length {text_length})")
    return arr


def align_weights(
    source_spans: np.ndarray, source_values: np.ndarray, target_spans: np.ndarray
) -> np.ndarray:
    """Map per-token ``source_values`` onto the target tokens by character overlap (module rule).

    Returns (T,) non-negative weights summing to 1 (empty when T = 0)."""
    src = as_spans(source_spans, name="source_spans")
    tgt = as_spans(target_spans, name="target_spans")
    values = np.asarray(source_values, dtype=np.float64).reshape(-1)
    if values.shape[0] != src.shape[0]:
        raise ValueError(f"got {src.shape[0]} source spans but {values.shape[0]} source values")
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("source_values must be finite and non-negative")
    n_target = tgt.shape[0]
    if n_target == 0:
        return np.zeros(0)
    overlap = np.minimum(src[:, None, 1], tgt[None, :, 1]) - np.maximum(src[:, None, 0], tgt[None, :, 0])
    overlap = np.clip(overlap, 0, None).astype(np.float64)
    covered = overlap.sum(axis=1, keepdims=True)
    shares = np.divide(overlap, covered, out=np.zeros_like(overlap), where=covered > 0)
    mass = values @ shares
    total = mass.sum()
    if total <= 0:
        return np.full(n_target, 1.0 / n_target)
    return mass / total
