"""Operator checks for CI: recompute tracked figures on a small frozen run store, compare with a baseline.

``check_operator(MODEL, baseline=PATH)`` builds the operator (an ``enc`` model path or hub id, or an operator
name / ``name:model``), runs the diagnosis (:func:`~semuq_eval.diagnose.diagnosis.diagnose`) and the pipeline
(AUROC of the tracked estimators under greedy and majority labels) on the frozen store shipped in
``semuq_eval/diagnose/data/`` (or ``store=``), and compares every tracked figure with the baseline:

- ``trap.context``, ``trap.autoregressive`` (lower is better), ``trap.entailment``, ``trap.ood_syntax``
  (higher is better): mean similarities;
- ``clustering.incorrect_equivalent`` and ``clustering.gap`` (higher is better);
- ``localization.hit_rate`` (operators with token weights; higher is better);
- ``auroc.<estimator>.<greedy|majority>`` (higher is better), by default ``kle_heat@OP``, ``cos@OP`` and
  ``cae@OP`` where valid (estimators needing log-probabilities, such as ``se``, have no input in a frozen store).

A figure *regresses* when it moves in the bad direction by more than its tolerance (absolute; the baseline's
own per-figure ``tolerance``, else the check's). A tracked figure that is missing or undefined now fails too,
as does a baseline recorded on another frozen store (its fingerprint differs): record it again with
``--write-baseline``. :class:`CheckReport` says which, with ``.ok``.

Examples
--------
>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "baseline.json")
>>> report = check_operator("lexical", write_baseline=path, max_questions=60, progress=False)
>>> report.ok, check_operator("lexical", baseline=path, max_questions=60, progress=False).ok
(True, True)
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from semuq_eval.harness.schemas import OperatorBaseline, check_line
from semuq_eval.harness.store import open_store
from semuq_eval.jsonio import read_json, write_json

__all__ = [
    "BASELINE_FORMAT",
    "DEFAULT_TOLERANCE",
    "FROZEN_STORE",
    "CheckReport",
    "FigureCheck",
    "check_operator",
    "compute_figures",
    "frozen_store_path",
    "operator_from_spec",
]

log = logging.getLogger(__name__)

BASELINE_FORMAT = "semuq-operator-baseline/1"
DEFAULT_TOLERANCE = 0.02
"""Absolute slack before a figure counts as regressed (similarities, rates and AUROC all lie in [0, 1])."""
FROZEN_STORE = "smollm2-webquestions"
"""The frozen store shipped with the package (``semuq_eval/diagnose/data/<name>``)."""

_BETTER = {
    "trap.context": "lower",
    "trap.autoregressive": "lower",
    "trap.entailment": "higher",
    "trap.ood_syntax": "higher",
    "clustering.incorrect_equivalent": "higher",
    "clustering.gap": "higher",
    "localization.hit_rate": "higher",
}


def frozen_store_path(name: str = FROZEN_STORE) -> Path:
    """The folder of a frozen store shipped in ``semuq_eval/diagnose/data/``.

    Raises
    ------
    FileNotFoundError
        When the package holds no such store (the message lists the ones it has).
    """
    root = Path(str(resources.files("semuq_eval.diagnose") / "data"))
    path = root / name
    if not open_store(path).is_store:
        have = sorted(p.name for p in root.iterdir() if open_store(p).is_store) if root.is_dir() else []
        raise FileNotFoundError(f"no frozen store {name!r} in {root}; shipped: {have}")
    return path


def operator_from_spec(spec: str, options: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """``(operator name, options)`` from a MODEL argument.

    A registered operator name stands for itself (``"lexical"``); ``"name:MODEL"`` sets that operator's
    ``model`` (``"cos_ext:/path"``); anything else is an ``enc`` model (a folder or a hub id).

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


def _put_auroc(
    put: Any,
    figures: dict[str, dict[str, Any]],
    docs: Sequence[Any],
    questions: Sequence[Any],
    settings: Any,
    chosen: Sequence[Any],
    n_resamples: int,
) -> None:
    """The tracked estimators' AUROC under every label strategy, scored as a run scores (the pipeline's
    :func:`~semuq_eval.harness.pipeline.score_docs` and the breakdown's
    :func:`~semuq_eval.harness.breakdown.summarize`) on the docs the diagnosis filled with the operator's matrices."""
    from dataclasses import replace

    from semuq_eval.harness.breakdown import summarize
    from semuq_eval.harness.pipeline import score_docs

    labels = [{"greedy": q.greedy_label, "samples": q.sample_labels} for q in questions]
    items = score_docs(docs, settings, labels, chosen)
    breakdown = summarize(items, replace(settings, metrics=("auroc",), bootstrap=n_resamples, seed=0))
    for strategy, results in breakdown["results"].items():
        for e in chosen:
            m = (results.get(e.name) or {}).get("auroc")
            if m is None:
                put(f"auroc.{e.name}.{strategy}", None)
                continue
            put(f"auroc.{e.name}.{strategy}", m["value"], (m["ci_low"], m["ci_high"]), m["n"])
            figures[f"auroc.{e.name}.{strategy}"].update(
                n_correct=m["n_correct"], n_incorrect=m["n_incorrect"]
            )


def _estimators(name: str, n_samples: int, wanted: Sequence[str] | None) -> list[str]:
    from semuq_eval.harness.pipeline import estimators_for
    from semuq_eval.harness.settings import Settings

    valid = [e.name for e in estimators_for(Settings(n_samples=n_samples, operators=(name,)))]
    if wanted is None:
        return [e for e in (f"kle_heat@{name}", f"cos@{name}", f"cae@{name}") if e in valid]
    unknown = [e for e in wanted if e not in valid]
    if unknown:
        raise ValueError(f"estimators {unknown} are not valid with operator {name}; valid: {valid}")
    return list(wanted)


def compute_figures(
    name: str,
    options: Mapping[str, Any],
    store: str | os.PathLike,
    *,
    estimators: Sequence[str] | None = None,
    max_questions: int | None = None,
    n_resamples: int = 200,
    progress: bool = True,
) -> dict[str, dict[str, Any]]:
    """The tracked figures (module docstring) of operator ``name`` on ``store``: ``{figure: {"value",
    "better", "ci_low", "ci_high", "n"}}``."""
    from semuq_eval import aggregators, signals
    from semuq_eval.diagnose.diagnosis import diagnose
    from semuq_eval.diagnose.questions import load_questions
    from semuq_eval.harness.pipeline import estimators_for
    from semuq_eval.harness.settings import Settings
    from semuq_eval.metrics import Bootstrap

    bootstrap = Bootstrap(n_resamples, seed=0)
    questions = load_questions(store, max_questions=max_questions)
    n_samples = max((len(q.samples) for q in questions), default=0)
    names = _estimators(name, n_samples, estimators) if n_samples else []
    chosen = []
    if names:
        settings = Settings(n_samples=n_samples, operators=(name,))
        chosen = [e for e in estimators_for(settings) if e.name in names]
    # the token extras the docs must carry: only those the tracked estimators read
    read = {x for e in chosen for x in aggregators.get(e.aggregator).inputs}
    docs_out: dict[str, list[Any]] = {}
    result = diagnose(
        questions=questions,
        operators=[name],
        operator_options={name: dict(options)} if options else None,
        bootstrap=bootstrap,
        progress=progress,
        docs_out=docs_out,
        docs_extras=[x for x in signals.names(origin="tokens") if x in read],
    )
    if name in result["unavailable"]:
        raise RuntimeError(result["unavailable"][name])
    figures: dict[str, dict[str, Any]] = {}

    def put(key: str, value: Any, ci=(None, None), n: int | None = None) -> None:
        ok = value is not None and math.isfinite(value)
        figures[key] = {
            "value": float(value) if ok else None,
            "better": _BETTER.get(key, "higher"),
            "ci_low": _finite(ci[0]),
            "ci_high": _finite(ci[1]),
            "n": n,
        }

    for trap, res in result["traps"].items():
        r = res["results"][name]
        put(f"trap.{trap}", r["mean"], (r["ci_low"], r["ci_high"]), r["n_pairs"])
    r = result["clustering"]["incorrect_equivalent"]["results"][name]
    put("clustering.incorrect_equivalent", r["mean"], (r["ci_low"], r["ci_high"]), r["n_pairs"])
    g = result["clustering"]["gap"]["results"][name]
    put("clustering.gap", g["difference"], (g["ci_low"], g["ci_high"]))
    loc = result["localization"].get(name, {})
    if "hit_rate" in loc:
        h = loc["hit_rate"]
        put("localization.hit_rate", h["mean"], (h["ci_low"], h["ci_high"]), loc["n_answers"])
    if names:
        _put_auroc(put, figures, docs_out[name], questions, settings, chosen, n_resamples)
    return figures


def _finite(value: float | None) -> float | None:
    """A bound as JSON keeps it: None when undefined."""
    return float(value) if value is not None and math.isfinite(value) else None


FIGURES_CACHE_FORMAT = "semuq-check-figures/1"


def cached_figures(
    name: str,
    options: Mapping[str, Any],
    store: str | os.PathLike,
    fingerprint: str,
    *,
    estimators: Sequence[str] | None = None,
    max_questions: int | None = None,
    progress: bool = True,
    cache: str | os.PathLike | None | bool = True,
) -> dict[str, dict[str, Any]]:
    """:func:`compute_figures`, read back from ``cache`` when the same operator (:func:`_identity`: the registered
    operator, its model folder and the revision of its weights, and its options) was checked on the same store
    (``fingerprint``) with the same estimators, questions, version and code before. The figures are deterministic (seeded bootstrap), so a cached copy is the
    same figures; the key holds the package's code too. An operator whose weights cannot be told apart (no
    revision) is computed every time."""
    from semuq_eval import __version__

    folder = _cache_folder(cache)
    identity = _identity(name, options) if folder is not None else None
    if identity is None:
        return compute_figures(
            name, options, store, estimators=estimators, max_questions=max_questions, progress=progress
        )
    key_source = {
        "version": __version__,
        "code": _code_fingerprint(),
        "store": fingerprint,
        "operator": [name, identity, {k: str(v) for k, v in options.items()}],
        "estimators": _tracked(name, store, estimators, max_questions),
        "max_questions": max_questions,
    }
    key = hashlib.sha256(json.dumps(key_source, sort_keys=True, default=str).encode()).hexdigest()
    path = folder / f"{key}.json"
    try:
        kept = read_json(path) if path.is_file() else None
    except (OSError, ValueError):
        kept = None  # a damaged copy is computed again and replaced
    if isinstance(kept, dict) and kept.get("format") == FIGURES_CACHE_FORMAT and kept.get("key") == key:
        return kept["figures"]
    figures = compute_figures(
        name, options, store, estimators=estimators, max_questions=max_questions, progress=progress
    )
    try:  # the cache only saves time: a folder that cannot be written costs the next check its time, nothing else
        folder.mkdir(parents=True, exist_ok=True)
        write_json(path, {"format": FIGURES_CACHE_FORMAT, "key": key, "of": key_source, "figures": figures})
    except OSError as err:
        log.warning("check-operator: the figures were not kept in the cache %s (%s)", folder, err)
    return figures


def _identity(name: str, options: Mapping[str, Any]) -> dict[str, Any] | None:
    """What tells two operators apart, found without loading a model library: the registered operator, its model
    folder and the sha256-based revision of its weights; None when the weights cannot be told apart (a hub id).
    An operator given no model is identified by its own ``info`` (building it loads no model)."""
    from semuq_eval import operators
    from semuq_eval.harness.operator_runs import get_operator
    from semuq_eval.local_models import local_revision

    base, kwargs = operators.resolve(name, dict(options))
    if "model" not in kwargs:
        info = dict(get_operator(name, dict(options)).info)
        return None if "model" in info and not info.get("revision") else info
    revision = local_revision(kwargs["model"])
    return {"operator": base, "model": str(kwargs["model"]), "revision": revision} if revision else None


def _tracked(
    name: str, store: str | os.PathLike, estimators: Sequence[str] | None, max_questions: int | None
) -> list[str]:
    """The estimators whose AUROC :func:`compute_figures` tracks (the defaults resolved), in order."""
    docs = open_store(store).docs(hidden=False)[:max_questions]
    n_samples = max((len(d.samples) for d in docs), default=0)
    return sorted(_estimators(name, n_samples, estimators)) if n_samples else []


@functools.cache
def _code_fingerprint() -> str:
    """sha256 of the package's source: a copy made by other code (an edited checkout) is never read back."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _cache_folder(cache: str | os.PathLike | None | bool) -> Path | None:
    if cache is False or cache is None:
        return None
    if cache is True:
        from semuq_eval.assets import cache_dir

        return cache_dir() / "check-operator"
    return Path(cache)


@dataclass(frozen=True)
class FigureCheck:
    """One tracked figure: baseline vs current value, the tolerance, and the verdict.

    ``status``: ``ok`` (within tolerance), ``improved`` (better by more than the tolerance), ``regressed``,
    ``missing`` (tracked by the baseline, undefined or absent now), ``new`` (not in the baseline; never fails).
    """

    figure: str
    baseline: float | None
    current: float | None
    tolerance: float
    better: str
    status: str

    @property
    def delta(self) -> float | None:
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline


@dataclass
class CheckReport:
    """The outcome of :func:`check_operator`: ``ok`` is False when any figure regressed or went missing,
    or the baseline was recorded on another store."""

    operator: dict[str, Any]
    store: str
    rows: list[FigureCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    baseline_path: str | None = None
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems and not any(r.status in ("regressed", "missing") for r in self.rows)

    @property
    def regressions(self) -> list[FigureCheck]:
        return [r for r in self.rows if r.status in ("regressed", "missing")]

    def summary(self) -> str:
        """A plain-text table of every figure, then the verdict."""

        def num(x):
            return "   n/a" if x is None else f"{x:6.3f}"

        head = f"operator check: {self.operator.get('spec')} ({self.operator.get('name')}) on {self.store}"
        lines = [head, f"{'figure':<34} {'baseline':>8} {'current':>8} {'delta':>8}  tol    better  status"]
        for r in self.rows:
            d = r.delta
            lines.append(
                f"{r.figure:<34} {num(r.baseline):>8} {num(r.current):>8} "
                f"{('   n/a' if d is None else f'{d:+6.3f}'):>8}  {r.tolerance:.3f}  {r.better:<6}  {r.status.upper()}"
            )
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
) -> list[FigureCheck]:
    rows = []
    tracked = baseline.get("figures") or {}
    for key, base in tracked.items():
        tol = float(base.get("tolerance", tolerance))
        better = base.get("better", _BETTER.get(key, "higher"))
        b = base.get("value")
        cur = (figures.get(key) or {}).get("value")
        if cur is None:
            status = "missing" if b is not None else "ok"
        elif b is None:
            status = "improved"
        else:
            gain = (cur - b) if better == "higher" else (b - cur)
            status = "regressed" if gain < -tol else ("improved" if gain > tol else "ok")
        rows.append(FigureCheck(key, b, cur, tol, better, status))
    for key, fig in figures.items():
        if key not in tracked:
            rows.append(
                FigureCheck(key, None, fig.get("value"), tolerance, fig.get("better", "higher"), "new")
            )
    return rows


def check_operator(
    model: str,
    baseline: str | os.PathLike | None = None,
    *,
    operator_options: Mapping[str, Any] | None = None,
    store: str | os.PathLike | None = None,
    tolerance: float | None = None,
    estimators: Sequence[str] | None = None,
    write_baseline: str | os.PathLike | None = None,
    max_questions: int | None = None,
    progress: bool = True,
    cache: str | os.PathLike | None | bool = True,
) -> CheckReport:
    """Check an operator against a baseline (module docstring), or record one.

    Parameters
    ----------
    model : str
        An ``enc`` model (folder or hub id), an operator name, or ``name:MODEL``.
    baseline : path-like, optional
        The baseline JSON to compare with.
    operator_options : mapping, optional
        Options of the operator (e.g. ``{"batch_size": 16}``).
    store : path-like, optional
        A run store with per-sample labels (default: the frozen store shipped with the package).
    tolerance : float, optional
        Absolute tolerance of figures without their own (default: the baseline's, else 0.02).
    estimators : sequence of str, optional
        The estimators whose AUROC is tracked (default ``kle_heat@OP``, ``cos@OP``, ``cae@OP``, where valid).
    write_baseline : path-like, optional
        Record the current figures as a baseline there (the report then compares with nothing and is ok).
    max_questions : int, optional
        Use the store's first questions only (recorded in the baseline; a check uses the baseline's).
    progress : bool
        Progress bars.
    cache : path-like or bool
        Where the figures of an operator whose weights did not change are kept (:func:`cached_figures`; True:
        ``<asset cache>/check-operator``, False: computed every time).

    Returns
    -------
    CheckReport

    Raises
    ------
    FileNotFoundError
        The baseline or the store does not exist.
    ValueError
        A malformed baseline, an unknown operator or estimator, or neither ``baseline`` nor ``write_baseline``.
    """
    if baseline is None and write_baseline is None:
        raise ValueError("give a baseline to check against, or write_baseline to record one")
    base: dict[str, Any] | None = None
    if baseline is not None:
        path = Path(baseline)
        if not path.is_file():
            raise FileNotFoundError(f"no baseline at {path}; record one with --write-baseline")
        base = read_json(path)
        if not isinstance(base, dict) or base.get("format") != BASELINE_FORMAT:
            raise ValueError(f"{path} is not an operator baseline (format {BASELINE_FORMAT!r})")
        check_line(OperatorBaseline, base, path)
        if max_questions is None:
            max_questions = base.get("max_questions")
        if estimators is None:
            est = sorted({k.split(".")[1] for k in base.get("figures", {}) if k.startswith("auroc.")})
            estimators = est or None
    store = Path(store) if store is not None else frozen_store_path()
    name, options = operator_from_spec(model, operator_options)
    fingerprint = open_store(store).fingerprint()
    figures = cached_figures(
        name,
        options,
        store,
        fingerprint,
        estimators=estimators,
        max_questions=max_questions,
        progress=progress,
        cache=cache,
    )
    tol = float(tolerance if tolerance is not None else (base or {}).get("tolerance", DEFAULT_TOLERANCE))
    if not tol >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tol}")
    operator = {"spec": model, "name": name, "options": {k: str(v) for k, v in options.items()}}
    report = CheckReport(operator, str(store), figures=figures)
    if base is not None:
        report.baseline_path = str(baseline)
        report.rows = _compare(figures, base, tol)
        if base.get("store_fingerprint") not in (None, fingerprint):
            report.problems.append(
                f"the baseline was recorded on another store (fingerprint {str(base.get('store_fingerprint'))[:12]}, "
                f"this store {fingerprint[:12]}): its figures are not comparable; record it again with --write-baseline"
            )
    if write_baseline is not None:
        from semuq_eval import __version__

        record = {
            "format": BASELINE_FORMAT,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "operator": operator,
            "store": str(store),
            "store_fingerprint": fingerprint,
            "max_questions": max_questions,
            "tolerance": tol,
            "semuq_eval_version": __version__,
            "figures": figures,
        }
        write_json(write_baseline, record)
        if base is None:
            report.rows = [
                FigureCheck(k, None, f["value"], tol, f["better"], "new") for k, f in figures.items()
            ]
    return report
