"""The second confirmation's predictions P5-P8 and its ship rule (docs/reproduction.md, "Second confirmation"),
read on its test board and diagnosis: held or not held, with the figures behind each.

    .venv/bin/python leaderboards/reproduction/confirmation-2/recipe/predictions.py \\
        leaderboards/reproduction/confirmation-2/test/leaderboard/leaderboard.json \\
        leaderboards/reproduction/confirmation-2/test/diagnosis/training-llm/diagnosis.json

A cell is one of the plan's ten aggregators on one run under one label strategy; only reliable cells (>= 20
answers of each class) that both operators have are compared, so each mean difference is paired cell by cell.
The cell arithmetic is the first confirmation's (``../../confirmation/recipe/predictions.py``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "confirmation" / "recipe"))
# the first confirmation's arithmetic and the plan's ten aggregators
from predictions import auroc_cells, paired, planned, significance, unreadable  # noqa: E402

CANDIDATE = "enc_trained_guided_ap_auroc"
SHIPPED = "enc_trained_guided_ap"
BASE = "enc_answer_pooling"


def significance_either_way(document: Mapping[str, Any], a: str, b: str) -> tuple[int, int]:
    """(significantly higher, significantly lower) of ``a`` against ``b``, read from the board's ``a vs b`` rows
    or, when it compared them the other way round (``b vs a``), from those rows with the signs swapped."""
    up, down = significance(document, a, b)
    if up or down or any(r["set"] == f"{a} vs {b}" for r in document["comparisons"]["rows"]):
        return up, down
    down, up = significance(document, b, a)
    return up, down


def verdict(held: bool | None) -> str:
    return "no reliable cell" if held is None else ("held" if held else "NOT held")


def auroc_rows(document: Mapping[str, Any]) -> list[str]:
    """P5, P6, P7 and the ship rule, one table row each."""
    cells = auroc_cells(document)

    def line(name: str, b: str, rule: str, test) -> str:
        p = paired(cells, CANDIDATE, b)
        up, down = significance_either_way(document, CANDIDATE, b)
        held = None if p["cells"] == 0 else bool(test(p))
        if p["cells"] == 0:
            return f"| {name} | `{CANDIDATE}` vs `{b}` | {rule} | 0 | | | {verdict(held)} |"
        return (
            f"| {name} | `{CANDIDATE}` vs `{b}` | {rule} | {p['cells']} | {p['mean_a']:.3f} vs {p['mean_b']:.3f} "
            f"({p['difference']:+.3f}) | higher in {p['higher']} of {p['cells']}; significantly {up} up, {down} "
            f"down | {verdict(held)} |"
        )

    base, shipped = paired(cells, CANDIDATE, BASE), paired(cells, CANDIDATE, SHIPPED)
    ships = (
        None
        if not base["cells"] or not shipped["cells"]
        else base["difference"] > 0 and shipped["difference"] > 0 and 2 * base["higher"] > base["cells"]
    )
    return [
        "| prediction | comparison | holds if | reliable cells | mean AUROC (difference) | cells | verdict |",
        "|---|---|---|---|---|---|---|",
        line(
            "P5",
            BASE,
            "mean above and higher in > half",
            lambda p: p["difference"] > 0 and 2 * p["higher"] > p["cells"],
        ),
        line("P6", SHIPPED, "mean above", lambda p: p["difference"] > 0),
        line("P7", "cos_ext", "mean below", lambda p: p["difference"] < 0),
        "",
        f"Ship rule (mean above both the shipped operator and the base, and higher than the base in more than half "
        f"of the reliable cells): **{verdict(ships).replace('held', 'met')}**.",
    ]


def diagnosis_rows(diagnosis: Mapping[str, Any]) -> list[str]:
    """P8: context trap lower and token localization higher than the base, paired intervals excluding 0."""
    row = (diagnosis.get("comparisons") or {}).get(f"{CANDIDATE} vs {BASE}") or {}
    lines = [
        "| P8 part | candidate minus base [95% CI] | pairs / questions | holds if | verdict |",
        "|---|---|---|---|---|",
    ]
    held_all: bool | None = True
    for key, title, lower_is_better in (
        ("trap:context", "context trap", True),
        ("localization", "token localization", False),
    ):
        d = row.get(key) or {}
        if d.get("difference") is None:
            lines.append(f"| {title} | n/a | | | no data |")
            held_all = None
            continue
        held = d["ci_high"] < 0 if lower_is_better else d["ci_low"] > 0
        held_all = held_all and held if held_all is not None else None
        lines.append(
            f"| {title} | {d['difference']:+.3f} [{d['ci_low']:.3f}, {d['ci_high']:.3f}] | "
            f"{d.get('n_pairs', d.get('n_answers'))} / {d['n_questions']} | "
            f"{'below 0' if lower_is_better else 'above 0'}, interval excluding 0 | {verdict(held)} |"
        )
    whole = "no data" if held_all is None else verdict(held_all)
    lines += ["", f"P8 as a whole: **{whole}**."]
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    from semuq_eval.leaderboard.schema import read_document  # any leaderboard.json version, as records

    try:
        board = read_document(argv[0])
    except (OSError, ValueError, KeyError) as error:
        return unreadable(argv[0], error)
    try:
        diagnosis = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return unreadable(argv[1], error)
    print("\n".join([*auroc_rows(planned(board)), "", *diagnosis_rows(diagnosis)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
