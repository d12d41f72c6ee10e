"""Benchmark: the ``hf`` judge with the instructions' prefix shared across questions vs run once per question.

Run: `python -m bench.judge_prefix --store STORE [--questions 100] [--repeats 3] [--threads 1] [--judge MODEL]`.

The answers are the greedy answers of a run store's first ``--questions`` questions: one answer per question, as
when a slow judge labels a board's greedy answers only (``semuq-eval judge --answers greedy``), where each
question's own prefix serves a single answer and only the instructions (and the chat template's start) are common.
Both modes judge every answer with an empty cache (``cache=none``), alternated ``--repeats`` times; the medians and
their ratio are printed, and the verdicts must agree to 1e-4. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="a run store directory")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--judge", help="the judge model folder (default: the SmolLM2 asset)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from semuq_eval import judges
    from semuq_eval.assets import locate
    from semuq_eval.harness.store import open_store

    model = args.judge or str(locate("smollm2-135m-instruct"))
    docs = open_store(args.store).docs(hidden=False)[: args.questions]
    qs, answers, refs = (
        [d.question for d in docs],
        [d.greedy.text for d in docs],
        [d.references for d in docs],
    )
    print(f"load average before: {os.getloadavg()}; torch threads {args.threads}; judge {model}")
    print(f"{len(docs)} greedy answers of {args.store}")
    modes = {"shared": True, "per question": False}
    made = {m: judges.get("hf", model=model, cache="none", progress=False) for m in modes}
    for mode, judge in made.items():
        judge.share_instructions = modes[mode]
        judge._load()  # model loading is not part of the timing
    times: dict[str, list[float]] = {m: [] for m in modes}
    verdicts = {}
    for _ in range(args.repeats):
        for mode, judge in made.items():
            start = time.perf_counter()
            verdicts[mode] = judge.batch(qs, answers, refs)
            times[mode].append(time.perf_counter() - start)
    for a, b in zip(verdicts["shared"], verdicts["per question"], strict=True):
        assert a.label == b.label and abs(a.p_correct - b.p_correct) < 1e-4, (a, b)
    medians = {m: statistics.median(t) for m, t in times.items()}
    for mode, median in medians.items():
        print(f"{mode}: median {median:.1f} s ({median / len(docs):.3f} s per answer; runs {times[mode]})")
    print(
        f"sharing the instructions is {medians['per question'] / medians['shared']:.2f}x faster; same verdicts"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
