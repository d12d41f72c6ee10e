"""The ``leaderboard.json`` schema, versioned: ``"format": "semuq-leaderboard/2"``.

A reader checks ``format`` first; a change that removes or renames a field bumps the version, an added
field does not. Numbers that are undefined (NaN) are ``null``. Version 2 (from version 1): ``headline`` holds
one table per label strategy (it was the greedy table). The document::

    {
      "format": "semuq-leaderboard/2",
      "schema": "semuq_eval/leaderboard/schema.py",          # where this description lives
      "created": ISO time, "generator": {"semuq_eval", "numpy", "scipy", "python"},
      "settings": {"bootstrap": {"n_resamples", "seed", "confidence_level", "method"},
                   "ece": {"bins", "refit"}, "metrics": [...], "llm_estimators": [...], "significance": str,
                   "compare": {operator: [bases]},          # --compare (added in place, no version bump)
                   "inputs": [the paths / globs given]},
      "sections": [{"id", "task", "n_questions", "question_set", "n_samples", "judge": {...},
                    "operators": {name: identity}, "paired": bool, "llms": [...], "notes": [...],
                    "repeats": bool}],   # questions also in the task's other sections (added in place)
      "runs": [{"section", "llm", "path", "task", "source": "store" | "record" | "breakdown",
                "labels": {strategy: {"n", "n_correct", "n_incorrect", "n_missing", "accuracy"}},
                "provenance": {"model": {"name", "pretrained", "revision", "sha", "model_args", "lm_eval_model"},
                               "task", "n_samples", "n_docs", "seed", "bootstrap",
                               "operators": {name: {"kind", "status", "model", "revision"}},
                               "judge": {...}, "decoding": {...}, "created",
                               "versions": {"lm_eval", "transformers", "torch", "semuq_eval", "git_hash"},
                               "results_file", "notes": [...]}}],
      "skipped": [{"path", "reason"}],       # stores a glob matched but left out (unfinished runs)
      "cells": [CELL, ...],                  # also leaderboard.csv, one row each
      "comparisons": {"sets": {name: {"description", "pairs": [[estimator, base], ...]}},
                      "rows": [{"set", "section", "task", "llm", "strategy", "estimator", "base", "value_a",
                                "value_b", "difference", "ci_low", "ci_high", "p_value", "n", "status",
                                "improved", "significant", "note",
                                "reliable"}],   # both AUROCs reliable (added in place)
                      "summary": [{"set", "strategy", "n_cells", "n_improved", "n_improved_significant",
                                   "n_worse_significant", "n_unavailable", "mean_difference",
                                   "reliable": {"n_cells", "n_improved", "n_improved_significant",
                                                "n_worse_significant", "mean_difference"}}]},
                                   # "reliable" (added in place): the same counts over reliable rows only
      "llm_pairs": [{"section", "task", "strategy", "estimator", "llm_a", "llm_b", "chosen", "value_a",
                     "value_b", "difference", "ci_low", "ci_high", "p_value", "n", "status", "improved",
                     "significant", "note"}],
      "ranks": {"llms": [RANK + {"estimator", "llm"}], "estimators": [RANK + {"llm", "estimator"}]},
      "heatmap": [{"strategy", "aggregator", "operator", "mean_auroc", "n_cells"}],
      "headline": {strategy: {"reference", "strategy", "rule", "columns": [section ids],
                              "rows": [{"llm", "cells": {section id: HCELL + RANKS},
                                        "mean": HCELL + RANKS + {"n_tasks"}}],
                              "best": [{"llm", "cells": {section id: HCELL + {"estimator"}}}]}},
      "curves": [{"section", "task", "llm", "estimator", "strategy", "n",     # (added in place)
                  "accuracy_kept", "aurac", "reliability": [{"low", "high", "n", "confidence", "accuracy"}],
                  "ece"}]
    }

A CELL is one figure: one metric of one estimator for one LLM on one task under one label strategy
(:data:`CELL_FIELDS`, in the CSV's column order). ``status`` is ``ok`` (a value), ``undefined`` (NaN: one
class only, or no labels), ``unavailable`` (the run could not score the estimator; ``note`` gives the
reason), ``not_run`` (the run did not include it) or ``not_computed`` (a breakdown-only run without this
metric). ``reliable`` is the run's own small-sample flag (:mod:`semuq_eval.harness.reliability`), ``source``
``run`` (taken from the run's breakdown: the same numbers) or ``computed``. ``accuracy`` is the LLM's
accuracy under the strategy on the section's questions.

RANK is ``{"section", "task", "strategy", "auroc", "rank", "rank_low", "rank_high", "n_ranked",
"n_resamples"}``: rank 1 = highest AUROC among ``n_ranked``; ``rank_low`` / ``rank_high`` the 2.5% / 97.5%
quantiles of the rank over the ``n_resamples`` resamples that ranked it.
``headline`` (:mod:`.headline`) holds one table per label strategy (``greedy``, then ``majority``), each with
one row per LLM: ``reference`` is the estimator every cell reads (``settings.reference``, fixed before the LLMs
are ranked), ``strategy`` its labels; ``columns``
one section per task (:func:`.headline.columns`: the ``#common`` one when the task's LLMs ran different question
sets). HCELL is ``{"value", "ci_low", "ci_high", "n_correct",
"n_incorrect", "accuracy", "reliable", "status", "note"}``: the reference estimator's AUROC cell under the
table's labels (the mean
column: the mean over the LLM's tasks with the percentile interval of the resampled means, summed counts, the
mean accuracy, ``reliable`` when every task cell is); RANKS is ``{"rank", "rank_low", "rank_high",
"n_ranked"}`` as in RANK (the mean column ranks the LLMs that have every task). Rows are sorted by the mean
column, highest first. ``best`` is each LLM's best estimator per task, in the same row order: optimistic.
``curves`` (:mod:`.curves`) are the pictures of the headline cells of runs with per-question scores:
``accuracy_kept[i]`` is the accuracy of the kept answers when the ``i`` most uncertain of the ``n`` are
rejected (its mean is ``aurac``, the ``auarc`` metric), ``reliability`` the bins of the calibrated confidence
(ECE's calibrator and bins; they add up to ``ece``).
``headline.csv`` holds every table, one row per (table, strategy, LLM, column) (:data:`HEADLINE_FIELDS`).

``difference`` is AUROC(a) - AUROC(b) (``estimator`` minus ``base``; ``llm_a`` minus ``llm_b``);
``significant``: its interval excludes 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "CELL_FIELDS",
    "FORMAT",
    "HEADLINE_FIELDS",
    "PROVENANCE_COLUMNS",
    "SCHEMA_DOC",
    "headline_records",
    "provenance_row",
]

FORMAT = "semuq-leaderboard/2"
SCHEMA_DOC = "semuq_eval/leaderboard/schema.py"

CELL_FIELDS = (
    "section",
    "task",
    "llm",
    "estimator",
    "aggregator",
    "operator",
    "label_set",
    "strategy",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "n_correct",
    "n_incorrect",
    "n_missing",
    "n_valid_resamples",
    "accuracy",
    "reliable",
    "status",
    "note",
    "source",
)
"""The fields of a cell, in ``leaderboard.csv``'s column order."""

HEADLINE_FIELDS = (
    "table",
    "strategy",
    "llm",
    "column",
    "estimator",
    "value",
    "ci_low",
    "ci_high",
    "n_correct",
    "n_incorrect",
    "accuracy",
    "reliable",
    "rank",
    "rank_low",
    "rank_high",
    "n_ranked",
    "status",
    "note",
)
"""The columns of ``headline.csv``: ``table`` is ``reference`` or ``best (optimistic)``, ``strategy`` the
labels (``greedy`` or ``majority``), ``column`` a section id or ``mean``."""


def headline_records(headline: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``leaderboard.json``'s ``headline`` (one table per label strategy) as flat records
    (:data:`HEADLINE_FIELDS`): per strategy, the reference table then the optimistic one, rows in their order.

    Examples
    --------
    >>> cell = {"value": 0.8, "status": "ok"}
    >>> h = {"reference": "kle_heat@enc", "strategy": "greedy", "columns": ["t"], "rows": [{"llm": "a",
    ...      "cells": {"t": cell}, "mean": cell}], "best": [{"llm": "a", "cells": {"t": {**cell, "estimator": "se@nli"}}}]}
    >>> [(r["table"], r["strategy"], r["column"], r["estimator"]) for r in headline_records({"greedy": h})]
    [('reference', 'greedy', 't', 'kle_heat@enc'), ('reference', 'greedy', 'mean', 'kle_heat@enc'), ('best (optimistic)', 'greedy', 't', 'se@nli')]
    """
    out = []
    for table in headline.values():
        strategy = table["strategy"]
        for row in table.get("rows", []):
            for column in [*table["columns"], "mean"]:
                cell = row["mean"] if column == "mean" else row["cells"].get(column)
                if cell is not None:
                    out.append({**cell, "table": "reference", "strategy": strategy, "llm": row["llm"],
                                "column": column, "estimator": table["reference"]})  # fmt: skip
        for row in table.get("best", []):
            for column in table["columns"]:
                if (cell := row["cells"].get(column)) is not None:
                    out.append({**cell, "table": "best (optimistic)", "strategy": strategy, "llm": row["llm"],
                                "column": column})  # fmt: skip
    return out


PROVENANCE_COLUMNS = (
    "section",
    "LLM",
    "model",
    "revision",
    "questions",
    "N",
    "seed",
    "operators",
    "judge",
    "versions",
    "store",
)
"""The columns of the runs' provenance table (Markdown and page alike)."""


def provenance_row(run: Mapping[str, Any]) -> list[Any]:
    """One run of ``leaderboard.json``'s ``runs`` as a row of the provenance table (:data:`PROVENANCE_COLUMNS`);
    the Markdown and the page format the cells their own way (the store path as code, HTML escaping).

    Examples
    --------
    >>> run = {"section": "s", "llm": "m", "path": "runs/m", "provenance": {"operators": {"enc": {"model": "ops/e"}}}}
    >>> provenance_row(run)
    ['s', 'm', '-', '-', None, None, None, 'enc (ops/e)', '', 'not recorded', 'runs/m']
    """
    p = run["provenance"]
    model = p.get("model") or {}
    operators = ", ".join(
        name + (f" ({o['model']})" if o.get("model") else "")
        for name, o in (p.get("operators") or {}).items()
    )
    versions = ", ".join(f"{k} {v}" for k, v in (p.get("versions") or {}).items() if v)
    return [
        run["section"],
        run["llm"],
        model.get("pretrained") or "-",
        model.get("revision") or model.get("sha") or "-",
        p.get("n_docs"),
        p.get("n_samples"),
        p.get("seed"),
        operators,
        ", ".join(f"{k}={v}" for k, v in (p.get("judge") or {}).items()),
        versions or "not recorded",
        run["path"],
    ]
