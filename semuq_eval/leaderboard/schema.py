"""The ``leaderboard.json`` schema, versioned: ``"format": "semuq-leaderboard/1"``.

A reader checks ``format`` first; a change that removes or renames a field bumps the version, an added
field does not. Numbers that are undefined (NaN) are ``null``. The document::

    {
      "format": "semuq-leaderboard/1",
      "schema": "semuq_eval/leaderboard/schema.py",          # where this description lives
      "created": ISO time, "generator": {"semuq_eval", "numpy", "scipy", "python"},
      "settings": {"bootstrap": {"n_resamples", "seed", "confidence_level", "method"},
                   "ece": {"bins", "refit"}, "metrics": [...], "llm_estimators": [...], "significance": str,
                   "compare": {operator: [bases]},          # --compare (added in place, no version bump)
                   "inputs": [the paths / globs given]},
      "sections": [{"id", "task", "n_questions", "question_set", "n_samples", "judge": {...},
                    "operators": {name: identity}, "paired": bool, "llms": [...], "notes": [...],
                    "repeats": bool}],   # questions also in the task's other sections (added in place)
      "runs": [{"section", "llm", "path", "task", "source": "store" | "breakdown",
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
      "heatmap": [{"strategy", "aggregator", "operator", "mean_auroc", "n_cells"}]
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
``difference`` is AUROC(a) - AUROC(b) (``estimator`` minus ``base``; ``llm_a`` minus ``llm_b``);
``significant``: its interval excludes 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["CELL_FIELDS", "FORMAT", "PROVENANCE_COLUMNS", "SCHEMA_DOC", "provenance_row"]

FORMAT = "semuq-leaderboard/1"
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
