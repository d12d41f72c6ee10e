"""Benchmark: the local ``hf`` judge batched (one call for all answers) vs one call per answer, and a warm cache.

Run: `python -m bench.judges --store STORE [--questions 200] [--per_answer 200] [--threads 1] [--judge MODEL]`.

The answers are a run store's: the greedy answer and the N samples of its first ``--questions`` questions
(the default demo store, ``semuq-eval demo --output_path out``, has N = 20: 200 questions give 4,200
answers). The judge is SmolLM2-135M-Instruct (``semuq-eval assets``) unless ``--judge`` names another.

1. batched: ``HFJudge.batch`` on all answers with an empty cache: identical answers judged once, each
   question's shared prompt prefix run once, the answers' tokens batched (``--batch_size``);
2. per answer: one ``batch`` call per answer, no cache, as a naive judge loop would do. It costs about
   one full forward pass of the prompt per answer, so by default it is timed on a random sample of
   ``--per_answer`` answers and extrapolated to all of them (printed as such); ``--per_answer 0`` times all;
3. warm cache: the same batched call again, on the cache the first part filled.

Each part runs once (the first two are minutes long); torch uses ``--threads`` threads. The load average is
printed before and after: the machine may be shared, so compare the parts within one run.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="a run store directory")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--per_answer", type=int, default=200, help="answers timed one by one (0: all)")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--judge", help="the judge model (default: the SmolLM2 asset)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from semuq_eval import judges
    from semuq_eval.assets import locate
    from semuq_eval.harness.store import open_store

    model = args.judge or str(locate("smollm2-135m-instruct"))
    records = open_store(args.store).docs(hidden=False)[: args.questions]
    qs, answers, refs = [], [], []
    for r in records:
        for g in [r.greedy, *r.samples]:
            qs.append(r.question)
            answers.append(g.text)
            refs.append(r.references)
    n = len(answers)
    print(f"load average before: {os.getloadavg()}; torch threads {args.threads}")
    print(
        f"{len(records)} questions, {n} answers ({len(set(zip(qs, answers, strict=True)))} distinct) from {args.store}"
    )

    def judge(cache):
        j = judges.get("hf", model=model, batch_size=args.batch_size, cache=cache, progress=False)
        j._load()  # model loading is not part of the timing
        return j

    tmp = tempfile.TemporaryDirectory()
    cache = os.path.join(tmp.name, "judge-cache.sqlite")
    batched_judge = judge(cache)  # an empty cache: every distinct answer is judged, then stored
    start = time.perf_counter()
    batched = batched_judge.batch(qs, answers, refs)
    t_batched = time.perf_counter() - start
    print(f"batched: {t_batched:.1f} s for {n} answers ({n / t_batched:.1f} answers/s)")

    sample = list(range(n))
    if args.per_answer and args.per_answer < n:
        sample = sorted(random.Random(args.seed).sample(range(n), args.per_answer))
    single_judge = judge("none")
    start = time.perf_counter()
    for i in sample:
        (v,) = single_judge.batch([qs[i]], [answers[i]], [refs[i]])
        assert v.label == batched[i].label and abs(v.p_correct - batched[i].p_correct) < 1e-4, (v, batched[i])
    t_sample = time.perf_counter() - start
    t_single = t_sample * n / len(sample)
    how = (
        "measured"
        if len(sample) == n
        else f"extrapolated from {len(sample)} answers timed ({t_sample:.1f} s)"
    )
    print(f"per answer: {t_single:.1f} s for {n} answers, {how}; same verdicts as batched")

    warm = judge(cache)
    start = time.perf_counter()
    again = warm.batch(qs, answers, refs)
    t_warm = time.perf_counter() - start
    tmp.cleanup()
    assert [v.label for v in again] == [v.label for v in batched]
    print(
        f"warm cache: {t_warm:.2f} s ({warm.stats['cache_hits']} of {warm.stats['distinct']} distinct from cache)"
    )
    print(f"\nbatched is {t_single / t_batched:.1f}x faster than one call per answer (target >= 5x)")
    print(f"a warm cache is {t_batched / t_warm:.0f}x faster than batched judging (target >= 100x)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
