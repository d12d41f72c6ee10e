"""Metrics of an uncertainty score against correctness labels, with bootstrap CIs.

Point estimates: :func:`auroc`, :func:`ece`, :func:`prr`, :func:`auarc`. :func:`evaluate`
scores many estimators at once with CIs on shared resamples (ECE's calibrator fitted once, or
refitted in every resample with ``CalibrationProtocol(refit="per_resample")``); :func:`paired_difference`
compares two estimators (or two LLMs) resample by resample. ``get(name)`` returns the
registered :class:`Metric`.
"""

from __future__ import annotations

from semuq_eval.metrics.base import Metric, metric_registry, register_metric
from semuq_eval.metrics.bootstrap import (
    DEFAULT_METRICS,
    Bootstrap,
    MetricResult,
    PairedDifference,
    evaluate,
    paired_difference,
)
from semuq_eval.metrics.calibration import CalibrationProtocol, calibrate, calibrate_resamples, ece
from semuq_eval.metrics.ranking import auarc, auroc, prr


def get(name: str) -> Metric:
    """The metric registered under ``name``."""
    return metric_registry.get(name)


def names() -> list[str]:
    """All registered metric names."""
    return sorted(metric_registry.keys())


__all__ = [
    "DEFAULT_METRICS",
    "Bootstrap",
    "CalibrationProtocol",
    "Metric",
    "MetricResult",
    "PairedDifference",
    "auarc",
    "auroc",
    "calibrate",
    "calibrate_resamples",
    "ece",
    "evaluate",
    "get",
    "metric_registry",
    "names",
    "paired_difference",
    "prr",
    "register_metric",
]
