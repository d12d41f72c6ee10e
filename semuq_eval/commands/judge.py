"""``semuq-eval judge STORE``: label a finished run store again with another judge, without the LLM under test.

The label set is stored and compared with another (default ``run``): agreement and every estimator's AUROC
under both (:mod:`semuq_eval.harness.relabel`); ``rescore STORE --labels NAME`` scores against it. Failed
requests leave labels unknown and uncached, reported in one stderr line; exit 1 when all failed, unless
``--allow-unknown``.

Example
-------
::

    semuq-eval judge out/semuq/semuq_webquestions/smollm2-135m-instruct --judge openai \\
        --judge_args base_url=http://127.0.0.1:8080/v1,model=local --name llamacpp
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from semuq_eval.cell_text import cell_text
from semuq_eval.commands.arguments import CommandParser, number, whole
from semuq_eval.durable import writer_lock
from semuq_eval.jsonio import loads
from semuq_eval.judges import strategies as label_strategies

__all__ = ["main", "parse_judge_args"]


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
            out[key.strip()] = loads(value)
        except json.JSONDecodeError as err:
            if err.msg == "nested too deep":  # not echoed: argparse would print the whole value
                raise argparse.ArgumentTypeError(f"{key.strip()} is nested too deep to read") from None
            out[key.strip()] = value
    return out


def _fmt(r: Mapping[str, Any] | None) -> str:
    r = r or {}
    return cell_text(
        r.get("value"), r.get("ci_low"), r.get("ci_high"), reliable=r.get("reliable", True), missing="-"
    )


def main(argv: list[str]) -> int:
    """`semuq-eval judge STORE --judge NAME --judge_args k=v,... --name LABELS` (or ``--panel A,B``, or
    ``--validate FOLDER``)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.validate:
        return _validate(args, parser)
    if args.store is None:
        parser.error("give a run store, or --validate FOLDER")
    if args.panel:
        return _panel(args, parser)
    if not args.judge:
        parser.error("the following arguments are required: --judge (or --panel A,B)")
    name = args.name or _default_name(args.judge, args.judge_args)
    # the label set is written by judge_store (labels/<name>.jsonl, then labels/<name>.json) and its manifest
    # gets the comparison in _compare: one writer of the label set from here to the end
    with writer_lock(Path(args.store) / "labels" / name, "label set"):
        return _judge(args, name, parser)


def _judge(args: argparse.Namespace, name: str, parser: CommandParser) -> int:
    from semuq_eval.harness.relabel import judge_store

    try:
        provenance = judge_store(
            args.store, args.judge, args.judge_args, name=name, force=args.force, answers=args.answers
        )
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
    failed, line = _request_failures(provenance, name, allow_unknown=args.allow_unknown)
    if line:
        print(f"semuq-eval judge: {line}", file=sys.stderr)
    if failed:
        return 1
    return _compare(args, name)


def _parser() -> CommandParser:
    from semuq_eval.harness.label_sets import RUN_LABELS
    from semuq_eval.harness.relabel import ANSWERS
    from semuq_eval.judges import names
    from semuq_eval.judges.panel import PANEL_RULES
    from semuq_eval.judges.validation import HALVES

    parser = CommandParser(
        prog="semuq-eval judge",
        description="Label a run store's answers with a judge (no LLM under test needed), store the labels as a "
        "named label set, and compare them with another label set.",
    )
    parser.add_argument(
        "store", nargs="?", help="a run store directory (<output_path>/semuq/<task>/<run_id>)"
    )
    parser.add_argument("--judge", choices=names(), help="the judge")
    parser.add_argument(
        "--judge_args", type=parse_judge_args, default={}, help="the judge's options: key=value,key=value"
    )
    parser.add_argument("--name", help="the label set's name (default: the judge's name and model)")
    parser.add_argument("--compare", default=RUN_LABELS, help="compare with this label set (default: run)")
    parser.add_argument(
        "--strategy",
        default="greedy",
        choices=label_strategies.label_strategy_names(),
        help="for the AUROC table",
    )
    parser.add_argument(
        "--top",
        type=whole(1),
        default=15,
        help="rows shown: estimators in the AUROC table, candidates with --choose",
    )
    parser.add_argument(
        "--answers",
        default="all",
        choices=ANSWERS,
        help="judge every answer, or the greedy answers only (the sampled and majority labels stay unknown)",
    )
    parser.add_argument(
        "--panel",
        type=lambda text: text.split(","),
        metavar="A,B",
        help="instead of a judge: the panel of two label sets of the store (with --validate: two verdict sets)",
    )
    parser.add_argument("--rule", default="both", choices=PANEL_RULES, help="the panel's rule")
    validation = parser.add_argument_group("validation against annotated labels (docs/judges.md)")
    validation.add_argument(
        "--validate",
        metavar="FOLDER",
        help="a validation set (items.jsonl, annotations.jsonl): judge its items (--judge) or combine two "
        "verdict sets (--panel) and report agreement with the annotation; alone: the table of every verdict set",
    )
    validation.add_argument("--half", default="test", choices=HALVES, help="the items reported")
    validation.add_argument(
        "--choose",
        action="store_true",
        help="rank every candidate (each verdict set alone, with thresholds on p_correct, in a panel with "
        "--partner) by kappa on the dev half, choose the best (a tie within 0.01: the faster), report it on --half",
    )
    validation.add_argument(
        "--partner",
        default="string-contains",
        help="the verdict set panels pair with (default string-contains)",
    )
    validation.add_argument(
        "--threshold",
        type=number(0, 1),
        help="report labels p_correct > T for verdicts with a probability (choose it on the dev half)",
    )
    parser.add_argument("--force", action="store_true", help="replace a label set of the same name")
    parser.add_argument(
        "--allow-unknown",
        action="store_true",
        help="exit 0 even when every judge request failed (every label unknown); by default that exits 1",
    )
    return parser


def _panel(args: argparse.Namespace, parser: CommandParser) -> int:
    """``--panel A,B``: a panel label set of the store, compared with ``--compare``."""
    from semuq_eval.harness.relabel import panel_store

    name = args.name or f"panel-{args.rule}"
    try:
        panel_store(args.store, args.panel, args.rule, name=name, force=args.force)
    except (ValueError, FileNotFoundError, FileExistsError) as exc:
        parser.exit(2, f"semuq-eval judge: {exc}\n")
    print(
        f"label set {name!r} ({args.rule} of {', '.join(args.panel)}) written to {Path(args.store) / 'labels'}"
    )
    return _compare(args, name)


def _validate(args: argparse.Namespace, parser: CommandParser) -> int:
    """``--validate FOLDER``: judge the validation set (or build a panel of two verdict sets) and report it
    against the annotation; with neither, the Markdown table of every verdict set."""
    from semuq_eval.judges import validation

    try:
        if args.choose:
            return _choose(args)
        if not args.judge and not args.panel:
            print(validation.markdown_table(args.validate, half=args.half, threshold=args.threshold))
            return 0
        if args.panel:
            name = args.name or f"panel-{args.rule}-{'-'.join(args.panel)}"[:64]
            validation.panel_verdicts(args.validate, args.panel, args.rule, name=name, force=args.force)
        else:
            name = args.name or _default_name(args.judge, args.judge_args)
            meta = validation.judge_items(
                args.validate, args.judge, args.judge_args, name=name, force=args.force
            )
            print(
                f"verdict set {name!r}: {meta['seconds']} s ({meta['seconds_per_answer']} s per answer judged)"
            )
        verdicts, _ = validation.read_verdicts(args.validate, name)
        report = validation.validation_report(
            validation.read_items(args.validate),
            validation.thresholded(verdicts, args.threshold),
            half=args.half,
        )
    except (ValueError, FileNotFoundError, FileExistsError, RuntimeError) as exc:
        parser.exit(2, f"semuq-eval judge: {exc}\n")
    print(validation.format_report(report, name))
    return 0


def _choose(args: argparse.Namespace) -> int:
    """``--validate FOLDER --choose``: the candidates ranked on the dev half, the chosen one reported on ``--half``."""
    from semuq_eval.judges import validation
    from semuq_eval.judges.panel import combine

    ranked = validation.candidates(args.validate, partner=args.partner)
    print(
        f"candidates on the dev half, by kappa (of {len(ranked)}; a tie within {validation.TIE}: the faster):"
    )
    print(f"{'judge':<30} {'threshold':>9} {'panel':<28} {'accuracy':>8} {'kappa':>7} {'s/answer':>9}")
    for c in ranked[: args.top]:
        kappa = "-" if c["kappa"] is None else f"{c['kappa']:.3f}"
        print(
            f"{c['judge']:<30} {c['threshold'] if c['threshold'] is not None else 'own':>9} "
            f"{c['panel'] or 'alone':<28} {c['accuracy']:>8.3f} {kappa:>7} {c['seconds_per_answer']:>9.4f}"
        )
    chosen = ranked[0]
    labels = validation.thresholded(
        validation.read_verdicts(args.validate, chosen["judge"])[0], chosen["threshold"]
    )
    if chosen["panel"]:
        partner = validation.thresholded(validation.read_verdicts(args.validate, args.partner)[0], None)
        rule = chosen["panel"].split()[0]
        labels = {k: combine(v, partner[k], rule) for k, v in labels.items()}
    report = validation.validation_report(validation.read_items(args.validate), labels, half=args.half)
    name = f"{chosen['judge']} (threshold {chosen['threshold'] or 'own'}, {chosen['panel'] or 'alone'})"
    print(f"\nchosen: {name}\n" + validation.format_report(report, name))
    return 0


def _request_failures(
    provenance: Mapping[str, Any], name: str, *, allow_unknown: bool
) -> tuple[bool, str | None]:
    """Whether the judge failed as a whole (every request failed after its retries, so no label is known, and
    not ``allow_unknown``), and the one line that says how many requests failed and why (None: none failed).

    Examples
    --------
    >>> stats = {"judged": 0, "cache_hits": 0, "failed": 3, "failures": {"HTTP 500 (after 3 retries)": 3}}
    >>> _request_failures({"judge_stats": stats, "unknown_reasons": {}}, "j", allow_unknown=False)[0]
    True
    """
    from semuq_eval.judges.prompted import NO_REFERENCE

    stats = provenance.get("judge_stats") or {}
    failed = int(stats.get("failed", 0))
    if not failed:
        return False, None
    reasons = stats.get("failures") or {
        r: n for r, n in (provenance.get("unknown_reasons") or {}).items() if r != NO_REFERENCE
    }
    first = next(iter(reasons), "unknown")
    if stats.get("judged", 0) or stats.get("cache_hits", 0):
        asked = failed + int(stats.get("judged", 0))
        return False, (
            f"{failed} of {asked} judge requests failed (first: {first}); their labels are unknown and not "
            "cached: running again with --force asks only for them"
        )
    line = f"all {failed} judge requests failed (first: {first}); label set {name!r} holds no known label"
    if allow_unknown:
        return False, line + " (--allow-unknown)"
    return True, line + ": fix the server and run again with --force, or pass --allow-unknown to keep it"


def _compare(args: Any, name: str) -> int:
    """Compare the new label set with ``--compare``: agreement and AUROC tables, printed and stored in its
    manifest."""
    from semuq_eval.harness.label_sets import label_set_names
    from semuq_eval.harness.relabel import auroc_side_by_side, compare_label_sets
    from semuq_eval.jsonio import read_json, write_json
    from semuq_eval.judges.agreement import agreement_table

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
