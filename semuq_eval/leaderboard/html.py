"""``index.html`` and ``cells.js`` beside it: a static page that works from ``file://`` with no network (no
CDN, no fetch), and stays light as the board grows.

``index.html`` holds what does not grow with the number of estimators. First, within the first screen and
before any prose, the headline (:mod:`.headline`), written as static escaped HTML: per label strategy (greedy,
then majority) one row per LLM (sorted by the reference estimator's mean AUROC), one column per task and the
mean, each cell the AUROC with its CI, counts, accuracy and rank interval, flagged cells marked ``!``; its rule;
the optimistic best-estimator tables; and the headline's pictures (forest plot, rejection curves, reliability
diagrams). Then the sections, the plots and the runs' provenance.

The tables that grow with the board (every cell, the comparisons, the ranks) are in :data:`CELLS_JS`, compact
(:func:`page_data`), as a script the page adds once it has loaded (a ``<script src>``, which Chromium allows
from ``file://`` where it refuses ``fetch``), so the headline shows before the tables are read. From it a
small vanilla script renders:

- a sortable (click a column header; again to reverse) and filterable (section / task, LLM, label set, label
  strategy, metric, estimator text, reliable only) table of every cell, with a CI bar per figure; whatever the
  sort, the reliable cells come first and the small-sample ones (``!``) after them;
- the operator x aggregator heatmap of mean AUROC over the cells the filters keep (a ``#common`` section's
  only when it is the section chosen: its questions are also in its task's other sections);
- the Enc-minus-base AUROC deltas per cell (pair x LLM, like the paper's per-cell tables) with the
  "improves in X of Y cells" counts, for the label strategy chosen;
- LLM rank intervals and LLM-vs-LLM differences.

A ``cells.js`` from another build (its ``created`` is not the page's) or none is said in place of the tables.

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
from pathlib import Path
from typing import Any

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

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.2em 2em;color:#222}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
.header{background:#fff8e1;border:1px solid #f0d98c;padding:.6em 1em;border-radius:4px;max-width:75em}
.meta{color:#666;font-size:.85em}
#filters{display:flex;flex-wrap:wrap;gap:.6em 1.2em;align-items:end;margin:.8em 0;position:sticky;top:0;
 background:#fafafa;padding:.5em;border:1px solid #e4e4e4;z-index:2}
#filters label{display:flex;flex-direction:column;font-size:.8em;color:#555}
table{border-collapse:collapse;font-size:.82em}th,td{padding:.2em .5em;border-bottom:1px solid #eee;
 text-align:left;white-space:nowrap}th[data-key]{cursor:pointer;user-select:none;background:#f3f3f3}
th[data-key]:hover{background:#e6eefc}th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{position:relative;width:120px;height:10px;background:#f1f1f1;display:inline-block;vertical-align:middle}
.bar span{position:absolute;top:2px;height:6px;background:#4c72b0}.bar i{position:absolute;top:0;width:2px;
 height:10px;background:#111}.bar b{position:absolute;top:0;width:1px;height:10px;background:#c44}
tr.unreliable td{color:#888}tr.unreliable .bar span{background:#bbb}.flag{color:#c44;font-weight:bold}
.status{color:#a60}.hm td{text-align:center;min-width:4.5em}.sig{font-weight:bold}
.delta-pos{background:#dff0d8}.delta-neg{background:#f8dcdc}
#headline td,#best td{white-space:normal;min-width:11em;vertical-align:top}#headline td.flagged{color:#777}
#headline td.llm,#best td.llm{font-weight:bold;min-width:0;white-space:nowrap}.rule{font-size:.85em;color:#444;max-width:75em}
.hplots{display:flex;flex-wrap:wrap;gap:.5em;align-items:flex-start}.hplots img{max-width:100%;border:1px solid #ddd}
#more{margin:.4em 0}.plots img{max-width:100%;border:1px solid #ddd;margin:.4em 0}
"""

_JS = r"""
(function(){
"use strict";
// Data never reaches the page as markup: every value is a text node or a property (el, below); styles and
// classes come from numbers and fixed names only. The data comes from cells.js, loaded once the page (and its
// headline, static HTML) has loaded.
let D, cells;
const $ = id => document.getElementById(id);
// a table of cells.js: rows of values; a field with a list in `values` holds indexes into it
const decode = t => t.rows.map(r => Object.fromEntries(t.fields.map((f, i) => [f, t.values[f] ? t.values[f][r[i]] : r[i]])));
const num = v => (typeof v === "number" && isFinite(v)) ? v : null;
const fmt = (v, d) => num(v) == null ? "" : num(v).toFixed(d == null ? 3 : d);
const int = v => num(v) == null ? "" : String(Math.round(num(v)));
function el(tag, props, kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k === "class") e.className = v; else if (k === "style") e.style.cssText = v; else e.setAttribute(k, String(v));
  }
  for (const k of kids || []) e.append(k instanceof Node ? k : document.createTextNode(k == null ? "" : String(k)));
  return e;
}
let sortKey = "value", sortDir = -1, limit = 200;
const filters = {section: "f-section", llm: "f-llm", label_set: "f-labelset", strategy: "f-strategy", metric: "f-metric"};
function options(id, values, all) {
  $(id).replaceChildren(...(all ? [el("option", {value: ""}, ["all"])] : []), ...values.map(v => el("option", {value: v}, [v])));
}
const uniq = k => [...new Set(cells.map(c => String(c[k])))].sort();
function kept() {
  const text = $("f-estimator").value.trim().toLowerCase(), rel = $("f-reliable").checked;
  return cells.filter(c => Object.entries(filters).every(([k, id]) => !$(id).value || String(c[k]) === $(id).value)
    && (!text || String(c.estimator).toLowerCase().includes(text)) && (!rel || c.reliable === true));
}
function cmp(a, b) {
  // reliable cells first, whatever the sort: the top rows must not be small-sample noise (! cells follow)
  const r = (b.reliable === true) - (a.reliable === true); if (r) return r;
  const x = a[sortKey], y = b[sortKey];
  if (x == null && y == null) return 0; if (x == null) return 1; if (y == null) return -1;
  return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * sortDir;
}
const SCALE = {auroc: [0, 1, 0.5], auarc: [0, 1, null], ece: [0, 0.5, null], prr: [-1, 1, 0]};
function bar(c) {
  if (num(c.value) == null) return "";
  const [lo, hi, ref] = SCALE[c.metric] || [0, 1, null], w = v => Math.max(0, Math.min(100, 100 * (v - lo) / (hi - lo)));
  const kids = [];
  if (num(c.ci_low) != null && num(c.ci_high) != null)
    kids.push(el("span", {style: "left:" + w(c.ci_low) + "%;width:" + Math.max(0.5, w(c.ci_high) - w(c.ci_low)) + "%"}));
  if (ref != null) kids.push(el("b", {style: "left:" + w(ref) + "%"}));
  kids.push(el("i", {style: "left:" + w(c.value) + "%"}));
  return el("span", {class: "bar"}, kids);
}
function renderCells() {
  const rows = kept().sort(cmp), shown = rows.slice(0, limit);
  $("count").textContent = "Showing " + shown.length + " of " + rows.length + " cells (" + cells.length + " in all)";
  $("more").hidden = shown.length >= rows.length;
  $("cells").querySelector("tbody").replaceChildren(...shown.map(c => el("tr", {class: c.reliable === false ? "unreliable" : ""}, [
    el("td", {}, [c.section]), el("td", {}, [c.llm]), el("td", {}, [c.estimator]), el("td", {}, [c.label_set]),
    el("td", {}, [c.strategy]), el("td", {}, [c.metric]),
    el("td", {class: "num"}, num(c.value) == null ? [el("span", {class: "status"}, [c.status])] :
      [fmt(c.value), ...(c.reliable === false ? [" ", el("span", {class: "flag", title: "unreliable"}, ["!"])] : [])]),
    el("td", {class: "num"}, [num(c.ci_low) == null ? "" : "[" + fmt(c.ci_low) + ", " + fmt(c.ci_high) + "]"]),
    el("td", {}, [bar(c)]),
    el("td", {class: "num"}, [num(c.n_correct) == null ? "" : int(c.n_correct) + "/" + int(c.n_incorrect)]),
    el("td", {class: "num"}, [fmt(c.accuracy)]),
    el("td", {title: c.note == null ? "" : String(c.note)}, [String(c.note == null ? "" : c.note).slice(0, 60)])])));
  document.querySelectorAll("#cells th[data-key]").forEach(th => {
    th.classList.toggle("asc", th.dataset.key === sortKey && sortDir > 0);
    th.classList.toggle("desc", th.dataset.key === sortKey && sortDir < 0);
  });
}
function color(v) {
  if (v == null) return "#fff";
  const t = Math.max(0, Math.min(1, (v - 0.5) / 0.35));
  return "rgb(" + Math.round(255 - 180 * t) + "," + Math.round(255 - 110 * t) + "," + Math.round(255 - 40 * t) + ")";
}
function renderHeatmap() {
  // a #common section repeats questions of its task's other sections: counted only when chosen
  const sec = $("f-section").value, repeated = new Set(D.repeats);
  const rows = kept().filter(c => c.metric === "auroc" && num(c.value) != null && (c.section === sec || !repeated.has(c.section))), acc = {};
  rows.forEach(c => { const e = String(c.estimator), [a, o] = e.includes("@") ? e.split("@") : [e, "-"];
    const k = a + "\u0000" + o; (acc[k] = acc[k] || []).push(c.value); });
  const aggs = [...new Set(Object.keys(acc).map(k => k.split("\u0000")[0]))].sort();
  const ops = [...new Set(Object.keys(acc).map(k => k.split("\u0000")[1]))].sort();
  const t = $("heatmap");
  if (!aggs.length) { t.replaceChildren(el("tr", {}, [el("td", {}, ["no AUROC under these filters (set metric to auroc or all)"])])); return; }
  t.replaceChildren(el("tr", {}, [el("th", {}, ["aggregator \\ operator"]), ...ops.map(o => el("th", {}, [o]))]),
    ...aggs.map(a => el("tr", {}, [el("th", {}, [a]), ...ops.map(o => { const v = acc[a + "\u0000" + o];
      const m = v ? v.reduce((x, y) => x + y, 0) / v.length : null;
      return el("td", {style: "background:" + color(m), title: v ? v.length + " cells" : ""}, [m == null ? "" : fmt(m)]); })])));
}
function renderDeltas() {
  const strategy = $("f-strategy").value || "greedy", sec = $("f-section").value, llm = $("f-llm").value;
  const rows = D.comparisons.rows.filter(r => r.strategy === strategy && (!sec || r.section === sec) && (!llm || r.llm === llm));
  const cols = [...new Set(rows.map(r => r.section + " / " + r.llm))].sort();
  const pairs = [...new Set(rows.map(r => r.set + ": " + r.estimator + " \u2212 " + r.base))];
  const at = {}; rows.forEach(r => at[r.set + ": " + r.estimator + " \u2212 " + r.base + "|" + r.section + " / " + r.llm] = r);
  $("deltas").replaceChildren(el("tr", {}, [el("th", {}, ["pair (" + strategy + " labels)"]), ...cols.map(c => el("th", {}, [c]))]),
    ...pairs.map(p => el("tr", {}, [el("th", {}, [p]), ...cols.map(c => { const r = at[p + "|" + c];
      if (!r || r.status !== "ok" || num(r.difference) == null) return el("td", {title: r && r.note != null ? String(r.note) : ""}, ["-"]);
      return el("td", {class: "num " + (r.difference > 0 ? "delta-pos" : "delta-neg") + (r.significant === true ? " sig" : ""), title: "p = " + fmt(r.p_value)},
        [(r.difference > 0 ? "+" : "") + fmt(r.difference) + " [" + fmt(r.ci_low) + ", " + fmt(r.ci_high) + "]" +
         (r.significant === true ? " *" : "") + (r.reliable === true ? "" : " !")]); })])));
  $("delta-summary").replaceChildren(...D.comparisons.summary.filter(s => s.strategy === strategy).map(s => { const q = s.reliable || {};
    return el("li", {}, [el("b", {}, [s.set]), " (" + ((D.comparisons.sets[s.set] || {}).description || "") + "): improves in " + int(s.n_improved) + " of " +
      int(s.n_cells) + " cells, " + int(s.n_improved_significant) + " significantly; significantly worse in " + int(s.n_worse_significant) +
      "; on reliable cells only (no !): improves in " + int(q.n_improved) + " of " + int(q.n_cells) + ", " +
      int(q.n_improved_significant) + " significantly, significantly worse in " + int(q.n_worse_significant) +
      "; unavailable " + int(s.n_unavailable) + " (all sections and LLMs" +
      (D.repeats.length ? " but the #common ones, whose questions are also in other sections" : "") + ")"]); }));
}
function renderRanks() {
  const strategy = $("f-strategy").value, sec = $("f-section").value, text = $("f-estimator").value.trim().toLowerCase();
  const chosen = new Set(D.llm_pairs.map(p => p.section + "|" + p.strategy + "|" + p.estimator));
  const rows = D.ranks.llms.filter(r => (!strategy || r.strategy === strategy) && (!sec || r.section === sec) &&
    (text ? String(r.estimator).toLowerCase().includes(text) : chosen.has(r.section + "|" + r.strategy + "|" + r.estimator)));
  $("ranks").querySelector("tbody").replaceChildren(...rows.slice(0, 300).map(r => { const n = num(r.n_ranked) || 1, w = k => 100 * (k - 1) / n;
    const ranked = num(r.rank) != null && num(r.rank_low) != null && num(r.rank_high) != null;
    return el("tr", {}, [el("td", {}, [r.section]), el("td", {}, [r.strategy]), el("td", {}, [r.estimator]), el("td", {}, [r.llm]),
      el("td", {class: "num"}, [fmt(r.auroc)]), el("td", {class: "num"}, [ranked ? int(r.rank) : ""]),
      el("td", {class: "num"}, [(ranked ? int(r.rank_low) + "\u2013" + int(r.rank_high) : "") + " of " + int(n)]),
      el("td", {}, ranked ? [el("span", {class: "bar"}, [el("span", {style: "left:" + w(r.rank_low) + "%;width:" + (w(r.rank_high + 1) - w(r.rank_low)) + "%"}),
        el("i", {style: "left:" + (w(r.rank) + 50 / n) + "%"})])] : [])]); }));
  $("pairs").querySelector("tbody").replaceChildren(...D.llm_pairs.filter(p => (!strategy || p.strategy === strategy) && (!sec || p.section === sec)).map(p =>
    el("tr", {}, [el("td", {}, [p.section]), el("td", {}, [p.strategy]), el("td", {}, [p.estimator]), el("td", {}, [p.llm_a + " \u2212 " + p.llm_b]),
      el("td", {class: "num"}, [p.status !== "ok" ? "-" : fmt(p.difference) + " [" + fmt(p.ci_low) + ", " + fmt(p.ci_high) + "]" + (p.significant === true ? " *" : "")]),
      el("td", {class: "num"}, [fmt(p.p_value)])])));
}
function render() { renderCells(); renderHeatmap(); renderDeltas(); renderRanks(); }
function start() {
  const data = window.SEMUQ_LEADERBOARD;
  if (!data || data.created !== document.body.dataset.created) {
    $("count").textContent = "cells.js, beside this page, is from another build: rebuild the leaderboard (the headline above is this build's).";
    return;
  }
  D = {repeats: data.repeats, comparisons: {...data.comparisons, rows: decode(data.comparisons.rows)},
       llm_pairs: decode(data.llm_pairs), ranks: {llms: decode(data.ranks.llms)}};
  cells = decode(data.cells);
  options("f-section", uniq("section"), true); options("f-llm", uniq("llm"), true);
  options("f-labelset", uniq("label_set"), true);
  options("f-strategy", uniq("strategy"), true); options("f-metric", uniq("metric"), true);
  if (uniq("metric").includes("auroc")) $("f-metric").value = "auroc";
  if (uniq("strategy").includes("greedy")) $("f-strategy").value = "greedy";
  document.querySelectorAll("#cells th[data-key]").forEach(th => th.addEventListener("click", () => {
    if (sortKey === th.dataset.key) sortDir = -sortDir; else { sortKey = th.dataset.key; sortDir = th.dataset.num ? -1 : 1; }
    renderCells();
  }));
  Object.values(filters).forEach(id => $(id).addEventListener("change", () => { limit = 200; render(); }));
  $("f-estimator").addEventListener("input", () => { limit = 200; render(); });
  $("f-reliable").addEventListener("change", () => { limit = 200; render(); });
  $("more").addEventListener("click", () => { limit += 1000; renderCells(); });
  render();
  document.body.dataset.ready = "1";
}
window.addEventListener("load", () => {
  const script = el("script", {src: "cells.js"});
  script.addEventListener("load", start);
  script.addEventListener("error", () => {
    $("count").textContent = "cells.js, beside this page, could not be loaded: the tables below need it (the headline above does not).";
  });
  document.head.append(script);
});
})();
"""


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


def _headline_html(document: Mapping[str, Any], plots: Sequence[str]) -> str:
    """The headline block: per label strategy (greedy first) the reference table and its rule, then the
    optimistic tables and the headline's pictures."""
    tables = [t for t in (document.get("headline") or {}).values() if t.get("rows")]
    if not tables:
        return ""
    imgs = "".join(f'<img src="{html.escape(p)}" alt="{html.escape(p)}">' for p in plots)
    ids = [
        "" if i == 0 else "-" + re.sub(r"[^a-z0-9]+", "-", str(t["strategy"]).lower())
        for i, t in enumerate(tables)
    ]
    reference = "".join(
        f"<h2>Headline: {html.escape(str(t['reference']))} for every LLM "
        f"({html.escape(str(t['strategy']))} labels)</h2>"
        + _headline_table(t, "headline" + suffix, best=False)
        + f'<p class="rule">Rule: {_inline(str(t["rule"]))}. A cell: {html.escape(metric_label(t))} [95% CI]'
        f" (correct/incorrect answers), <span class=flag>!</span> = small sample, accuracy under "
        f"{html.escape(str(t['strategy']))}"
        " labels, rank (1 = best) and its 95% bootstrap interval.</p>"
        for t, suffix in zip(tables, ids, strict=True)
    )
    best = "".join(
        f"<p>{html.escape(str(t['strategy']))} labels</p>" + _headline_table(t, "best" + suffix, best=True)
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
        out.append(
            f"<h3>{html.escape(str(g['task']))}, {html.escape(str(g['strategy']))} labels: "
            f"{html.escape(str(g['estimator']))}</h3><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            f"</table><p>LLM order: {html.escape(taus)}</p>"
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
<style>{_CSS}</style></head>
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
<script>{_JS}</script>
</body></html>
"""


def write_html(document: Mapping[str, Any], path: str | Path, **kwargs: Any) -> Path:
    """Write :func:`render_html` to ``path`` (``index.html``) and the page's tables to :data:`CELLS_JS` beside it
    (``window.SEMUQ_LEADERBOARD = {...}``, :func:`page_data`)."""
    path = Path(path)
    path.with_name(CELLS_JS).write_text(
        f"window.SEMUQ_LEADERBOARD = {script_json(page_data(document))};\n", encoding="utf-8"
    )
    path.write_text(render_html(document, **kwargs), encoding="utf-8")
    return path
