"""Token entropies estimated from the top-k log-probabilities a server returns (``semuq-api``).

A server returns only each position's ``k`` most likely alternatives, so ``semuq-hf``'s exact entropy (App. A.1,
Eq. token_level_entropy) is estimated by the method named :data:`TOPK_METHOD`:

    renormalised top-k entropy   H_t ~= -sum_{i<=k} q_i log q_i,   q_i = p_i / sum_{j<=k} p_j

Exact when the top ``k`` hold all the mass, it tends to underestimate H_t otherwise (V equally likely tokens give
log k, not log V): server TE values compare with each other, not with ``semuq-hf``'s. Answers record it
(``Generation.approximate``) and the breakdown lists ``te`` / ``te_enc`` under ``approximate``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["TOPK_METHOD", "topk_entropies", "topk_method"]

TOPK_METHOD = "topk_renormalized"


def topk_method(k: int) -> str:
    """The approximation's name with its ``k``, as answers and breakdowns record it.

    Examples
    --------
    >>> topk_method(20)
    'topk_renormalized(k=20)'
    """
    return f"{TOPK_METHOD}(k={int(k)})"


def topk_entropies(top: Sequence[Mapping[str, float]], k: int) -> np.ndarray:
    """Renormalised top-k entropy (nats) of each position from its ``{alternative: logprob}`` (module docstring).

    The ``k`` largest log-probabilities of each position are used (a server may add the chosen token to its
    top-k list). A position with no alternative raises ValueError; one alternative gives 0.

    Examples
    --------
    >>> import math
    >>> h = topk_entropies([{"a": math.log(0.25), "b": math.log(0.25)}, {"a": 0.0}], k=5)
    >>> [round(float(x), 4) for x in h]
    [0.6931, 0.0]
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    out = np.empty(len(top), dtype=np.float64)
    for t, alternatives in enumerate(top):
        if not alternatives:
            raise ValueError(f"position {t} has no top log-probabilities")
        lp = np.sort(np.fromiter(alternatives.values(), dtype=np.float64))[::-1][:k]
        lp = lp[np.isfinite(lp)]
        if lp.size == 0:
            raise ValueError(f"position {t} has no finite top log-probability")
        log_q = lp - np.logaddexp.reduce(lp)
        out[t] = max(0.0, float(-(np.exp(log_q) * log_q).sum()))
    return out
