"""The transfer test's choice of LLM (../PLAN.md): each candidate's greedy accuracy on held-out NQ-Open dev questions
3000-3099 (outside the operator's training and selection questions), with a Wilson 95% interval, read from the
breakdowns of `heldout_accuracy.sh`'s runs. Prints the Markdown table of ../heldout-accuracy.md.

    .venv/bin/python leaderboards/reproduction/transfer/recipe/heldout_accuracy.py RUNS/semuq/semuq_nqopen_train
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

Z = 1.959963984540054
RULE = 0.10


def wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion k / n at 95%."""
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    rows = []
    for breakdown in sorted(Path(argv[0]).glob("*/breakdown.json")):
        try:
            doc = json.loads(breakdown.read_text(encoding="utf-8"))
            greedy = doc["labels"]["greedy"]
            k, n = int(greedy["n_correct"]), int(greedy["n"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            print(f"{breakdown}: not a readable breakdown ({err})", file=sys.stderr)
            return 2
        low, high = wilson(k, n)
        verdict = "meets the rule" if k / n >= RULE else "below the rule"
        rows.append(
            f"| `{breakdown.parent.name}` | {k} / {n} | {k / n:.2f} [{low:.2f}, {high:.2f}] | {verdict} |"
        )
    print("| LLM | greedy correct / questions | accuracy [95% Wilson CI] | rule: accuracy >= 0.10 |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
