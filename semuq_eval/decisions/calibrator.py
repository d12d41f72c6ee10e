"""A saved calibrator: an estimator's uncertainty mapped to P(correct), fitted on one run, applied to another.

Isotonic (decreasing) or Platt maps, as ECE fits them (:mod:`semuq_eval.metrics.calibrators`), saved as JSON
(``semuq-calibrator/1``) with what they were fitted for and on; scoring another estimator or operator is refused,
since its scale is not the fitted one (docs/decisions.md, "Saved calibrators")."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy.special import expit
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from semuq_eval.decisions.pairs import scored_pairs
from semuq_eval.jsonio import read_json, write_json

__all__ = ["CALIBRATOR_FORMAT", "KINDS", "SavedCalibrator", "fit_calibrator", "load_calibrator"]

CALIBRATOR_FORMAT = "semuq-calibrator/1"
KINDS = ("isotonic", "platt")
#: what identifies an operator across machines (its model path is machine-dependent, its revision is not)
OPERATOR_IDENTITY = ("kind", "revision")


@dataclass(frozen=True)
class SavedCalibrator:
    """A fitted monotone map from one estimator's uncertainty to P(correct).

    ``estimator``: ``aggregator@operator`` or a single-answer estimator (``msp``). ``parameters``: isotonic
    ``{"u": [...], "p": [...]}`` step points (u ascending, p not increasing; linear interpolation clipped at the ends)
    or Platt ``{"center", "scale", "coef", "intercept"}``: P(correct) = expit(coef * (u - center) / scale + intercept).
    ``operator``: the fitting run's operator identity (``kind``, ``revision``; empty if none). ``label_set`` (``run``
    or a judge's set), ``strategy`` (``greedy``, ...): the labels fitted on. ``provenance``: the fitting run (LLM,
    task, question set, path) and counts (``n``, ``n_correct``, ``n_incorrect``)."""

    kind: Literal["isotonic", "platt"]
    estimator: str
    parameters: dict[str, Any]
    operator: dict[str, Any] = field(default_factory=dict)
    label_set: str = "run"
    strategy: str = "greedy"
    provenance: dict[str, Any] = field(default_factory=dict)

    def confidence(
        self, uncertainty: np.ndarray, *, estimator: str, operator: Mapping[str, Any] | None = None
    ) -> np.ndarray:
        """P(correct) for each uncertainty of ``estimator`` (NaN stays NaN); ValueError when ``estimator`` or the
        ``operator``'s identity is not the one the calibrator was fitted for."""
        self.check_applies(estimator, operator)
        u = np.asarray(uncertainty, dtype=float)
        if self.kind == "isotonic":
            points = self.parameters
            out = np.interp(u, np.asarray(points["u"], float), np.asarray(points["p"], float))
        else:
            p = self.parameters
            out = expit(p["coef"] * (u - p["center"]) / p["scale"] + p["intercept"])
        return np.where(np.isnan(u), np.nan, out)

    def check_applies(self, estimator: str, operator: Mapping[str, Any] | None) -> None:
        """ValueError naming the difference when this calibrator was fitted for another estimator or operator."""
        if estimator != self.estimator:
            raise ValueError(
                f"this calibrator was fitted for estimator {self.estimator!r}, not {estimator!r}: a confidence "
                f"read off another estimator's scale means nothing"
            )
        theirs = {k: (operator or {}).get(k) for k in OPERATOR_IDENTITY}
        ours = {k: self.operator.get(k) for k in OPERATOR_IDENTITY}
        if self.operator and theirs != ours:
            raise ValueError(
                f"this calibrator of {estimator!r} was fitted with operator {ours}, and these scores come from "
                f"{theirs}: fit a calibrator on a run of this operator"
            )

    def to_json(self) -> dict[str, Any]:
        """The JSON document :func:`load_calibrator` reads back."""
        return {"format": CALIBRATOR_FORMAT, **asdict(self)}

    def save(self, path: str | os.PathLike) -> Path:
        """Write the calibrator as JSON at ``path`` (atomically); returns the path."""
        return write_json(path, self.to_json())


def _parameters(kind: str, u: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    if kind == "isotonic":
        model = IsotonicRegression(increasing=False, y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(u, y)
        return {"u": model.X_thresholds_.tolist(), "p": model.y_thresholds_.tolist()}
    center, scale = float(u.mean()), float(u.std()) or 1.0
    model = LogisticRegression(C=np.inf).fit(((u - center) / scale)[:, None], y)
    return {
        "center": center,
        "scale": scale,
        "coef": float(model.coef_[0, 0]),
        "intercept": float(model.intercept_[0]),
    }


def fit_calibrator(
    uncertainty: np.ndarray,
    correct: np.ndarray,
    *,
    estimator: str,
    kind: Literal["isotonic", "platt"] = "isotonic",
    operator: Mapping[str, Any] | None = None,
    label_set: str = "run",
    strategy: str = "greedy",
    provenance: Mapping[str, Any] | None = None,
) -> SavedCalibrator:
    """Fit a monotone calibrator of ``estimator`` on one run's questions (those with a score and a label).

    Raises ValueError for an unknown ``kind`` or when the questions do not hold both classes.

    Examples
    --------
    >>> cal = fit_calibrator([0.1, 0.2, 1.5, 2.0], [1, 1, 0, 0], estimator="se@nli")
    >>> cal.confidence(np.array([0.0, 3.0]), estimator="se@nli").tolist()
    [1.0, 0.0]
    >>> cal.confidence(np.array([0.0]), estimator="kle_heat@nli")
    Traceback (most recent call last):
    ...
    ValueError: this calibrator was fitted for estimator 'se@nli', not 'kle_heat@nli': a confidence read off another estimator's scale means nothing
    """
    if kind not in KINDS:
        raise ValueError(f"unknown calibrator kind {kind!r}; known: {list(KINDS)}")
    u, y = scored_pairs(uncertainty, correct)
    n_correct = int(y.sum())
    if n_correct == 0 or n_correct == len(y):
        raise ValueError(
            f"{estimator}: {n_correct} correct and {len(y) - n_correct} incorrect scored questions; a calibrator "
            f"needs both"
        )
    counts = {"n": len(y), "n_correct": n_correct, "n_incorrect": len(y) - n_correct}
    return SavedCalibrator(
        kind=kind,
        estimator=estimator,
        parameters=_parameters(kind, u, y),
        operator={k: (operator or {}).get(k) for k in OPERATOR_IDENTITY} if operator else {},
        label_set=label_set,
        strategy=strategy,
        provenance={**dict(provenance or {}), **counts},
    )


def _check_parameters(path: Path, kind: str, parameters: Any) -> None:
    where = f"{path}: field parameters"
    if not isinstance(parameters, Mapping):
        raise ValueError(f"{where}: not an object")
    if kind == "isotonic":
        u, p = parameters.get("u"), parameters.get("p")
        if not (isinstance(u, list) and isinstance(p, list) and len(u) == len(p) >= 1):
            raise ValueError(f"{where}: u and p must be two lists of one length")
        values = np.asarray([*u, *p], dtype=object)
        if not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values
        ):
            raise ValueError(f"{where}: u and p must hold finite numbers")
        if np.any(np.diff(np.asarray(u, float)) < 0) or not all(0.0 <= v <= 1.0 for v in p):
            raise ValueError(f"{where}: u must be ascending and p within [0, 1]")
        return
    for key in ("center", "scale", "coef", "intercept"):
        value = parameters.get(key)
        if not (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)):
            raise ValueError(f"{where}.{key}: must be a finite number, got {value!r}")
    if parameters["scale"] <= 0:
        raise ValueError(f"{where}.scale: must be positive")


def load_calibrator(path: str | os.PathLike) -> SavedCalibrator:
    """Read a calibrator saved by :meth:`SavedCalibrator.save`, checked field by field (ValueError naming the
    file and the field)."""
    path = Path(path)
    doc = read_json(path)
    if not isinstance(doc, Mapping) or doc.get("format") != CALIBRATOR_FORMAT:
        raise ValueError(f"{path}: not a {CALIBRATOR_FORMAT} file (field format)")
    if doc.get("kind") not in KINDS:
        raise ValueError(f"{path}: field kind must be one of {list(KINDS)}, got {doc.get('kind')!r}")
    for key in ("estimator", "label_set", "strategy"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise ValueError(f"{path}: field {key} must be a non-empty string")
    for key in ("operator", "provenance"):
        if not isinstance(doc.get(key, {}), Mapping):
            raise ValueError(f"{path}: field {key} must be an object")
    _check_parameters(path, doc["kind"], doc.get("parameters"))
    fields = ("kind", "estimator", "parameters", "operator", "label_set", "strategy", "provenance")
    return SavedCalibrator(**{k: doc[k] for k in fields if k in doc})
