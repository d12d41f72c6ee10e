"""``semuq-eval judge STORE``: label a finished run store again with another judge, without the LLM under test.

Every answer of the store (the greedy one and the N samples of every question) is judged once (identical
answers once, cached answers not at all), the label set is written into the store
(:mod:`semuq_eval.harness.label_sets`), and it is compared with another label set of the store (default:
the run's own, ``run``): Cohen's kappa and the confusion matrix for the greedy labels, the majority labels
and the per-sample labels, greedy vs majority within each set, and the AUROC of every estimator under both
label sets side by side (the stored scores, no operator is recomputed). ``rescore STORE --labels NAME`` then
scores against the new labels.

Example
-------
::

    semuq-eval judge out/semuq/semuq_webquestions/smollm2-135m-instruct --judge openai \\
        --judge_args base_url=http://127.0.0.1:8080/v1,model=local --name llamacpp
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["compare_label_sets", "judge_store", "main", "parse_judge_args"]


def parse_judge_args(text: str) -> dict[str, Any]:
    """``"k=v,k2=v2"`` as a dict, values read as JSON when they parse (numbers, true/false, null).

    Examples
    --------
    >>> parse_judge_args("base_url=http://h:8/v1,model=m,concurrency=4,logprobs=false")
    {'base_url': 'http://h:8/v1', 'model': 'm', 'concurrency': 4, 'logprobs': False}
    """
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--judge_args: {part!r} is not key=value")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def judge_store(
    store: str | os.PathLike,
    judge_name: str,
    judge_options: Mapping[str, Any] | None = None,
    *,
    name: str,
    force: bool = False,
) -> dict[str, Any]:
    """Judge every stored answer with ``judge_name`` and write label set ``name``; returns its provenance.
    An existing label set of that name is replaced only with ``force`` (FileExistsError otherwise)."""
    from semuq_eval.harness.label_sets import check_name, label_set_names, write_label_set
    from semuq_eval.harness.store import load_store
    from semuq_eval.judges import get_judge, label_answers

    check_name(name)
    if name in label_set_names(store) and not force:
        raise FileExistsError(f"{store}: label set {name!r} exists; choose another --name or pass --force")
    _, records = load_store(store)
    if not records:
        raise ValueError(f"{store}: the store has no questions")
    judge = get_judge(judge_name, **dict(judge_options or {}))
    start = time.perf_counter()
    labels = label_answers(
        judge,
        [r["question"] for r in records],
        [r["greedy"].text for r in records],
        [[g.text for g in r["samples"]] for r in records],
        [r["references"] for r in records],
    )
    seconds = time.perf_counter() - start
    rows = [{"doc_id": r["doc_id"], **lab} for r, lab in zip(records, labels, strict=True)]
    errors: dict[str, int] = {}
    for lab in labels:
        for reason, count in (lab.get("errors") or {}).items():
            errors[reason] = errors.get(reason, 0) + count
    provenance = {
        "judge": judge.info,
        "tie_rule": "majority: strict majority of the known sample labels; a tie is incorrect",
        "seconds": round(seconds, 2),
        "unknown_reasons": errors,
        "judge_stats": dict(getattr(judge, "stats", {}) or {}),
    }
    write_label_set(store, name, rows, provenance)
    return provenance


def compare_label_sets(store: str | os.PathLike, a: str, b: str) -> dict[str, Any]:
    """Agreement of label sets ``a`` and ``b`` of a store, lined up by doc id (module docstring)."""
    from semuq_eval.harness.label_sets import read_label_set
    from semuq_eval.judges.agreement import agreement

    set_a, set_b = read_label_set(store, a), read_label_set(store, b)
    ids = sorted(set(set_a.records) & set(set_b.records))
    ra, rb = [set_a.records[i] for i in ids], [set_b.records[i] for i in ids]
    samples_a, samples_b = [], []
    for x, y in zip(ra, rb, strict=True):
        k = min(len(x["samples"]), len(y["samples"]))
        samples_a += x["samples"][:k]
        samples_b += y["samples"][:k]
    return {
        "a": a,
        "b": b,
        "n_docs": len(ids),
        "docs_only_in_one": len(set(set_a.records) ^ set(set_b.records)),
        "greedy": agreement([x["greedy"] for x in ra], [y["greedy"] for y in rb]),
        "majority": agreement([x["majority"] for x in ra], [y["majority"] for y in rb]),
        "samples": agreement(samples_a, samples_b),
        f"greedy_vs_majority[{a}]": agreement([x["greedy"] for x in ra], [x["majority"] for x in ra]),
        f"greedy_vs_majority[{b}]": agreement([y["greedy"] for y in rb], [y["majority"] for y in rb]),
    }


def auroc_side_by_side(store: str | os.PathLike, label_sets: Sequence[str], strategy: str = "greedy") -> dict:
    """AUROC (with CI and counts) of every stored estimator under each label set, from the stored scores."""
    from semuq_eval.harness.label_sets import read_label_set
    from semuq_eval.harness.report import summarize
    from semuq_eval.harness.settings import Settings
    from semuq_eval.jsonio import read_json, read_jsonl

    root = Path(store)
    items = [it for _, it in read_jsonl(root / "scores.jsonl")]
    settings = Settings.from_metadata(read_json(root / "manifest.json").get("settings"), expand_profile=False)
    out: dict[str, Any] = {}
    for name in label_sets:
        records = read_label_set(root, name).records
        relabelled = [
            {**it, "labels": {s: (records.get(it["doc_id"]) or {}).get(s) for s in ("greedy", "majority")}}
            for it in items
        ]
        b = summarize(relabelled, settings, label_set=name)
        out[name] = {
            "labels": b["labels"][strategy],
            "auroc": {e: r["auroc"] for e, r in b["results"][strategy].items()},
        }
    return out


def _fmt(r: Mapping[str, Any] | None) -> str:
    if not r or r.get("value") is None or not math.isfinite(r["value"]):
        return "-"
    lo, hi = r.get("ci_low"), r.get("ci_high")
    ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
    return f"{r['value']:.3f}{ci}{'' if r.get('reliable', True) else ' !'}"


def main(argv: list[str]) -> int:
    """`semuq-eval judge STORE --judge NAME --judge_args k=v,... --name LABELS`."""
    from semuq_eval.harness.label_sets import RUN_LABELS, label_set_names
    from semuq_eval.jsonio import read_json, write_json
    from semuq_eval.judges import names
    from semuq_eval.judges.agreement import agreement_table

    parser = argparse.ArgumentParser(
        prog="semuq-eval judge",
        description="Label a run store's answers with a judge (no LLM under test needed), store the labels as a "
        "named label set, and compare them with another label set.",
    )
    parser.add_argument("store", help="a run store directory (<output_path>/semuq/<task>/<run_id>)")
    parser.add_argument("--judge", required=True, choices=names(), help="the judge")
    parser.add_argument(
        "--judge_args", type=parse_judge_args, default={}, help="the judge's options: key=value,key=value"
    )
    parser.add_argument("--name", help="the label set's name (default: the judge's name and model)")
    parser.add_argument("--compare", default=RUN_LABELS, help="compare with this label set (default: run)")
    parser.add_argument(
        "--strategy", default="greedy", choices=("greedy", "majority"), help="for the AUROC table"
    )
    parser.add_argument("--top", type=int, default=15, help="estimators shown in the AUROC table")
    parser.add_argument("--force", action="store_true", help="replace a label set of the same name")
    args = parser.parse_args(argv)
    name = args.name or _default_name(args.judge, args.judge_args)
    try:
        provenance = judge_store(args.store, args.judge, args.judge_args, name=name, force=args.force)
    except (ValueError, FileNotFoundError, FileExistsError, RuntimeError) as exc:
        parser.exit(2, f"semuq-eval judge: {exc}\n")
    stats = provenance["judge_stats"]
    print(
        f"label set {name!r} written to {Path(args.store) / 'labels'} in {provenance['seconds']} s"
        + (
            f"; {stats.get('cache_hits', 0)} of {stats.get('distinct', 0)} distinct answers from the cache"
            if stats
            else ""
        )
    )
    if provenance["unknown_reasons"]:
        print(f"unknown labels (left out of the metrics): {provenance['unknown_reasons']}")
    if args.compare not in label_set_names(args.store):
        print(f"(no label set {args.compare!r} to compare with)")
        return 0
    comparison = compare_label_sets(args.store, args.compare, name)
    table = auroc_side_by_side(args.store, [args.compare, name], args.strategy)
    meta_path = Path(args.store) / "labels" / f"{name}.json"
    write_json(meta_path, {**read_json(meta_path), "agreement": comparison, "auroc": table})
    print(f"\nagreement of {args.compare!r} (a) and {name!r} (b) on {comparison['n_docs']} questions:")
    print(agreement_table({k: v for k, v in comparison.items() if isinstance(v, dict)}))
    la, lb = table[args.compare]["labels"], table[name]["labels"]
    print(
        f"\nAUROC under each label set ({args.strategy} labels; {args.compare}: {la['n_correct']} correct / "
        f"{la['n_incorrect']} incorrect, {name}: {lb['n_correct']} / {lb['n_incorrect']}; ! = small sample):"
    )
    ests = sorted(
        table[args.compare]["auroc"],
        key=lambda e: -(table[args.compare]["auroc"][e].get("value") or float("-inf")),
    )[: args.top]
    print(f"{'estimator':<24} {args.compare:>24} {name:>24}")
    for e in ests:
        print(
            f"{e:<24} {_fmt(table[args.compare]['auroc'].get(e)):>24} {_fmt(table[name]['auroc'].get(e)):>24}"
        )
    return 0


def _default_name(judge: str, options: Mapping[str, Any]) -> str:
    import re

    model = str(options.get("model") or options.get("mode") or "")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(model).name if os.sep in model else model).strip("-.")
    return f"{judge}-{slug}"[:64] if slug else judge
