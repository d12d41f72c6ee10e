"""A diagnosis as files: ``diagnosis.json``, ``diagnosis.md`` and ``diagnosis.png`` in one folder.

Markdown cells read ``mean [low, high] (n)``; a ``!`` marks a small sample (fewer than ``min_pairs`` questions) and
the plot draws those bars grey and hatched."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from semuq_eval.cell_text import cell_text
from semuq_eval.durable import replace_file
from semuq_eval.jsonio import write_json

__all__ = ["markdown", "plot", "write_report"]

_GROUPS = ("incorrect_equivalent", "correct_equivalent", "incorrect_different")
"""The clustering groups, in the order of the tables and the plot."""


def _num(x: Any, digits: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{digits}f}"


def _ci(r: Mapping[str, Any]) -> str:
    return f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}]"


def _row(lead: str, cells: Iterable[str]) -> str:
    return f"| {lead} | " + " | ".join(cells) + " |"


def _head(lead: str, columns: Sequence[str]) -> list[str]:
    """A table's header and rule: the ``lead`` columns, then one column per name (in backticks)."""
    return [
        _row(lead, (f"`{c}`" for c in columns)),
        "|---" * (lead.count("|") + 1) + "|" + "---|" * len(columns),
    ]


def _cell(r: Mapping[str, Any] | None) -> str:
    if not r or r.get("mean") is None:
        n = (r or {}).get("n_unavailable")
        return f"n/a ({n} unavailable)" if n else "n/a (no pairs)"
    return cell_text(
        r["mean"], r["ci_low"], r["ci_high"], reliable=not r.get("small_sample"), count=r["n_pairs"]
    )


def markdown(result: Mapping[str, Any]) -> str:
    """The diagnosis as Markdown tables (traps, clustering, localization), with counts and notes.

    Examples
    --------
    >>> from semuq_eval.diagnose.diagnosis import diagnose
    >>> from semuq_eval.diagnose.check_values import frozen_store_path
    >>> text = markdown(diagnose(frozen_store_path(), operators="lexical", max_questions=40, progress=False))
    >>> text.splitlines()[0]
    '# Operator diagnosis'
    """
    ops = list(result["operators"])
    c = result["counts"]
    down = result.get("unavailable") or {}
    lines = [
        "# Operator diagnosis",
        "",
        f"Stores: {', '.join(f'`{s}`' for s in result['stores']) or '(given questions)'}; labels: {result['labels']}.",
        f"{c['questions']} questions: greedy answers {c['greedy_correct']} correct / {c['greedy_incorrect']} "
        f"incorrect; sampled answers {c['samples_correct']} correct / {c['samples_incorrect']} incorrect.",
        f"Cells: mean similarity [95% CI] (pairs); CI: {result['settings']['ci']}; `!` = fewer than "
        f"{result['settings']['min_pairs']} questions (small sample).",
        "",
        *[f"Operator `{o}` is unavailable: {why}" for o, why in down.items()],
        "",
        "## Traps (App. F)",
        "",
        *_head("trap | pair | better", ops),
    ]
    for trap in result["traps"].values():
        lead = f"{trap['title']} | {trap['pair']} | {trap['better']}"
        lines.append(_row(lead, (_cell(trap["results"].get(o)) for o in ops)))
    lines += ["", "Questions without a pair:", ""]
    for name, trap in result["traps"].items():
        skipped = "; ".join(f"{why}: {n}" for why, n in trap["skipped"].items()) or "none"
        lines.append(
            f"- {trap['title']}: {trap['n_pairs']} pairs of {trap['n_eligible']} eligible questions; {skipped}"
        )
        if name == "context":
            info = trap["info"]
            lines.append(
                f"  - rewrite route: {info.get('rewriter', {}).get('route')}; sources: {info.get('sources')}"
            )
    cl = result["clustering"]
    lines += [
        "",
        "## Wrong-answer clustering (App. A.1)",
        "",
        f"Equivalent: the judge {cl.get('equivalence')} accepts one answer with the other as its reference "
        "(either direction).",
        "",
        *_head("group", ops),
        *(_row(cl[g]["pair"], (_cell(cl[g]["results"].get(o)) for o in ops)) for g in _GROUPS),
    ]
    gap = cl["gap"]["results"]
    cells = (f"{_num(gap[o]['difference'])} {_ci(gap[o])}" if o in gap else "n/a" for o in ops)
    lines.append(_row("gap (incorrect eq. - correct eq.)", cells))
    lines += [
        "",
        "## Token localization (App. A.4)",
        "",
        "| operator | tokens | top token in the reference | uniform chance | ratio | answers |",
        "|---|---|---|---|---|---|",
    ]
    for o in ops:
        loc = result["localization"].get(o, {})
        if "unavailable" in loc:
            lines.append(f"| `{o}` | - | {loc['unavailable']} | | | |")
            continue
        h, ch = loc["hit_rate"], loc["chance_rate"]
        flag = " !" if h.get("small_sample") else ""
        lines.append(
            f"| `{o}` | {loc['unit']} | {_num(h['mean'])} {_ci(h)} "
            f"({loc['n_hits']}/{loc['n_answers']}){flag} | {_num(ch['mean'])} | {_num(loc['ratio_over_chance'], 1)}x "
            f"| {loc['n_answers']} of {loc['n_eligible']} eligible |"
        )
    lines += comparison_lines(result)
    lines += ["", "## Examples", ""]
    for trap in result["traps"].values():
        ex = next(iter(trap.get("examples", {}).values()), [])
        if not ex:
            continue
        e = ex[0]
        sims = ", ".join(
            f"`{o}` {_num(trap['examples'][o][0].get('similarity'))}" for o in ops if trap["examples"].get(o)
        )
        lines += [f"- **{trap['title']}** ({e['question']}): A: {e['a']!r} / B: {e['b']!r}: {sims}"]
    return "\n".join(lines) + "\n"


def comparison_lines(result: Mapping[str, Any], heading: str = "## Paired differences") -> list[str]:
    """The paired differences (``diagnose(compare=...)``) under ``heading`` as a table: one row per trap,
    clustering group and localization, one column per comparison; ``*``: the interval excludes 0, ``!``: fewer
    questions than the diagnosis's ``min_pairs`` (never starred). Empty without comparisons."""
    comparisons = result.get("comparisons") or {}
    if not comparisons:
        return []
    min_questions = result["settings"]["min_pairs"]
    rows = [
        *((f"trap:{k}", f"{t['title']} (better: {t['better']})") for k, t in result["traps"].items()),
        *((f"cluster:{k}", f"{result['clustering'][k]['pair']} (clustering)") for k in _GROUPS),
        ("localization", "token localization hit rate (better: higher)"),
    ]
    lines = [
        "",
        heading,
        "",
        "First operator minus second on the same pairs (answers for localization): difference [95% CI] (pairs / "
        "questions), questions resampled together for both; `*`: the interval excludes 0; `!`: fewer than "
        f"{min_questions} questions (small sample, never starred).",
        "",
        *_head("figure", list(comparisons)),
    ]
    for key, title in rows:
        lines.append(_row(title, (_difference_cell(row, key, min_questions) for row in comparisons.values())))
    return lines


def _difference_cell(row: Mapping[str, Any], key: str, min_questions: int) -> str:
    """One comparison's cell of figure ``key`` (:func:`comparison_lines`)."""
    d = row.get(key)
    if "unavailable" in row:
        return f"n/a ({row['unavailable']})"
    if not d or d.get("difference") is None:
        return "n/a"
    if d["n_questions"] < min_questions:
        sig = " !"
    elif d["ci_low"] is not None and (d["ci_low"] > 0 or d["ci_high"] < 0):
        sig = " *"
    else:
        sig = ""
    n = d.get("n_pairs", d.get("n_answers"))
    return f"{d['difference']:+.3f} {_ci(d)} ({n} / {d['n_questions']}){sig}"


def plot(result: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Bars of every trap and clustering group per operator with their CIs, and localization vs chance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    ops = list(result["operators"])
    rows = [(f"{t['title']}\n({t['better']} is better)", t["results"]) for t in result["traps"].values()]
    rows += [(result["clustering"][g]["pair"], result["clustering"][g]["results"]) for g in _GROUPS]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 1]})
    width = 0.8 / max(1, len(ops))
    x = np.arange(len(rows))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, o in enumerate(ops):
        for i, (_, res) in enumerate(rows):
            r = res.get(o) or {}
            if r.get("mean") is None:
                continue
            small = r.get("small_sample")
            ax.bar(
                x[i] + (k - (len(ops) - 1) / 2) * width,
                r["mean"],
                width,
                color="lightgrey" if small else colors[k % len(colors)],
                edgecolor=colors[k % len(colors)],
                hatch="//" if small else None,
                yerr=_yerr(r),
                capsize=2,
                label=None if any((rr.get(o) or {}).get("mean") is not None for _, rr in rows[:i]) else o,
            )
    for i, (_, res) in enumerate(rows):
        if not any((res.get(o) or {}).get("mean") is not None for o in ops):
            ax.text(x[i], 0.05, "no pairs", ha="center", fontsize=8, color="grey")
    ax.set_xticks(x, [t for t, _ in rows], rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("mean similarity")
    ax.axvline(3.5, color="black", lw=0.5)
    ax.set_title("traps (left) and wrong-answer clustering (right); grey hatched: small sample", fontsize=9)
    ax.legend(fontsize=8)
    locs = [(o, result["localization"].get(o, {})) for o in ops]
    locs = [(o, loc) for o, loc in locs if "hit_rate" in loc and loc["hit_rate"].get("mean") is not None]
    for k, (_, loc) in enumerate(locs):
        h, ch = loc["hit_rate"], loc["chance_rate"]
        ax2.bar(
            k - 0.2,
            h["mean"],
            0.4,
            hatch="//" if h.get("small_sample") else None,
            yerr=_yerr(h),
            capsize=2,
            color="tab:blue",
            label="top token in reference" if k == 0 else None,
        )
        ax2.bar(k + 0.2, ch["mean"], 0.4, color="tab:grey", label="uniform chance" if k == 0 else None)
    ax2.set_xticks(range(len(locs)), [o for o, _ in locs])
    ax2.set_ylim(0, 1)
    ax2.set_title("token localization", fontsize=9)
    if locs:
        ax2.legend(fontsize=8)
    else:
        ax2.text(0.5, 0.5, "no operator with token weights", ha="center", transform=ax2.transAxes, fontsize=8)
    fig.tight_layout()
    path = replace_file(path, lambda fh: fig.savefig(fh, format="png", dpi=120))
    plt.close(fig)
    return path


def _yerr(r: Mapping[str, Any]) -> list[list[float]]:
    """A bar's error bar: its interval around its mean."""
    return [[r["mean"] - r["ci_low"]], [r["ci_high"] - r["mean"]]]


def write_report(result: Mapping[str, Any], folder: str | os.PathLike) -> dict[str, Path]:
    """Write ``diagnosis.json``, ``diagnosis.md`` and ``diagnosis.png`` into ``folder`` (created)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "json": write_json(folder / "diagnosis.json", result),
        "markdown": replace_file(folder / "diagnosis.md", markdown(result)),
        "plot": plot(result, folder / "diagnosis.png"),
    }
