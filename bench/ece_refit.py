"""Benchmark: ECE intervals with the calibrator fitted once vs refitted in every bootstrap resample.

Run: `python -m bench.ece_refit [--estimators 10] [--resamples 1000] [--sizes 1000 5000] [--repeats 3]
[--datasets 20] [--fresh 200]`. Three parts, all on synthetic runs whose scores have AUROC ~0.7
(incorrect answers score 0.74 sd higher; accuracy 0.6; two estimators in ten are integer-valued,
like numsets/cae, so ties occur):

1. cost: ``evaluate(metrics=["ece"])`` for ``--estimators`` estimators, ``CalibrationProtocol(refit=...)``
   "once" vs "per_resample", medians of ``--repeats``; the resampled splits (shared by every
   estimator) are drawn once beforehand and timed on their own; AUROC's cost is shown for scale;
2. width: the ECE interval width of per_resample / once on ``--datasets`` datasets of n = 200 and 1000;
3. honesty: each mode's mean width against the spread it should reproduce, the central 95% of the
   ECE point estimates of ``--fresh`` fresh datasets of the same process (1.0 = right; below 1 = too
   narrow), how often the interval covers E[ECE], the mean of those point estimates (nominal 0.95),
   and how often the whole interval lies above the run's own point estimate ("above").

The load average is printed before and after: the machine may be shared, so compare timings
within one run.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

from bench.timing import median_time
from semuq_eval import metrics as M

SHIFT = 0.74  # N(0, 1) scores shifted by 0.74 for incorrect answers: AUROC = Phi(0.74 / sqrt 2) ~ 0.70
ACCURACY = 0.6


def synthetic(
    n: int, n_estimators: int, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    correct = (rng.random(n) < ACCURACY).astype(int)
    scores = {}
    for e in range(n_estimators):
        u = rng.normal(size=n) + SHIFT * (1 - correct)
        scores[f"est{e}"] = np.round(2 * u) if e % 5 == 4 else u  # every fifth estimator integer-valued
    return scores, correct


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} (1/5/15 min), {os.cpu_count()} cores"


def cost(args) -> None:
    print(
        f"1. cost: {args.estimators} estimators x {args.resamples} resamples, ECE only (median of {args.repeats})"
    )
    print(
        f"{'n':>6}{'splits s':>10}{'once s':>9}{'per_resample s':>16}{'ratio':>8}{'+ s/estimator':>15}{'AUROC s':>9}"
    )
    boot = M.Bootstrap(n_resamples=args.resamples)
    for n in args.sizes:
        scores, correct = synthetic(n, args.estimators, np.random.default_rng(n))
        boot.counts(n)
        start = time.perf_counter()
        boot.folds(n, M.CalibrationProtocol())  # shared by every estimator of a run; cached
        t_splits = time.perf_counter() - start
        timings = {}
        for refit in ("once", "per_resample"):
            protocol = M.CalibrationProtocol(refit=refit)
            timings[refit] = median_time(
                lambda p=protocol, s=scores, y=correct: M.evaluate(
                    s, y, metrics=["ece"], bootstrap=boot, protocol=p
                ),
                args.repeats,
            )
        t_auroc = median_time(
            lambda s=scores, y=correct: M.evaluate(s, y, metrics=["auroc"], bootstrap=boot), 1
        )
        extra = (timings["per_resample"] - timings["once"]) / args.estimators
        print(
            f"{n:>6}{t_splits:>10.2f}{timings['once']:>9.2f}{timings['per_resample']:>16.2f}"
            f"{timings['per_resample'] / timings['once']:>7.1f}x{extra:>15.3f}{t_auroc:>9.2f}"
        )
    print(f"   ({load()})")


def honesty(n: int, calibrator: str, datasets: int, fresh: int, resamples: int) -> dict[str, float]:
    """Interval widths of both modes on ``datasets`` datasets, against the spread of ``fresh`` others."""
    protocol = M.CalibrationProtocol(calibrator=calibrator)
    values = []
    for seed in range(fresh):
        scores, correct = synthetic(n, 1, np.random.default_rng(50_000 + seed))
        values.append(M.ece(scores["est0"], correct, protocol))
    target = float(np.mean(values))  # E[ECE] at this n: what an interval should cover
    spread = float(np.subtract(*np.quantile(values, [0.975, 0.025])))  # central 95% of the point estimates
    boot = M.Bootstrap(n_resamples=resamples)
    width: dict[str, list[float]] = {"once": [], "per_resample": []}
    covered, above = dict.fromkeys(width, 0), dict.fromkeys(width, 0)
    for seed in range(datasets):
        scores, correct = synthetic(n, 1, np.random.default_rng(1000 + seed))
        for refit in width:
            protocol = M.CalibrationProtocol(calibrator=calibrator, refit=refit)
            r = M.evaluate(scores, correct, metrics=["ece"], bootstrap=boot, protocol=protocol)["est0"]["ece"]
            width[refit].append(r.ci_high - r.ci_low)
            covered[refit] += r.ci_low <= target <= r.ci_high
            above[refit] += r.value < r.ci_low  # the whole interval above the point estimate
    ratio = np.array(width["per_resample"]) / np.array(width["once"])
    out = {"ratio": float(ratio.mean()), "ratio_min": float(ratio.min()), "ratio_max": float(ratio.max())}
    out["spread"] = spread
    for refit, w in width.items():
        out[f"{refit}_width"] = float(np.mean(w))
        out[f"{refit}_vs_spread"] = float(np.mean(w)) / spread
        out[f"{refit}_coverage"] = covered[refit] / datasets
        out[f"{refit}_above"] = above[refit] / datasets
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--estimators", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--datasets", type=int, default=40, help="datasets per width / coverage figure")
    parser.add_argument("--fresh", type=int, default=300, help="fresh datasets for the sampling spread")
    parser.add_argument("--calibrators", nargs="+", default=["isotonic", "platt"])
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    print(load())
    cost(args)

    print(
        f"2./3. ECE 95% interval widths on {args.datasets} datasets x {args.resamples} resamples; spread = central 95% "
        f"of the point estimate over {args.fresh} fresh datasets; coverage of E[ECE] (nominal 0.95)"
    )
    print(
        f"{'calibrator':<10}{'n':>6}{'once':>8}{'refit':>8}{'refit/once':>11}{'(range)':>12}{'spread':>8}"
        f"{'once/spr':>9}{'refit/spr':>10}{'cover once':>11}{'cover refit':>12}{'above once':>11}{'above refit':>12}"
    )
    for calibrator in args.calibrators:
        for n in (200, 1000):
            h = honesty(n, calibrator, args.datasets, args.fresh, args.resamples)
            span = f"{h['ratio_min']:.2f}-{h['ratio_max']:.2f}"
            print(
                f"{calibrator:<10}{n:>6}{h['once_width']:>8.3f}{h['per_resample_width']:>8.3f}{h['ratio']:>11.2f}"
                f"{span:>12}{h['spread']:>8.3f}{h['once_vs_spread']:>9.2f}"
                f"{h['per_resample_vs_spread']:>10.2f}{h['once_coverage']:>11.2f}{h['per_resample_coverage']:>12.2f}"
                f"{h['once_above']:>11.2f}{h['per_resample_above']:>12.2f}"
            )
    print(load())


if __name__ == "__main__":
    main()
