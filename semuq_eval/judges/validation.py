"""Judges measured against annotated labels: a validation set, a judge's verdicts on it, and how often they agree.

A validation set (``leaderboards/validation``, under its ``PROTOCOL.md``; docs/judges.md) holds ``items.jsonl``
(``id``, ``llm``, ``set``, ``doc_id``, ``kind`` greedy | sampled, ``sample``, ``half`` dev | test, ``question``,
``references``, ``answer``) and ``annotations.jsonl`` (``id``, ``label`` 1 | 0, ``note``). :func:`judge_items`
writes a judge's verdicts (``verdicts/<name>.jsonl`` and ``.json``), :func:`panel_verdicts` combines two by a
rule, :func:`validation_report` gives a half's accuracy and Cohen's kappa with 95% bootstrap intervals over
questions and the confusion matrix, overall and per kind, LLM and set (``semuq-eval judge --validate FOLDER``).

Example
-------
>>> items = [ValidationItem(i, "m", "s", i, "greedy", None, "test", "q", ("a",), "a", i % 2) for i in range(8)]
>>> r = validation_report(items, {i: i % 2 for i in range(8)}, half="test", n_resamples=50)
>>> r["all"]["accuracy"]["value"], r["all"]["kappa"]["value"], r["all"]["n_items"]
(1.0, 1.0, 8)
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from semuq_eval.durable import writer_lock
from semuq_eval.jsonio import read_json, read_jsonl, write_json, write_jsonl
from semuq_eval.judges.panel import PANEL_RULES, check_panel, combine
from semuq_eval.options import Options, option

__all__ = [
    "HALVES",
    "ValidationItem",
    "ValidationOptions",
    "candidates",
    "judge_items",
    "panel_verdicts",
    "read_items",
    "read_verdicts",
    "validation_report",
    "verdict_names",
]

ITEMS, ANNOTATIONS, VERDICTS = "items.jsonl", "annotations.jsonl", "verdicts"
HALVES = ("dev", "test", "all")
VERDICTS_FORMAT = "semuq-validation-verdicts/1"
_KINDS = ("greedy", "sampled")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_ITEM_FIELDS = {"references": list, "llm": str, "set": str, "doc_id": int, "question": str, "answer": str}
"""The typed fields of an item, in the order they are checked."""


class ValidationOptions(Options):
    """``semuq-eval judge``'s options for a validation set: the half reported and the choice of a judge
    (docs/judges.md's table)."""

    folder: str | None = option(
        None,
        "a validation set: judge its items (--judge) or combine two verdict sets (--panel) and report agreement "
        "with the annotation; alone: the table of every verdict set",
        flag="--validate",
    )
    half: Literal[HALVES] = option("test", "the items reported: dev, test or all")
    choose: bool = option(
        False,
        "rank every candidate (each verdict set alone, with thresholds on p_correct, in a panel with --partner) "
        "by kappa on the dev half, choose the best (a tie within 0.01: the faster), report it on --half",
    )
    partner: str = option("string-contains", "the verdict set panels pair with")
    threshold: float | None = option(None, "labels p_correct > T for verdicts with a probability", ge=0, le=1)


@dataclass(frozen=True)
class ValidationItem:
    """One annotated answer of a validation set (module docstring)."""

    id: int
    llm: str
    set: str
    doc_id: int
    kind: str
    sample: int | None
    half: str
    question: str
    references: tuple[str, ...]
    answer: str
    label: int

    @property
    def question_id(self) -> tuple[str, int]:
        """The question the item answers (the bootstrap's unit): its set and doc id, whatever the LLM."""
        return self.set, self.doc_id


def _field(path: Path, number: int, obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise ValueError(
            f"{path}:{number}: field {key!r} must be {getattr(kind, '__name__', kind)}, got {value!r}"
        )
    return value


def read_items(folder: str | os.PathLike) -> list[ValidationItem]:
    """The annotated items of a validation set, in id order; ValueError naming file, line and field for a bad
    line, an item without annotation or an annotation without item."""
    folder = Path(folder)
    items_path, notes_path = folder / ITEMS, folder / ANNOTATIONS
    for path in (items_path, notes_path):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: not found (a validation set has {ITEMS} and {ANNOTATIONS})")
    labels: dict[int, int] = {}
    for number, obj in read_jsonl(notes_path):
        key = _field(notes_path, number, obj, "id", int)
        if obj.get("label") not in (0, 1) or isinstance(obj.get("label"), bool):
            raise ValueError(f"{notes_path}:{number}: field 'label' must be 1 or 0, got {obj.get('label')!r}")
        if key in labels:
            raise ValueError(f"{notes_path}:{number}: item {key} is annotated twice")
        labels[key] = int(obj["label"])
    items = []
    for number, obj in read_jsonl(items_path):
        key = _field(items_path, number, obj, "id", int)
        if key not in labels:
            raise ValueError(f"{items_path}:{number}: item {key} has no annotation in {notes_path}")
        if obj.get("kind") not in _KINDS or obj.get("half") not in ("dev", "test"):
            raise ValueError(
                f"{items_path}:{number}: fields 'kind' / 'half' must be greedy|sampled / dev|test"
            )
        fields = {name: _field(items_path, number, obj, name, kind) for name, kind in _ITEM_FIELDS.items()}
        fields["references"] = tuple(str(r) for r in fields["references"])
        fields.update(kind=obj["kind"], sample=obj.get("sample"), half=obj["half"], label=labels.pop(key))
        items.append(ValidationItem(key, **fields))
    if labels:
        raise ValueError(f"{notes_path}: annotations of items not in {items_path}: {sorted(labels)[:5]}")
    return sorted(items, key=lambda i: i.id)


def verdict_names(folder: str | os.PathLike) -> list[str]:
    """The finished verdict sets of a validation set (their manifest written)."""
    return sorted(
        p.stem for p in (Path(folder) / VERDICTS).glob("*.json") if p.with_suffix(".jsonl").is_file()
    )


def read_verdicts(folder: str | os.PathLike, name: str) -> tuple[dict[int, dict[str, Any]], dict[str, Any]]:
    """Verdict set ``name``: ``{item id: {"label": 1 | 0 | None, "p_correct": float | None}}`` and its manifest."""
    path = Path(folder) / VERDICTS / f"{name}.jsonl"
    meta_path = path.with_suffix(".json")
    if not meta_path.is_file() or not path.is_file():
        known = ", ".join(verdict_names(folder)) or "none"
        raise FileNotFoundError(f"{path}: no finished verdict set {name!r} (known: {known})")
    meta = read_json(meta_path)
    if meta.get("rows_sha256") != hashlib.sha256(path.read_bytes()).hexdigest():
        raise ValueError(
            f"{path}: its rows differ from those its manifest {meta_path.name} pins; judge again"
        )
    rows = {}
    for number, obj in read_jsonl(path):
        label = obj.get("label")
        if label not in (0, 1, None) or isinstance(label, bool):
            raise ValueError(f"{path}:{number}: field 'label' must be 1, 0 or null, got {label!r}")
        rows[_field(path, number, obj, "id", int)] = {"label": label, "p_correct": obj.get("p_correct")}
    return rows, meta


def _write_verdicts(
    folder: Path, name: str, rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]
) -> None:
    if not _NAME.fullmatch(name):
        raise ValueError(f"verdict set name {name!r}: use 1-64 letters, digits, '_', '.' or '-'")
    path = folder / VERDICTS / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".json").unlink(missing_ok=True)  # the manifest goes last
    write_jsonl(path, rows)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    write_json(
        path.with_suffix(".json"), {"format": VERDICTS_FORMAT, "name": name, **meta, "rows_sha256": sha}
    )


def _check_new(folder: Path, name: str, force: bool) -> None:
    if name in verdict_names(folder) and not force:
        raise FileExistsError(
            f"{folder / VERDICTS / name}.jsonl exists; choose another --name or pass --force"
        )


def judge_items(
    folder: str | os.PathLike, judge_name: str, options: Mapping[str, Any], *, name: str, force: bool = False
) -> dict[str, Any]:
    """Judge every item of the validation set with ``judge_name`` (the annotation is never shown to it) and
    write verdict set ``name``; returns its manifest (the judge's info, seconds, seconds per answer)."""
    from semuq_eval import judges

    folder = Path(folder)
    items = read_items(folder)
    with writer_lock(folder / VERDICTS / name, "verdict set"):
        _check_new(folder, name, force)
        judge = judges.get(judge_name, **dict(options))
        start = time.perf_counter()
        got = judge.batch(
            [i.question for i in items], [i.answer for i in items], [i.references for i in items]
        )
        seconds = time.perf_counter() - start
        rows = [
            {"id": i.id, "label": judges.as_label(v.label), "p_correct": v.p_correct}
            for i, v in zip(items, map(judges.as_verdict, got), strict=True)
        ]
        stats = dict(getattr(judge, "stats", {}) or {})
        asked = stats.get("judged") or len(items)
        meta = {
            "judge": judge.info,
            "options": dict(options),
            "seconds": round(seconds, 2),
            "seconds_per_answer": round(seconds / max(asked, 1), 4),
            "judge_stats": stats,
        }
        _write_verdicts(folder, name, rows, meta)
    return meta


def panel_verdicts(
    folder: str | os.PathLike, members: Sequence[str], rule: str, *, name: str, force: bool = False
) -> dict[str, Any]:
    """Write verdict set ``name``: the panel of two verdict sets under ``rule`` (:data:`~semuq_eval.judges.panel.PANEL_RULES`)."""
    members = check_panel(members, rule)
    folder = Path(folder)
    (a, meta_a), (b, meta_b) = (read_verdicts(folder, m) for m in members)
    if set(a) != set(b):
        raise ValueError(f"verdict sets {members[0]!r} and {members[1]!r} judged different items")
    with writer_lock(folder / VERDICTS / name, "verdict set"):
        _check_new(folder, name, force)
        rows = [
            {"id": k, "label": combine(a[k]["label"], b[k]["label"], rule), "p_correct": None}
            for k in sorted(a)
        ]
        meta = {
            "judge": {
                "judge": "panel",
                "rule": rule,
                "members": {m: x["judge"] for m, x in zip(members, (meta_a, meta_b), strict=True)},
            },
            "seconds_per_answer": round(
                meta_a.get("seconds_per_answer", 0) + meta_b.get("seconds_per_answer", 0), 4
            ),
        }
        _write_verdicts(folder, name, rows, meta)
    return meta


def _rates(y: np.ndarray, j: np.ndarray, w: np.ndarray) -> tuple[float, float | None]:
    """Weighted accuracy and Cohen's kappa of judge labels ``j`` against annotation ``y`` (weights: bootstrap
    counts); kappa None when chance agreement is 1 (both constant)."""
    total = w.sum()
    observed = float((w * (y == j)).sum() / total)
    py, pj = float((w * y).sum() / total), float((w * j).sum() / total)
    expected = py * pj + (1 - py) * (1 - pj)
    return observed, None if expected >= 1.0 - 1e-12 else (observed - expected) / (1 - expected)


def _group_values(
    y: np.ndarray, j: np.ndarray, questions: np.ndarray, counts: np.ndarray, n_unknown: int
) -> dict[str, Any]:
    """Accuracy, kappa (with percentile intervals over the resampled questions' counts) and the confusion matrix
    of one group of items."""
    accuracy, kappa = _rates(y, j, np.ones(len(y)))
    draws = [_rates(y, j, row[questions]) for row in counts if row[questions].sum() > 0]
    acc_draws = np.array([d[0] for d in draws])
    kappa_draws = np.array([d[1] for d in draws if d[1] is not None])

    def interval(value: float | None, values: np.ndarray) -> dict[str, Any]:
        bounds = (None, None) if value is None or not len(values) else np.percentile(values, [2.5, 97.5])
        return dict(zip(_VALUE_CI, (value, *(None if b is None else float(b) for b in bounds)), strict=True))

    confusion = [[int(((y == a) & (j == b)).sum()) for b in (0, 1)] for a in (0, 1)]
    return {
        "n_items": int(len(y)),
        "n_questions": int(len(np.unique(questions))),
        "n_unknown": n_unknown,
        "annotated_correct": int(y.sum()),
        "judged_correct": int(j.sum()),
        "accuracy": interval(accuracy, acc_draws),
        "kappa": interval(kappa, kappa_draws),
        "confusion": confusion,
    }


def validation_report(
    items: Sequence[ValidationItem],
    labels: Mapping[int, int | None],
    *,
    half: str = "test",
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """A judge's agreement with the annotation on one half (``dev``, ``test`` or ``all``): ``{"all": figures,
    "kind": {...}, "llm": {...}, "set": {...}}``, figures as in :func:`_group_values`; items the judge left
    unknown are counted (``n_unknown``) and left out. ``labels``: the judge's label per item id."""
    if half not in HALVES:
        raise ValueError(f"half {half!r}: choose one of {', '.join(HALVES)}")
    chosen = [i for i in items if half == "all" or i.half == half]
    missing = [i.id for i in chosen if i.id not in labels]
    if missing:
        raise ValueError(f"the verdicts have no label for items {missing[:5]} ({len(missing)} in all)")
    if all(labels[i.id] is None for i in chosen):
        raise ValueError(f"no item of half {half!r} has a known label")
    keys = sorted({i.question_id for i in chosen})
    index = {k: n for n, k in enumerate(keys)}
    counts = np.random.default_rng(seed).multinomial(
        len(keys), np.full(len(keys), 1 / len(keys)), n_resamples
    )

    def figures(group: Sequence[ValidationItem]) -> dict[str, Any]:
        sub = [i for i in group if labels[i.id] is not None]
        y = np.array([i.label for i in sub])
        j = np.array([int(labels[i.id]) for i in sub])
        q = np.array([index[i.question_id] for i in sub], dtype=int)
        return _group_values(y, j, q, counts, len(group) - len(sub))

    report: dict[str, Any] = {"half": half, "n_resamples": n_resamples, "seed": seed, "all": figures(chosen)}
    for facet in ("kind", "llm", "set"):
        values = sorted({getattr(i, facet) for i in chosen})
        report[facet] = {v: figures([i for i in chosen if getattr(i, facet) == v]) for v in values}
    return report


def thresholded(verdicts: Mapping[int, Mapping[str, Any]], threshold: float | None) -> dict[int, int | None]:
    """Each item's label: ``p_correct > threshold`` where the verdict has a probability and a threshold is given,
    else the verdict's label.

    Examples
    --------
    >>> thresholded({0: {"label": 1, "p_correct": 0.6}, 1: {"label": 0, "p_correct": None}}, 0.7)
    {0: 0, 1: 0}
    """
    return {
        key: v.get("label")
        if threshold is None or v.get("p_correct") is None
        else int(v["p_correct"] > threshold)
        for key, v in verdicts.items()
    }


def _ci(fig: Mapping[str, Any]) -> str:
    value, low, high = (None if x is None else round(x, 3) + 0.0 for x in (fig.get(k) for k in _VALUE_CI))
    if value is None:
        return "-"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]" if low is not None else f"{value:.3f}"


_VALUE_CI = ("value", "ci_low", "ci_high")


def format_report(report: Mapping[str, Any], name: str) -> str:
    """A verdict set's report (:func:`validation_report`) as plain-text lines: all items, then per kind, LLM, set."""
    lines = [
        f"judge {name!r} against the annotation, {report['half']} half (95% intervals: bootstrap over questions, "
        f"{report['n_resamples']} resamples, seed {report['seed']})",
        f"{'':<32} {'items':>5} {'quest.':>6} {'accuracy':>22} {'kappa':>22}  judged / annotated correct  "
        "confusion [[a0 j0, a0 j1], [a1 j0, a1 j1]]",
    ]

    def row(label: str, fig: Mapping[str, Any]) -> str:
        unknown = f" ({fig['n_unknown']} unknown)" if fig["n_unknown"] else ""
        return (
            f"{label:<32} {fig['n_items']:>5} {fig['n_questions']:>6} {_ci(fig['accuracy']):>22} "
            f"{_ci(fig['kappa']):>22}  {fig['judged_correct']:>6} / {fig['annotated_correct']:<17}  "
            f"{fig['confusion']}{unknown}"
        )

    lines.append(row("all", report["all"]))
    for facet in ("kind", "llm", "set"):
        lines += [row(f"{facet} {value}", fig) for value, fig in report[facet].items()]
    return "\n".join(lines)


def markdown_table(folder: str | os.PathLike, *, half: str = "test", threshold: float | None = None) -> str:
    """Every verdict set of the validation set against its annotation on ``half``, one Markdown row each:
    accuracy and kappa with intervals, overall and per kind, counts, seconds per answer."""
    items = read_items(folder)
    names = verdict_names(folder)
    if not names:
        raise FileNotFoundError(
            f"{Path(folder) / VERDICTS}: no verdict set (run: semuq-eval judge --validate ...)"
        )
    rows = [
        "| judge | accuracy | kappa | kappa, greedy | kappa, sampled | judged / annotated correct | s / answer |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in names:
        verdicts, meta = read_verdicts(folder, name)
        r = validation_report(items, thresholded(verdicts, threshold), half=half)
        a = r["all"]
        per = {k: _ci(r["kind"][k]["kappa"]) if k in r["kind"] else "-" for k in _KINDS}
        rows.append(
            f"| {name} | {_ci(a['accuracy'])} | {_ci(a['kappa'])} | {per['greedy']} | {per['sampled']} | "
            f"{a['judged_correct']} / {a['annotated_correct']} of {a['n_items']} | "
            f"{meta.get('seconds_per_answer', '-')} |"
        )
    return "\n".join(rows)


THRESHOLDS = tuple(round(0.05 * k, 2) for k in range(1, 20))
"""The thresholds on ``p_correct`` a choice tries (0.05 to 0.95), beside each judge's own rule."""
TIE = 0.01
"""Candidates whose kappa is within this of the best tie; the faster one is chosen (PROTOCOL.md)."""


def _figures(y: np.ndarray, got: list[int | None], partner: list[int | None]) -> dict[str, Any] | None:
    """Accuracy, kappa and unknown count of a candidate's labels ``got`` against the annotation ``y``; None with
    no known label on the half (nothing to rank) or the partner's label on every item (the string judge again,
    not a second judge)."""
    known = np.array([g is not None for g in got])
    if not known.any() or got == partner:
        return None
    j = np.array([0 if g is None else g for g in got])
    accuracy, kappa = _rates(y[known], j[known], np.ones(int(known.sum())))
    return {"accuracy": accuracy, "kappa": kappa, "n_unknown": int((~known).sum())}


def candidates(
    folder: str | os.PathLike,
    *,
    partner: str = "string-contains",
    half: str = "dev",
    thresholds: Sequence[float] = THRESHOLDS,
) -> list[dict[str, Any]]:
    """Every candidate second judge (PROTOCOL.md: an LLM judge, alone or in a panel with the string judge) with its
    accuracy and kappa on ``half`` (no interval: a choice ranks them), best first: each verdict set with
    probabilities alone (its own rule and each threshold on ``p_correct``) and in a panel with ``partner``
    (``both``, ``either``). A candidate that gives the partner's label on every item is the partner again and is
    left out; a tie within :data:`TIE` of kappa goes to the faster judge (``seconds_per_answer``)."""
    items = [i for i in read_items(folder) if half == "all" or i.half == half]
    sets = {n: read_verdicts(folder, n) for n in verdict_names(folder)}
    sets = {n: s for n, s in sets.items() if s[1].get("judge", {}).get("judge") != "panel"}
    if partner not in sets:
        raise FileNotFoundError(f"{Path(folder) / VERDICTS}: no verdict set {partner!r} to pair in panels")
    y = np.array([i.label for i in items])
    partner_labels = thresholded(sets[partner][0], None)
    partner_got = [partner_labels.get(i.id) for i in items]
    partner_seconds = float(sets[partner][1].get("seconds_per_answer") or 0.0)
    out = []
    for name, (verdicts, meta) in sets.items():
        if name == partner or not any(v.get("p_correct") is not None for v in verdicts.values()):
            continue
        seconds = float(meta.get("seconds_per_answer") or 0.0)
        for threshold in (None, *thresholds):
            labels = thresholded(verdicts, threshold)
            for rule in (None, *PANEL_RULES):
                got = [
                    labels[i.id] if rule is None else combine(labels[i.id], partner_labels[i.id], rule)
                    for i in items
                ]
                figures = _figures(y, got, partner_got)
                if figures is not None:
                    panel, extra = (f"{rule} with {partner}", partner_seconds) if rule else (None, 0.0)
                    row = {"judge": name, "threshold": threshold, "panel": panel, **figures}
                    out.append({**row, "seconds_per_answer": seconds + extra})
    if not out:
        raise FileNotFoundError(
            f"{Path(folder) / VERDICTS}: no LLM judge's verdict set (with p_correct) to choose"
        )
    out.sort(key=lambda c: -(c["kappa"] if c["kappa"] is not None else -2.0))
    best = out[0]["kappa"]
    if best is not None:
        tied = [c for c in out if c["kappa"] is not None and c["kappa"] >= best - TIE]
        chosen = min(tied, key=lambda c: (c["seconds_per_answer"], -c["kappa"]))
        out.remove(chosen)
        out.insert(0, chosen)
    return out
