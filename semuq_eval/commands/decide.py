"""``semuq-eval decide``: from a run's scores to decisions (:mod:`semuq_eval.decisions`).

Four actions, each on a run store or record (``*.jsonl.gz``) and one label set and strategy:

- ``calibrate RUN --estimator E --output cal.json``: fit and save a monotone calibrator of E (P(correct));
- ``apply CAL RUN --output conf.jsonl``: its confidences for another run (refused for another
  estimator/operator);
- ``threshold RUN --estimator E --alpha A --delta D``: the abstention threshold for an error rate among
  answered of at most A with probability 1 - D, chosen on a seeded half (or ``--calibration_run``) and tested
  on the rest;
- ``combine RUN [--estimators a,b,...]``: a cross-fitted logistic combination vs the best single estimator,
  with AUROC, intervals and their paired difference.

Examples
--------
>>> parser().parse_args(["threshold", "run.jsonl.gz", "--estimator", "se@nli", "--alpha", "0.05"]).alpha
0.05
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from semuq_eval.commands.arguments import CommandParser, number, whole
from semuq_eval.durable import writer_lock

__all__ = ["DECISION_FORMAT", "main", "parser"]

DECISION_FORMAT = "semuq-decision/1"


def _run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--label_set", default="run", help="the labels: 'run' (the run's judge) or a judge's set")
    p.add_argument("--strategy", default="greedy", help="the label strategy: greedy or majority")


def _add_calibrate(sub) -> None:
    p = sub.add_parser("calibrate", help="fit and save a calibrator of one estimator")
    p.add_argument("run", help="a run store folder or a run record (*.jsonl.gz)")
    p.add_argument("--estimator", required=True, help="e.g. kle_heat@enc")
    p.add_argument("--kind", choices=["isotonic", "platt"], default="isotonic")
    p.add_argument("--output", required=True, help="the calibrator's JSON file")
    p.add_argument("--force", action="store_true", help="replace an existing file that is not a calibrator")
    _run_options(p)


def _add_apply(sub) -> None:
    p = sub.add_parser("apply", help="a saved calibrator's confidences for a run's questions")
    p.add_argument("calibrator", help="a calibrator saved by `decide calibrate`")
    p.add_argument("run", help="a run store folder or a run record (*.jsonl.gz)")
    p.add_argument(
        "--output", required=True, help="a JSON file: per question doc_id, id, uncertainty, confidence"
    )
    p.add_argument("--force", action="store_true", help="replace an existing file that is not this command's")


def _add_threshold(sub) -> None:
    p = sub.add_parser("threshold", help="an abstention threshold with a finite-sample guarantee")
    p.add_argument("run", help="a run store folder or a run record (*.jsonl.gz)")
    p.add_argument("--estimator", required=True)
    p.add_argument("--alpha", type=number(0, 1, open_low=True), default=0.1, help="target error rate (0.1)")
    p.add_argument("--delta", type=number(0, 1, open_low=True), default=0.1, help="1 - confidence (0.1)")
    p.add_argument("--calibration_run", help="choose the threshold on this run and test it on all of RUN")
    p.add_argument("--calibration_fraction", type=number(0, 1, open_low=True), default=0.5)
    p.add_argument("--n_thresholds", type=whole(1, 10_000), default=20, help="candidate thresholds (20)")
    p.add_argument("--seed", type=whole(0, 2**32 - 1), default=0, help="seed of the calibration split")
    p.add_argument("--json", help="also write the result to this JSON file")
    p.add_argument("--force", action="store_true")
    _run_options(p)


def _add_combine(sub) -> None:
    p = sub.add_parser("combine", help="a cross-fitted combination of estimators vs the best single one")
    p.add_argument("run", help="a run store folder or a run record (*.jsonl.gz)")
    p.add_argument(
        "--estimators", help="comma-separated (default: every estimator scoring every labelled question)"
    )
    p.add_argument("--folds", type=whole(2, 100), default=5)
    p.add_argument("--seed", type=whole(0, 2**32 - 1), default=0)
    p.add_argument(
        "--bootstrap", type=whole(1, 100_000), default=1000, help="resamples of the intervals (1000)"
    )
    p.add_argument("--json", help="also write the result to this JSON file")
    p.add_argument("--force", action="store_true")
    _run_options(p)


def parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    p = CommandParser(
        prog="semuq-eval decide",
        description="From scores to decisions: calibrators, abstention thresholds with guarantees, and a "
        "held-out combination of estimators (docs/decisions.md).",
    )
    sub = p.add_subparsers(dest="action", required=True, parser_class=CommandParser)
    for add in (_add_calibrate, _add_apply, _add_threshold, _add_combine):
        add(sub)
    return p


def _load(path: str, label_set: str, strategy: str):
    from semuq_eval.judges import label_strategy_names
    from semuq_eval.leaderboard.read_run import load_run

    if strategy not in label_strategy_names():
        raise ValueError(f"--strategy {strategy!r}: known strategies {label_strategy_names()}")
    run = load_run(path, label_set)
    if run.doc_ids is None:
        raise ValueError(
            f"{path}: a breakdown alone holds no per-question scores; give the store or its record"
        )
    return run, run.labels[strategy]


def _scores(run, estimator: str):
    if estimator not in run.scores:
        raise ValueError(f"{run.path}: no estimator {estimator!r}; the run has {sorted(run.scores)[:8]} ...")
    return run.scores[estimator]


def _operator(run, estimator: str) -> dict[str, Any]:
    _, _, name = estimator.partition("@")
    return dict((run.provenance.get("operators") or {}).get(name) or {}) if name else {}


def _write(path: str | Path, document: dict[str, Any], force: bool) -> None:
    from semuq_eval.jsonio import write_json
    from semuq_eval.writes import check_file_target

    check_file_target(path, ours=document["format"], force=force, flag="--output/--json")
    write_json(path, document)


def _calibrate(args) -> dict[str, Any]:
    from semuq_eval.decisions import CALIBRATOR_FORMAT, fit_calibrator
    from semuq_eval.writes import check_file_target

    check_file_target(args.output, ours=CALIBRATOR_FORMAT, force=args.force, flag="--output")
    run, correct = _load(args.run, args.label_set, args.strategy)
    calibrator = fit_calibrator(
        _scores(run, args.estimator),
        correct,
        estimator=args.estimator,
        kind=args.kind,
        operator=_operator(run, args.estimator),
        label_set=args.label_set,
        strategy=args.strategy,
        provenance={
            "llm": run.llm,
            "task": run.task,
            "question_set": run.question_set_hash,
            "run": str(run.path),
        },
    )
    calibrator.save(args.output)
    counts = calibrator.provenance
    print(
        f"{args.output}: {args.kind} calibrator of {args.estimator} on {run.llm} / {run.task} "
        f"({counts['n_correct']} correct, {counts['n_incorrect']} incorrect, {args.label_set}/{args.strategy})"
    )
    return calibrator.to_json()


def _apply(args) -> dict[str, Any]:
    import numpy as np

    from semuq_eval.decisions import load_calibrator

    calibrator = load_calibrator(args.calibrator)
    run, _ = _load(args.run, calibrator.label_set, calibrator.strategy)
    u = _scores(run, calibrator.estimator)
    confidence = calibrator.confidence(
        u, estimator=calibrator.estimator, operator=_operator(run, calibrator.estimator)
    )
    ids = run.question_ids or [None] * len(u)
    document = {
        "format": DECISION_FORMAT,
        "action": "apply",
        "calibrator": calibrator.to_json(),
        "run": {"llm": run.llm, "task": run.task, "path": str(run.path)},
        "questions": [
            {"doc_id": int(d), "id": q, "uncertainty": float(x), "confidence": float(c)}
            for d, q, x, c in zip(run.doc_ids, ids, u, confidence, strict=True)
        ],
    }
    _write(args.output, document, args.force)
    print(f"{args.output}: {int(np.isfinite(confidence).sum())} of {len(u)} questions given a confidence")
    return document


def _threshold(args) -> dict[str, Any]:
    from semuq_eval.decisions import abstention_threshold, held_out, split_questions

    run, correct = _load(args.run, args.label_set, args.strategy)
    u = _scores(run, args.estimator)
    if args.calibration_run:
        cal_run, cal_correct = _load(args.calibration_run, args.label_set, args.strategy)
        u_cal, y_cal, u_new, y_new = _scores(cal_run, args.estimator), cal_correct, u, correct
        split = {"calibration_run": args.calibration_run}
    else:
        cal, new = split_questions(len(u), calibration_fraction=args.calibration_fraction, seed=args.seed)
        u_cal, y_cal, u_new, y_new = u[cal], correct[cal], u[new], correct[new]
        split = {"calibration_fraction": args.calibration_fraction, "seed": args.seed}
    chosen = abstention_threshold(
        u_cal, y_cal, alpha=args.alpha, delta=args.delta, n_thresholds=args.n_thresholds
    )
    result = held_out(chosen.threshold, u_new, y_new)
    print(_threshold_text(args.estimator, run, chosen, result))
    return {
        "format": DECISION_FORMAT,
        "action": "threshold",
        "run": {"llm": run.llm, "task": run.task, "path": str(run.path)},
        "estimator": args.estimator,
        "labels": {"label_set": args.label_set, "strategy": args.strategy},
        "split": split,
        "calibration": asdict(chosen),
        "held_out": asdict(result),
    }


def _threshold_text(estimator: str, run, chosen, result) -> str:
    from semuq_eval.cell_text import cell_text
    from semuq_eval.harness.reliability import MIN_MINORITY

    head = (
        f"{estimator} on {run.llm} / {run.task}: error rate among answered <= {chosen.alpha:g} with probability "
        f">= {1 - chosen.delta:g} (Learn-then-Test, {chosen.method}, {chosen.n_candidates} candidates)"
    )
    if chosen.answers_nothing:
        return (
            f"{head}\n  no threshold meets the target on {chosen.n_calibration} calibration questions: answer "
            f"nothing (a looser alpha or delta, or more calibration questions, may find one)"
        )
    flag = result.n_answered >= MIN_MINORITY
    return "\n".join(
        [
            head,
            f"  threshold {chosen.threshold:.6g}: answers {chosen.n_answered} of {chosen.n_calibration} calibration "
            f"questions ({chosen.n_errors} wrong)",
            f"  held out ({result.n} questions): coverage "
            f"{cell_text(result.coverage, *result.coverage_ci, count=f'{result.n_answered}/{result.n}')}, error rate "
            f"among answered {cell_text(result.error_rate, *result.error_rate_ci, reliable=flag, count=f'{result.n_errors}/{result.n_answered}')}",
        ]
    )


def _combine(args) -> dict[str, Any]:
    from semuq_eval.decisions import complete_estimators, cross_fitted_combination
    from semuq_eval.metrics import Bootstrap, evaluate, paired_difference

    run, correct = _load(args.run, args.label_set, args.strategy)
    names = args.estimators.split(",") if args.estimators else complete_estimators(run.scores, correct)
    combination = cross_fitted_combination(
        {n: _scores(run, n) for n in names}, correct, n_folds=args.folds, seed=args.seed
    )
    bootstrap = Bootstrap(n_resamples=args.bootstrap, seed=args.seed)
    scored = {"combination": combination.combined, "best single (cross-fitted)": combination.best_single}
    results = evaluate(scored, correct, metrics=["auroc"], bootstrap=bootstrap)
    diff = paired_difference(combination.combined, combination.best_single, correct, bootstrap=bootstrap)
    print(_combine_text(run, combination, results, diff))
    return {
        "format": DECISION_FORMAT,
        "action": "combine",
        "run": {"llm": run.llm, "task": run.task, "path": str(run.path)},
        "labels": {"label_set": args.label_set, "strategy": args.strategy},
        "estimators": list(combination.estimators),
        "chosen_per_fold": list(combination.chosen),
        "folds": args.folds,
        "seed": args.seed,
        "auroc": {name: r["auroc"].as_dict() for name, r in results.items()},
        "difference": diff.as_dict(),
    }


def _combine_text(run, combination, results, diff) -> str:
    from semuq_eval.cell_text import cell_text
    from semuq_eval.harness.reliability import MIN_MINORITY

    lines = [
        f"{run.llm} / {run.task}: {len(combination.estimators)} estimators combined by a logistic regression, "
        f"{combination.n_folds}-fold cross-fitted (every question scored by a model that did not see it)"
    ]
    for name, r in results.items():
        a = r["auroc"]
        reliable = min(a.n_correct, a.n_incorrect) >= MIN_MINORITY
        lines.append(
            f"  {name:<28} AUROC {cell_text(a.value, a.ci_low, a.ci_high, reliable=reliable)} "
            f"({a.n_correct} correct / {a.n_incorrect} incorrect)"
        )
    lines.append(f"  single estimators chosen by the folds: {', '.join(sorted(set(combination.chosen)))}")
    verdict = "beats" if diff.ci_low > 0 else "does not beat"
    lines.append(
        f"  combination - best single: {cell_text(diff.difference, diff.ci_low, diff.ci_high)} "
        f"(p = {diff.p_value:.3f}): the combination {verdict} the best single estimator"
        + ("" if diff.ci_low > 0 else " (the interval includes 0 or lies below it)")
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit code (bad input: one line, exit 2, at the `semuq-eval` boundary)."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    actions = {"calibrate": _calibrate, "apply": _apply, "threshold": _threshold, "combine": _combine}
    with contextlib.ExitStack() as locks:  # one writer per output file: a second one gets one line
        for target in {getattr(args, name, None) for name in ("output", "json")} - {None}:
            locks.enter_context(writer_lock(target, "decision file"))
        document = actions[args.action](args)
        if getattr(args, "json", None):
            _write(args.json, document, args.force)
    return 0
