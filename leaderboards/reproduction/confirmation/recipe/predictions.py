"""The confirmation's four predictions (docs/reproduction.md, "Confirmation on new questions"), checked on a
reproduction leaderboard: held or not held, with the figures behind each.

    .venv/bin/python leaderboards/reproduction/confirmation/recipe/predictions.py \
        leaderboards/reproduction/confirmation/leaderboard/leaderboard.json

A cell is one of the plan's ten aggregators (Tab. 1's) on one run under one label strategy; only reliable cells
(>= 20 answers of each class) that both operators have are compared, so each mean difference is paired cell by cell.
The estimators added to the product after the plan (they are on the board) are not counted.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))  # the repository, for experiments/
from experiments.reproduce import counted  # noqa: E402  (the report's own filter)

QUESTION_CONDITIONED = (
    "enc_trained",
    "enc_trained_random",
    "enc_trained_pairs",
    "enc_trained_fact_swap",
    "enc_trained_answer_pooling",
    "enc_trained_guided_ap",
)
AGGREGATORS = ("se", "cae", "kle_heat", "kle_matern", "cos", "numsets", "eigv", "deg", "ecc", "te_enc")
"""The plan's cells: the ten aggregators of the first evaluation (Tab. 1's)."""


def planned(document: Mapping[str, Any]) -> dict[str, Any]:
    """The board restricted to the plan's ten aggregators (cells and paired rows), as the report counts them."""
    return counted(document, AGGREGATORS)


def auroc_cells(document: Mapping[str, Any]) -> dict[str, dict[tuple, float]]:
    """operator -> {(task, llm, strategy, aggregator): AUROC} over the reliable computed cells."""
    out: dict[str, dict[tuple, float]] = {}
    for c in document["cells"]:
        if c["metric"] == "auroc" and c.get("status") == "ok" and c.get("reliable"):
            agg, _, op = c["estimator"].partition("@")
            out.setdefault(op, {})[(c["task"], c["llm"], c["strategy"], agg)] = c["value"]
    return out


def paired(cells: Mapping[str, Mapping[tuple, float]], a: str, b: str) -> dict[str, Any]:
    """Means of ``a`` and ``b`` over the reliable cells both have, and in how many ``a`` is higher."""
    shared = sorted(set(cells.get(a, {})) & set(cells.get(b, {})))
    if not shared:
        return {"cells": 0, "mean_a": None, "mean_b": None, "difference": None, "higher": 0}
    mean_a = sum(cells[a][k] for k in shared) / len(shared)
    mean_b = sum(cells[b][k] for k in shared) / len(shared)
    higher = sum(cells[a][k] > cells[b][k] for k in shared)
    return {
        "cells": len(shared),
        "mean_a": mean_a,
        "mean_b": mean_b,
        "difference": mean_a - mean_b,
        "higher": higher,
    }


def significance(document: Mapping[str, Any], a: str, b: str) -> tuple[int, int]:
    """(significantly higher, significantly lower) among the paired comparison rows ``a vs b`` on reliable cells."""
    up = down = 0
    for r in document["comparisons"]["rows"]:
        if (
            r["set"] == f"{a} vs {b}"
            and r.get("status") == "ok"
            and r.get("reliable")
            and r.get("significant")
        ):
            up += bool(r.get("improved"))
            down += not r.get("improved")
    return up, down


def predictions(document: Mapping[str, Any]) -> list[str]:
    cells = auroc_cells(document)

    def line(name: str, a: str, b: str, held: bool | None, rule: str) -> str:
        p = paired(cells, a, b)
        up, down = significance(document, a, b)
        verdict = "no reliable cell" if held is None else ("held" if held else "NOT held")
        if p["cells"] == 0:
            return f"| {name} | `{a}` vs `{b}` | {rule} | 0 cells | | | {verdict} |"
        return (
            f"| {name} | `{a}` vs `{b}` | {rule} | {p['cells']} | {p['mean_a']:.3f} vs {p['mean_b']:.3f} "
            f"({p['difference']:+.3f}) | higher in {p['higher']} of {p['cells']}; significantly {up} up, "
            f"{down} down | {verdict} |"
        )

    def held(a: str, b: str, test) -> bool | None:
        p = paired(cells, a, b)
        return None if p["cells"] == 0 else bool(test(p))

    rows = [
        "| prediction | comparison | holds if | reliable cells | mean AUROC (difference) | cells | verdict |",
        "|---|---|---|---|---|---|---|",
        line(
            "P1",
            "enc_trained",
            "enc",
            held("enc_trained", "enc", lambda p: p["difference"] < 0 and p["higher"] < p["cells"] / 2),
            "mean below and higher in under half the cells",
        ),
        line(
            "P2",
            "enc_trained_guided_ap",
            "enc_answer_pooling",
            held("enc_trained_guided_ap", "enc_answer_pooling", lambda p: p["difference"] >= 0),
            "mean difference >= 0",
        ),
        line(
            "P3",
            "enc_trained_answer_only",
            "cos_ext",
            held("enc_trained_answer_only", "cos_ext", lambda p: abs(p["difference"]) <= 0.02),
            "abs(mean difference) <= 0.02",
        ),
    ]
    rows += [
        line(
            "P4", v, "cos_ext", held(v, "cos_ext", lambda p: p["difference"] <= 0), "mean not above `cos_ext`"
        )
        for v in QUESTION_CONDITIONED
    ]
    return rows


def unreadable(path: str, error: Exception) -> int:
    """One line on stderr naming the file that did not read (a missing or malformed board or diagnosis); exit 2."""
    print(
        f"predictions: {error}" if path in str(error) else f"predictions: {path}: {error!r}", file=sys.stderr
    )
    return 2


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    from semuq_eval.leaderboard.schema import read_document  # any leaderboard.json version, as records

    try:
        document = planned(read_document(argv[0]))
    except (OSError, ValueError, KeyError) as error:
        return unreadable(argv[0], error)
    print("\n".join(predictions(document)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
