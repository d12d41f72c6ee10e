
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
function whyNot(c) {
  // a cell without a figure says why: "one class only (0 correct / 100 incorrect)" rather than "undefined"
  const note = c.note == null ? "" : String(c.note);
  return note.startsWith(c.status + ": ") ? note.slice(c.status.length + 2) : (note || c.status);
}
function renderCells() {
  const rows = kept().sort(cmp), shown = rows.slice(0, limit);
  $("count").textContent = "Showing " + shown.length + " of " + rows.length + " cells (" + cells.length + " in all)";
  $("more").hidden = shown.length >= rows.length;
  $("cells").querySelector("tbody").replaceChildren(...shown.map(c => el("tr", {class: c.reliable === false ? "unreliable" : ""}, [
    el("td", {}, [c.section]), el("td", {}, [c.llm]), el("td", {}, [c.estimator]), el("td", {}, [c.label_set]),
    el("td", {}, [c.strategy]), el("td", {}, [c.metric]),
    el("td", {class: "num"}, num(c.value) == null ? [el("span", {class: "status", title: c.note == null ? "" : String(c.note)}, [whyNot(c)])] :
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
