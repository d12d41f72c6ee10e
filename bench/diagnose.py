"""Time ``semuq-eval diagnose`` on a few hundred questions for lexical, cos_ext and enc (all-MiniLM-L6-v2).

    .venv/bin/python bench/diagnose.py                      # the shipped frozen store (SmolLM2, WebQuestions)
    .venv/bin/python bench/diagnose.py --store PATH --repeats 3

Each operator is timed alone, end to end (pairs built, every pair scored, sample matrices, localization,
bootstrap intervals), after a warm-up call that loads the model; the pair building is timed separately. The
load average (``os.getloadavg``) before and after is printed: on a shared 2-core machine, compare figures
only when taken under the same load. Operator models stay loaded between repeats (cached per process).
"""

from __future__ import annotations

import argparse
import os
import time

from timing import median_time

from semuq_eval.diagnose.check import frozen_store_path
from semuq_eval.diagnose.diagnosis import build_pair_sets, diagnose
from semuq_eval.diagnose.questions import load_questions
from semuq_eval.metrics import Bootstrap


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", default=None, help="run store (default: the shipped frozen store)")
    p.add_argument("--limit", type=int, default=None, help="first questions only")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--minilm", default=None, help="all-MiniLM-L6-v2 folder (default: the prepared asset)")
    args = p.parse_args()
    from semuq_eval.assets import locate

    store = args.store or frozen_store_path()
    minilm = args.minilm or str(locate("all-minilm-l6-v2"))
    questions = load_questions(store, max_questions=args.limit)
    n_samples = sum(len(q.samples) for q in questions)
    print(f"store {store}: {len(questions)} questions, {n_samples} sampled answers")
    print(f"load average before: {os.getloadavg()}")
    t = median_time(lambda: build_pair_sets(questions), args.repeats)
    traps, groups = build_pair_sets(questions)
    n_pairs = sum(len(v.pairs) for v in traps.values()) + sum(len(v.pairs) for v in groups.values())
    print(f"pairs built: {n_pairs} in {t:.2f} s")
    options = {"lexical": {}, "cos_ext": {"model": minilm}, "enc": {"model": minilm}}
    rows = []
    for name, opts in options.items():

        def run(name=name, opts=opts):
            return diagnose(
                questions=questions,
                operators=[name],
                operator_options={name: opts} if opts else None,
                bootstrap=Bootstrap(1000),
                progress=False,
            )

        start = time.perf_counter()
        run()  # warm-up: loads the model
        first = time.perf_counter() - start
        t = median_time(run, args.repeats)
        cpu0 = time.process_time()
        run()
        cpu = time.process_time() - cpu0
        rows.append((name, first, t, cpu))
        print(f"{name:8s} first call {first:7.1f} s   median {t:7.1f} s   cpu of one run {cpu:7.1f} s")
    print(f"load average after: {os.getloadavg()}")
    print("\n| operator | first call (model load) s | median s | per question ms |")
    print("|---|---|---|---|")
    for name, first, t, _ in rows:
        print(f"| {name} | {first:.1f} | {t:.1f} | {1000 * t / len(questions):.0f} |")


if __name__ == "__main__":
    main()
