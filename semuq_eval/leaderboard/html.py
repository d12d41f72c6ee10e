"""``index.html`` and ``cells.js`` beside it: a static page that works from ``file://`` with no network (no
CDN, no fetch), and stays light as the board grows.

``index.html`` holds, as static escaped HTML, what does not grow with the estimators: the headline first (tables,
rule, optimistic tables, pictures), then the sections, plots and provenance. The tables that grow (cells,
comparisons, ranks) are in :data:`CELLS_JS`, compact (:func:`page_data`): a ``<script src>`` added once the page
has loaded (Chromium allows it from ``file://``, unlike ``fetch``), from which ``page.js`` renders the sortable,
filterable cell table, the heatmap, the Enc-minus-base deltas and the LLM ranks. A missing ``cells.js``, or one
from another build (``created`` differs), is said in place of the tables (docs/leaderboard.md, "The page").

Examples
--------
>>> page = render_html({"format": "semuq-leaderboard/2", "created": "now", "cells": [], "sections": [],
...     "runs": [], "comparisons": {"rows": [], "summary": [], "sets": {}}, "llm_pairs": [],
...     "ranks": {"llms": [], "estimators": []}, "settings": {}, "heatmap": []})
>>> page.startswith("<!DOCTYPE html>") and "http" not in page.split("<body")[1]
True
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from fnmatch import fnmatch
from importlib import resources
from pathlib import Path
from typing import Any

from semuq_eval.durable import replace_file
from semuq_eval.leaderboard.headline import cell_summary, metric_label
from semuq_eval.leaderboard.plots import HEADLINE_PLOTS
from semuq_eval.leaderboard.schema import CELL_FIELDS, PROVENANCE_COLUMNS, provenance_row

__all__ = ["CELLS_JS", "page_data", "render_html", "write_html"]

_PAGE_FIELDS = {
    "cells": [
        f for f in CELL_FIELDS if f not in ("task", "aggregator", "operator", "n", "n_missing", "n_valid_resamples", "source")
    ],
    "comparisons": ["set", "section", "llm", "strategy", "estimator", "base", "difference", "ci_low", "ci_high",
                    "p_value", "significant", "reliable", "status", "note"],
    "llm_pairs": ["section", "strategy", "estimator", "llm_a", "llm_b", "difference", "ci_low", "ci_high", "p_value",
                  "significant", "status"],
    "ranks": ["section", "strategy", "estimator", "llm", "auroc", "rank", "rank_low", "rank_high", "n_ranked"],
}  # fmt: skip
"""The fields of each table the page shows or filters on (``cells.js`` holds these only)."""

CELLS_JS = "cells.js"
"""The page's tables, beside ``index.html`` (:func:`write_html`)."""


def _page_file(name: str) -> str:
    """The page's style (``page.css``) or script (``page.js``): package data in ``semuq_eval/leaderboard/page/``,
    inlined into the page."""
    return (resources.files("semuq_eval.leaderboard") / "page" / name).read_text(encoding="utf-8")


_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(data: Any) -> str:
    """``data`` as JSON safe to embed in a ``<script>`` element: ``<``, ``>``, ``&`` and the JavaScript line
    separators are written as ``\\uXXXX`` escapes, so no string can close the element or open a comment.

    Examples
    --------
    >>> script_json({"task": "x </script><!--"})
    '{"task":"x \\\\u003c/script\\\\u003e\\\\u003c!--"}'
    """
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_ESCAPES[m.group()], text)


def _coded(records: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> dict[str, Any]:
    """Records as a compact table of ``cells.js``: rows of values in ``fields`` order, floats rounded to 4
    decimals (the page shows 3); a field with few distinct values (at most a quarter of the rows: names,
    labels, statuses, counts) holds indexes into its list in ``values``.

    Examples
    --------
    >>> _coded([{"llm": "a", "value": v} for v in (0.123456, 0.5, 0.25, 1.0)], ["llm", "value"])["rows"]
    [[0, 0.1235], [0, 0.5], [0, 0.25], [0, 1.0]]
    """
    columns = {
        f: [round(v, 4) if isinstance(v, float) else v for v in (r.get(f) for r in records)] for f in fields
    }
    values: dict[str, list[Any]] = {}
    for f, column in columns.items():
        # a value's type is part of its key: true and 1 are two values
        keys = [(type(v), v if isinstance(v, (str, int, float, type(None))) else repr(v)) for v in column]
        first: dict[tuple, Any] = {}
        for key, v in zip(keys, column, strict=True):
            first.setdefault(key, v)
        if len(first) <= len(column) / 4:
            index = {key: i for i, key in enumerate(first)}
            values[f] = list(first.values())
            columns[f] = [index[key] for key in keys]
    rows = [list(row) for row in zip(*columns.values(), strict=True)] if records else []
    return {"fields": list(fields), "values": values, "rows": rows}


def page_data(document: Mapping[str, Any]) -> dict[str, Any]:
    """What ``cells.js`` gives the page: the cells, the Enc-minus-base comparisons, the LLM-vs-LLM differences
    and the LLM rank intervals, as compact tables (:func:`_coded`); ``created`` ties it to its page."""
    comparisons = document["comparisons"]
    return {
        "created": str(document.get("created")),
        "repeats": [s["id"] for s in document["sections"] if s.get("repeats")],
        "cells": _coded(document["cells"], _PAGE_FIELDS["cells"]),
        "comparisons": {
            "sets": comparisons.get("sets", {}),
            "summary": comparisons["summary"],
            "rows": _coded(comparisons["rows"], _PAGE_FIELDS["comparisons"]),
        },
        "llm_pairs": _coded(document["llm_pairs"], _PAGE_FIELDS["llm_pairs"]),
        "ranks": {"llms": _coded(document["ranks"]["llms"], _PAGE_FIELDS["ranks"])},
    }


def _inline(text: str) -> str:
    """Escaped text with Markdown's inline ``code`` and **bold** (the header is written for both outputs).

    Examples
    --------
    >>> _inline("**tiny** models: `semuq-eval run` <x>")
    '<b>tiny</b> models: <code>semuq-eval run</code> &lt;x&gt;'
    """
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


def _runs_table(document: Mapping[str, Any]) -> str:
    rows = []
    for run in document["runs"]:
        cells = provenance_row(run)
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    head = list(PROVENANCE_COLUMNS)
    return (
        "<table><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _headline_table(headline: Mapping[str, Any], table_id: str, best: bool) -> str:
    """One headline table as escaped static HTML (the reference table, or the optimistic best one)."""
    columns = [str(c) for c in headline["columns"]] + ([] if best else ["mean"])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["LLM", *columns])
    body = []
    for row in headline["best" if best else "rows"]:
        tds = [f'<td class="llm">{html.escape(str(row["llm"]))}</td>']
        for column in columns:
            cell = row["mean"] if column == "mean" else row["cells"].get(column)
            text = cell_summary(cell)
            if best and cell is not None:
                text = f"{cell.get('estimator')}: {text}"
            flagged = cell is not None and cell.get("status") == "ok" and not cell.get("reliable")
            value = cell.get("value") if cell else None
            attrs = f' data-value="{value:.6f}"' if isinstance(value, float) else ""
            tds.append(f'<td class="num{" flagged" if flagged else ""}"{attrs}>{html.escape(text)}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _labels(table: Mapping[str, Any]) -> str:
    """A headline table's labels: ``greedy``, or ``greedy, label set llm`` on a board of several judges."""
    name = str(table["strategy"])
    return f"{name}, label set {table['label_set']}" if table.get("label_set") else name


def _headline_html(document: Mapping[str, Any], plots: Sequence[str]) -> str:
    """The headline block: per label strategy (greedy first) the reference table and its rule, then the
    optimistic tables and the headline's pictures."""
    tables = [t for t in (document.get("headline") or {}).values() if t.get("rows")]
    if not tables:
        return ""
    imgs = "".join(f'<img src="{html.escape(p)}" alt="{html.escape(p)}">' for p in plots)
    ids = [
        "" if i == 0 else "-" + re.sub(r"[^a-z0-9]+", "-", _labels(t).lower()).strip("-")
        for i, t in enumerate(tables)
    ]
    reference = "".join(
        f"<h2>Headline: {html.escape(str(t['reference']))} for every LLM "
        f"({html.escape(_labels(t))} labels)</h2>"
        + _headline_table(t, "headline" + suffix, best=False)
        + f'<p class="rule">Rule: {_inline(str(t["rule"]))}. A cell: {html.escape(metric_label(t))} [95% CI]'
        f" (correct/incorrect answers), <span class=flag>!</span> = small sample, accuracy under "
        f"{html.escape(str(t['strategy']))}"
        " labels, rank (1 = best) and its 95% bootstrap interval.</p>"
        for t, suffix in zip(tables, ids, strict=True)
    )
    best = "".join(
        f"<p>{html.escape(_labels(t))} labels</p>" + _headline_table(t, "best" + suffix, best=True)
        for t, suffix in zip(tables, ids, strict=True)
    )
    return (
        reference
        + "<details><summary>Optimistic: each LLM's best estimator per task (the maximum of many noisy AUROCs, "
        "biased upward; not a ranking)</summary>"
        + best
        + "</details>"
        + (f'<div class="hplots" id="headline-plots">{imgs}</div>' if imgs else "")
    )


def _across_judges_html(groups: Sequence[Mapping[str, Any]]) -> str:
    """The rankings across judges (:mod:`.across_judges`) as static HTML; empty for a board with one judge."""
    if not groups:
        return ""
    out = [
        '<h2>Rankings across judges</h2><p class="rule">Each LLM\'s rank (1 = best) by the reference estimator '
        "under each label set, with its 95% bootstrap interval, and the mean rank over the label sets; "
        "<b>disagree</b>: two label sets' rank intervals do not overlap. Kendall's tau compares two label sets' "
        "orders (1 = the same).</p>"
    ]
    for g in groups:
        sets = [str(x) for x in g["label_sets"]]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in ["LLM", *sets, "mean rank", ""])
        body = "".join(
            "<tr>"
            + f'<td class="llm">{html.escape(str(r["llm"]))}</td>'
            + "".join(
                f"<td>{html.escape(_rank(r['ranks'][ls], *r['rank_intervals'][ls]))}</td>" for ls in sets
            )
            + f"<td>{html.escape(_rank(r['mean_rank'], r['mean_rank_low'], r['mean_rank_high']))}</td>"
            + f"<td>{'disagree' if r['disagree'] else ''}</td></tr>"
            for r in g["llms"]
        )
        taus = "; ".join(
            f"{a['label_set_a']} vs {a['label_set_b']}: tau "
            f"{'n/a' if a['kendall_tau'] is None else format(a['kendall_tau'], '.2f')}"
            for a in g["agreement"]
        )
        kappas = "; ".join(
            f"{a['llm']} ({a['label_set_a']} vs {a['label_set_b']}): "
            f"{'n/a' if a['kappa'] is None else format(a['kappa'], '.2f')} on {a['n']} answers"
            for a in g.get("label_agreement") or []
        )
        out.append(
            f"<h3>{html.escape(str(g['task']))}, {html.escape(str(g['strategy']))} labels: "
            f"{html.escape(str(g['estimator']))}</h3><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            f"</table><p>LLM order: {html.escape(taus)}</p>"
            + (f"<p>Labels, Cohen's kappa: {html.escape(kappas)}</p>" if kappas else "")
        )
    return "".join(out)


def _rank(rank: float | None, low: float | None, high: float | None) -> str:
    if rank is None:
        return "-"
    return f"{rank:g}" + (f" ({low:g}-{high:g})" if low is not None and high is not None else "")


def render_html(
    document: Mapping[str, Any],
    *,
    header: str = "",
    plots: Sequence[str] = (),
    title: str = "semuq-eval leaderboard",
) -> str:
    """The page (module docstring) for a ``leaderboard.json`` document; ``plots`` are relative PNG paths."""
    boot = (document.get("settings") or {}).get("bootstrap") or {}
    head_text = "".join(f"<p>{_inline(p)}</p>" for p in header.strip().split("\n\n") if p.strip())
    sections = "".join(
        f"<li><b>{html.escape(str(s['id']))}</b>: {html.escape(str(s['question_set']))}; "
        f"N = {html.escape(str(s['n_samples']))}; label set {html.escape(str(s['label_set']))}; "
        f"LLMs: {html.escape(', '.join(map(str, s['llms'])))}"
        + "".join(f"<br><i>{html.escape(str(n))}</i>" for n in s["notes"])
        + "</li>"
        for s in document["sections"]
    )
    skipped = "".join(
        f"<li>{html.escape(e['path'])}: {html.escape(e['reason'])}</li>" for e in document.get("skipped", [])
    )
    skipped = f"<h2>Skipped stores</h2><ul>{skipped}</ul>" if skipped else ""
    columns = [
        ("section", "section", False),
        ("llm", "LLM", False),
        ("estimator", "estimator", False),
        ("label_set", "label set", False),
        ("strategy", "labels", False),
        ("metric", "metric", False),
        ("value", "value", True),
        ("ci_low", "95% CI", True),
        (None, "CI bar", False),
        ("n_incorrect", "correct/incorrect", True),
        ("accuracy", "accuracy", True),
        ("note", "note", False),
    ]
    ths = "".join(
        f'<th data-key="{k}"{" data-num=1" if num else ""}>{label}</th>' if k else f"<th>{label}</th>"
        for k, label, num in columns
    )
    pictures = [p for p in plots if any(fnmatch(Path(p).name, pattern) for pattern in HEADLINE_PLOTS)]
    imgs = "".join(
        f'<figure><img src="{html.escape(p)}" alt="{html.escape(p)}"><figcaption>{html.escape(p)}</figcaption></figure>'
        for p in plots
        if p not in pictures
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_page_file("page.css")}</style></head>
<body data-created="{html.escape(str(document.get("created")))}">
<h1>{html.escape(title)}</h1>
{_headline_html(document, pictures)}
{_across_judges_html(document.get("across_judges") or [])}
{f'<div class="header">{head_text}</div>' if head_text else ""}
<p class="meta">Built {html.escape(str(document.get("created")))}; format {html.escape(str(document.get("format")))};
{html.escape(str(boot.get("method", "")))}, seed {html.escape(str(boot.get("seed", "")))}, shared by every LLM and estimator of a
section. Grey rows and <span class="flag">!</span> = unreliable (small minority class or few valid resamples), listed after the reliable cells whatever the sort.
Data: leaderboard.json, leaderboard.csv, leaderboard.md; the tables below load from cells.js.</p>
<h2>Sections</h2><ul>{sections}</ul>{skipped}
<div id="filters">
<label>section<select id="f-section"></select></label>
<label>LLM<select id="f-llm"></select></label>
<label>label set<select id="f-labelset"></select></label>
<label>labels<select id="f-strategy"></select></label>
<label>metric<select id="f-metric"></select></label>
<label>estimator contains<input id="f-estimator" type="search" placeholder="e.g. @enc"></label>
<label><span><input id="f-reliable" type="checkbox"> reliable only</span></label>
</div>
<h2>Cells</h2>
<p id="count">Loading the tables (cells.js)…</p>
<table id="cells"><thead><tr>{ths}</tr></thead><tbody></tbody></table>
<button id="more" type="button">show more</button>
<h2>Mean AUROC: operator x aggregator (cells under the filters)</h2>
<table id="heatmap" class="hm"></table>
<h2>Enc minus base: AUROC difference per cell [95% paired CI], * = significant</h2>
<ul id="delta-summary"></ul>
<table id="deltas"></table>
<h2>LLM rank intervals (rank 1 = best AUROC; 95% of resamples)</h2>
<p class="meta">For the estimators of the LLM-vs-LLM tests, or those matching "estimator contains".</p>
<table id="ranks"><thead><tr><th>section</th><th>labels</th><th>estimator</th><th>LLM</th><th>AUROC</th><th>rank</th>
<th>interval</th><th></th></tr></thead><tbody></tbody></table>
<h2>LLM vs LLM (AUROC difference, paired by doc id)</h2>
<table id="pairs"><thead><tr><th>section</th><th>labels</th><th>estimator</th><th>LLMs</th><th>difference [95% CI]</th>
<th>p</th></tr></thead><tbody></tbody></table>
<h2>Plots</h2><div class="plots">{imgs or "<p>(built without plots)</p>"}</div>
<h2>Runs and provenance</h2>
{_runs_table(document)}
<script>{_page_file("page.js")}</script>
</body></html>
"""


def write_html(document: Mapping[str, Any], path: str | Path, **kwargs: Any) -> Path:
    """Write :func:`render_html` to ``path`` (``index.html``) and the page's tables to :data:`CELLS_JS` beside it
    (``window.SEMUQ_LEADERBOARD = {...}``, :func:`page_data`)."""
    path = Path(path)
    replace_file(
        path.with_name(CELLS_JS), f"window.SEMUQ_LEADERBOARD = {script_json(page_data(document))};\n"
    )
    return replace_file(path, render_html(document, **kwargs))
