"""Corpus-level aggregation: per-question items -> AUROC / ECE with CIs per estimator and label strategy.

lm-eval's aggregation functions (rank 0) call :func:`summarize` once (cached) on the task's items and read one scalar
each (:func:`summary_scalars`). The breakdown is a JSON-safe dict::

    {"format": "semuq-breakdown/1", "task", "created", "settings", "equivalence_rule", "judge", "label_set",
     "operators": {op: {kind, status, info, cost, n_questions, n_unavailable, reasons, n_truncated[, per_rank]}},
     "n_docs", "bad_docs": [{"doc_id", "id", "problems"}],
     "labels": {strategy: {"n", "n_correct", "n_missing", "accuracy"}},
     "results": {strategy: {estimator: {metric: MetricResult.as_dict()}}},
     "unavailable": {estimator: {"n_docs", "reasons": {reason: count}}},
     "approximate": {estimator: {"n_docs", "methods": {"input: method": count}}},
     "best": {strategy: {"estimator", first metric, second metric, "reliable"}}}

Strategies are the registered label strategies (App. D). ``best`` is the best estimator by the first of the run's
``metrics`` and holds the first two (lm-eval's table, :func:`summary_keys`). Operator runs are merged over ranks
(:func:`~semuq_eval.harness.operator_runs.merge_operator_runs`). All metrics share one seeded
:class:`~semuq_eval.metrics.Bootstrap` (paired comparisons stay valid). Missing labels and NaN scores are left out and
counted; an estimator with no score is unavailable, one scored from an estimated input is listed under
``approximate``."""

from __future__ import annotations

import logging
import math
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from semuq_eval.cell_text import cell_text
from semuq_eval.harness.reliability import MIN_MINORITY, assess, label_warning
from semuq_eval.harness.settings import Settings
from semuq_eval.jsonio import finite_or_none
from semuq_eval.judges import strategies as label_strategies
from semuq_eval.metrics import DEFAULT_METRICS, Metric
from semuq_eval.metrics import get as get_metric

__all__ = [
    "FORMAT",
    "breakdown_table",
    "equivalence_rule",
    "summarize",
    "summary_keys",
    "summary_scalars",
]

log = logging.getLogger(__name__)

FORMAT = "semuq-breakdown/1"


def _summary_metrics(metrics: Sequence[str]) -> list[Metric]:
    """The metrics ``best`` and lm-eval's table show: the first two of a run's metrics (the first ranks)."""
    return [get_metric(m) for m in metrics[:2]]


def equivalence_rule(settings: Settings) -> str:
    """The equivalence rule in force, in words, naming the aggregators that threshold at ``tau``."""
    from semuq_eval import aggregators

    names = [n for n in aggregators.names() if "tau" in aggregators.get(n).options]
    return (
        f"equivalence aggregators ({', '.join(names)}) cluster with S_ij > tau, tau={settings.tau}, on graded "
        "and Gram matrices; boolean matrices (equivalence operators, e.g. nli) are used as they are"
    )


def summarize(
    items: Sequence[Mapping[str, Any]],
    settings: Settings,
    *,
    task: str = "",
    operators: Mapping[str, Any] | None = None,
    judge: Mapping[str, Any] | None = None,
    label_set: str = "run",
    extra: Mapping[str, Any] | None = None,
) -> dict:
    """The full breakdown (see the module docstring) of all questions' items, whose labels come from the
    store's label set ``label_set`` (``"run"``: the run's own judge; :mod:`semuq_eval.harness.label_sets`)."""
    items = sorted(items, key=lambda it: it["doc_id"])
    names = list(dict.fromkeys(k for it in items for k in it["scores"]))
    unavailable = _counted(items, names, "reasons", "reasons")
    approximate = _counted(items, names, "approximate", "methods")
    scored = [n for n in names if any(it["scores"].get(n) is not None for it in items)]
    labels_summary, results, best = {}, {}, {}
    for strategy in label_strategies.label_strategy_names():
        labels_summary[strategy], results[strategy], best[strategy] = _strategy_results(
            items, strategy, scored, settings, task
        )
    bad = [
        {"doc_id": it["doc_id"], "id": it.get("id"), "problems": it["problems"]}
        for it in items
        if it.get("problems")
    ]
    return {
        "format": FORMAT,
        "task": task,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "settings": settings.as_dict(),
        "n_samples": settings.n_samples,
        "seeds": {"bootstrap": settings.seed},
        "equivalence_rule": equivalence_rule(settings),
        "judge": dict(judge or {}),
        "label_set": label_set,
        "operators": {k: (v.as_dict() if hasattr(v, "as_dict") else v) for k, v in (operators or {}).items()},
        "n_docs": len(items),
        "n_extra_responses_dropped": int(sum(it.get("n_extra_responses", 0) for it in items)),
        "bad_docs": bad,
        "labels": labels_summary,
        "results": results,
        "unavailable": unavailable,
        "approximate": approximate,
        "estimators_scored": scored,
        "best": best,
        **dict(extra or {}),
    }


def _counted(
    items: Sequence[Mapping[str, Any]], names: Sequence[str], field_name: str, what: str
) -> dict[str, dict[str, Any]]:
    """Per estimator, how many questions carry an entry in the items' ``field_name`` (why it is unavailable, how
    it was approximated) and how often each value occurs: ``{name: {"n_docs": n, what: {value: count}}}``."""
    counted = {
        name: Counter(it[field_name][name] for it in items if name in it.get(field_name, {}))
        for name in names
    }
    return {name: {"n_docs": sum(c.values()), what: dict(c)} for name, c in counted.items() if c}


def _strategy_results(
    items: Sequence[Mapping[str, Any]], strategy: str, scored: Sequence[str], settings: Settings, task: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """One label strategy's label counts, every scored estimator's metrics (with intervals and reliability) and
    the best estimator by the first metric."""
    from semuq_eval.metrics import Bootstrap, CalibrationProtocol, evaluate

    shown = _summary_metrics(settings.metrics)
    first = shown[0]
    nobody = {"estimator": None, **{m.name: None for m in shown}}
    keep = [it for it in items if it["labels"].get(strategy) is not None]
    y = np.array([it["labels"][strategy] for it in keep], dtype=np.float64)
    counts = {
        "n": len(keep),
        "n_correct": int(y.sum()),
        "n_incorrect": int(len(keep) - y.sum()),
        "n_missing": len(items) - len(keep),
        "accuracy": finite_or_none(float(y.mean())) if len(keep) else None,
    }
    if not keep or not scored:
        return counts, {}, dict(nobody)
    scores = {
        n: np.array([np.nan if (v := it["scores"].get(n)) is None else v for it in keep]) for n in scored
    }
    scores = {n: s for n, s in scores.items() if np.isfinite(s).any()}
    bootstrap = Bootstrap(n_resamples=settings.bootstrap, seed=settings.seed)
    protocol = CalibrationProtocol(n_bins=settings.ece_bins, refit=settings.ece_refit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = (
            evaluate(scores, y, metrics=settings.metrics, bootstrap=bootstrap, protocol=protocol)
            if scores
            else {}
        )
    results = {
        n: {
            m: {**r.as_dict(), **assess(r.as_dict(), settings.bootstrap, settings.min_minority)}
            for m, r in per.items()
        }
        for n, per in out.items()
    }
    if warning := label_warning(strategy, counts["n_correct"], len(keep), settings.min_minority):
        log.warning("%s: %s", task or "semuq", warning)
    sign = 1.0 if first.higher_is_better else -1.0
    ranked = [n for n, per in out.items() if math.isfinite(per[first.name].value)]
    if not ranked:
        return counts, results, dict(nobody)
    name = max(ranked, key=lambda n: sign * out[n][first.name].value)
    best = {
        "estimator": name,
        **{m.name: finite_or_none(out[name][m.name].value) for m in shown},
        "reliable": results[name][first.name]["reliable"],
    }
    return counts, results, best


def summary_keys(settings: Settings) -> dict[str, bool]:
    """The keys of lm-eval's table, each with whether higher is better: the accuracy of each label strategy,
    the first two metrics of the best estimator and of each ``table_estimators`` (``auroc_greedy:<est>``),
    ``n_estimators``."""
    shown = _summary_metrics(settings.metrics)
    strategies = label_strategies.label_strategy_names()
    keys = {f"acc_{s}": True for s in strategies}
    for s in strategies:
        keys.update({f"{m.name}_best_{s}": m.higher_is_better for m in shown})
    keys["n_estimators"] = True
    for m in shown:
        keys.update({f"{m.name}_greedy:{e}": m.higher_is_better for e in settings.table_estimators})
    return keys


def summary_scalars(breakdown: Mapping[str, Any]) -> dict[str, float]:
    """One float per summary key (NaN when undefined) read from a breakdown."""
    nan = float("nan")

    def num(v):
        return nan if v is None else float(v)

    shown = breakdown["settings"].get("metrics", DEFAULT_METRICS)[:2]
    out = {f"acc_{s}": num(v["accuracy"]) for s, v in breakdown["labels"].items()}
    out["n_estimators"] = float(len(breakdown["results"]["greedy"]))
    for s in breakdown["labels"]:
        out.update({f"{m}_best_{s}": num(breakdown["best"][s][m]) for m in shown})
    for e in breakdown["settings"].get("table_estimators", []):
        per = breakdown["results"]["greedy"].get(e)
        out.update({f"{m}_greedy:{e}": num(per[m]["value"]) if per else nan for m in shown})
    return out


def _cell(result: Mapping[str, Any] | None) -> str:
    """``0.812 [0.700, 0.900]``, with ``!`` after an unreliable figure and ``n/a`` for an undefined one."""
    result = result or {}
    return cell_text(
        result.get("value"),
        result.get("ci_low"),
        result.get("ci_high"),
        reliable=result.get("reliable", True),
    )


def _operator_notes(operators: Mapping[str, Any]) -> list[str]:
    """Footer lines of the operators that missed questions (with their commonest reason) or read some answers
    only in part."""
    out = []
    for name, run in operators.items():
        if not isinstance(run, Mapping):
            continue
        reasons = run.get("reasons") or {}
        if run.get("n_unavailable") and reasons:
            why = max(reasons, key=reasons.get)
            more = f"; {len(reasons) - 1} more reason(s)" if len(reasons) > 1 else ""
            out.append(
                f"- operator {name}: no matrix for {run['n_unavailable']} of {run.get('n_questions', '?')} "
                f"questions ({why}{more})"
            )
        if run.get("n_truncated"):
            out.append(
                f"- operator {name}: read some answers of {run['n_truncated']} questions only in part "
                "(bad_docs says which)"
            )
    return out


def breakdown_table(breakdown: Mapping[str, Any]) -> str:
    """A Markdown table of a breakdown: its first two metrics (AUROC and ECE by default) with 95% CIs and the
    correct / incorrect counts behind them, per estimator and label strategy. Rows are sorted by the first metric on
    greedy labels; ``!`` marks an unreliable figure (:mod:`semuq_eval.harness.reliability`), ``n/a`` an undefined one,
    whose reason follows the table with the operators that missed questions or read answers in part."""
    results = breakdown.get("results", {})
    strategies = list(results)
    names = sorted({name for per in results.values() for name in per})
    shown = _summary_metrics(breakdown.get("settings", {}).get("metrics", DEFAULT_METRICS))
    first = shown[0]

    def sort_key(name: str) -> float:
        value = results.get("greedy", {}).get(name, {}).get(first.name, {}).get("value")
        if value is None or not math.isfinite(value):
            return math.inf
        return -value if first.higher_is_better else value

    head = ["estimator"]
    for strategy in strategies:
        head += [f"{m.label} {strategy}" for m in shown] + [f"correct/incorrect {strategy}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes: dict[str, list[str]] = {}
    for name in sorted(names, key=sort_key):
        row = [name]
        for strategy in strategies:
            per = results.get(strategy, {}).get(name, {})
            ranked = per.get(first.name, {})
            row += [_cell(per.get(m.name)) for m in shown]
            row.append(f"{ranked.get('n_correct', 0)}/{ranked.get('n_incorrect', 0)}")
            if ranked.get("note"):
                notes.setdefault(f"{strategy}: {ranked['note']}", []).append(name)
        lines.append("| " + " | ".join(row) + " |")
    labels = breakdown.get("labels", {})
    summary = ", ".join(
        f"{s}: {v.get('n_correct', 0)} correct / {v.get('n', 0) - v.get('n_correct', 0)} incorrect"
        for s, v in labels.items()
        if isinstance(v, Mapping)
    )
    title = f"{breakdown.get('task', '')}: {breakdown.get('n_docs', '?')} questions" + (
        f" ({summary})" if summary else ""
    )
    threshold = breakdown.get("settings", {}).get("min_minority", MIN_MINORITY)
    footer = [
        "",
        f"! = unreliable: fewer than {threshold} questions in the minority class, or fewer than 95% of the "
        "bootstrap resamples gave a value; n/a = undefined.",
    ]
    for note, which in notes.items():
        footer.append(
            f"- {note}: {len(which)} estimator(s)" if len(which) > 3 else f"- {note}: {', '.join(which)}"
        )
    operator_notes = _operator_notes(breakdown.get("operators") or {})
    footer += operator_notes
    return (
        title + "\n\n" + "\n".join(lines) + "\n".join(footer if notes or strategies or operator_notes else [])
    )
