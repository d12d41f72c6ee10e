"""Benchmark: every aggregator, vectorized over a (B, N, N) stack vs a per-question loop, and the bootstrap.

Run: `python -m bench.aggregators [--questions 10000] [--n 20] [--repeats 3]`. Both sides run in
this one process on the same matrices; medians over repeats and their ratio are printed.
The loop baseline is what a straightforward implementation does: KLE with scipy.linalg.expm /
a matrix inverse per question (as the KLE authors' code does), everything else by calling
the aggregator on one (N, N) matrix at a time.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import scipy.linalg

from bench.timing import median_time
from semuq_eval import aggregators as A
from semuq_eval import metrics as M


def von_neumann(K: np.ndarray) -> float:
    lam = np.clip(np.linalg.eigvalsh(K / np.trace(K)), 0, None)
    lam = lam[lam > 0]
    return float(-(lam * np.log(lam)).sum())


def kle_heat_loop(S: np.ndarray) -> list[float]:
    out = []
    for W in S:
        W = np.clip((W + W.T) / 2, 0, None)
        out.append(von_neumann(scipy.linalg.expm(-0.3 * (np.diag(W.sum(1)) - W))))
    return out


def kle_matern_loop(S: np.ndarray) -> list[float]:
    out = []
    for W in S:
        W = np.clip((W + W.T) / 2, 0, None)
        out.append(von_neumann(np.linalg.inv(2.0 * np.eye(len(W)) + np.diag(W.sum(1)) - W)))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--n", type=int, default=20, help="answers per question")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    B, N = args.questions, args.n
    X = rng.normal(size=(B, N, 8)) + 2.0 * rng.normal(size=(B, 1, 8))  # some agreement per question
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    S = X @ np.swapaxes(X, -1, -2)
    logp = rng.normal(-10, 3, size=(B, N))
    entropies = [rng.random(int(k)) for k in rng.integers(1, 30, size=B)]
    weights = [rng.random(len(h)) for h in entropies]

    cases: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
        "se": (lambda: A.se(S, logp), lambda: [A.se(s, lp) for s, lp in zip(S, logp, strict=True)]),
        "te": (lambda: A.te(entropies), lambda: [A.te(h) for h in entropies]),
        "te_enc": (
            lambda: A.te_enc(entropies, weights),
            lambda: [A.te_enc(h, w) for h, w in zip(entropies, weights, strict=True)],
        ),
        "kle_heat": (lambda: A.kle_heat(S), lambda: kle_heat_loop(S)),
        "kle_matern": (lambda: A.kle_matern(S), lambda: kle_matern_loop(S)),
    }
    for name in ["cae", "numsets", "cos", "eigv", "deg", "ecc"]:
        f = A.get(name)
        cases[name] = (lambda f=f: f(S), lambda f=f: [f(s) for s in S])

    print(f"aggregators on {B} questions, N = {N} (median of {args.repeats}; loop = one question at a time)")
    print(f"{'aggregator':<12}{'vectorized s':>14}{'loop s':>10}{'speed-up':>10}")
    total_vec = total_loop = 0.0
    for name, (vectorized, loop) in cases.items():
        np.testing.assert_allclose(
            np.asarray(vectorized()), np.asarray(loop(), dtype=float), rtol=1e-6, atol=1e-8
        )
        tv, tl = median_time(vectorized, args.repeats), median_time(loop, args.repeats)
        total_vec, total_loop = total_vec + tv, total_loop + tl
        print(f"{name:<12}{tv:>14.3f}{tl:>10.3f}{tl / tv:>9.1f}x")
    print(f"{'all':<12}{total_vec:>14.3f}{total_loop:>10.3f}{total_loop / total_vec:>9.1f}x")

    scores = {name: np.asarray(vectorized(), dtype=float) for name, (vectorized, _) in cases.items()}
    p_correct = 1 / (1 + np.exp(scores["kle_heat"] - np.median(scores["kle_heat"])))
    correct = (rng.random(B) < p_correct).astype(int)
    boot = M.Bootstrap(n_resamples=args.resamples)
    boot.counts(B)  # draw the shared index sets once, outside the timings
    boot_times = {}
    for metrics in (("auroc", "ece"), M.DEFAULT_METRICS):
        boot_times[metrics] = median_time(
            lambda m=metrics: M.evaluate(scores, correct, metrics=m, bootstrap=boot), 1
        )
        print(
            f"bootstrap: {len(scores)} estimators x {'+'.join(metrics)} x {args.resamples} resamples "
            f"x {B} questions: {boot_times[metrics]:.2f} s"
        )
    print(
        f"all aggregators (vectorized) + AUROC/ECE bootstrap: {total_vec + boot_times[('auroc', 'ece')]:.1f} s"
    )


if __name__ == "__main__":
    main()
