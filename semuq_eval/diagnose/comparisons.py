"""Paired differences between operators of one diagnosis (a trained operator minus its untrained backbone): the
same pairs and answers scored by both, questions resampled together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from semuq_eval.diagnose.scoring import difference_with_ci
from semuq_eval.metrics import Bootstrap

__all__ = ["paired_comparisons"]


def paired_comparisons(
    compare: Sequence[tuple[str, str]],
    pair_sets: Mapping[str, Sequence[Any]],
    scored: Mapping[str, Mapping[str, np.ndarray]],
    located: Mapping[str, Any],
    *,
    bootstrap: Bootstrap,
) -> dict[str, dict[str, Any]]:
    """``a`` minus ``b`` for each pair of ``compare``: the mean similarity of every pair set (``trap:<name>``,
    ``cluster:<group>``) over the pairs both operators scored, and the localization hit rate over the answers both
    localized; a percentile bootstrap over questions resamples both operators' values with the same draw.

    ``pair_sets`` maps a set's key to its pairs, ``scored`` an operator to its similarities per set (as
    :func:`~semuq_eval.diagnose.scoring.score_diagnostics` returns them), ``located`` an operator to its
    :class:`~semuq_eval.diagnose.localization.Localization`; an operator that did not run gets ``unavailable``.

    Examples
    --------
    >>> from types import SimpleNamespace as P
    >>> pairs = {"trap:context": [P(uid="q1"), P(uid="q1"), P(uid="q2")]}
    >>> sims = {"a": {"trap:context": np.array([0.5, 0.6, 0.4])}, "b": {"trap:context": np.array([0.7, 0.8, 0.6])}}
    >>> out = paired_comparisons([("a", "b")], pairs, sims, {}, bootstrap=Bootstrap(100))
    >>> row = out["a vs b"]["trap:context"]
    >>> round(row["difference"], 3), row["n_pairs"], row["ci_high"] < 0
    (-0.2, 3, True)
    """
    out: dict[str, dict[str, Any]] = {}
    for a, b in compare:
        key = f"{a} vs {b}"
        if a not in scored or b not in scored:
            out[key] = {"unavailable": f"{a if a not in scored else b} did not run"}
            continue
        row: dict[str, Any] = {}
        for name, pairs in pair_sets.items():
            sa, sb = (
                np.asarray(scored[a][name], dtype=np.float64),
                np.asarray(scored[b][name], dtype=np.float64),
            )
            both = np.isfinite(sa) & np.isfinite(sb)
            uids = [str(p.uid) for p, keep in zip(pairs, both, strict=True) if keep]
            d = difference_with_ci(sa[both], uids, sb[both], uids, bootstrap=bootstrap)
            row[name] = {**d, "n_pairs": int(both.sum()), "n_questions": len(set(uids))}
        if a in located and b in located:
            # one localized answer per question (its greedy answer); an answer without tokens is left out by both
            hits_b = dict(zip(located[b].uids, located[b].hits, strict=True))
            common = [(u, h) for u, h in zip(located[a].uids, located[a].hits, strict=True) if u in hits_b]
            uids = [u for u, _ in common]
            d = difference_with_ci(
                [h for _, h in common], uids, [hits_b[u] for u in uids], uids, bootstrap=bootstrap
            )
            row["localization"] = {**d, "n_answers": len(common), "n_questions": len(set(uids))}
        out[key] = row
    return out
