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

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from semuq_eval.cell_text import cell_text
from semuq_eval.commands.arguments import CommandParser
from semuq_eval.durable import writer_lock
from semuq_eval.harness import relabel
from semuq_eval.harness.label_sets import label_set_names
from semuq_eval.harness.relabel import JudgeOptions
from semuq_eval.jsonio import read_json, write_json
from semuq_eval.judges import validation
from semuq_eval.judges.agreement import agreement_table
from semuq_eval.judges.panel import combine
from semuq_eval.judges.validation import ValidationOptions
from semuq_eval.options import add_options, parse_options

__all__ = ["main"]


def _fmt(r: Mapping[str, Any] | None) -> str:
    r = r or {}
    return cell_text(
        r.get("value"), r.get("ci_low"), r.get("ci_high"), reliable=r.get("reliable", True), missing="-"
    )


def main(argv: list[str]) -> int:
    """`semuq-eval judge STORE --judge NAME --judge_args k=v,... --name LABELS` (or ``--panel A,B``, or
    ``--validate FOLDER``)."""
    parser = CommandParser(
        prog="semuq-eval judge",
        description="Label a run store's answers with a judge (no LLM under test needed), store the labels as a "
        "named label set, and compare them with another label set.",
    )
    add_options(parser, JudgeOptions)
    add_options(
        parser.add_argument_group("validation against annotated labels (docs/judges.md)"), ValidationOptions
    )
    args = parser.parse_args(argv)
    try:  # a bad value: one line naming the flag
        o, v = parse_options(JudgeOptions, args), parse_options(ValidationOptions, args)
    except ValueError as err:
        parser.error(str(err))
    if v.folder:
        return _validate(o, v, parser)
    if o.store is None:
        parser.error("give a run store, or --validate FOLDER")
    if o.panel:
        return _panel(o.store, o, parser)
    if not o.judge:
        parser.error("the following arguments are required: --judge (or --panel A,B)")
    name = o.name or _default_name(o.judge, o.judge_args)
    # the label set is written by judge_store (labels/<name>.jsonl, then labels/<name>.json) and its manifest
    # gets the comparison in _compare: one writer of the label set from here to the end
    with writer_lock(Path(o.store) / "labels" / name, "label set"):
        return _judge(o.store, o, name, parser)


def _judge(store: str, o: JudgeOptions, name: str, parser: CommandParser) -> int:
    try:
        provenance = relabel.judge_store(
            store, o.judge, o.judge_args, name=name, force=o.force, answers=o.answers
        )
    except (ValueError, FileNotFoundError, FileExistsError, RuntimeError) as exc:
        parser.exit(2, f"semuq-eval judge: {exc}\n")
    stats = provenance["judge_stats"]
    print(
        f"label set {name!r} written to {Path(store) / 'labels'} in {provenance['seconds']} s"
        + (
            f"; {stats.get('cache_hits', 0)} of {stats.get('distinct', 0)} distinct answers from the cache"
            if stats
            else ""
        )
    )
    if provenance["unknown_reasons"]:
        print(f"unknown labels (left out of the metrics): {provenance['unknown_reasons']}")
    failed, line = _request_failures(provenance, name, allow_unknown=o.allow_unknown)
    if line:
        print(f"semuq-eval judge: {line}", file=sys.stderr)
    if failed:
        return 1
    return _compare(store, o, name)


def _panel(store: str, o: JudgeOptions, parser: CommandParser) -> int:
    """``--panel A,B``: a panel label set of the store, compared with ``--compare``."""
    name = o.name or f"panel-{o.rule}"
    try:
        relabel.panel_store(store, o.panel, o.rule, name=name, force=o.force)
    except (ValueError, FileNotFoundError, FileExistsError) as exc:
        parser.exit(2, f"semuq-eval judge: {exc}\n")
    print(f"label set {name!r} ({o.rule} of {', '.join(o.panel)}) written to {Path(store) / 'labels'}")
    return _compare(store, o, name)


def _validate(o: JudgeOptions, v: ValidationOptions, parser: CommandParser) -> int:
    """``--validate FOLDER``: judge the validation set (or build a panel of two verdict sets) and report it
    against the annotation; with neither, the Markdown table of every verdict set."""
    try:
        if v.choose:
            return _choose(v, o.top)
        if not o.judge and not o.panel:
            print(validation.markdown_table(v.folder, half=v.half, threshold=v.threshold))
            return 0
        if o.panel:
            name = o.name or f"panel-{o.rule}-{'-'.join(o.panel)}"[:64]
            validation.panel_verdicts(v.folder, o.panel, o.rule, name=name, force=o.force)
        else:
            name = o.name or _default_name(o.judge, o.judge_args)
            meta = validation.judge_items(v.folder, o.judge, o.judge_args, name=name, force=o.force)
            print(
                f"verdict set {name!r}: {meta['seconds']} s ({meta['seconds_per_answer']} s per answer judged)"
            )
        verdicts, _ = validation.read_verdicts(v.folder, name)
        report = validation.validation_report(
            validation.read_items(v.folder), validation.thresholded(verdicts, v.threshold), half=v.half
        )
    except (ValueError, FileNotFoundError, FileExistsError, RuntimeError) as exc:
        parser.exit(2, f"semuq-eval judge: {exc}\n")
    print(validation.format_report(report, name))
    return 0


def _choose(v: ValidationOptions, top: int) -> int:
    """``--validate FOLDER --choose``: the candidates ranked on the dev half, the chosen one reported on ``--half``."""
    ranked = validation.candidates(v.folder, partner=v.partner)
    print(
        f"candidates on the dev half, by kappa (of {len(ranked)}; a tie within {validation.TIE}: the faster):"
    )
    print(f"{'judge':<30} {'threshold':>9} {'panel':<28} {'accuracy':>8} {'kappa':>7} {'s/answer':>9}")
    for c in ranked[:top]:
        kappa = "-" if c["kappa"] is None else f"{c['kappa']:.3f}"
        print(
            f"{c['judge']:<30} {c['threshold'] if c['threshold'] is not None else 'own':>9} "
            f"{c['panel'] or 'alone':<28} {c['accuracy']:>8.3f} {kappa:>7} {c['seconds_per_answer']:>9.4f}"
        )
    chosen = ranked[0]
    labels = validation.thresholded(
        validation.read_verdicts(v.folder, chosen["judge"])[0], chosen["threshold"]
    )
    if chosen["panel"]:
        partner = validation.thresholded(validation.read_verdicts(v.folder, v.partner)[0], None)
        rule = chosen["panel"].split()[0]
        labels = {k: combine(x, partner[k], rule) for k, x in labels.items()}
    report = validation.validation_report(validation.read_items(v.folder), labels, half=v.half)
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


def _compare(store: str, o: JudgeOptions, name: str) -> int:
    """Compare the new label set with ``--compare``: agreement and AUROC tables, printed and stored in its
    manifest."""
    if o.compare not in label_set_names(store):
        print(f"(no label set {o.compare!r} to compare with)")
        return 0
    comparison = relabel.compare_label_sets(store, o.compare, name)
    table = relabel.auroc_side_by_side(store, [o.compare, name], o.strategy)
    meta_path = Path(store) / "labels" / f"{name}.json"
    write_json(meta_path, {**read_json(meta_path), "agreement": comparison, "auroc": table})
    print(f"\nagreement of {o.compare!r} (a) and {name!r} (b) on {comparison['n_docs']} questions:")
    print(agreement_table({k: v for k, v in comparison.items() if isinstance(v, dict)}))
    la, lb = table[o.compare]["labels"], table[name]["labels"]
    print(
        f"\nAUROC under each label set ({o.strategy} labels; {o.compare}: {la['n_correct']} correct / "
        f"{la['n_incorrect']} incorrect, {name}: {lb['n_correct']} / {lb['n_incorrect']}; ! = small sample):"
    )
    ests = sorted(
        table[o.compare]["auroc"],
        key=lambda e: -(table[o.compare]["auroc"][e].get("value") or float("-inf")),
    )[: o.top]
    print(f"{'estimator':<24} {o.compare:>24} {name:>24}")
    for e in ests:
        print(f"{e:<24} {_fmt(table[o.compare]['auroc'].get(e)):>24} {_fmt(table[name]['auroc'].get(e)):>24}")
    return 0


def _default_name(judge: str, options: Mapping[str, Any]) -> str:
    import re

    model = str(options.get("model") or options.get("mode") or "")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(model).name if os.sep in model else model).strip("-.")
    return f"{judge}-{slug}"[:64] if slug else judge
