"""The ``leaderboard.json`` schema, versioned: ``"format": "semuq-leaderboard/2"``.

A reader checks ``format`` first; removing or renaming a field bumps the version, adding one does not, so a field
marked *optional* below may be absent from a version-2 document. Undefined numbers (NaN) are ``null``. ``cells``
and ``ranks`` are run tables (below). :func:`read_document` reads the file into the records every writer and test
uses (:func:`decode`); :func:`encode` gives the file's shape. The document::

    {
      "format": "semuq-leaderboard/2", "schema": "semuq_eval/leaderboard/schema.py",   # where this description lives
      "created": ISO time, "generator": {"semuq_eval", "numpy", "scipy", "python"},
      "settings": {"bootstrap": {"n_resamples", "seed", "confidence_level", "method"},
                   "ece": {"bins", "refit"}, "metrics": [...], "llm_estimators": [...], "significance": str,
                   "compare": {operator: [bases]},  # --compare (optional)
                   "inputs": [the paths / globs given]},
      "sections": [{"id", "task", "n_questions", "question_set", "n_samples", "judge": {...},
                    "operators": {name: identity}, "paired": bool, "llms": [...], "notes": [...],
                    "repeats": bool}],   # questions also in the task's other sections (optional)
      "runs": [{"section", "llm", "path", "task", "source": "store" | "record" | "breakdown",
                "labels": {strategy: {"n", "n_correct", "n_incorrect", "n_missing", "accuracy"}},
                "provenance": {"model": {"name", "pretrained", "revision", "sha", "model_args", "lm_eval_model"},
                               "task", "n_samples", "n_docs", "seed", "bootstrap", "judge": {...}, "decoding": {...},
                               "operators": {name: {"kind", "status", "model", "revision"}}, "created",
                               "versions": {"lm_eval", "transformers", "torch", "semuq_eval", "git_hash"},
                               "results_file", "notes": [...]}}],
      "skipped": [{"path", "reason"}],       # stores a glob matched but left out (unfinished runs)
      "cells": {"columns": CELL_COLUMNS, "rows": [[...], ...]},   # a run table of CELLs; leaderboard.csv
      "comparisons": {"sets": {name: {"description", "pairs": [[estimator, base], ...]}},
                      "rows": [{"set", "section", "task", "llm", "strategy", "estimator", "base", "value_a",
                                "value_b", "difference", "ci_low", "ci_high", "p_value", "n", "status",
                                "improved", "significant", "note", "reliable"}],   # reliable: both AUROCs (optional)
                      "summary": [{"set", "strategy", "n_cells", "n_improved", "n_improved_significant",
                                   "n_worse_significant", "n_unavailable", "mean_difference",
                                   "reliable": {"n_cells", "n_improved", "n_improved_significant",
                                                "n_worse_significant", "mean_difference"}}]},
                                   # "reliable" (optional): the same counts over reliable rows only
      "llm_pairs": [{"section", "task", "strategy", "estimator", "llm_a", "llm_b", "chosen", "value_a",
                     "value_b", "difference", "ci_low", "ci_high", "p_value", "n", "status", "improved",
                     "significant", "note"}],
      "ranks": {"llms": {"columns": RANK_COLUMNS, "rows": [...]},          # run tables of RANKs
                "estimators": {"columns": RANK_COLUMNS, "rows": [...]}},
      "heatmap": [{"strategy", "aggregator", "operator", "mean_auroc", "n_cells"}],
      "headline": {strategy: {"reference", ["metric",] "strategy", ["label_set",] "rule", "columns": [section ids],
                              "rows": [{"llm", "cells": {section id: HCELL + RANKS},
                                        "mean": HCELL + RANKS + {"n_tasks"}}],
                              "best": [{"llm", "cells": {section id: HCELL + {"estimator"}}}]}},
      "curves": [{"section", "task", "llm", "estimator", "strategy", "n",     # (optional)
                  "accuracy_kept", "aurac", "reliability": [{"low", "high", "n", "confidence", "accuracy"}], "ece"}],
      "across_judges": [{"task", "sections", "strategy", "estimator", "metric", "label_sets",  # only with 2+
                         "llms": [{"llm", "ranks": {label set: rank}, "rank_intervals": {label set: [low, high]},
                                   "mean_rank", "mean_rank_low", "mean_rank_high", "disagree"}],
                         "agreement": [{"label_set_a", "label_set_b", "kendall_tau", "n_llms"}],
                         "estimator_agreement": [{"llm", "label_set_a", "label_set_b", "kendall_tau", "n_estimators"}],
                         "estimator_ranks": [{"llm", "estimator", "ranks": {label set: rank}, "mean_rank"}],
                         "label_agreement": [{"llm", "label_set_a", "label_set_b", "n", "n_skipped",  # optional
                                              "confusion", "observed", "kappa", "note"}]}]
    }

A CELL (:data:`CELL_FIELDS`, the CSV's column order) is one metric of one estimator for one LLM on one task under
one label strategy. ``status``: ``ok``, ``undefined`` (NaN: one class only, or no labels), ``unavailable`` (the run
could not score it; ``note`` says why), ``not_run`` or ``not_computed`` (a breakdown-only run without the metric);
``reliable``: the run's small-sample flag (:mod:`semuq_eval.harness.reliability`); ``source``: ``run`` (the run's
breakdown: the same numbers) or ``computed``; ``accuracy``: the LLM's, under the strategy, on the section's questions.

A **run table** keeps per-run facts once: ``{"columns": [...], "rows": [[...], ...]}``, one row per record, whose
``run`` column indexes ``runs``; a record's ``section``, ``task``, ``label_set`` and ``llm`` (:data:`RUN_KEYS`) are
its run's, a cell's ``aggregator`` and ``operator`` come from its estimator (``agg@op``; ``-`` without an
operator) and its ``accuracy`` from ``runs[run].labels[strategy]``.

RANK (:data:`RANK_FIELDS`) is ``{"section", "task", "label_set", "llm", "strategy", "estimator", "auroc", "rank",
"rank_low", "rank_high", "n_ranked", "n_resamples"}``: in ``ranks.llms`` the LLM's rank among the section's LLMs for
the estimator, in ``ranks.estimators`` the estimator's among the LLM's; rank 1 = highest AUROC of ``n_ranked``;
``rank_low`` / ``rank_high``: the 2.5% / 97.5% rank quantiles over the ``n_resamples`` resamples that ranked it.

``headline`` (:mod:`.headline`): per label strategy (greedy first) and label set, a table of one row per LLM sorted by
the mean column, keyed ``strategy``, or ``strategy:label_set`` (also its ``headline.csv`` strategy) for another label
set's. ``reference``: ``settings.reference``; ``metric``: the metric shown and ranked by when not AUROC; ``columns``:
one section per task (:func:`.headline.columns`). HCELL is ``{"value", "ci_low", "ci_high", "n_correct",
"n_incorrect", "accuracy", "reliable", "status", "note"}``, the reference estimator's cell under the table's labels
(mean column: mean over the LLM's tasks, percentile interval of the resampled means, summed counts, mean accuracy,
``reliable`` when every task cell is); RANKS is ``{"rank", "rank_low", "rank_high", "n_ranked"}`` as in RANK (the mean
column ranks the LLMs with every task). ``best``: each LLM's best estimator per task, same row order: optimistic.

``curves`` (:mod:`.curves`) picture the headline cells of runs with per-question scores: ``accuracy_kept[i]`` is
the kept answers' accuracy when the ``i`` most uncertain of ``n`` are rejected (mean: ``aurac``, the ``auarc``
metric), ``reliability`` the calibrated confidence's bins (ECE's calibrator and bins; they add up to ``ece``).
``headline.csv``: every table, one row per (table, strategy, LLM, column) (:data:`HEADLINE_FIELDS`).
``difference``: AUROC(a) - AUROC(b) (``estimator`` - ``base``; ``llm_a`` - ``llm_b``); ``significant``: its
interval excludes 0."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from semuq_eval.jsonio import read_json
from semuq_eval.leaderboard.cells import split_estimator

__all__ = [
    "CELL_COLUMNS",
    "CELL_FIELDS",
    "FORMAT",
    "HEADLINE_FIELDS",
    "PROVENANCE_COLUMNS",
    "RANK_COLUMNS",
    "RANK_FIELDS",
    "RUN_KEYS",
    "RUN_TABLES",
    "SCHEMA_DOC",
    "decode",
    "encode",
    "headline_records",
    "provenance_row",
    "read_document",
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

RUN_KEYS = ("section", "task", "label_set", "llm")
"""What a run table's record takes from its run (``runs[run]``)."""

CELL_COLUMNS = (
    "run",
    *(f for f in CELL_FIELDS if f not in (*RUN_KEYS, "aggregator", "operator", "accuracy")),
)
"""The columns of ``cells`` in ``leaderboard.json``: a cell less what its run and its estimator give."""

RANK_FIELDS = (
    *RUN_KEYS,
    "strategy",
    "estimator",
    "auroc",
    "rank",
    "rank_low",
    "rank_high",
    "n_ranked",
    "n_resamples",
)
"""The fields of a RANK record (``ranks.llms`` and ``ranks.estimators``)."""

RANK_COLUMNS = ("run", *RANK_FIELDS[len(RUN_KEYS) :])
"""The columns of a ranks table in ``leaderboard.json``."""

RUN_TABLES = {
    ("cells",): (CELL_FIELDS, CELL_COLUMNS),
    ("ranks", "llms"): (RANK_FIELDS, RANK_COLUMNS),
    ("ranks", "estimators"): (RANK_FIELDS, RANK_COLUMNS),
}
"""Where the run tables are in the document (key path): the fields of their records and their columns."""


def _derived(record: Mapping[str, Any], run: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """What a run table leaves out of a record: its run's keys and, for a cell, its estimator's parts and its
    run's accuracy under its strategy."""
    out = {k: run.get(k) for k in RUN_KEYS}
    if fields is CELL_FIELDS:
        out["aggregator"], out["operator"] = split_estimator(str(record.get("estimator")))
        out["accuracy"] = ((run.get("labels") or {}).get(record.get("strategy")) or {}).get("accuracy")
    return out


def _at(document: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at a key path, or None."""
    for key in path:
        document = (document or {}).get(key)
    return document


def _replaced(document: Mapping[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``document`` with ``value`` at a key path (the mappings on the way copied, not changed)."""
    head, *rest = path
    return {**document, head: _replaced(document.get(head) or {}, tuple(rest), value) if rest else value}


def encode(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document as ``leaderboard.json`` holds it: its run tables (:data:`RUN_TABLES`) as columns and rows.

    A record whose run fields or cell's derived fields differ from what :func:`decode` would give back (an
    edited document) is an error, so nothing is lost on the way to the file.

    Examples
    --------
    >>> run = {"section": "s", "task": "t", "label_set": "run", "llm": "m", "labels": {"greedy": {"accuracy": 0.5}}}
    >>> cell = {"section": "s", "task": "t", "label_set": "run", "llm": "m", "estimator": "se@nli",
    ...         "aggregator": "se", "operator": "nli", "strategy": "greedy", "metric": "auroc", "value": 0.7,
    ...         "accuracy": 0.5}
    >>> doc = encode({"runs": [run], "cells": [cell], "ranks": {"llms": [], "estimators": []}})
    >>> doc["cells"]["rows"][0][:5]
    [0, 'se@nli', 'greedy', 'auroc', 0.7]
    >>> decode(doc)["cells"][0] == {k: cell.get(k) for k in CELL_FIELDS}
    True
    """
    runs = list(document.get("runs") or [])
    index = {(run.get("section"), run.get("llm")): i for i, run in enumerate(runs)}
    out = dict(document)
    for path, (fields, columns) in RUN_TABLES.items():
        records = _at(document, path)
        if records is None:
            continue
        rows = []
        for record in records:
            key = (record.get("section"), record.get("llm"))
            if key not in index:
                raise ValueError(f"{'.'.join(path)}: no run {key} in 'runs'")
            derived = _derived(record, runs[index[key]], fields)
            differs = [k for k, v in derived.items() if k in record and record[k] != v]
            if differs:
                raise ValueError(f"{'.'.join(path)}: {', '.join(differs)} of {key} differ from its run's")
            rows.append([index[key], *(record.get(c) for c in columns[1:])])
        out = _replaced(out, path, {"columns": list(columns), "rows": rows})
    return out


def decode(document: Mapping[str, Any]) -> dict[str, Any]:
    """The records of a ``leaderboard.json`` document: run tables back to lists of records (:data:`CELL_FIELDS`,
    :data:`RANK_FIELDS`); :func:`encode`'s example shows the round trip."""
    out = dict(document)
    runs = list(document.get("runs") or [])
    for path, (fields, _) in RUN_TABLES.items():
        table = _at(document, path)
        if table is None:
            continue
        records = []
        for row in table["rows"]:
            partial = dict(zip(table["columns"], row, strict=True))
            derived = _derived(partial, runs[partial.pop("run")], fields)
            records.append({k: derived[k] if k in derived else partial.get(k) for k in fields})
        out = _replaced(out, path, records)
    return out


def read_document(path: str | Path) -> dict[str, Any]:
    """The ``leaderboard.json`` at ``path`` as records (:func:`decode`); ValueError naming the file when it is
    not a leaderboard of this version's format (:data:`FORMAT`)."""
    document = read_json(path)
    found = document.get("format") if isinstance(document, dict) else None
    if found != FORMAT:
        raise ValueError(f"{path}: format {found!r} is not a leaderboard this version reads ({FORMAT})")
    return decode(document)


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
        strategy = table["strategy"] + (f":{table['label_set']}" if table.get("label_set") else "")
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
