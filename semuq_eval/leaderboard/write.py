"""Write a leaderboard: ``leaderboard.json`` (:mod:`.schema`), ``leaderboard.csv`` (one row per cell) and
``leaderboard.md`` (AUROC tables per section, the Enc-minus-base deltas, LLM ranks, provenance).

Every writer reads the :class:`~semuq_eval.leaderboard.compute.Leaderboard` only; the HTML page and the
plots read the same document (:func:`to_document`: records, as :func:`~.schema.read_document` reads them back).
"""

from __future__ import annotations

import csv
import math
import platform
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from semuq_eval.cell_text import cell_text
from semuq_eval.jsonio import json_safe, write_json
from semuq_eval.judges import label_strategy_names
from semuq_eval.leaderboard.cells import label_summary
from semuq_eval.leaderboard.compute import Leaderboard
from semuq_eval.leaderboard.headline import cell_summary, metric_label
from semuq_eval.leaderboard.schema import (
    CELL_FIELDS,
    FORMAT,
    HEADLINE_FIELDS,
    PROVENANCE_COLUMNS,
    RUN_TABLES,
    SCHEMA_DOC,
    encode,
    headline_records,
    provenance_row,
)

__all__ = ["to_document", "write_csv", "write_headline_csv", "write_json_document", "write_markdown"]


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("semuq-eval", "numpy", "scipy", "lm-eval"):
        try:
            out[name.replace("-", "_")] = version(name)
        except PackageNotFoundError:
            out[name.replace("-", "_")] = None
    return out


def to_document(
    board: Leaderboard,
    *,
    inputs: Sequence[str] = (),
    created: str | None = None,
    relative_to: str | Path | None = None,
    skipped: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """The leaderboard as the JSON-safe ``leaderboard.json`` document (:mod:`.schema`).

    Parameters
    ----------
    board : Leaderboard
    inputs : sequence of str
        The paths / globs the leaderboard was built from (recorded as given).
    created : str, optional
        ISO time; default now (UTC).
    relative_to : path-like, optional
        Write run paths relative to this folder (e.g. the output folder), so a committed leaderboard does not
        carry the machine's absolute paths.
    skipped : sequence of mapping
        Stores left out (``{"path", "reason"}``: unfinished runs a glob matched), listed in the document.
    """

    def where(path: Path) -> str:
        if relative_to is None:
            return str(path)
        try:
            import os

            return os.path.relpath(Path(path).resolve(), Path(relative_to).resolve())
        except ValueError:
            return str(path)

    runs = []
    for section in board.sections:
        for run in section.runs:
            provenance = dict(run.provenance)
            if provenance.get("results_file"):
                provenance["results_file"] = where(Path(provenance["results_file"]))
            runs.append(
                {
                    "section": section.id,
                    "llm": run.llm,
                    "task": run.task,
                    "label_set": run.label_set,
                    "path": where(run.path),
                    "source": "record" if run.question_set_hash else "store" if run.paired else "breakdown",
                    "labels": {
                        s: _label_counts(board, section.id, run.llm, s) for s in label_strategy_names()
                    },
                    "provenance": provenance,
                }
            )
    document = {
        "format": FORMAT,
        "schema": SCHEMA_DOC,
        "created": created or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "generator": _versions(),
        "settings": {**board.config.as_dict(), "inputs": list(inputs)},
        "sections": [
            {
                "id": s.id,
                "task": s.task,
                "label_set": s.label_set,
                "n_questions": s.n_questions,
                "question_set": s.question_set,
                "n_samples": s.n_samples,
                "judge": s.judge,
                "operators": s.operators,
                "paired": s.paired,
                "llms": s.llms,
                "estimators": s.estimators,
                "notes": s.notes,
                "repeats": s.repeats,
            }
            for s in board.sections
        ],
        "runs": runs,
        "skipped": [{"path": where(Path(e["path"])), "reason": e["reason"]} for e in skipped],
        "cells": [{k: c.get(k) for k in CELL_FIELDS} for c in board.cells],
        "comparisons": {
            "sets": {
                k: {"description": text, "pairs": [list(p) for p in pairs]}
                for k, (text, pairs) in board.pair_sets.items()
            },
            "rows": board.comparisons,
            "summary": board.comparison_summary,
        },
        "llm_pairs": board.llm_pairs,
        "ranks": {"llms": board.llm_ranks, "estimators": board.estimator_ranks},
        "heatmap": board.heatmap,
        "headline": board.headline,
        "curves": board.curves,
        **({"across_judges": board.across_judges} if board.across_judges else {}),
    }
    return json_safe(document)


def _label_counts(board: Leaderboard, section: str, llm: str, strategy: str) -> dict[str, Any]:
    for s in board.sections:
        if s.id == section:
            for run in s.runs:
                if run.llm == llm:
                    return label_summary(run, strategy)
    return {}


def write_json_document(document: Mapping[str, Any], path: str | Path) -> Path:
    """``leaderboard.json``: the document in the file's shape (:func:`~.schema.encode`: run tables), indented,
    one line per run-table row, NaN as null."""
    return write_json(path, encode(document), indent=1, flat=[(*path, "rows") for path in RUN_TABLES])


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_value(value: Any) -> Any:
    """A cell of the CSV: numbers as written, undefined as empty, and a text that a spreadsheet would read as a
    formula (starting with ``= + - @``, a tab or a carriage return; ``-`` alone, "no operator", is text) prefixed
    with ``'`` (OWASP's CSV-injection rule), so opening the file never runs anything.

    Examples
    --------
    >>> [_csv_value(v) for v in (None, -0.25, float("nan"), "=1+1", "-", "enc")]
    ['', '-0.25', '', "'=1+1", '-', 'enc']
    """
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and value != "-":  # "-": no operator
        return "'" + value
    return value


def write_csv(document: Mapping[str, Any], path: str | Path) -> Path:
    """``leaderboard.csv``: tidy, one row per cell (:data:`~.schema.CELL_FIELDS`); empty = undefined."""
    path = Path(path)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(CELL_FIELDS)
        for cell in document["cells"]:
            writer.writerow([_csv_value(cell.get(k)) for k in CELL_FIELDS])
    return path


def write_headline_csv(document: Mapping[str, Any], path: str | Path) -> Path:
    """``headline.csv``: the headline tables of every label strategy, one row per (table, strategy, LLM, column)
    (:data:`~.schema.HEADLINE_FIELDS`)."""
    path = Path(path)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(HEADLINE_FIELDS)
        for record in headline_records(document.get("headline") or {}):
            writer.writerow([_csv_value(record.get(k)) for k in HEADLINE_FIELDS])
    return path


def across_judges_markdown(groups: Sequence[Mapping[str, Any]]) -> list[str]:
    """The rankings across judges (:mod:`.across_judges`) as Markdown lines; none when the board has one judge."""
    if not groups:
        return []
    lines = [
        "## Rankings across judges",
        "",
        "Each LLM's rank (1 = best) by the reference estimator under each label set, and the mean rank over them "
        "with its 95% bootstrap interval (the label sets share the questions and the resamples). `disagree`: the "
        "LLM's rank intervals under two label sets do not overlap. Kendall's tau compares two label sets' "
        "rankings (1 = same order).",
        "",
    ]
    for g in groups:
        sets = g["label_sets"]
        lines += [f"### {g['task']}, {g['strategy']} labels: `{g['estimator']}` ({g['metric']})", ""]
        rows = [
            [
                r["llm"],
                *[_rank_text(r["ranks"][ls], *r["rank_intervals"][ls]) for ls in sets],
                _rank_text(r["mean_rank"], r["mean_rank_low"], r["mean_rank_high"]),
                "disagree" if r["disagree"] else "",
            ]
            for r in g["llms"]
        ]
        lines += _table(["LLM", *sets, "mean rank", ""], rows)
        taus = [
            f"{a['label_set_a']} vs {a['label_set_b']}: tau {_num(a['kendall_tau'])} ({a['n_llms']} LLMs)"
            for a in g["agreement"]
        ]
        per_llm = [
            f"{a['llm']} ({a['label_set_a']} vs {a['label_set_b']}): tau {_num(a['kendall_tau'])} over "
            f"{a['n_estimators']} estimators"
            for a in g["estimator_agreement"]
        ]
        lines += [
            "",
            "LLM order: " + "; ".join(taus) + ".",
            "Estimator order: " + "; ".join(per_llm) + ".",
            "",
        ]
        best: dict[str, list] = {}
        for r in g["estimator_ranks"]:
            best.setdefault(r["llm"], []).append(r)
        for llm, rows in best.items():
            top = ", ".join(f"`{r['estimator']}` {_num(r['mean_rank'])}" for r in rows[:5])
            lines += [f"Best mean estimator ranks over the label sets, {llm}: {top}.", ""]
    return lines


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _rank_text(rank: float | None, low: float | None, high: float | None) -> str:
    if rank is None:
        return "-"
    text = f"{rank:g}"
    return text + (f" ({low:g}-{high:g})" if low is not None and high is not None else "")


def _others(document: Mapping[str, Any]) -> str:
    """Where the metrics beside AUROC are (" ECE, PRR and AUARC: ..."), by their table labels; "" for none."""
    from semuq_eval.metrics import get

    labels = [get(m).label for m in document["settings"]["metrics"] if m != "auroc"]
    if not labels:
        return ""
    names = ", ".join(labels[:-1]) + (" and " if len(labels) > 1 else "") + labels[-1]
    return f" {names}: `leaderboard.csv` and `index.html`."


def _headline_markdown(headline: Mapping[str, Any]) -> list[str]:
    """One label strategy's headline tables (reference estimator, then the optimistic best per task), Markdown
    lines."""
    if not headline.get("rows"):
        return []
    columns, strategy, label = headline["columns"], headline["strategy"], metric_label(headline)
    lines = [
        f"## Headline: `{headline['reference']}` for every LLM ({strategy} labels)",
        "",
        f"Rule: {headline['rule']}. A cell: {label} [95% CI] (correct/incorrect answers), `!` = small sample, "
        f"the accuracy under {strategy} labels, the rank (1 = best {label}) and its 95% bootstrap interval.",
        "",
    ]
    rows = [
        [row["llm"], *[cell_summary(row["cells"].get(c)) for c in columns], cell_summary(row["mean"])]
        for row in headline["rows"]
    ]
    lines += _table(["LLM", *columns, "mean"], rows)
    lines += [
        "",
        f"### Optimistic: each LLM's best estimator per task ({strategy} labels)",
        "",
        f"The best of many noisy {label}s, biased in its favour: not a ranking (the table above is)."
        if label != "AUROC"
        else "The maximum of many noisy AUROCs, biased upward: not a ranking (the table above is).",
        "",
    ]
    rows = [
        [
            row["llm"],
            *[
                f"`{c['estimator']}` {cell_summary(c)}" if (c := row["cells"].get(column)) else "-"
                for column in columns
            ],
        ]
        for row in headline["best"]
    ]
    return [*lines, *_table(["LLM", *columns], rows), ""]


def _fmt(value: float | None, digits: int = 3, *, signed: bool = False) -> str:
    return "n/a" if value is None else f"{value:{'+' if signed else ''}.{digits}f}"


def _cell_text(cell: Mapping[str, Any] | None) -> str:
    """``0.712 [0.620, 0.801]``, ``!`` after an unreliable figure; the status for an empty cell."""
    if cell is None:
        return "-"
    if cell["status"] != "ok":
        return {"undefined": "n/a", "unavailable": "unavail.", "not_run": "-", "not_computed": "n/c"}.get(
            cell["status"], cell["status"]
        )
    return cell_text(
        cell["value"], cell.get("ci_low"), cell.get("ci_high"), reliable=bool(cell.get("reliable"))
    )


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(x).replace("|", "\\|") for x in row) + " |" for row in rows]
    return out


def write_markdown(
    document: Mapping[str, Any],
    path: str | Path,
    *,
    header: str = "",
    command: str = "",
    title: str = "semuq-eval leaderboard",
) -> Path:
    """``leaderboard.md``: reads well in a pull request (AUROC per section; other metrics in the CSV)."""
    settings = document["settings"]
    boot = settings["bootstrap"]
    lines = [f"# {title}", ""]
    for table in (document.get("headline") or {}).values():
        lines += _headline_markdown(table)
    lines += across_judges_markdown(document.get("across_judges") or [])
    if header:
        lines += [header.rstrip(), ""]
    lines += [
        f"Built {document['created']}"
        + (f" by `{command}`" if command else "")
        + f". Format `{document['format']}` (schema: `{document['schema']}`). Every interval is a "
        f"{boot['method']} on one seeded bootstrap (seed {boot['seed']}) shared by every LLM and estimator of a "
        "section, so paired differences and ranks are valid. `!` = unreliable (minority label class below the "
        "run's `min_minority`, or fewer than 95% of the resamples gave a value); `n/a` = undefined (one class); "
        "`unavail.` = the run could not score it; `-` = not run." + _others(document),
        "",
    ]
    summary = document["comparisons"]["summary"]
    if summary:
        lines += ["## Enc vs its base (AUROC, paired bootstrap)", ""]
        rows = []
        for s in summary:
            r = s["reliable"]
            rows.append(
                [
                    f"{s['set']}: {document['comparisons']['sets'][s['set']]['description']}",
                    s["strategy"],
                    f"improves in {s['n_improved']} of {s['n_cells']} cells",
                    s["n_improved_significant"],
                    s["n_worse_significant"],
                    s["n_unavailable"],
                    _fmt(s["mean_difference"], signed=True),
                    f"improves in {r['n_improved']} of {r['n_cells']}; {r['n_improved_significant']} significantly "
                    f"better, {r['n_worse_significant']} significantly worse; mean Δ {_fmt(r['mean_difference'], signed=True)}",
                ]
            )
        lines += _table(
            [
                "comparison",
                "labels",
                "count",
                "significantly better",
                "significantly worse",
                "unavailable",
                "mean Δ",
                "reliable cells only (no `!`)",
            ],
            rows,
        )
        repeats = [sec["id"] for sec in document["sections"] if sec.get("repeats")]
        if repeats:
            lines += [
                "",
                "The counts and the heatmap leave out the `#common` sections "
                f"({', '.join(f'`{i}`' for i in repeats)}): their questions are also in their task's other "
                "sections.",
            ]
        lines.append("")
    cells = document["cells"]
    by_key = {(c["section"], c["llm"], c["estimator"], c["strategy"], c["metric"]): c for c in cells}
    for section in document["sections"]:
        sid = section["id"]
        judge = ", ".join(f"{k}={v}" for k, v in section["judge"].items())
        lines += [
            f"## {sid}",
            "",
            f"Task `{section['task']}`: {section['question_set']}; N = {section['n_samples']} samples; labels: "
            f"label set `{section['label_set']}` ({judge}); LLMs: {', '.join(section['llms'])}.",
        ]
        lines += [f"- {note}" for note in section["notes"]]
        lines.append("")
        runs = [r for r in document["runs"] if r["section"] == sid]
        acc = "; ".join(
            f"{r['llm']}: "
            + ", ".join(
                f"{s} {r['labels'][s].get('n_correct', 0)}/{r['labels'][s].get('n_incorrect', 0)}"
                for s in label_strategy_names()
            )
            for r in runs
        )
        lines += [f"Correct / incorrect answers: {acc}.", ""]
        for strategy in label_strategy_names():

            def mean(
                name: str, strategy: str = strategy, section: Mapping = section, sid: str = sid
            ) -> float:
                values = [
                    c["value"]
                    for llm in section["llms"]
                    if (c := by_key.get((sid, llm, name, strategy, "auroc"))) and c["value"] is not None
                ]
                return sum(values) / len(values) if values else -math.inf

            names = sorted(section["estimators"], key=lambda n: -mean(n))
            rows = [
                [
                    f"`{n}`",
                    *[_cell_text(by_key.get((sid, llm, n, strategy, "auroc"))) for llm in section["llms"]],
                ]
                for n in names
            ]
            lines += [f"### AUROC, {strategy} labels (95% CI)", ""]
            lines += _table(["estimator", *section["llms"]], rows)
            lines.append("")
        comps = [c for c in document["comparisons"]["rows"] if c["section"] == sid]
        if comps:
            lines += [
                "### Enc minus base: AUROC difference [95% CI] (`*` significant, `!` on a small sample)",
                "",
            ]
            columns = [(llm, s) for llm in section["llms"] for s in label_strategy_names()]
            rows = []
            for pair_set, pairs in document["comparisons"]["sets"].items():
                for name, base in pairs["pairs"]:
                    row = [f"{pair_set}: `{name}` − `{base}`"]
                    for llm, s in columns:
                        c = next(
                            (
                                x
                                for x in comps
                                if x["set"] == pair_set
                                and x["llm"] == llm
                                and x["strategy"] == s
                                and x["estimator"] == name
                                and x["base"] == base
                            ),
                            None,
                        )
                        if c is None or c["status"] != "ok":
                            row.append("-")
                        else:
                            row.append(
                                f"{_fmt(c['difference'], signed=True)} [{_fmt(c['ci_low'])}, {_fmt(c['ci_high'])}]"
                                + (" *" if c["significant"] else "")
                                + ("" if c["reliable"] else " !")
                            )
                    rows.append(row)
            lines += _table(["pair", *[f"{llm} ({s})" for llm, s in columns]], rows)
            lines.append("")
        pairs = [p for p in document["llm_pairs"] if p["section"] == sid]
        if pairs:
            lines += ["### LLM vs LLM (AUROC difference, paired by doc id)", ""]
            rows = [
                [
                    p["strategy"],
                    f"`{p['estimator']}` ({p['chosen']})",
                    f"{p['llm_a']} − {p['llm_b']}",
                    "-"
                    if p["status"] != "ok"
                    else f"{_fmt(p['difference'], signed=True)} [{_fmt(p['ci_low'])}, {_fmt(p['ci_high'])}]"
                    + (" *" if p["significant"] else ""),
                    "-" if p.get("p_value") is None else f"{p['p_value']:.3f}",
                ]
                for p in pairs
            ]
            lines += _table(["labels", "estimator", "LLMs", "difference", "p"], rows)
            lines.append("")
            chosen = {(p["strategy"], p["estimator"]) for p in pairs}
            ranks = [
                r
                for r in document["ranks"]["llms"]
                if r["section"] == sid and (r["strategy"], r["estimator"]) in chosen
            ]
            if ranks:
                lines += ["### LLM rank intervals (rank 1 = best AUROC; 95% of resamples)", ""]
                rows = [
                    [
                        r["strategy"],
                        f"`{r['estimator']}`",
                        r["llm"],
                        _fmt(r["auroc"]),
                        r["rank"],
                        f"{r['rank_low']}-{r['rank_high']}",
                    ]
                    for r in sorted(ranks, key=lambda r: (r["strategy"], r["estimator"], r["rank"] or 0))
                ]
                lines += _table(["labels", "estimator", "LLM", "AUROC", "rank", "95% rank interval"], rows)
                lines.append("")
    if document.get("skipped"):
        lines += ["## Skipped stores", ""]
        lines += [f"- `{e['path']}`: {e['reason']}" for e in document["skipped"]]
        lines.append("")
    lines += ["## Runs", ""]
    rows = [[*row[:-1], f"`{row[-1]}`"] for row in map(provenance_row, document["runs"])]
    lines += _table(list(PROVENANCE_COLUMNS), rows)
    lines.append("")
    path = Path(path)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
