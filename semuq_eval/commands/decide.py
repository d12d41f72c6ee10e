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

from semuq_eval.commands.arguments import CommandParser
from semuq_eval.decisions.options import ApplyOptions, CalibrateOptions, CombineOptions, ThresholdOptions
from semuq_eval.durable import writer_lock
from semuq_eval.options import add_options, parse_options

__all__ = ["DECISION_FORMAT", "main", "parser"]

DECISION_FORMAT = "semuq-decision/1"


def parser() -> argparse.ArgumentParser:
    """The command's parser: per action its options model's arguments."""
    p = CommandParser(
        prog="semuq-eval decide",
        description="From scores to decisions: calibrators, abstention thresholds with guarantees, and a "
        "held-out combination of estimators (docs/decisions.md).",
    )
    sub = p.add_subparsers(dest="action", required=True, parser_class=CommandParser)
    actions = {name: sub.add_parser(name, help=text) for name, (_, text, _) in ACTIONS.items()}
    for name, action in actions.items():
        add_options(action, ACTIONS[name][0])
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


def _calibrate(o: CalibrateOptions) -> dict[str, Any]:
    from semuq_eval.decisions import CALIBRATOR_FORMAT, fit_calibrator
    from semuq_eval.writes import check_file_target

    check_file_target(o.output, ours=CALIBRATOR_FORMAT, force=o.force, flag="--output")
    run, correct = _load(o.run, o.label_set, o.strategy)
    calibrator = fit_calibrator(
        _scores(run, o.estimator),
        correct,
        estimator=o.estimator,
        kind=o.kind,
        operator=_operator(run, o.estimator),
        label_set=o.label_set,
        strategy=o.strategy,
        provenance={
            "llm": run.llm,
            "task": run.task,
            "question_set": run.question_set_hash,
            "run": str(run.path),
        },
    )
    calibrator.save(o.output)
    counts = calibrator.provenance
    print(
        f"{o.output}: {o.kind} calibrator of {o.estimator} on {run.llm} / {run.task} "
        f"({counts['n_correct']} correct, {counts['n_incorrect']} incorrect, {o.label_set}/{o.strategy})"
    )
    return calibrator.to_json()


def _apply(o: ApplyOptions) -> dict[str, Any]:
    import numpy as np

    from semuq_eval.decisions import load_calibrator

    calibrator = load_calibrator(o.calibrator)
    run, _ = _load(o.run, calibrator.label_set, calibrator.strategy)
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
    _write(o.output, document, o.force)
    print(f"{o.output}: {int(np.isfinite(confidence).sum())} of {len(u)} questions given a confidence")
    return document


def _threshold(o: ThresholdOptions) -> dict[str, Any]:
    from semuq_eval.decisions import abstention_threshold, held_out, split_questions

    run, correct = _load(o.run, o.label_set, o.strategy)
    u = _scores(run, o.estimator)
    if o.calibration_run:
        cal_run, cal_correct = _load(o.calibration_run, o.label_set, o.strategy)
        u_cal, y_cal, u_new, y_new = _scores(cal_run, o.estimator), cal_correct, u, correct
        split = {"calibration_run": o.calibration_run}
    else:
        cal, new = split_questions(len(u), calibration_fraction=o.calibration_fraction, seed=o.seed)
        u_cal, y_cal, u_new, y_new = u[cal], correct[cal], u[new], correct[new]
        split = {"calibration_fraction": o.calibration_fraction, "seed": o.seed}
    chosen = abstention_threshold(u_cal, y_cal, alpha=o.alpha, delta=o.delta, n_thresholds=o.n_thresholds)
    result = held_out(chosen.threshold, u_new, y_new)
    print(_threshold_text(o.estimator, run, chosen, result))
    return {
        "format": DECISION_FORMAT,
        "action": "threshold",
        "run": {"llm": run.llm, "task": run.task, "path": str(run.path)},
        "estimator": o.estimator,
        "labels": {"label_set": o.label_set, "strategy": o.strategy},
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


def _combine(o: CombineOptions) -> dict[str, Any]:
    from semuq_eval.decisions import complete_estimators, cross_fitted_combination
    from semuq_eval.metrics import Bootstrap, evaluate, paired_difference

    run, correct = _load(o.run, o.label_set, o.strategy)
    names = o.estimators or complete_estimators(run.scores, correct)
    combination = cross_fitted_combination(
        {n: _scores(run, n) for n in names}, correct, n_folds=o.folds, seed=o.seed
    )
    bootstrap = Bootstrap(n_resamples=o.bootstrap, seed=o.seed)
    scored = {"combination": combination.combined, "best single (cross-fitted)": combination.best_single}
    results = evaluate(scored, correct, metrics=["auroc"], bootstrap=bootstrap)
    diff = paired_difference(combination.combined, combination.best_single, correct, bootstrap=bootstrap)
    print(_combine_text(run, combination, results, diff))
    return {
        "format": DECISION_FORMAT,
        "action": "combine",
        "run": {"llm": run.llm, "task": run.task, "path": str(run.path)},
        "labels": {"label_set": o.label_set, "strategy": o.strategy},
        "estimators": list(combination.estimators),
        "chosen_per_fold": list(combination.chosen),
        "folds": o.folds,
        "seed": o.seed,
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


ACTIONS = {
    "calibrate": (CalibrateOptions, "fit and save a calibrator of one estimator", _calibrate),
    "apply": (ApplyOptions, "a saved calibrator's confidences for a run's questions", _apply),
    "threshold": (ThresholdOptions, "an abstention threshold with a finite-sample guarantee", _threshold),
    "combine": (CombineOptions, "a cross-fitted combination of estimators vs the best single one", _combine),
}
"""Each action's options (docs/decisions.md's tables), its line in ``--help`` and what it does."""


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit code (bad input: one line, exit 2, at the `semuq-eval` boundary)."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    model, _, act = ACTIONS[args.action]
    options = parse_options(model, args)
    json_file = getattr(options, "json_file", None)
    with contextlib.ExitStack() as locks:  # one writer per output file: a second one gets one line
        for target in {getattr(options, "output", None), json_file} - {None}:
            locks.enter_context(writer_lock(target, "decision file"))
        document = act(options)
        if json_file:
            _write(json_file, document, options.force)
    return 0
