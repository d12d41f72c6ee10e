"""Operator checks for CI: recompute tracked figures on a small frozen run record, compare with a baseline.

``check_operator(MODEL, baseline=PATH)`` computes every tracked figure (:mod:`~semuq_eval.diagnose.check_values`)
on the frozen record in ``semuq_eval/diagnose/data/`` (or ``store=``) and compares it with the baseline. A figure
*regresses* when it moves the bad way by more than its absolute tolerance (the baseline's per-figure ``tolerance``,
else the check's); a figure missing now fails too, as does a baseline recorded on another store.

Examples
--------
>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "baseline.json")
>>> report = check_operator("lexical", write_baseline=path, max_questions=60, progress=False)
>>> report.ok, check_operator("lexical", baseline=path, max_questions=60, progress=False).ok
(True, True)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from semuq_eval.diagnose import value_cache
from semuq_eval.diagnose.check_values import BETTER, fingerprints, frozen_store_path
from semuq_eval.harness.schemas import OperatorBaseline, check_line
from semuq_eval.jsonio import read_json, write_json
from semuq_eval.options import Options, option

__all__ = [
    "BASELINE_FORMAT",
    "DEFAULT_TOLERANCE",
    "CheckOptions",
    "CheckReport",
    "ValueCheck",
    "check_operator",
    "operator_from_spec",
]

BASELINE_FORMAT = "semuq-operator-baseline/1"
DEFAULT_TOLERANCE = 0.02
"""Absolute slack before a figure counts as regressed (similarities, rates and AUROC all lie in [0, 1])."""


def operator_from_spec(spec: str, options: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """``(operator name, options)`` from a MODEL argument.

    A registered operator name stands for itself; ``"name:MODEL"`` sets that operator's ``model``; anything else is
    an ``enc`` model (a folder or a hub id).

    Examples
    --------
    >>> operator_from_spec("lexical")
    ('lexical', {})
    >>> operator_from_spec("/models/my-enc", {"batch_size": 8})
    ('enc', {'model': '/models/my-enc', 'batch_size': 8})
    >>> operator_from_spec("cos_ext:/models/minilm")
    ('cos_ext', {'model': '/models/minilm'})
    """
    from semuq_eval import operators

    options = dict(options or {})
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"MODEL must be a non-empty string, got {spec!r}")
    if spec in operators.names():
        return spec, options
    head, sep, tail = spec.partition(":")
    if sep and head in operators.names() and tail:
        return head, {"model": tail, **options}
    return "enc", {"model": spec, **options}


@dataclass(frozen=True)
class ValueCheck:
    """One tracked figure: baseline vs current value, the tolerance, and the verdict.

    ``status``: ``ok`` (within tolerance), ``improved`` (better by more than the tolerance), ``regressed``,
    ``missing`` (tracked by the baseline, undefined or absent now), ``new`` (not in the baseline; never fails)."""

    figure: str
    baseline: float | None
    current: float | None
    tolerance: float
    better: str
    status: str

    @property
    def delta(self) -> float | None:
        return None if self.baseline is None or self.current is None else self.current - self.baseline


@dataclass
class CheckReport:
    """The outcome of :func:`check_operator`: ``ok`` is False when any figure regressed or went missing,
    or the baseline was recorded on another store."""

    operator: dict[str, Any]
    store: str
    rows: list[ValueCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    baseline_path: str | None = None
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.regressions

    @property
    def regressions(self) -> list[ValueCheck]:
        return [r for r in self.rows if r.status in ("regressed", "missing")]

    def summary(self) -> str:
        """A plain-text table of every figure, then the verdict."""

        def num(x, spec="6.3f"):
            return "   n/a" if x is None else f"{x:{spec}}"

        head = f"operator check: {self.operator.get('spec')} ({self.operator.get('name')}) on {self.store}"
        lines = [head, f"{'figure':<34} {'baseline':>8} {'current':>8} {'delta':>8}  tol    better  status"]
        lines += [
            f"{r.figure:<34} {num(r.baseline):>8} {num(r.current):>8} "
            f"{num(r.delta, '+6.3f'):>8}  {r.tolerance:.3f}  {r.better:<6}  {r.status.upper()}"
            for r in self.rows
        ]
        lines += [f"PROBLEM: {p}" for p in self.problems]
        bad = self.regressions
        verdict = (
            "OK: no tracked figure regressed beyond its tolerance"
            if self.ok
            else f"FAILED: {len(bad)} figure(s) regressed or missing"
            + (f" ({', '.join(r.figure for r in bad)})" if bad else "")
        )
        return "\n".join([*lines, verdict])

    def __str__(self) -> str:
        return self.summary()


def _compare(
    figures: Mapping[str, Mapping[str, Any]], baseline: Mapping[str, Any], tolerance: float
) -> list[ValueCheck]:
    rows = []
    tracked = baseline.get("figures") or {}
    for key, base in tracked.items():
        tol = float(base.get("tolerance", tolerance))
        better = base.get("better", BETTER.get(key, "higher"))
        b = base.get("value")
        cur = (figures.get(key) or {}).get("value")
        if cur is None:
            status = "missing" if b is not None else "ok"
        elif b is None:
            status = "improved"
        else:
            gain = (cur - b) if better == "higher" else (b - cur)
            status = "regressed" if gain < -tol else ("improved" if gain > tol else "ok")
        rows.append(ValueCheck(key, b, cur, tol, better, status))
    for key, fig in figures.items():
        if key not in tracked:
            rows.append(
                ValueCheck(key, None, fig.get("value"), tolerance, fig.get("better", "higher"), "new")
            )
    return rows


class CheckOptions(Options):
    """How ``check_operator`` measures (``semuq-eval check-operator``'s flags)."""

    operator_options: dict[str, Any] | None = option(
        None, 'JSON options of the operator, e.g. {"batch_size": 16}', parse="json", of="option -> value"
    )
    store: Path | None = option(
        None,
        "a run store with per-sample labels, or a record that keeps its texts (default: the frozen record shipped)",
    )
    tolerance: float | None = option(
        None, "absolute tolerance of figures without their own (default: the baseline's, else 0.02)", ge=0
    )
    estimators: list[str] | None = option(
        None,
        "comma-separated estimators whose AUROC is tracked (default kle_heat, cos, cae of the operator)",
        parse="csv",
    )
    max_questions: int | None = option(
        None, "the store's first questions only (recorded in the baseline; a check uses the baseline's)", ge=1
    )
    progress: bool = option(True, "no progress bars", flag="--no_progress")
    cache: Path | bool = option(
        True,
        "where unchanged weights' figures are kept (True: the asset cache; False: computed every time)",
        cli=False,
    )


def check_operator(
    model: str,
    baseline: str | os.PathLike | None = None,
    options: CheckOptions | None = None,
    *,
    write_baseline: str | os.PathLike | None = None,
    **given: Any,
) -> CheckReport:
    """Check an operator against a baseline (module docstring), or record one.

    ``model`` as :func:`operator_from_spec` reads it; ``options`` (or ``**given``) as :class:`CheckOptions`;
    ``write_baseline`` records the current figures there (the report then compares with nothing and is ok). Raises
    FileNotFoundError when the baseline or the store does not exist, ValueError for a malformed baseline, an unknown
    operator or estimator, or neither ``baseline`` nor ``write_baseline``.
    """
    o = options if options is not None else CheckOptions(**given)
    if options is not None and given:
        raise TypeError("give check_operator() its options or keywords, not both")
    max_questions, estimators = o.max_questions, o.estimators
    if baseline is None and write_baseline is None:
        raise ValueError("give a baseline to check against, or write_baseline to record one")
    base = None if baseline is None else _read_baseline(Path(baseline))
    if base is not None:
        if max_questions is None:
            max_questions = base.get("max_questions")
        if estimators is None:
            est = sorted({k.split(".")[1] for k in base.get("figures", {}) if k.startswith("auroc.")})
            estimators = est or None
    store = o.store if o.store is not None else frozen_store_path()
    name, built = operator_from_spec(model, o.operator_options)
    fingerprint, same = fingerprints(store)
    figures = value_cache.cached_values(
        name,
        built,
        store,
        fingerprint,
        estimators=estimators,
        max_questions=max_questions,
        progress=o.progress,
        cache=o.cache,
    )
    tol = float(o.tolerance if o.tolerance is not None else (base or {}).get("tolerance", DEFAULT_TOLERANCE))
    if not tol >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tol}")
    operator = {"spec": model, "name": name, "options": {k: str(v) for k, v in built.items()}}
    # without a baseline (one is being recorded), every figure is new
    report = CheckReport(operator, str(store), _compare(figures, base or {}, tol), figures=figures)
    if base is not None:
        report.baseline_path = str(baseline)
        if base.get("store_fingerprint") not in (None, *same):
            report.problems.append(
                f"the baseline was recorded on another store (fingerprint {str(base.get('store_fingerprint'))[:12]}, "
                f"this store {fingerprint[:12]}): its figures are not comparable; record it again with --write-baseline"
            )
    if write_baseline is not None:
        kept = {"store": str(store), "store_fingerprint": fingerprint, "max_questions": max_questions}
        _write_baseline(write_baseline, {"operator": operator, **kept, "tolerance": tol, "figures": figures})
    return report


def _read_baseline(path: Path) -> dict[str, Any]:
    """A baseline file, checked: its format and its fields (one line naming the file otherwise)."""
    if not path.is_file():
        raise FileNotFoundError(f"no baseline at {path}; record one with --write-baseline")
    base = read_json(path)
    if not isinstance(base, dict) or base.get("format") != BASELINE_FORMAT:
        raise ValueError(f"{path} is not an operator baseline (format {BASELINE_FORMAT!r})")
    check_line(OperatorBaseline, base, path)
    return base


def _write_baseline(path: str | os.PathLike, fields: Mapping[str, Any]) -> None:
    """Write a baseline: ``fields`` with the format, the date and this package's version."""
    from semuq_eval import __version__

    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_json(
        path, {"format": BASELINE_FORMAT, "created": created, **fields, "semuq_eval_version": __version__}
    )
