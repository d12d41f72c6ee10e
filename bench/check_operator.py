"""Time ``semuq-eval check-operator`` as a CI step runs it: a new process, the shipped ``enc`` against a baseline
on the shipped frozen store, with its figures computed (``--no_cache``, the old path) and read back (an unchanged
operator, the figures cache of :func:`semuq_eval.diagnose.value_cache.cached_values`).

    .venv/bin/python -m bench.check_operator              # median of 3 of each, the shipped enc
    .venv/bin/python -m bench.check_operator --repeats 5 --model lexical

Each run is the whole command (interpreter start, imports, the store, the operator, the comparison); the baseline
is recorded once beforehand into a scratch folder, and so is the cache for the cached runs. The load average
before and after is printed: on a shared 2-core machine, a load above 2 means other processes held the cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(args: list[str], env: dict[str, str]) -> float:
    """Wall seconds of ``semuq-eval check-operator ARGS`` in a new process (its exit code must be 0)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "semuq_eval", "check-operator", *args], env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--model", default=None, help="what to check (default: the shipped enc, enc-trained asset)"
    )
    p.add_argument("--repeats", type=int, default=3, help="runs of each path (the median is reported)")
    args = p.parse_args()
    from semuq_eval.assets import locate

    model = args.model or str(locate("enc-trained"))
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        baseline, cache = Path(scratch) / "baseline.json", Path(scratch) / "cache"
        common = [model, "--no_progress"]
        print(f"load average before: {os.getloadavg()}; model {model}")
        recorded = _run([*common, "--write-baseline", str(baseline), "--no_cache"], env)
        print(f"baseline recorded in {recorded:.1f} s")
        computed = [
            _run([*common, "--baseline", str(baseline), "--no_cache"], env) for _ in range(args.repeats)
        ]
        _run([*common, "--baseline", str(baseline), "--cache", str(cache)], env)  # fills the cache
        cached = [
            _run([*common, "--baseline", str(baseline), "--cache", str(cache)], env)
            for _ in range(args.repeats)
        ]
        print(f"load average after: {os.getloadavg()}")
    rows = [("computed (--no_cache)", computed), ("read back (unchanged operator)", cached)]
    print(f"\n| path | median s ({args.repeats} runs) | runs |\n|---|---|---|")
    for label, times in rows:
        print(f"| {label} | {statistics.median(times):.1f} | {', '.join(f'{t:.1f}' for t in times)} |")
    print(f"ratio computed / read back: {statistics.median(computed) / statistics.median(cached):.1f}x")


if __name__ == "__main__":
    main()
