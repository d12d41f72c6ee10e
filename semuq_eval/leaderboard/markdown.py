"""``leaderboard.md``: the board as Markdown that reads well in a pull request (the headline, the rankings across
judges, AUROC tables per section, the Enc-minus-base deltas, LLM ranks, provenance). It reads the document
(:func:`~.write.to_document`) only, as the page does."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from semuq_eval.cell_text import cell_text
from semuq_eval.durable import replace_file
from semuq_eval.judges import label_strategy_names
from semuq_eval.leaderboard.headline import cell_summary, metric_label
from semuq_eval.leaderboard.schema import PROVENANCE_COLUMNS, provenance_row

__all__ = ["across_judges_markdown", "write_markdown"]


def write_markdown(
    document: Mapping[str, Any],
    path: str | Path,
    *,
    header: str = "",
    command: str = "",
    title: str = "semuq-eval leaderboard",
) -> Path:
    """``leaderboard.md``: reads well in a pull request (AUROC per section; other metrics in the CSV)."""
    lines = [f"# {title}", ""]
    for table in (document.get("headline") or {}).values():
        lines += _headline_markdown(table)
    lines += across_judges_markdown(document.get("across_judges") or [])
    if header:
        lines += [header.rstrip(), ""]
    lines += _intro(document, command)
    lines += _comparison_summary(document)
    by_key = {
        (c["section"], c["llm"], c["estimator"], c["strategy"], c["metric"]): c for c in document["cells"]
    }
    for section in document["sections"]:
        lines += _section_intro(document, section)
        lines += _auroc_tables(section, by_key)
        lines += _comparison_table(document, section)
        lines += _llm_pair_tables(document, section)
    if document.get("skipped"):
        lines += ["## Skipped stores", ""]
        lines += [f"- `{e['path']}`: {e['reason']}" for e in document["skipped"]]
        lines.append("")
    lines += ["## Runs", ""]
    rows = [[*row[:-1], f"`{row[-1]}`"] for row in map(provenance_row, document["runs"])]
    lines += _table(list(PROVENANCE_COLUMNS), rows)
    lines.append("")
    return replace_file(path, "\n".join(lines))


def _intro(document: Mapping[str, Any], command: str) -> list[str]:
    """What built the board and how to read its cells."""
    boot = document["settings"]["bootstrap"]
    return [
        f"Built {document['created']}"
        + (f" by `{command}`" if command else "")
        + f". Format `{document['format']}` (schema: `{document['schema']}`). Every interval is a "
        f"{boot['method']} on one seeded bootstrap (seed {boot['seed']}) shared by every LLM and estimator of a "
        "section, so paired differences and ranks are valid. `!` = unreliable (minority label class below the "
        "run's `min_minority`, or fewer than 95% of the resamples gave a value); `n/a` = undefined (one class); "
        "`unavail.` = the run could not score it; `-` = not run." + _others(document),
        "",
    ]


def _comparison_summary(document: Mapping[str, Any]) -> list[str]:
    """The Enc-vs-base counts over the board (none when no comparison set ran)."""
    summary = document["comparisons"]["summary"]
    if not summary:
        return []
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
    head = [
        "comparison",
        "labels",
        "count",
        "significantly better",
        "significantly worse",
        "unavailable",
        "mean Δ",
        "reliable cells only (no `!`)",
    ]
    lines = ["## Enc vs its base (AUROC, paired bootstrap)", "", *_table(head, rows)]
    repeats = [sec["id"] for sec in document["sections"] if sec.get("repeats")]
    if repeats:
        lines += [
            "",
            "The counts and the heatmap leave out the `#common` sections "
            f"({', '.join(f'`{i}`' for i in repeats)}): their questions are also in their task's other "
            "sections.",
        ]
    return [*lines, ""]


def _section_intro(document: Mapping[str, Any], section: Mapping[str, Any]) -> list[str]:
    """A section's heading: task, questions, N, labels, LLMs, notes and every run's correct / incorrect counts."""
    sid = section["id"]
    judge = ", ".join(f"{k}={v}" for k, v in section["judge"].items())
    lines = [
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
    return [*lines, f"Correct / incorrect answers: {acc}.", ""]


def _auroc_tables(section: Mapping[str, Any], by_key: Mapping[tuple, Mapping[str, Any]]) -> list[str]:
    """One AUROC table per label strategy, estimators by their mean AUROC over the section's LLMs."""
    sid, lines = section["id"], []
    for strategy in label_strategy_names():

        def mean(name: str, strategy: str = strategy) -> float:
            values = [
                c["value"]
                for llm in section["llms"]
                if (c := by_key.get((sid, llm, name, strategy, "auroc"))) and c["value"] is not None
            ]
            return sum(values) / len(values) if values else -math.inf

        names = sorted(section["estimators"], key=lambda n: -mean(n))
        rows = [
            [f"`{n}`", *[_cell_text(by_key.get((sid, llm, n, strategy, "auroc"))) for llm in section["llms"]]]
            for n in names
        ]
        lines += [f"### AUROC, {strategy} labels (95% CI)", ""]
        lines += _table(["estimator", *section["llms"]], rows)
        lines.append("")
    return lines


def _comparison_table(document: Mapping[str, Any], section: Mapping[str, Any]) -> list[str]:
    """Each comparison pair's paired AUROC difference per LLM and label strategy (none without comparisons)."""
    sid = section["id"]
    comps = [c for c in document["comparisons"]["rows"] if c["section"] == sid]
    if not comps:
        return []
    found = {(c["set"], c["llm"], c["strategy"], c["estimator"], c["base"]): c for c in reversed(comps)}
    columns = [(llm, s) for llm in section["llms"] for s in label_strategy_names()]
    rows = []
    for pair_set, pairs in document["comparisons"]["sets"].items():
        for name, base in pairs["pairs"]:
            row = [f"{pair_set}: `{name}` − `{base}`"]
            for llm, s in columns:
                c = found.get((pair_set, llm, s, name, base))
                if c is None or c["status"] != "ok":
                    row.append("-")
                else:
                    row.append(
                        f"{_fmt(c['difference'], signed=True)} [{_fmt(c['ci_low'])}, {_fmt(c['ci_high'])}]"
                        + (" *" if c["significant"] else "")
                        + ("" if c["reliable"] else " !")
                    )
            rows.append(row)
    return [
        "### Enc minus base: AUROC difference [95% CI] (`*` significant, `!` on a small sample)",
        "",
        *_table(["pair", *[f"{llm} ({s})" for llm, s in columns]], rows),
        "",
    ]


def _llm_pair_tables(document: Mapping[str, Any], section: Mapping[str, Any]) -> list[str]:
    """LLM-vs-LLM paired differences and the LLMs' rank intervals (none for a section of one LLM)."""
    sid = section["id"]
    pairs = [p for p in document["llm_pairs"] if p["section"] == sid]
    if not pairs:
        return []
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
    lines = ["### LLM vs LLM (AUROC difference, paired by doc id)", ""]
    lines += [*_table(["labels", "estimator", "LLMs", "difference", "p"], rows), ""]
    chosen = {(p["strategy"], p["estimator"]) for p in pairs}
    ranks = [
        r
        for r in document["ranks"]["llms"]
        if r["section"] == sid and (r["strategy"], r["estimator"]) in chosen
    ]
    if ranks:
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
        lines += ["### LLM rank intervals (rank 1 = best AUROC; 95% of resamples)", ""]
        lines += [*_table(["labels", "estimator", "LLM", "AUROC", "rank", "95% rank interval"], rows), ""]
    return lines


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
        kappas = [
            f"{a['llm']} ({a['label_set_a']} vs {a['label_set_b']}): kappa {_num(a['kappa'])}, agree "
            f"{_num(a['observed'])} on {a['n']} answers, confusion {a['confusion']}"
            for a in g.get("label_agreement") or []
        ]
        lines += [
            "",
            "LLM order: " + "; ".join(taus) + ".",
            "Estimator order: " + "; ".join(per_llm) + ".",
            *(
                ["Labels (Cohen's kappa; confusion [[0/0, 0/1], [1/0, 1/1]]): " + "; ".join(kappas) + "."]
                if kappas
                else []
            ),
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


def _judge(headline: Mapping[str, Any]) -> str:
    """``, label set NAME`` for a board's headline under one of several judges; empty otherwise."""
    return f", label set `{headline['label_set']}`" if headline.get("label_set") else ""


def _headline_markdown(headline: Mapping[str, Any]) -> list[str]:
    """One label strategy's headline tables (reference estimator, then the optimistic best per task), Markdown
    lines."""
    if not headline.get("rows"):
        return []
    columns, strategy, label = headline["columns"], headline["strategy"], metric_label(headline)
    lines = [
        f"## Headline: `{headline['reference']}` for every LLM ({strategy} labels{_judge(headline)})",
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
        f"### Optimistic: each LLM's best estimator per task ({strategy} labels{_judge(headline)})",
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
