"""``rescore``: recompute matrices, scores and metrics from a run store, without the LLM.

``rescore(store, operators=["lexical"], n_samples=5)`` reruns the pipeline on the stored answers (``cos_int`` reads the
stored hidden vectors); ``n_samples`` below the stored N is the N-ablation. Labels come from a stored label set
(``labels``, default ``"run"``) or a judge given again; ``operator_options`` add named variants
(:func:`semuq_eval.operators.resolve`)::

    rescore(store, operators=["enc", "enc_nq", "lexical"],
            operator_options={"enc_nq": {"operator": "enc", "model": "ops/enc-nq"}},
            store_output="rescored/semuq/semuq_webquestions/gemma-3-270m")

``store_output`` writes a complete run store that every store reader takes. The command is
:mod:`semuq_eval.commands.rescore`."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from semuq_eval.durable import writer_lock
from semuq_eval.harness.breakdown import FORMAT as BREAKDOWN_FORMAT
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.finish import RunFacts, finish_run
from semuq_eval.harness.label_sets import RUN_LABELS, read_label_set, slice_samples
from semuq_eval.harness.pipeline import process_docs
from semuq_eval.harness.settings import Settings, stored_settings
from semuq_eval.harness.store import MANIFEST, STORE_FORMAT, RunStore, open_store
from semuq_eval.jsonio import write_json
from semuq_eval.metrics.bootstrap import MAX_RESAMPLES
from semuq_eval.options import Options, option
from semuq_eval.writes import check_apart, check_file_target, check_folder_target, json_format

__all__ = ["RescoreOptions", "rescore"]


class RescoreOptions(Options):
    """What ``rescore`` recomputes and where it writes (``semuq-eval rescore``'s flags, docs/running.md's table)."""

    operators: list[str] | None = option(
        None,
        "comma-separated operators to (re)compute, e.g. lexical,enc (default: the stored run's)",
        parse="csv",
    )
    operator_options: dict[str, Any] | None = option(
        None,
        "JSON {operator: {option: value}} over the stored run's; a named variant: "
        '{"enc_nq": {"operator": "enc", "model": "ops/enc-nq"}}',
        parse="json",
        of="operator name -> options",
    )
    estimator_names: list[str] | None = option(
        None, "keep only these estimators, e.g. kle_heat@enc,te", parse="csv", flag="--estimators"
    )
    n_samples: int | None = option(None, "use the first k stored samples (N-ablation)", ge=1)
    tau: float | None = option(
        None, "threshold for clustering graded matrices", gt=0, le=1, allow_inf_nan=False
    )
    judge: str | None = option(None, "judge the answers again with this judge (default: the stored labels)")
    judge_options: dict[str, Any] | None = option(
        None, 'the judge\'s options as JSON, e.g. {"mode": "em"}', parse="json", of="option -> value"
    )
    labels: str | None = option(
        None, "score against this stored label set (default: run; `semuq-eval judge` writes others)"
    )
    bootstrap: int | None = option(None, "number of bootstrap resamples", ge=1, le=MAX_RESAMPLES)
    output: Path | None = option(
        None, "write the breakdown JSON here (a directory gets breakdown.rescore.json)"
    )
    store_output: Path | None = option(
        None, "write a complete run store there (answers copied, new scores and breakdown)"
    )
    force: bool = option(
        False, "replace a run store at --store_output, or an --output file that is not a breakdown"
    )


def rescore(store_path: str | os.PathLike, options: RescoreOptions | None = None, **given: Any) -> dict:
    """The breakdown (as in ``breakdown.json``) recomputed from the store at ``store_path``.

    ``options`` is a :class:`RescoreOptions` (or ``**given`` builds one: ``rescore(path, tau=0.5)``); unset options keep
    the stored run's. With ``n_samples`` the majority label is recomputed from the first ``n_samples`` per-sample
    labels. ``store_output`` gets the stored answers and hidden vectors (the first ``n_samples``), new settings, scores
    and breakdown, the scored labels as its run labels; it must not be, hold or lie in the source, and a non-empty
    folder is refused unless ``force`` and it is a run store (emptied first). ``output`` replaces a file that is not a
    breakdown only with ``force``."""
    o = options if options is not None else RescoreOptions(**given)
    if options is not None and given:
        raise TypeError("give rescore() its options or keywords, not both")
    output_path = None if o.output is None else _breakdown_path(o.output)
    with _one_writer(o.store_output, output_path):  # another process writing either gets one line
        _check_targets(store_path, output_path, o.store_output, o.force)
        source = open_store(store_path)
        manifest, docs = source.manifest, source.docs()
        if not docs:
            raise ValueError(
                f"{store_path}: the store holds no answers (generations.rank*.jsonl empty or missing)"
            )
        stored = stored_settings(manifest, source.manifest_path)
        settings = _overridden(stored, o)
        n = _ablated_n(source.manifest_path, docs, stored.n_samples, o.n_samples)
        settings.n_samples = n
        settings.validate()
        for d in docs:
            d.samples = d.samples[:n]
        rejudge = o.judge is not None or o.judge_options is not None
        if rejudge and o.labels is not None:
            raise ValueError("give a stored label set (labels=) or a judge to label again, not both")
        out, judge_info, label_set = _scored(
            store_path, docs, settings, stored.n_samples, o.labels, rejudge, o.estimator_names
        )
        store = None
        if o.store_output is not None:
            ablated = docs if n < stored.n_samples else None
            store = _new_store(manifest, store_path, Path(o.store_output), settings, ablated)
        extra = {
            "rescored_from": str(store_path),
            "stored_n_samples": stored.n_samples,
            **({"generator": manifest["generator"]} if manifest.get("generator") else {}),
        }
        facts = RunFacts(manifest.get("task", ""), out.operator_runs, judge_info, label_set, extra)
        breakdown = finish_run(out.items, settings, facts, store=store)
        if output_path is not None:
            write_json(output_path, breakdown)
        return breakdown


def _check_targets(
    store_path: str | os.PathLike,
    output_path: Path | None,
    store_output: str | os.PathLike | None,
    force: bool,
) -> None:
    """Refuse an ``output`` file or a ``store_output`` folder that rescoring must not write (one line each)."""
    if output_path is not None:
        check_file_target(output_path, ours=BREAKDOWN_FORMAT, force=force, flag="output")
    if store_output is not None:
        check_apart(store_output, store_path, "store_output")
        check_folder_target(
            store_output, ours=_is_run_store, what="a run store", force=force, flag="store_output"
        )


def _ablated_n(manifest_path: Path, docs: Sequence[Doc], stored_n: int, n_samples: int | None) -> int:
    """The N to score: the stored one, or ``n_samples`` (an N-ablation), checked against what the store holds."""
    held = max(len(d.samples) for d in docs)
    if held < stored_n:  # the breakdown would report an N no question has
        raise ValueError(
            f"{manifest_path}: settings n_samples is {stored_n}, but no question of the store has more than "
            f"{held} stored samples"
        )
    n = stored_n if n_samples is None else int(n_samples)
    if n < 1 or n > stored_n:
        raise ValueError(f"n_samples must be in 1..{stored_n} (the stored N), got {n}")
    return n


def _scored(
    store_path: str | os.PathLike,
    docs: Sequence[Doc],
    settings: Settings,
    stored_n: int,
    labels: str | None,
    rejudge: bool,
    estimator_names: Sequence[str] | None,
) -> tuple[Any, dict[str, Any], str]:
    """The pipeline's output on ``docs``, the judge's info and the label set scored: a new judge's labels
    (``rejudge``) or a stored label set's (``labels``, default the run's)."""
    stored = None
    if not rejudge:
        stored = _stored_labels(store_path, docs, labels or RUN_LABELS, settings.n_samples, stored_n)
    if stored is None:
        judge = settings.make_judge()
        label_set, judge_info, given = "rejudged", judge.info, {"judge": judge}
    else:
        label_set, judge_info, records = stored
        given = {"labels": records}
    return process_docs(docs, settings, estimator_names=estimator_names, **given), judge_info, label_set


@contextlib.contextmanager
def _one_writer(*targets: str | os.PathLike | None) -> Iterator[None]:
    """Hold the one-writer lock of every target given (:func:`~semuq_eval.durable.writer_lock`)."""
    with contextlib.ExitStack() as locks:
        for target in (t for t in targets if t is not None):
            locks.enter_context(writer_lock(target, "rescore output"))
        yield


def _overridden(stored: Settings, o: RescoreOptions) -> Settings:
    """The stored run's settings with what :func:`rescore` was given in their place (see its parameters)."""
    settings = replace(stored)
    if o.operators is not None:
        settings.operators = tuple(o.operators)
        # the stored options of operators left out do not apply (e.g. the offline profile's encoder paths)
        settings.operator_options = {
            k: v for k, v in stored.operator_options.items() if k in settings.operators
        }
    for name, given in dict(o.operator_options or {}).items():
        if not isinstance(given, Mapping):
            raise ValueError(f"operator_options[{name!r}] must be a mapping, got {given!r}")
        settings.operator_options = {
            **settings.operator_options,
            name: {**settings.operator_options.get(name, {}), **given},
        }
    if o.tau is not None:
        settings.tau = float(o.tau)
    if o.bootstrap is not None:
        settings.bootstrap = int(o.bootstrap)
    if o.judge is not None or o.judge_options is not None:
        settings.judge = o.judge or stored.judge
        settings.judge_options = dict(o.judge_options or {})
    return settings


def _breakdown_path(output: str | os.PathLike) -> Path:
    """Where ``output`` puts the breakdown: the file itself, or ``breakdown.rescore.json`` in a folder."""
    path = Path(output)
    return path / "breakdown.rescore.json" if path.is_dir() or not path.suffix else path


def _is_run_store(folder: Path) -> bool:
    """Whether ``folder`` is a run store this tool wrote (its manifest says so)."""
    return json_format(folder / MANIFEST) == STORE_FORMAT


def _new_store(
    manifest: Mapping[str, Any], source, target: Path, settings: Settings, ablated: Sequence[Doc] | None
) -> RunStore:
    """A new run store at ``target`` (emptied first: refused in :func:`rescore` unless empty or forced) holding
    ``source``'s answers and hidden vectors, or for an N-ablation the ``ablated`` docs; :func:`finish_run` adds the
    rescored rest."""
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    store = RunStore(target)
    store.begin(
        manifest.get("task", ""),
        settings.as_dict(),
        model=manifest.get("model"),
        generator=manifest.get("generator"),
    )
    if ablated is None:
        store.copy_generations(source)
    else:
        store.write_generations(ablated)
    return store


def _stored_labels(
    store_path: str | os.PathLike, docs: Sequence[Doc], name: str, n: int, stored_n: int
) -> tuple[str, dict[str, Any], list[dict[str, Any]]] | None:
    """``(name, judge info, one label record per stored doc)`` of label set ``name``, restricted to the first
    ``n`` samples; None when the run's own labels cannot serve (an old store without scores or per-sample labels), so
    the stored judge labels again. Another label set that does not cover the store is an error."""
    try:
        label_set = read_label_set(store_path, name)
    except FileNotFoundError:
        if name == RUN_LABELS:
            return None
        raise
    chosen = [label_set.records.get(int(d.doc_id)) for d in docs]
    missing = [d.doc_id for d, rec in zip(docs, chosen, strict=True) if rec is None]
    short = [
        d.doc_id
        for d, rec in zip(docs, chosen, strict=True)
        if n != stored_n and rec is not None and len(rec["samples"]) < min(n, len(d.samples))
    ]
    if missing or short:
        if name == RUN_LABELS:
            return None
        problem = (
            f"no labels for doc ids {missing[:10]}" if missing else f"too few sample labels for {short[:10]}"
        )
        raise ValueError(f"label set {name!r} does not cover this store: {problem}")
    return name, label_set.judge, [rec if n == stored_n else slice_samples(rec, n) for rec in chosen]
