"""Paired AUROC differences on a section's shared bootstrap: each ``@enc`` estimator against its base
(:mod:`.baselines`), and LLM against LLM for chosen estimators (each LLM with its own labels), exactly as
:func:`semuq_eval.metrics.paired_difference` computes them (same resamples, interval and p-value). A difference
is **significant** when its paired interval excludes 0."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np

from semuq_eval.judges import label_strategy_names
from semuq_eval.metrics import Bootstrap, CalibrationProtocol, paired_difference

if TYPE_CHECKING:
    from semuq_eval.leaderboard.board import Leaderboard
    from semuq_eval.leaderboard.runs import Section

__all__ = ["comparisons", "llm_pairs"]


def _difference(
    a: tuple[float, np.ndarray, np.ndarray],
    b: tuple[float, np.ndarray, np.ndarray],
    bootstrap: Bootstrap,
    fallback,
) -> dict[str, Any]:
    """AUROC(a) - AUROC(b) on shared resamples, as :func:`paired_difference` gives it.

    Scored on the same questions, the cached resampled values are subtracted (``paired_difference``'s arithmetic);
    otherwise ``fallback()`` runs ``paired_difference`` itself, which leaves out the questions either lacks."""
    (point_a, res_a, mask_a), (point_b, res_b, mask_b) = a, b
    if not np.array_equal(mask_a, mask_b):
        return fallback().as_dict()
    diff, low, high, p_value = bootstrap.paired(point_a, point_b, res_a, res_b)
    return {
        "metric": "auroc",
        "value_a": point_a,
        "value_b": point_b,
        "difference": diff,
        "ci_low": low,
        "ci_high": high,
        "p_value": p_value,
        "n": int(mask_a.sum()),
    }


def _verdict(d: Mapping[str, Any]) -> dict[str, Any]:
    diff, low, high = d.get("difference"), d.get("ci_low"), d.get("ci_high")
    ok = diff is not None and math.isfinite(diff)
    return {
        "status": "ok" if ok else "undefined",
        "improved": bool(ok and diff > 0),
        "significant": bool(ok and low is not None and math.isfinite(low) and (low > 0 or high < 0)),
    }


def comparisons(
    board: Leaderboard,
    section: Section,
    figures: Mapping,
    bootstrap: Bootstrap,
    protocol: CalibrationProtocol,
) -> None:
    """Every pair of every pair set of the board (estimator vs base) for each run of ``section``."""
    reliable = {
        (c["llm"], c["strategy"], c["estimator"]): c["reliable"]
        for c in board.cells
        if c["section"] == section.id and c["metric"] == "auroc"
    }
    for run in section.runs:
        cached = figures[(section.id, run.llm)]["resampled"]
        for strategy in label_strategy_names():
            for pair_set, (_, pairs) in board.pair_sets.items():
                for name, base in pairs:
                    row = {
                        "set": pair_set,
                        "section": section.id,
                        "task": section.task,
                        "label_set": section.label_set,
                        "llm": run.llm,
                        "strategy": strategy,
                        "estimator": name,
                        "base": base,
                    }
                    a, b = cached.get((strategy, name)), cached.get((strategy, base))
                    if a is None or b is None:
                        lacking = [x for x, c in ((name, a), (base, b)) if c is None]
                        row.update(status="unavailable", note=f"no AUROC for {', '.join(lacking)}")
                        row.update(improved=None, significant=None, reliable=None)
                        board.comparisons.append(row)
                        continue
                    y = np.nan_to_num(run.labels[strategy])
                    miss = ~np.isfinite(run.labels[strategy])

                    def fallback(name=name, base=base, y=y, miss=miss, run=run):
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", RuntimeWarning)
                            return paired_difference(
                                np.where(miss, np.nan, run.scores[name]),
                                np.where(miss, np.nan, run.scores[base]),
                                y,
                                bootstrap=bootstrap,
                                protocol=protocol,
                            )

                    d = _difference(a, b, bootstrap, fallback)
                    _fill_difference(row, d)
                    # both AUROCs without the small-sample flag (the cells' `reliable`)
                    row["reliable"] = all(reliable.get((run.llm, strategy, x)) for x in (name, base))
                    board.comparisons.append(row)


def _fill_difference(row: dict[str, Any], d: Mapping[str, Any]) -> None:
    """Copy a paired difference's figures and verdict into a comparison row."""
    row.update({k: d[k] for k in ("value_a", "value_b", "difference", "ci_low", "ci_high", "p_value", "n")})
    row.update(_verdict(d), note="")


def llm_pairs(
    board: Leaderboard,
    section: Section,
    figures: Mapping,
    bootstrap: Bootstrap,
    protocol: CalibrationProtocol,
) -> None:
    """LLM-vs-LLM paired AUROC differences (each LLM with its own labels) for the chosen estimators: the
    config's ``llm_estimators``, else the one with the best mean AUROC among those every LLM scored."""
    runs = section.runs
    for strategy in label_strategy_names():
        chosen = list(board.config.llm_estimators)
        if not chosen:
            common = [
                n
                for n in section.estimators
                if all((strategy, n) in figures[(section.id, r.llm)]["resampled"] for r in runs)
            ]
            means = {
                n: np.mean([figures[(section.id, r.llm)]["resampled"][(strategy, n)][0] for r in runs])
                for n in common
            }
            means = {n: v for n, v in means.items() if np.isfinite(v)}
            chosen = [max(means, key=means.get)] if means and len(runs) > 1 else []
        for name in chosen:
            for ra, rb in combinations(runs, 2):
                a = figures[(section.id, ra.llm)]["resampled"].get((strategy, name))
                b = figures[(section.id, rb.llm)]["resampled"].get((strategy, name))
                row = {
                    "section": section.id,
                    "task": section.task,
                    "label_set": section.label_set,
                    "strategy": strategy,
                    "estimator": name,
                    "llm_a": ra.llm,
                    "llm_b": rb.llm,
                    "chosen": "given" if board.config.llm_estimators else "best mean AUROC in the section",
                }
                if a is None or b is None:
                    row.update(status="unavailable", note=f"{name} has no AUROC for one of the two LLMs")
                    board.llm_pairs.append(row)
                    continue

                def fallback(ra=ra, rb=rb, name=name, strategy=strategy):
                    la, lb = ra.labels[strategy], rb.labels[strategy]
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        return paired_difference(
                            np.where(np.isfinite(la), ra.scores[name], np.nan),
                            np.where(np.isfinite(lb), rb.scores[name], np.nan),
                            np.nan_to_num(la),
                            correct_b=np.nan_to_num(lb),
                            bootstrap=bootstrap,
                            protocol=protocol,
                        )

                d = _difference(a, b, bootstrap, fallback)
                _fill_difference(row, d)
                board.llm_pairs.append(row)
