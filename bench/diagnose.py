"""Time ``semuq-eval diagnose`` on a few hundred questions for lexical, cos_ext and enc (all-MiniLM-L6-v2).

    .venv/bin/python -m bench.diagnose                                  # the shipped frozen store
    .venv/bin/python -m bench.diagnose --store PATH --output diag/      # and write the diagnosis there
    .venv/bin/python -m bench.diagnose --resume                         # and the cost of checkpoints

One diagnose call with the three operators, as the CLI runs it; each operator's share is its own wall time
inside the call (``timing`` of the result: its sample matrices, the other pairs, localization, bootstrap
intervals), after its model was loaded once beforehand (timed apart). Building the pairs (shared) is timed too.
The load average (``os.getloadavg``) before and after, and the process CPU time, are printed: on a shared 2-core
machine CPU time well below wall time means other processes held the cores.

``--resume`` runs the same call twice more with a checkpoint folder (:mod:`semuq_eval.diagnose.checkpoint`):
once from nothing (fingerprints and writes added to the scoring) and once reading every operator back, the
time a stopped diagnosis pays for what it had finished; all three side by side, in one process.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from semuq_eval.diagnose.check_values import frozen_store_path
from semuq_eval.diagnose.diagnosis import diagnose
from semuq_eval.diagnose.outputs import write_report
from semuq_eval.diagnose.questions import load_questions
from semuq_eval.diagnose.resolve import resolve_operators


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", default=None, help="run store (default: the shipped frozen store)")
    p.add_argument("--limit", type=int, default=None, help="first questions only")
    p.add_argument("--minilm", default=None, help="all-MiniLM-L6-v2 folder (default: the prepared asset)")
    p.add_argument("--output", default=None, help="write diagnosis.json / .md / .png there")
    p.add_argument("--resume", action="store_true", help="also time the call with checkpoints, and resumed")
    args = p.parse_args()
    from semuq_eval.assets import locate

    store = args.store or frozen_store_path()
    minilm = args.minilm or str(locate("all-minilm-l6-v2"))
    questions = load_questions(store, max_questions=args.limit)
    n_samples = sum(len(q.samples) for q in questions)
    print(f"store {store}: {len(questions)} questions, {n_samples} sampled answers")
    options = {"cos_ext": {"model": minilm}, "enc": {"model": minilm}}
    names = ["lexical", "cos_ext", "enc"]
    start = time.perf_counter()
    for op in resolve_operators(names, options).values():
        if hasattr(op, "_load"):
            op._load()
    print(f"models loaded in {time.perf_counter() - start:.1f} s")
    print(f"load average before: {os.getloadavg()}")

    def run(checkpoint: str | None = None) -> tuple[dict, float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        result = diagnose(
            questions=questions,
            operators=names,
            operator_options=options,
            bootstrap=1000,
            progress=False,
            checkpoint=checkpoint,
        )
        return result, time.process_time() - cpu, time.perf_counter() - wall

    result, cpu, wall = run()
    print(f"load average after: {os.getloadavg()}")
    t = result["timing"]
    print(f"total {wall:.1f} s wall, {cpu:.1f} s CPU (this process); pairs built in {t['pairs_s']:.1f} s")
    print("\n| operator | wall s | per question ms |")
    print("|---|---|---|")
    for name in names:
        print(f"| {name} | {t[f'{name}_s']:.1f} | {1000 * t[f'{name}_s'] / len(questions):.0f} |")
    if args.resume:
        with tempfile.TemporaryDirectory() as folder:
            _, _, kept = run(folder)
            again, _, resumed = run(folder)
        assert again["timing"]["resumed_from_checkpoint"] == names
        print("\n| the same call | wall s | ratio to no checkpoint |")
        print("|---|---|---|")
        for what, seconds in (
            ("no checkpoint", wall),
            ("checkpoint, from nothing", kept),
            ("resumed", resumed),
        ):
            print(f"| {what} | {seconds:.1f} | {seconds / wall:.3f} |")
    if args.output:
        paths = write_report(result, args.output)
        print("written: " + ", ".join(str(v) for v in paths.values()))


if __name__ == "__main__":
    main()
