"""Benchmark of `semuq-eval leaderboard`: 10 LLMs x 7 tasks x 60 estimators, 1,000 resamples, synthetic runs.

    .venv/bin/python -m bench.leaderboard                       # 200 questions per task, -j 2, all outputs
    .venv/bin/python -m bench.leaderboard --questions 1000 --jobs 1 --breakdown-metrics auroc,ece

Each synthetic run is a store (manifest.json, scores.jsonl with seeded scores and labels, breakdown.json).
The breakdowns are synthetic too (plausible figures, not recomputed, except the AUROC point estimate: the
leaderboard takes a breakdown's other figures only when its AUROC equals the one from the scores): with ``--breakdown-metrics
auroc,ece,prr,auarc`` (default) they hold every cell metric, so the leaderboard takes ECE / PRR / AUARC from
them and computes what only it can compute (every cell's AUROC resamples, the paired differences and rank
intervals); with ``auroc,ece`` (what runs write today) it also computes PRR and AUARC from the scores.
The stores are made once per configuration under ``--workdir`` (not timed). Prints the time of each phase
and the machine load (``os.getloadavg``) before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

import numpy as np

OPERATORS = ["nli", "nli_soft", "cos_ext", "cos_int", "enc", "lexical"]
AGGREGATORS = ["se", "cae", "numsets", "kle_heat", "kle_matern", "eigv", "deg", "ecc", "cos"]
EXTRA = ["se_ln@nli", "se_ln@enc", "se_ln@lexical", "kle_heat_diag@enc"]  # option variants, to reach 60
TOKEN = ["te", "te_enc@enc", "msp", "perplexity", "length", "cos@enc"]


def estimators(k: int) -> list[str]:
    names = [
        f"{a}@{o}"
        for a in AGGREGATORS
        for o in OPERATORS
        if not (a == "cos" and o in ("nli", "lexical", "enc"))
    ]
    names += [t for t in TOKEN if t not in names] + EXTRA
    if len(names) < k:
        raise SystemExit(f"only {len(names)} estimator names")
    keep = [
        n for n in names if n.startswith(("se@", "cae@", "kle_", "cos@")) or "@" not in n or n == "te_enc@enc"
    ]
    rest = [n for n in names if n not in keep]
    return (keep + rest)[:k]


def _metric(rng, name: str, n: int, n_correct: int, resamples: int) -> dict:
    value = float(rng.uniform(0.55, 0.85) if name != "ece" else rng.uniform(0.02, 0.2))
    half = float(rng.uniform(0.03, 0.08))
    return {
        "metric": name, "value": value, "ci_low": value - half, "ci_high": value + half, "n": n,
        "n_correct": n_correct, "n_incorrect": n - n_correct, "n_missing": 0, "n_valid_resamples": resamples,
        "calibration_refit": "once" if name == "ece" else None, "ci_method": "percentile bootstrap",
        "reliable": True, "note": None,
    }  # fmt: skip


def make_stores(
    root: Path, n_llms: int, n_tasks: int, n_est: int, n: int, resamples: int, metrics: list[str]
) -> None:
    from semuq_eval.harness.settings import Settings
    from semuq_eval.harness.store import STORE_FORMAT
    from semuq_eval.jsonio import write_json, write_jsonl
    from semuq_eval.metrics import auroc

    names = estimators(n_est)
    settings = Settings(n_samples=20, operators=tuple(OPERATORS), bootstrap=resamples, seed=0).as_dict()
    for t in range(n_tasks):
        task = f"semuq_bench{t}"
        for m in range(n_llms):
            llm = f"llm-{m:02d}"
            rng = np.random.default_rng(1000 * t + m)
            greedy = (rng.random(n) < rng.uniform(0.3, 0.6)).astype(int)
            majority = np.where(rng.random(n) < 0.9, greedy, 1 - greedy)
            signal = rng.uniform(0.3, 1.5, size=len(names))
            scores = rng.normal(size=(n, len(names))) + np.outer(1 - greedy, signal)
            items = [
                {"doc_id": d, "id": f"{task}-{d}", "scores": dict(zip(names, map(float, scores[d]), strict=True)),
                 "reasons": {}, "labels": {"greedy": int(greedy[d]), "majority": int(majority[d])}, "problems": []}
                for d in range(n)
            ]  # fmt: skip
            results, labels = {}, {}
            for s, y in (("greedy", greedy), ("majority", majority)):
                c = int(y.sum())
                labels[s] = {"n": n, "n_correct": c, "n_incorrect": n - c, "n_missing": 0, "accuracy": c / n}
                results[s] = {e: {x: _metric(rng, x, n, c, resamples) for x in metrics} for e in names}
                for k, e in enumerate(
                    names
                ):  # the true AUROC: the leaderboard reuses a breakdown only when it matches
                    results[s][e]["auroc"]["value"] = auroc(scores[:, k], y)
            breakdown = {
                "format": "semuq-breakdown/1", "task": task, "created": "2026-01-01T00:00:00+00:00",
                "settings": settings, "n_samples": 20, "seeds": {"bootstrap": 0},
                "judge": {"judge": "string", "mode": "contains"}, "label_set": "run",
                "operators": {o: {"name": o, "kind": "graded", "status": "ok", "info": {"operator": o}} for o in OPERATORS},
                "n_docs": n, "labels": labels, "results": results, "unavailable": {}, "estimators_scored": names,
            }  # fmt: skip
            store = root / "semuq" / task / llm
            store.mkdir(parents=True, exist_ok=True)
            write_json(store / "manifest.json", {"format": STORE_FORMAT, "task": task, "settings": settings})
            write_jsonl(store / "scores.jsonl", items)
            write_json(store / "breakdown.json", breakdown)


def _cpu() -> float:
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llms", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=7)
    parser.add_argument("--estimators", type=int, default=60)
    parser.add_argument("--questions", type=int, default=200, help="questions per task (default 200)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--breakdown-metrics", default="auroc,ece,prr,auarc")
    parser.add_argument("--metrics", default="auroc,ece,prr,auarc", help="the leaderboard's cell metrics")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--workdir", default="/tmp/semuq-bench-leaderboard")
    args = parser.parse_args()

    from semuq_eval.leaderboard.compute import LeaderboardConfig, compute
    from semuq_eval.leaderboard.discovery import expand_inputs
    from semuq_eval.leaderboard.html import write_html
    from semuq_eval.leaderboard.markdown import write_markdown
    from semuq_eval.leaderboard.plots import plot_all
    from semuq_eval.leaderboard.read_run import load_runs
    from semuq_eval.leaderboard.sections import group_sections
    from semuq_eval.leaderboard.write import to_document, write_csv, write_headline_csv, write_json_document

    metrics = [m.strip() for m in args.breakdown_metrics.split(",") if m.strip()]
    tag = f"v2-{args.llms}x{args.tasks}x{args.estimators}-n{args.questions}-r{args.resamples}-{'_'.join(metrics)}"
    root = Path(args.workdir) / tag
    if not (root / "done").is_file():
        shutil.rmtree(root, ignore_errors=True)
        start = time.perf_counter()
        make_stores(root, args.llms, args.tasks, args.estimators, args.questions, args.resamples, metrics)
        (root / "done").write_text("")
        print(f"synthetic stores made in {time.perf_counter() - start:.1f} s (not timed): {root}")
    out = Path(args.workdir) / f"out-{tag}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    load_before = os.getloadavg()
    cpu_before = _cpu()
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    runs = load_runs(expand_inputs([str(root / "semuq" / "*" / "*")]))
    sections = group_sections(runs)
    phases["load"] = time.perf_counter() - t0
    t = time.perf_counter()
    cell_metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
    board = compute(
        sections, LeaderboardConfig(n_resamples=args.resamples, jobs=args.jobs, metrics=cell_metrics)
    )
    phases["compute"] = time.perf_counter() - t
    t = time.perf_counter()
    document = to_document(board, relative_to=out)
    write_json_document(document, out / "leaderboard.json")
    write_csv(document, out / "leaderboard.csv")
    write_headline_csv(document, out / "headline.csv")
    write_markdown(document, out / "leaderboard.md")
    phases["json/csv/md"] = time.perf_counter() - t
    t = time.perf_counter()
    figures = [] if args.no_plots else plot_all(document, out)
    phases["plots"] = time.perf_counter() - t
    t = time.perf_counter()
    write_html(document, out / "index.html", plots=figures)
    phases["html"] = time.perf_counter() - t
    total = time.perf_counter() - t0
    load_after = os.getloadavg()
    cpu = _cpu() - cpu_before
    n_cells = len(document["cells"])
    print(
        f"{args.llms} LLMs x {args.tasks} tasks x {args.estimators} estimators, {args.questions} questions per "
        f"task, {args.resamples} resamples, --jobs {args.jobs}, breakdowns hold {','.join(metrics)}, cells: "
        f"{','.join(cell_metrics)}"
    )
    print(f"{len(runs)} runs, {n_cells} cells, {len(document['comparisons']['rows'])} Enc-vs-base rows, "
          f"{len(document['ranks']['estimators'])} estimator ranks, {len(figures)} plots")  # fmt: skip
    print("phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
    print(
        f"TOTAL {total:.1f} s wall, {cpu:.1f} s CPU (user + sys of this process and its workers); load average "
        f"before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} cores)"
    )
    sizes = {p.name: p.stat().st_size for p in out.iterdir() if p.is_file()}
    print("outputs: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(sizes.items())))


if __name__ == "__main__":
    main()
