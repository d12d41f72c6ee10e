"""Token-level aggregators on a single generation: TE and its operator-weighted variant TE_Enc."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from semuq_eval.aggregators.base import as_ragged, register, unstack

Ragged = np.ndarray | Sequence[Sequence[float]]


def _weighted_mean(entropies: list[np.ndarray], weights: list[np.ndarray]) -> np.ndarray:
    lengths = np.array([len(e) for e in entropies])
    segment = np.repeat(np.arange(len(entropies)), lengths)
    h, w = np.concatenate(entropies), np.concatenate(weights)
    total_w = np.bincount(segment, weights=w, minlength=len(entropies))
    total_hw = np.bincount(segment, weights=h * w, minlength=len(entropies))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total_w > 0, total_hw / np.where(total_w > 0, total_w, 1.0), np.nan)


@register("te", matrix=None, inputs=("token_entropies",), equation="token_entropy (App. A.1)")
def te(token_entropies: Ragged) -> float | np.ndarray:
    """Token entropy, Eq. token_entropy: U_TE = (1/T) sum_t H_t over one generation.

    Takes per-token entropies H_t (T,) or a batch of ragged sequences; no tokens gives NaN (metrics skip NaN
    scores)."""
    rows, single = as_ragged(token_entropies, name="token_entropies")
    return unstack(_weighted_mean(rows, [np.ones_like(r) for r in rows]), single)


@register("te_enc", matrix=None, inputs=("token_entropies", "token_weights"), equation="te_enc (Sec. 4.2)")
def te_enc(token_entropies: Ragged, token_weights: Ragged) -> float | np.ndarray:
    """Operator-weighted token entropy, Eq. te_enc: U = sum_t w_t H_t with w_t = ||h_t|| / sum ||h_t'||.

    ``token_weights`` are non-negative per-token importances (the encoder's token norms mapped onto the
    generator's tokens), normalized here, so raw norms and normalized weights agree. No tokens or all-zero
    weights give NaN."""
    rows_h, single = as_ragged(token_entropies, name="token_entropies")
    rows_w, single_w = as_ragged(token_weights, name="token_weights")
    if single != single_w or len(rows_h) != len(rows_w):
        raise ValueError(
            f"token_entropies and token_weights must have the same batch size; got {len(rows_h)} and {len(rows_w)}"
        )
    for b, (h, w) in enumerate(zip(rows_h, rows_w, strict=True)):
        if h.shape != w.shape:
            raise ValueError(f"sequence {b}: {h.shape[0]} token entropies but {w.shape[0]} token weights")
        if not (np.all(np.isfinite(h)) and np.all(np.isfinite(w))):
            raise ValueError(f"sequence {b}: NaN or infinite entropies or weights")
        if np.any(w < 0):
            raise ValueError(f"sequence {b}: token weights must be non-negative")
    return unstack(_weighted_mean(rows_h, rows_w), single)
