"""Compare two ``breakdown.json`` files number by number: did a change keep a run's results?

    python -m tools.compare_breakdowns BEFORE/breakdown.json AFTER/breakdown.json [--rtol 0]

Compares the labels, the bad docs and, for every estimator present in both files, every field of every
metric (value, CI, counts) under every label strategy. Estimators present in only one file are listed (a
change may add estimators); times, dates and operator costs are not compared. Exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def _same(a, b, rtol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= rtol * max(abs(a), abs(b)))
    return a == b


def compare(before: dict, after: dict, rtol: float = 0.0) -> tuple[list[str], dict[str, list[str]]]:
    """``(differences, {"only_before": [...], "only_after": [...]})`` of two breakdowns."""
    diffs = []
    for key in ("n_docs", "labels", "bad_docs", "n_samples"):
        if before.get(key) != after.get(key):
            diffs.append(f"{key}: {before.get(key)!r} != {after.get(key)!r}")
    only = {"only_before": [], "only_after": []}
    for strategy in sorted(set(before["results"]) | set(after["results"])):
        b, a = before["results"].get(strategy, {}), after["results"].get(strategy, {})
        only["only_before"] += [f"{strategy}:{n}" for n in sorted(set(b) - set(a))]
        only["only_after"] += [f"{strategy}:{n}" for n in sorted(set(a) - set(b))]
        for name in sorted(set(a) & set(b)):
            for metric in sorted(set(a[name]) | set(b[name])):
                mb, ma = b[name].get(metric, {}), a[name].get(metric, {})
                for field in sorted(set(mb) | set(ma)):
                    if not _same(mb.get(field), ma.get(field), rtol):
                        diffs.append(
                            f"{strategy} {name} {metric}.{field}: {mb.get(field)!r} != {ma.get(field)!r}"
                        )
    return diffs, only


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rtol", type=float, default=0.0, help="relative tolerance (default 0: identical)")
    args = parser.parse_args(argv)
    before, after = (json.loads(p.read_text(encoding="utf-8")) for p in (args.before, args.after))
    diffs, only = compare(before, after, args.rtol)
    common = {n for s in before["results"] for n in before["results"][s]} & {
        n for s in after["results"] for n in after["results"][s]
    }
    print(f"{len(common)} estimators in both; {before['n_docs']} vs {after['n_docs']} questions")
    for key, names in only.items():
        if names:
            print(f"{key} ({len(names)}): {', '.join(names)}")
    if diffs:
        print(f"{len(diffs)} differences:")
        print("\n".join(f"  {d}" for d in diffs[:50]))
        return 1
    print("identical: labels, bad docs and every metric field of every common estimator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
