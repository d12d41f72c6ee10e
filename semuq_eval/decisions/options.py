"""The options of ``semuq-eval decide``'s actions, declared once: their arguments, checks and docs/decisions.md's
tables."""

from __future__ import annotations

from typing import Literal

from semuq_eval.decisions.calibrator import KINDS
from semuq_eval.metrics.bootstrap import MAX_RESAMPLES
from semuq_eval.metrics.risk import ALPHA, DELTA, N_THRESHOLDS
from semuq_eval.options import Options, option

__all__ = ["ApplyOptions", "CalibrateOptions", "CombineOptions", "LabelOptions", "ThresholdOptions"]

RUN_HELP = "a run store folder or a run record (*.jsonl.gz)"


class LabelOptions(Options):
    """The run and the labels a decision learns from (``calibrate``, ``threshold`` and ``combine``)."""

    run: str = option(..., RUN_HELP, flag="run")
    label_set: str = option("run", "the labels: 'run' (the run's judge) or a judge's set")
    strategy: str = option("greedy", "the label strategy: greedy or majority")


class CalibrateOptions(LabelOptions):
    """``decide calibrate``: the map fitted (:func:`~semuq_eval.decisions.fit_calibrator`)."""

    estimator: str = option(..., "the estimator, e.g. kle_heat@enc")
    kind: Literal[KINDS] = option("isotonic", "the map: isotonic regression or Platt scaling")
    output: str = option(..., "the calibrator's JSON file")
    force: bool = option(False, "replace an existing file that is not a calibrator")


class ApplyOptions(Options):
    """``decide apply``: a saved calibrator's confidences."""

    calibrator: str = option(..., "a calibrator saved by `decide calibrate`", flag="calibrator")
    run: str = option(..., RUN_HELP, flag="run")
    output: str = option(..., "a JSON file: per question doc_id, id, uncertainty, confidence")
    force: bool = option(False, "replace an existing file that is not this command's")


class ThresholdOptions(LabelOptions):
    """``decide threshold``: how the threshold is chosen and tested (:func:`~semuq_eval.decisions.split_questions`,
    :func:`~semuq_eval.decisions.abstention_threshold`)."""

    estimator: str = option(..., "the estimator, e.g. kle_heat@enc")
    alpha: float = option(ALPHA, "target error rate among answered questions", gt=0, lt=1)
    delta: float = option(DELTA, "1 - confidence", gt=0, lt=1)
    calibration_run: str | None = option(None, "choose the threshold on this run and test it on all of RUN")
    calibration_fraction: float = option(0.5, "share of RUN's questions choosing the threshold", gt=0, lt=1)
    n_thresholds: int = option(N_THRESHOLDS, "candidate thresholds", ge=1, le=10_000)
    seed: int = option(0, "seed of the calibration split", ge=0, le=2**32 - 1)
    json_file: str | None = option(None, "also write the result to this JSON file", flag="--json")
    force: bool = option(False, "replace an existing --json file that is not a decision")


class CombineOptions(LabelOptions):
    """``decide combine``: the estimators combined and how
    (:func:`~semuq_eval.decisions.cross_fitted_combination`)."""

    estimators: list[str] | None = option(
        None, "comma-separated (default: every estimator scoring every labelled question)", parse="csv"
    )
    folds: int = option(5, "cross-fitting folds", ge=2, le=100)
    seed: int = option(0, "seed of the folds and the bootstrap", ge=0, le=2**32 - 1)
    bootstrap: int = option(1000, "resamples of the intervals", ge=1, le=MAX_RESAMPLES)
    json_file: str | None = option(None, "also write the result to this JSON file", flag="--json")
    force: bool = option(False, "replace an existing --json file that is not a decision")
