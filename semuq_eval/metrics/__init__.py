"""Metrics of an uncertainty score against correctness labels, with bootstrap CIs.

Point estimates: :func:`auroc`, :func:`ece`, :func:`prr`, :func:`auarc`, :func:`coverage_at_risk`
(:mod:`~semuq_eval.metrics.risk`). :func:`evaluate` scores many estimators at once with CIs on shared
resamples, :func:`paired_difference` compares two estimators (or two LLMs) resample by resample, and
:func:`resample` gives one metric on every resample. ``get``, ``names`` and ``register`` work the
:class:`Metric` registry (entry-point group ``semuq_eval.metrics``); :data:`DEFAULT_METRICS` are a run's
metrics unless its ``metrics`` setting names others (:func:`check_metrics`)."""

from __future__ import annotations

from semuq_eval.metrics.base import (
    DEFAULT_METRICS,
    Metric,
    check_metrics,
    register,
    registry,
)
from semuq_eval.metrics.bootstrap import (
    Bootstrap,
    MetricResult,
    PairedDifference,
    Resampled,
    evaluate,
    paired_difference,
    resample,
)
from semuq_eval.metrics.calibration import ece
from semuq_eval.metrics.calibrators import CalibrationProtocol, calibrate, calibrate_resamples
from semuq_eval.metrics.ranking import auarc, auroc, prr
from semuq_eval.metrics.risk import coverage_at_risk

get = registry.get
"""The metric registered under a name (KeyError listing the known names otherwise)."""


names = registry.names
"""Every registered metric name, sorted (installed packages' included)."""


__all__ = [
    "DEFAULT_METRICS",
    "Bootstrap",
    "CalibrationProtocol",
    "Metric",
    "MetricResult",
    "PairedDifference",
    "Resampled",
    "auarc",
    "auroc",
    "calibrate",
    "calibrate_resamples",
    "check_metrics",
    "coverage_at_risk",
    "ece",
    "evaluate",
    "get",
    "names",
    "paired_difference",
    "prr",
    "register",
    "registry",
    "resample",
]
