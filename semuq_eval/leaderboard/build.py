"""Building a leaderboard folder from run stores or records: collect, group, compute, then write every output.

:func:`build` (``semuq-eval leaderboard``) runs :mod:`.discovery`, :mod:`.read_run`, :mod:`.sections`,
:mod:`.compute`, then :mod:`.write`, :mod:`.markdown`, :mod:`.html` and :mod:`.plots`; each output is replaced
whole, the folder marked unfinished (:mod:`semuq_eval.durable`) from the first file to the page, the last."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import model_validator

from semuq_eval.durable import UNFINISHED, clean_temporary, is_temporary
from semuq_eval.durable import unfinished as writing_unfinished
from semuq_eval.jsonio import read_json
from semuq_eval.leaderboard.board import REFERENCE
from semuq_eval.metrics.bootstrap import MAX_RESAMPLES
from semuq_eval.metrics.calibrators import MAX_BINS
from semuq_eval.options import OptionError, Options, option

if TYPE_CHECKING:
    from semuq_eval.leaderboard.compute import LeaderboardConfig

__all__ = ["BuildOptions", "LeaderboardOptions", "build"]

log = logging.getLogger("semuq_eval.leaderboard")


class BuildOptions(Options):
    """How :func:`build` groups the runs and what it writes (``semuq-eval leaderboard``'s flags)."""

    labels: tuple[str, ...] = option(
        ("run",), "label sets, comma-separated: run (the run's own judge), NAME, or all", parse="csv"
    )
    strict: bool = option(False, "refuse runs of a task that cannot share one section")
    on_duplicate: Literal["error", "latest"] = option(
        "error", "two runs of one LLM in a section: an error, or the latest wins", flag="--on-duplicate"
    )
    common_questions: Literal["only", "also"] | None = option(
        None,
        "runs of a task on different question sets: compare them on the questions they all share instead of in "
        "separate sections; 'also' keeps the separate sections and adds a <task>#common section (bare: only)",
        flag="--common-questions",
        const="only",
    )
    header: str = option("", "text (or @file) shown at the top of the Markdown and the page")
    title: str = option("semuq-eval leaderboard", "the pages' title")
    plots: bool = option(True, "skip the PNG plots", flag="--no-plots")
    force: bool = option(
        False, "write into an --output folder that holds other files than an earlier leaderboard"
    )
    created: str | None = option(None, "a fixed build time (golden files); default now", cli=False)
    command: str = option("", "the command line shown on the pages", cli=False)


class LeaderboardOptions(Options):
    """``semuq-eval leaderboard``'s other flags: the folder it writes, the records it adds (:func:`build`'s
    ``output`` and ``add``) and how the board computes (:meth:`config`)."""

    inputs: list[str] = option(
        ...,
        "run store dirs, breakdown JSON files, run records (*.jsonl.gz), or quoted globs ('out/**/semuq/*/*')",
        flag="inputs",
        parse="many",
    )
    output: str = option(..., "the folder to write", flag="--output -o")
    add: list[str] = option(
        [],
        "a run record (or glob) that must join a section of the inputs (repeatable); one that does not (named with "
        "the field) or cannot be read is left out, and the exit status is 1",
        parse="append",
    )
    bootstrap: int = option(1000, "bootstrap resamples", ge=1, le=MAX_RESAMPLES)
    seed: int = option(0, "bootstrap seed (as runs)", ge=0)
    metrics: list[str] | None = option(
        None,
        "cell metrics, comma-separated, AUROC first (default: auroc, then the runs' `metrics` settings); metrics a "
        "run's breakdown lacks are computed from its scores (the slow part of a large board)",
        parse="csv",
    )
    ece_bins: int = option(10, "ECE's equal-width bins", ge=1, le=MAX_BINS, flag="--ece-bins")
    ece_refit: Literal["once", "per_resample"] = option(
        "once", "ECE's interval: resample the calibrated pairs, or refit per resample", flag="--ece-refit"
    )
    estimator: list[str] = option(
        [], "estimator for the LLM-vs-LLM tests (repeatable); default: the best mean AUROC", parse="append"
    )
    reference: str = option(REFERENCE, "the headline's reference estimator, the same for every LLM and task")
    headline_metric: str = option(
        "auroc",
        "the metric the headline shows and ranks by, e.g. coverage_at_risk (see --coverage-at-risk)",
        flag="--headline-metric",
    )
    coverage_at_risk: list[float] | None = option(
        None,
        "ALPHA,DELTA: the levels of coverage_at_risk (named in --metrics or --headline-metric), the share answered "
        "at a certified error rate ALPHA with probability 1 - DELTA (default 0.1,0.1; docs/decisions.md)",
        parse="csv",
        flag="--coverage-at-risk",
    )
    compare: list[str] = option(
        [],
        "OP:BASE[,BASE...]: also compare operator OP with each BASE aggregator by aggregator (repeatable), e.g. "
        "a trained variant: --compare enc_nq:enc,cos_ext,lexical,cos_int",
        parse="append",
    )
    jobs: int = option(1, "worker processes", ge=1, flag="--jobs -j")

    @model_validator(mode="after")
    def _levels(self) -> LeaderboardOptions:
        """``coverage_at_risk``: two levels, of a metric that is named."""
        levels, named = self.coverage_at_risk, [*(self.metrics or []), self.headline_metric]
        if levels is not None and len(levels) != 2:
            raise OptionError("coverage_at_risk", f"expected ALPHA,DELTA, got {','.join(map(str, levels))!r}")
        if levels and "coverage_at_risk" not in named:
            raise OptionError("coverage_at_risk", "name coverage_at_risk in --metrics or --headline-metric")
        return self

    def config(self) -> LeaderboardConfig:
        """The board's :class:`~.compute.LeaderboardConfig`, ``coverage_at_risk`` at the ``coverage_at_risk``
        levels; ValueError for bad levels, metrics or ``compare``."""
        from semuq_eval.leaderboard.baselines import parse_compare
        from semuq_eval.leaderboard.compute import LeaderboardConfig as Config
        from semuq_eval.metrics.risk import coverage_metric

        levels = self.coverage_at_risk
        names = {"coverage_at_risk": coverage_metric(*levels) if levels else "coverage_at_risk"}
        return Config(
            **self.model_dump(include={"seed", "ece_bins", "ece_refit", "jobs", "reference"}),
            n_resamples=self.bootstrap,
            metrics=tuple(names.get(m, m) for m in self.metrics) if self.metrics else None,
            llm_estimators=tuple(self.estimator),
            compare=tuple(map(parse_compare, self.compare)),
            headline_metric=names.get(self.headline_metric, self.headline_metric),
        )


def build(
    inputs: list[str],
    output: str | Path,
    options: BuildOptions | None = None,
    *,
    add: Sequence[str] = (),
    config: LeaderboardConfig | None = None,
    relative_to: str | Path | None = None,
    **given: Any,
) -> dict:
    """Build a leaderboard folder from run stores (paths or globs); returns the ``leaderboard.json`` document.

    ``options`` (:class:`BuildOptions`), or ``**given`` instead (``build(inputs, out, plots=False)``), hold:

    - ``inputs``: run store directories, breakdown JSON files, run records (``*.jsonl.gz``) or globs of them; an
      unreadable run record is listed in the document's ``skipped``. ``add``: run records (or globs) that must join a
      section of the ``inputs`` (:func:`~.sections.check_join`); one that does not fit is listed in ``skipped``.
    - ``output``: the folder to write (created); ``relative_to``: run paths are written relative to it (default
      ``output``); ``force``: write into a folder holding files other than a leaderboard (refused otherwise; an
      earlier leaderboard is rebuilt in place, only the plots build wrote replaced).
    - ``labels``: label sets read from each store (``run``: the run's own judge; ``all``: every set).
    - ``common_questions``: a task's runs on different question sets go to separate sections (None), are restricted
      to their shared questions (``"only"``, :func:`~.sections.common_questions`), or also get a ``<task>#common``
      section on them, left out of the summary counts (``"also"``, ``Section.repeats``).
    - ``strict``, ``on_duplicate``: see :func:`~.sections.group_sections`; ``config``: a :class:`LeaderboardConfig`;
      ``header``: text atop ``leaderboard.md`` and ``index.html`` (paragraphs split by blank lines); ``plots``: write
      the PNGs (matplotlib); ``created``: a fixed build time (golden files; default now).

    Examples
    --------
    >>> build(["/nonexistent/*"], "/tmp/lb")
    Traceback (most recent call last):
    ...
    semuq_eval.leaderboard.runs.LeaderboardInputError: '/nonexistent/*' matches no run store (a directory with manifest.json or breakdown.json), no breakdown JSON file and no run record
    """
    from semuq_eval.leaderboard.compute import LeaderboardConfig as Config
    from semuq_eval.leaderboard.compute import compute
    from semuq_eval.leaderboard.discovery import expand_inputs
    from semuq_eval.leaderboard.html import write_html
    from semuq_eval.leaderboard.markdown import write_markdown
    from semuq_eval.leaderboard.plots import plot_all
    from semuq_eval.leaderboard.read_run import load_runs
    from semuq_eval.leaderboard.write import to_document, write_csv, write_headline_csv, write_json_document

    o = options if options is not None else BuildOptions(**given)
    if options is not None and given:
        raise TypeError("give build() its options or keywords, not both")
    output, labels, config = Path(output), o.labels, config or Config()
    _check_output(output, o.force)
    skipped: list[dict[str, str]] = []
    paths = expand_inputs(inputs, skipped)
    for entry in skipped:
        log.warning("leaderboard: skipped %s (%s)", entry["path"], entry["reason"])
    unfinished = len(skipped)
    runs = load_runs(paths, labels, skipped)
    if add:
        runs += _joining(expand_inputs(add), runs, labels, skipped)
    for entry in skipped[unfinished:]:
        log.warning("leaderboard: left out a run record: %s", entry["reason"])
    _check_reference(config.reference, runs)
    sections = _sections(runs, o.common_questions, strict=o.strict, on_duplicate=o.on_duplicate)
    board = compute(sections, config)
    output.mkdir(parents=True, exist_ok=True)
    clean_temporary(output)
    document = to_document(
        board, inputs=inputs, created=o.created, relative_to=relative_to or output, skipped=skipped
    )
    # every file replaced whole; the folder marked unfinished until the page, its last file, lands
    with writing_unfinished(output):
        write_json_document(document, output / "leaderboard.json")
        write_csv(document, output / "leaderboard.csv")
        write_headline_csv(document, output / "headline.csv")
        write_markdown(document, output / "leaderboard.md", header=o.header, command=o.command, title=o.title)
        figures = plot_all(document, output) if o.plots else []
        write_html(document, output / "index.html", header=o.header, plots=figures, title=o.title)
    return document


def _check_reference(reference: str, runs: list) -> None:
    """A headline reference estimator that no run has leaves the headline empty: refused when it was chosen
    (``--reference``), a warning for the default."""
    from semuq_eval.leaderboard.headline import REFERENCE
    from semuq_eval.leaderboard.runs import LeaderboardInputError

    known = {name for run in runs for name in run.estimators}
    if not runs or reference in known:
        return
    near = difflib.get_close_matches(reference, sorted(known), n=3)
    hint = (
        f"did you mean {', '.join(near)}?" if near else f"the runs have e.g. {', '.join(sorted(known)[:5])}"
    )
    message = f"--reference {reference}: no run has this estimator, the headline would be empty; {hint}"
    if reference != REFERENCE:
        raise LeaderboardInputError(message)
    log.warning("leaderboard: %s", message)


def _joining(paths: list[Path], runs: list, labels: tuple[str, ...], skipped: list[dict[str, str]]) -> list:
    """The runs of the records ``paths`` that fit a section of ``runs`` (:func:`build`'s ``add``); the others
    are listed in ``skipped`` with the reason, one line each."""
    from semuq_eval.leaderboard.read_run import load_runs
    from semuq_eval.leaderboard.runs import LeaderboardInputError
    from semuq_eval.leaderboard.sections import check_join, group_sections

    sections = group_sections(runs, on_duplicate="latest")
    joining = []
    for path in paths:
        candidates = load_runs([path], labels, skipped)
        try:
            for run in candidates:
                check_join(run, sections)
        except LeaderboardInputError as err:
            skipped.append({"path": str(path), "reason": str(err)})
            continue
        joining.extend(candidates)
    return joining


def _sections(runs: list, common_questions: str | None, **grouping) -> list:
    """The runs grouped into sections under a ``common_questions`` mode (:func:`build`)."""
    from semuq_eval.leaderboard.sections import common_questions as restrict
    from semuq_eval.leaderboard.sections import group_sections

    if common_questions is None:
        return group_sections(runs, **grouping)
    shared, restricted = restrict(runs)
    if common_questions == "only":
        sections = group_sections(shared, **grouping)
        for section in sections:
            if section.task in restricted:
                section.notes.insert(0, restricted[section.task])
        return sections
    sections = group_sections(runs, **grouping)
    common = group_sections([r for r in shared if r.task in restricted], **grouping)
    for section in common:
        section.id, section.repeats = f"{section.task}#common", True
        section.notes.insert(0, restricted[section.task])
    for section in sections:
        if section.task in restricted:
            section.notes.append(f"{section.task}#common compares the LLMs on the questions they share")
    return sorted([*sections, *common], key=lambda section: section.task)  # stable: #common last


def _check_output(output: Path, force: bool) -> None:
    """Refuse an ``output`` that is a file, or a folder of someone else's files (without ``force``)."""
    if output.exists() and not output.is_dir():
        raise ValueError(f"--output {output} is a file, not a folder")
    if not output.is_dir() or force or all(is_temporary(p) for p in output.iterdir()):
        return
    previous = output / "leaderboard.json"
    try:
        ours = (output / UNFINISHED).is_file() or (
            previous.is_file() and str(read_json(previous).get("format", "")).startswith("semuq-leaderboard")
        )
    except (OSError, ValueError, AttributeError):
        ours = False
    if not ours:
        raise FileExistsError(
            f"--output {output} holds files that are not a leaderboard; choose an empty folder or pass --force"
        )
