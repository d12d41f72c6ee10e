"""Collect runs for a leaderboard: find the run stores, read them, check them, and group them into sections.

A **run** is one LLM on one task: a run store directory ``<out>/semuq/<task>/<run_id>/`` holding
``manifest.json``, ``scores.jsonl`` (one item per question: ``doc_id``, ``scores``, ``labels`` {greedy,
majority}) and ``breakdown.json`` (:mod:`semuq_eval.harness.report`). A breakdown JSON file given on its own
(no ``scores.jsonl`` beside it) is a *breakdown-only* run: its AUROC / ECE figures are shown as the run
computed them, but nothing is paired with it (the questions cannot be lined up).

A **section** holds the runs that can be compared question by question: the same task, the same questions
(doc ids and question ids), the same N, the same judge (label set), and the same identity for every operator
that two of its runs share. Runs that differ in any of these go to separate sections, each saying what sets
it apart; nothing is mixed silently. ``strict=True`` refuses such inputs instead.

A run may also come as its **run record** (:mod:`semuq_eval.harness.record`, ``*.jsonl.gz``): the same
per-question scores and labels, text only, from any machine. A record gives the same run, so the same cells,
except that no figure is taken from a breakdown (every one is computed: ``source`` "computed"). A record that
must join a board's existing section (``--add``) is checked by :func:`check_join` first.

Errors are :class:`LeaderboardInputError`, naming the file and what to do.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from semuq_eval.harness.label_sets import RUN_LABELS, label_set_names, read_label_set
from semuq_eval.harness.record import RECORD_SUFFIX, read_record
from semuq_eval.harness.report import FORMAT as BREAKDOWN_FORMAT
from semuq_eval.harness.store import STORE_FORMAT
from semuq_eval.jsonio import read_json, read_jsonl
from semuq_eval.judges import LABEL_STRATEGIES

__all__ = [
    "LeaderboardInputError",
    "Run",
    "Section",
    "check_join",
    "common_questions",
    "expand_inputs",
    "group_sections",
    "load_run",
    "load_runs",
    "operator_identity",
]


class LeaderboardInputError(ValueError):
    """An input the leaderboard cannot use: the message names the file and the fix."""


@dataclass
class Run:
    """One LLM on one task, as read from its store (or a breakdown alone).

    Attributes
    ----------
    path : Path
        The store directory (or the breakdown file of a breakdown-only run).
    task, llm : str
        The task and the LLM's name (the store's run id: the model's slug unless the run set ``run_id``).
    breakdown : dict
        The run's ``breakdown.json``.
    doc_ids : numpy.ndarray or None
        (n,) doc ids in ascending order; None for a breakdown-only run.
    question_ids : list of str or None
        The questions' own ids (``id``) in doc order, when the items carry them.
    scores : dict of str to numpy.ndarray
        Estimator -> (n,) uncertainties, NaN where the run gave no score.
    labels : dict of str to numpy.ndarray
        Label strategy -> (n,) 0/1 labels, NaN where the judge gave none.
    provenance : dict
        Model, revision, task, N, seed, operators and their model ids, judge, package versions
        (null when the run did not record them, with ``notes`` saying so).
    """

    path: Path
    task: str
    llm: str
    breakdown: dict[str, Any]
    settings: dict[str, Any]
    doc_ids: np.ndarray | None = None
    question_ids: list[str] | None = None
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    labels: dict[str, np.ndarray] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    label_set: str = "run"
    judge_info: dict[str, Any] | None = None
    #: the record's ``question_set`` (hash of the questions' texts), for a run read from a run record
    question_set_hash: str | None = None

    @property
    def paired(self) -> bool:
        """True when the run has per-question scores (it can be paired with other runs)."""
        return self.doc_ids is not None

    @property
    def n_samples(self) -> int | None:
        return self.breakdown.get("n_samples", self.settings.get("n_samples"))

    @property
    def operators(self) -> dict[str, dict[str, Any]]:
        """Operator name -> identity (:func:`operator_identity`), for the operators the run ran."""
        return {
            name: operator_identity(entry)
            for name, entry in (self.breakdown.get("operators") or {}).items()
            if isinstance(entry, Mapping)
        }

    @property
    def judge(self) -> dict[str, Any]:
        """The identity of the judge behind the labels (the label set's judge)."""
        if self.judge_info is not None:
            return dict(self.judge_info)
        return dict(self.breakdown.get("judge") or {"judge": self.settings.get("judge")})

    @property
    def created(self) -> str:
        return str(self.breakdown.get("created") or "")

    @property
    def estimators(self) -> list[str]:
        """Every estimator the run names: scored, or listed unavailable (with its reason)."""
        names = list(self.scores) if self.paired else []
        for per in (self.breakdown.get("results") or {}).values():
            names.extend(n for n in per if n not in names)
        names.extend(n for n in (self.breakdown.get("unavailable") or {}) if n not in names)
        return names


@dataclass
class Section:
    """Runs comparable question by question (module docstring); ``key`` says what they share."""

    id: str
    task: str
    runs: list[Run]
    n_questions: int
    question_set: str
    n_samples: int | None
    judge: dict[str, Any]
    operators: dict[str, dict[str, Any]]
    paired: bool
    label_set: str = "run"
    notes: list[str] = field(default_factory=list)
    #: its questions are also in the task's other sections (``--common-questions also``): shown, but left out of
    #: the "improves in X of Y" counts and the heatmap, which would count them twice
    repeats: bool = False

    @property
    def llms(self) -> list[str]:
        return [r.llm for r in self.runs]

    @property
    def estimators(self) -> list[str]:
        names: list[str] = []
        for run in self.runs:
            names.extend(n for n in run.estimators if n not in names)
        return sorted(names)


def expand_inputs(
    patterns: Sequence[str | os.PathLike], skipped: list[dict[str, str]] | None = None
) -> list[Path]:
    """Run store directories, breakdown files or run records named by paths or globs (``**`` recurses).

    A directory counts as a store when it holds ``manifest.json`` or ``breakdown.json``; a file must be a
    ``.json`` breakdown or a ``.jsonl.gz`` run record. Every pattern must match at least one. A store a glob matches whose run has not
    finished (a manifest but no ``breakdown.json`` yet, e.g. a run still generating) is left out and listed in
    ``skipped`` (``{"path", "reason"}``) when a list is given, else it stays in (and :func:`load_run` says what
    is missing); a store named explicitly always stays in.

    Raises
    ------
    LeaderboardInputError
        A pattern that matches nothing usable, or a path that does not exist.

    Examples
    --------
    >>> expand_inputs(["/nonexistent/**/semuq/*/*"])
    Traceback (most recent call last):
    ...
    semuq_eval.leaderboard.collect.LeaderboardInputError: '/nonexistent/**/semuq/*/*' matches no run store (a directory with manifest.json or breakdown.json), no breakdown JSON file and no run record
    """
    found: list[Path] = []
    seen: set[Path] = set()
    for pattern in patterns:
        text = os.path.expanduser(str(pattern))
        magic = glob.has_magic(text)
        matches = sorted(glob.glob(text, recursive=True)) if magic else [text]
        usable, unfinished = [], []
        for match in matches:
            path = Path(match)
            if path.is_dir() and (path / "breakdown.json").is_file():
                usable.append(path)
            elif path.is_dir() and (path / "manifest.json").is_file():
                (unfinished if magic and skipped is not None else usable).append(path)
            elif path.is_file() and (path.suffix == ".json" or path.name.endswith(RECORD_SUFFIX)):
                usable.append(path)
            elif not magic:
                what = (
                    "does not exist"
                    if not path.exists()
                    else "is not a run store (no manifest.json or breakdown.json) nor a run record"
                )
                raise LeaderboardInputError(f"{path} {what}")
        if not usable and not unfinished:
            raise LeaderboardInputError(
                f"{str(pattern)!r} matches no run store (a directory with manifest.json or breakdown.json), "
                "no breakdown JSON file and no run record"
            )
        for path in unfinished:
            skipped.append(
                {"path": str(path), "reason": "unfinished run: manifest.json but no breakdown.json yet"}
            )
        for path in usable:
            if path.resolve() not in seen:
                seen.add(path.resolve())
                found.append(path)
    if not found:
        raise LeaderboardInputError(
            f"no finished run among {len(skipped or [])} store(s) matched by {[str(p) for p in patterns]}: "
            "every one lacks breakdown.json (runs still generating?)"
        )
    return found


def operator_identity(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What identifies an operator's matrices: its declared ``info`` (model, revision, rule, pooling, ...).

    A local model path is reduced to its last folder name, so that the same prepared model on two machines
    (``/root/.cache/.../all-minilm-l6-v2`` and ``/home/me/.cache/.../all-minilm-l6-v2``) is one identity.

    Examples
    --------
    >>> operator_identity({"kind": "gram", "info": {"operator": "enc", "model": "/x/models/all-minilm-l6-v2/"}})
    {'operator': 'enc', 'model': 'all-minilm-l6-v2'}
    """
    info = dict(entry.get("info") or {"kind": entry.get("kind")})
    model = info.get("model")
    if isinstance(model, str) and (os.path.isabs(model) or model.startswith((".", "~"))):
        info["model"] = Path(model.rstrip("/\\")).name
    return info


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _provenance(path: Path, task: str, llm: str, breakdown: Mapping[str, Any], settings: Mapping[str, Any]):
    operators = {
        name: {
            "kind": entry.get("kind"),
            "status": entry.get("status"),
            "model": (entry.get("info") or {}).get("model"),
            "revision": (entry.get("info") or {}).get("revision"),
        }
        for name, entry in (breakdown.get("operators") or {}).items()
        if isinstance(entry, Mapping)
    }
    out: dict[str, Any] = {
        "model": {"name": llm, "pretrained": None, "revision": None, "sha": None, "model_args": None},
        "task": task,
        "n_samples": breakdown.get("n_samples", settings.get("n_samples")),
        "n_docs": breakdown.get("n_docs"),
        "seed": (breakdown.get("seeds") or {}).get("bootstrap", settings.get("seed")),
        "bootstrap": settings.get("bootstrap"),
        "operators": operators,
        "judge": dict(breakdown.get("judge") or {"judge": settings.get("judge")}),
        "decoding": (breakdown.get("decoding") or {}).get("sampled") or breakdown.get("generation_kwargs"),
        "created": breakdown.get("created"),
        "versions": {"lm_eval": None, "transformers": None, "torch": None, "semuq_eval": None},
        "results_file": None,
        "notes": [],
    }
    results = _lm_eval_results(path, task, llm)
    if results is None:
        out["notes"].append(
            "no lm-eval results file found beside the store: model revision and package versions unknown"
        )
        return out
    file, data = results
    config = data.get("config") or {}
    args = config.get("model_args")
    pretrained = None
    if isinstance(args, str):
        parts = dict(p.split("=", 1) for p in args.split(",") if "=" in p)
        pretrained = parts.get("pretrained")
    elif isinstance(args, Mapping):
        pretrained = args.get("pretrained")
    out["model"].update(
        pretrained=pretrained,
        revision=config.get("model_revision"),
        sha=config.get("model_sha") or None,
        model_args=args,
        lm_eval_model=config.get("model"),
    )
    torch_version = None
    for line in str(data.get("pretty_env_info") or "").splitlines():
        if line.startswith("PyTorch version:"):
            torch_version = line.split(":", 1)[1].strip()
    out["versions"].update(
        lm_eval=data.get("lm_eval_version"),
        transformers=data.get("transformers_version"),
        torch=torch_version,
        git_hash=data.get("git_hash"),
    )
    out["results_file"] = str(file)
    out["notes"].append(
        "semuq-eval's version is not recorded by runs; git_hash is the commit of the folder lm-eval ran in "
        "(the semuq-eval checkout, for runs started from it)"
    )
    return out


def _lm_eval_results(path: Path, task: str, llm: str) -> tuple[Path, dict] | None:
    """lm-eval's newest ``results_*.json`` for this task and model under the store's output root, if any."""
    from semuq_eval.context import model_slug

    if path.parent.parent.name != "semuq":
        return None
    root = path.parent.parent.parent
    best: tuple[str, Path, dict] | None = None
    for file in root.glob("*/results_*.json"):
        try:
            data = read_json(file)
        except (OSError, ValueError):
            continue
        if task not in (data.get("configs") or {}) and task not in (data.get("results") or {}):
            continue
        args = (data.get("config") or {}).get("model_args")
        pretrained = None
        if isinstance(args, str):
            pretrained = dict(p.split("=", 1) for p in args.split(",") if "=" in p).get("pretrained")
        elif isinstance(args, Mapping):
            pretrained = args.get("pretrained")
        if pretrained is None or model_slug(pretrained) != llm:
            continue
        if best is None or file.name > best[0]:
            best = (file.name, file, data)
    return None if best is None else (best[1], best[2])


def load_run(path: str | os.PathLike, label_set: str = RUN_LABELS) -> Run:
    """Read one run store directory, one run record (``*.jsonl.gz``), or one breakdown JSON file (a
    breakdown-only run).

    ``label_set`` names the labels (:mod:`semuq_eval.harness.label_sets`): ``"run"``, the run's own judge
    (``scores.jsonl``), or a set written by ``semuq-eval judge`` (``labels/<name>.jsonl``), whose judge then
    identifies the labels; a question the set does not label has no label.

    Raises
    ------
    LeaderboardInputError
        A missing file, an unknown store or breakdown format (an older schema), or items that do not match
        the breakdown; the message names the file and the fix.

    Examples
    --------
    >>> load_run("/nonexistent/semuq/semuq_nqopen/x")
    Traceback (most recent call last):
    ...
    semuq_eval.leaderboard.collect.LeaderboardInputError: /nonexistent/semuq/semuq_nqopen/x does not exist
    """
    path = Path(path)
    if not path.exists():
        raise LeaderboardInputError(f"{path} does not exist")
    if path.is_file() and path.name.endswith(RECORD_SUFFIX):
        return _load_record(path, label_set)
    store = path if path.is_dir() else None
    breakdown_file = path / "breakdown.json" if store else path
    if store is None and path.name == "breakdown.json" and (path.parent / "scores.jsonl").is_file():
        store, breakdown_file = path.parent, path
    if not breakdown_file.is_file():
        raise LeaderboardInputError(
            f"{breakdown_file} is missing: the run did not finish its aggregation; re-run it, or rebuild it "
            f"from the store with `semuq-eval rescore {breakdown_file.parent} --output {breakdown_file}`"
        )
    breakdown = read_json(breakdown_file)
    fmt = breakdown.get("format") if isinstance(breakdown, Mapping) else None
    if fmt != BREAKDOWN_FORMAT:
        raise LeaderboardInputError(
            f"{breakdown_file}: breakdown format {fmt!r}, expected {BREAKDOWN_FORMAT!r} (an older or unknown "
            f"schema); rebuild it with `semuq-eval rescore {breakdown_file.parent}` from the run store"
        )
    for key in ("task", "results", "labels"):
        if key not in breakdown:
            raise LeaderboardInputError(f"{breakdown_file}: no {key!r} in the breakdown (a truncated file?)")
    settings = dict(breakdown.get("settings") or {})
    task = str(breakdown["task"])
    if store is None:
        if label_set != RUN_LABELS:
            raise LeaderboardInputError(
                f"{path}: a breakdown alone has only the run's labels, not {label_set!r}"
            )
        llm = path.parent.name if path.name == "breakdown.json" else path.stem
        run = Run(path=path, task=task, llm=llm, breakdown=breakdown, settings=settings)
        run.provenance = _provenance(path.parent, task, llm, breakdown, settings)
        run.provenance["notes"].append("breakdown only (no scores.jsonl): not paired with other runs")
        return run
    manifest_file = store / "manifest.json"
    if not manifest_file.is_file():
        raise LeaderboardInputError(f"{manifest_file} is missing: {store} is not a complete run store")
    manifest = read_json(manifest_file)
    if not isinstance(manifest, Mapping):
        raise LeaderboardInputError(
            f"{manifest_file}: a manifest is a JSON object, got {type(manifest).__name__}"
        )
    if manifest.get("format") != STORE_FORMAT:
        raise LeaderboardInputError(
            f"{manifest_file}: store format {manifest.get('format')!r}, expected {STORE_FORMAT!r}"
        )
    if manifest.get("task") != task:
        raise LeaderboardInputError(
            f"{store}: the manifest's task {manifest.get('task')!r} is not the breakdown's {task!r}"
        )
    scores_file = store / "scores.jsonl"
    if not scores_file.is_file():
        raise LeaderboardInputError(
            f"{scores_file} is missing: the per-question scores are needed to pair runs; pass "
            f"{breakdown_file} alone to show its figures unpaired"
        )
    items = {}
    for line, item in read_jsonl(scores_file):
        for key, kind in (("doc_id", int), ("scores", Mapping), ("labels", Mapping)):
            if key not in item:
                raise LeaderboardInputError(f"{scores_file}:{line}: no {key!r} in the item")
            if not isinstance(item[key], kind) or isinstance(item[key], bool):
                raise LeaderboardInputError(
                    f"{scores_file}:{line}: field {key!r} must be {'an integer' if kind is int else 'an object'}, "
                    f"got {item[key]!r:.60}"
                )
        items[item["doc_id"]] = item  # a later line for the same doc wins, as in load_store
    if not items:
        raise LeaderboardInputError(f"{scores_file} holds no questions")
    if breakdown.get("n_docs") is not None and int(breakdown["n_docs"]) != len(items):
        raise LeaderboardInputError(
            f"{store}: scores.jsonl holds {len(items)} questions but breakdown.json says {breakdown['n_docs']}: "
            f"they come from different runs; rebuild the breakdown with `semuq-eval rescore {store}`"
        )
    doc_ids = np.array(sorted(items), dtype=np.int64)
    ordered = [items[d] for d in doc_ids]
    names: list[str] = []
    for it in ordered:
        names.extend(k for k in it["scores"] if k not in names)
    scores = {n: np.array([_float(it["scores"].get(n)) for it in ordered]) for n in names}
    labels = {}
    for strategy in LABEL_STRATEGIES:
        values = [it["labels"].get(strategy) for it in ordered]
        bad = [v for v in values if v is not None and v not in (0, 1, True, False)]
        if bad:
            raise LeaderboardInputError(
                f"{scores_file}: {strategy} labels must be 0/1 or null, got {bad[:3]}"
            )
        labels[strategy] = np.array([_float(v) for v in values])
    judge_info = None
    if label_set != RUN_LABELS:
        try:
            chosen = read_label_set(store, label_set)
        except (FileNotFoundError, ValueError) as err:
            raise LeaderboardInputError(str(err)) from None
        judge_info = {"label_set": label_set, **chosen.judge}
        for strategy in LABEL_STRATEGIES:
            labels[strategy] = np.array(
                [_float((chosen.records.get(int(d)) or {}).get(strategy)) for d in doc_ids]
            )
    qids = [it.get("id") for it in ordered]
    llm = store.name
    run = Run(
        path=store,
        task=task,
        llm=llm,
        breakdown=breakdown,
        settings=settings,
        doc_ids=doc_ids,
        question_ids=[str(q) for q in qids] if all(q is not None for q in qids) else None,
        scores=scores,
        labels=labels,
        label_set=label_set,
        judge_info=judge_info,
    )
    run.provenance = _provenance(store, task, llm, breakdown, settings)
    named = manifest.get("model") or {}  # the LLM as the run's manifest names it (newer stores)
    if named:
        model = run.provenance["model"]
        model["pretrained"] = named.get("pretrained") or named.get("model") or model["pretrained"]
        model["revision"] = named.get("revision") or model["revision"]
        model["manifest"] = dict(named)
    run.provenance["label_set"] = label_set
    if judge_info is not None:
        run.provenance["judge"] = judge_info
    return run


def _load_record(path: Path, label_set: str) -> Run:
    """A run read from its run record: what :func:`load_run` gives for the store it came from, except that
    its breakdown holds no figures (every cell is computed) and its provenance is the record's."""
    try:
        record = read_record(path)
    except ValueError as err:
        raise LeaderboardInputError(str(err)) from None
    task, llm = record["task"], record["llm"]
    if label_set not in record["label_sets"]:
        raise LeaderboardInputError(
            f"{path}: record {task}/{llm}: no label set {label_set!r} (it holds {sorted(record['label_sets'])})"
        )
    questions = record.questions
    breakdown = {
        "format": BREAKDOWN_FORMAT,
        "n_samples": record["n_samples"],
        "n_docs": len(questions),
        **{
            k: v for k, v in record.items() if k not in ("format", "llm", "model", "estimators", "label_sets")
        },
    }
    settings = dict(record.get("settings") or {})
    columns = {name: i for i, name in enumerate(record["estimators"])}
    scores = {n: np.array([_float(q["scores"][i]) for q in questions]) for n, i in columns.items()}
    chosen = [q["labels"].get(label_set) or {} for q in questions]
    labels = {s: np.array([_float(c.get(s)) for c in chosen]) for s in LABEL_STRATEGIES}
    qids = [q.get("id") for q in questions]
    run = Run(
        path=path,
        task=task,
        llm=llm,
        breakdown=breakdown,
        settings=settings,
        doc_ids=np.array([q["doc_id"] for q in questions], dtype=np.int64),
        question_ids=[str(q) for q in qids] if all(q is not None for q in qids) else None,
        scores=scores,
        labels=labels,
        label_set=label_set,
        judge_info=None
        if label_set == RUN_LABELS
        else {"label_set": label_set, **record["label_sets"][label_set]},
        question_set_hash=record["question_set"],
    )
    run.provenance = _provenance(path, task, llm, breakdown, settings)
    model = run.provenance["model"]
    named = dict(record.get("model") or {})
    model.update(pretrained=named.get("pretrained") or named.get("model"), revision=named.get("revision"))
    model["manifest"] = named
    run.provenance["label_set"] = label_set
    run.provenance["notes"] = [
        f"from the run record {path.name}: the LLM as the store's manifest named it; package versions not recorded"
    ]
    if run.judge_info is not None:
        run.provenance["judge"] = run.judge_info
    return run


def load_runs(
    paths: Iterable[str | os.PathLike],
    label_sets: Sequence[str] = (RUN_LABELS,),
    skipped: list[dict[str, str]] | None = None,
) -> list[Run]:
    """:func:`load_run` of every path and label set, in the order given.

    ``label_sets`` may hold ``"all"``: every label set of each store or record (:func:`label_set_names`).
    A run record that cannot be read (it may come from anywhere) is listed in ``skipped`` (``{"path",
    "reason"}``) when a list is given, and the others are read; otherwise, as for a store, the error is raised.
    """
    runs = []
    for p in paths:
        names = list(label_sets)
        record = str(p).endswith(RECORD_SUFFIX)
        try:
            if "all" in names:
                found = (
                    label_set_names(p)
                    if Path(p).is_dir()
                    else list(read_record(p)["label_sets"])
                    if record
                    else [RUN_LABELS]
                )
                names = [n for n in names if n != "all"] + [n for n in found if n not in names]
            runs.extend([load_run(p, name) for name in names])
        except (LeaderboardInputError, ValueError) as err:
            if not record or skipped is None:
                raise LeaderboardInputError(str(err)) from None
            skipped.append({"path": str(p), "reason": str(err)})
    return runs


def check_join(run: Run, sections: Sequence[Section]) -> None:
    """Refuse a run (a record sent from another machine) that cannot join its task's section of a board.

    The run must match one of the board's sections of its task and label set in everything that makes runs
    comparable: the question set (doc ids, question ids and, between records, the questions' texts), N, the
    judge, the sampling decoding and the identity of every operator both ran; and its LLM must not be there yet.

    Raises
    ------
    LeaderboardInputError
        One line naming the file, the record and the first field that differs from the nearest section.

    Examples
    --------
    >>> a = Run(path=Path("a.jsonl.gz"), task="t", llm="a", breakdown={"n_samples": 5}, settings={},
    ...         doc_ids=np.arange(3), scores={}, labels={})
    >>> b = Run(path=Path("b.jsonl.gz"), task="t", llm="b", breakdown={"n_samples": 10}, settings={},
    ...         doc_ids=np.arange(3), scores={}, labels={})
    >>> check_join(b, group_sections([a]))
    Traceback (most recent call last):
    ...
    semuq_eval.leaderboard.collect.LeaderboardInputError: b.jsonl.gz: record t/b: field 'n_samples' is 10, the section t has 5; it cannot join the board
    """
    where = f"{run.path}: record {run.task}/{run.llm}"
    candidates = [
        s for s in sections if s.task == run.task and s.label_set == run.label_set and not s.repeats
    ]
    if not candidates:
        raise LeaderboardInputError(
            f"{where}: field 'task' is {run.task!r} (label set {run.label_set!r}), which no section of the board "
            "has; pass it as an input to start a section"
        )
    best: tuple[str, list[tuple[str, Any, Any]]] | None = None
    for section in candidates:
        differences = _join_differences(run, section)
        if not differences and run.llm in section.llms:
            raise LeaderboardInputError(
                f"{where}: field 'llm' is {run.llm!r}, which the section {section.id} has already; replace its "
                "record instead of adding a second one"
            )
        if not differences:
            return
        if best is None or len(differences) < len(best[1]):
            best = (section.id, differences)
    section_id, ((name, mine, theirs), *_) = best
    raise LeaderboardInputError(
        f"{where}: field {name!r} is {mine}, the section {section_id} has {theirs}; it cannot join the board"
    )


def _join_differences(run: Run, section: Section) -> list[tuple[str, Any, Any]]:
    """``(field, the run's value, the section's value)`` of every field in which the run differs."""
    out = []
    hashes = {r.question_set_hash for r in section.runs if r.question_set_hash is not None}
    if _question_set(run) != section.question_set:
        out.append(("question_set", _question_set(run), section.question_set))
    elif run.question_set_hash is not None and hashes and run.question_set_hash not in hashes:
        out.append(("question_set", f"sha1 {run.question_set_hash[:12]}", f"sha1 {sorted(hashes)[0][:12]}"))
    if run.n_samples != section.n_samples:
        out.append(("n_samples", run.n_samples, section.n_samples))
    judge = {"label_set": run.label_set, **run.judge}
    if judge != section.judge:
        out.append(
            ("judge", json.dumps(run.judge, sort_keys=True), json.dumps(section.judge, sort_keys=True))
        )
    decoding = run.provenance.get("decoding")
    others = [r.provenance.get("decoding") for r in section.runs if r.provenance.get("decoding") is not None]
    if decoding is not None and others and decoding not in others:
        out.append(("decoding", json.dumps(decoding, sort_keys=True), json.dumps(others[0], sort_keys=True)))
    for name, ident in run.operators.items():
        if name in section.operators and section.operators[name] != ident:
            out.append(
                (f"operators.{name}", json.dumps(ident, sort_keys=True), json.dumps(section.operators[name]))
            )
    return out


def common_questions(runs: Sequence[Run]) -> tuple[list[Run], dict[str, str]]:
    """Restrict every task's paired runs to the questions they all share (``--common-questions``).

    Runs of one task made on different question sets (e.g. the first 400 and the first 150) cannot share a
    section; restricted to their common questions (doc id, and the question's own id when every run of the
    task carries one) they can, so LLMs are compared on the same questions. A task whose runs share no
    question, or already share all, is left as is; breakdown-only runs are never touched. Every figure of a
    restricted run is recomputed from its scores (its own breakdown covers other questions). Returns the runs
    and ``{task: note}`` for the tasks restricted.

    Examples
    --------
    >>> def run(llm, n):
    ...     return Run(path=llm, task="t", llm=llm, breakdown={}, settings={}, doc_ids=np.arange(n),
    ...                scores={"u": np.arange(n) / n}, labels={"greedy": np.ones(n)})
    >>> runs, notes = common_questions([run("a", 400), run("b", 150)])
    >>> [len(r.doc_ids) for r in runs], notes["t"]
    ([150, 150], 'restricted to the 150 questions all 2 runs share (--common-questions): a: 400 -> 150, b: 150')
    """
    by_task: dict[str, list[int]] = {}
    for i, run in enumerate(runs):
        if run.paired:
            by_task.setdefault(run.task, []).append(i)
    out, notes = list(runs), {}
    for task, indices in by_task.items():
        members = [runs[i] for i in indices]
        with_ids = all(r.question_ids is not None for r in members)
        keys = [_question_keys(r, with_ids) for r in members]
        shared = set.intersection(*(set(k) for k in keys))
        if not shared or all(len(r.doc_ids) == len(shared) for r in members):
            continue
        sizes = []
        for i, run, run_keys in zip(indices, members, keys, strict=True):
            keep = np.array([k in shared for k in run_keys])
            sizes.append(
                f"{run.llm}: {len(run.doc_ids)}" + (f" -> {int(keep.sum())}" if not keep.all() else "")
            )
            out[i] = replace(
                run,
                doc_ids=run.doc_ids[keep],
                question_ids=[q for q, k in zip(run.question_ids, keep, strict=True) if k]
                if with_ids
                else None,
                scores={name: values[keep] for name, values in run.scores.items()},
                labels={name: values[keep] for name, values in run.labels.items()},
            )
        notes[task] = (
            f"restricted to the {len(shared)} questions all {len(members)} runs share (--common-questions): "
            + ", ".join(sizes)
        )
    return out, notes


def _question_keys(run: Run, with_ids: bool) -> list[tuple[int, str | None]]:
    """(doc id, question id or None) of every question of a paired run, in its order."""
    ids = run.question_ids if with_ids and run.question_ids is not None else [None] * len(run.doc_ids)
    return [(int(d), q) for d, q in zip(run.doc_ids, ids, strict=True)]


def _question_set(run: Run) -> str:
    if not run.paired:
        return f"unverified: {run.breakdown.get('n_docs')} questions (breakdown only)"
    digest = hashlib.sha1(json.dumps([run.doc_ids.tolist(), run.question_ids]).encode()).hexdigest()
    return f"{len(run.doc_ids)} questions, doc ids {run.doc_ids[0]}-{run.doc_ids[-1]}, sha1 {digest[:12]}"


_KEY_FIELDS = ("task", "question set", "N", "judge")


def _differences(keys: Sequence[tuple], ops: Sequence[Mapping[str, Any]]) -> list[str]:
    """The fields in which sections of one task differ."""
    out = [name for i, name in enumerate(_KEY_FIELDS) if len({k[i] for k in keys}) > 1]
    names = {o for op in ops for o in op}
    if any(len({json.dumps(op.get(o), sort_keys=True) for op in ops if o in op}) > 1 for o in names):
        out.append("operator identities")
    return out


def _this(key: tuple, ops: Mapping[str, Any], fields: Sequence[str]) -> str:
    values = {"question set": key[1], "N": key[2], "judge": key[3], "operator identities": json.dumps(ops)}
    return "; ".join(f"{f}: {values[f]}" for f in fields if f in values)


def group_sections(
    runs: Sequence[Run], *, strict: bool = False, on_duplicate: str = "error"
) -> list[Section]:
    """Group runs into sections of runs comparable question by question (module docstring).

    Parameters
    ----------
    runs : sequence of Run
    strict : bool, default=False
        Refuse (raise) when a task's runs do not all fit in one section, instead of splitting them.
    on_duplicate : {"error", "latest"}, default="error"
        Two runs of the same LLM in one section: an error naming both, or keep the newer breakdown
        (``created``) and name the one dropped in the section's notes.

    Raises
    ------
    LeaderboardInputError
        Two runs of one LLM in a section (``on_duplicate="error"``), or split sections under ``strict``.
    """
    if on_duplicate not in ("error", "latest"):
        raise ValueError(f"on_duplicate must be 'error' or 'latest', got {on_duplicate!r}")
    ordered = sorted(runs, key=lambda r: (r.task, r.llm, str(r.path)))
    groups: list[tuple[tuple, list[Run], dict[str, dict], list[str]]] = []
    for run in ordered:
        key = (
            run.task,
            _question_set(run),
            run.n_samples,
            json.dumps({"label_set": run.label_set, **run.judge}, sort_keys=True),
        )
        ops = run.operators
        placed = False
        for gkey, members, gops, notes in groups:
            if gkey != key or any(gops[o] != ops[o] for o in set(gops) & set(ops)):
                continue
            same = [m for m in members if m.llm == run.llm]
            if same:
                if on_duplicate == "error":
                    raise LeaderboardInputError(
                        f"two runs of {run.llm} on {run.task} with the same questions, N, judge and operators: "
                        f"{same[0].path} and {run.path}; pass one of them, or --on-duplicate latest"
                    )
                old = same[0]
                keep, drop = (run, old) if run.created >= old.created else (old, run)
                members[members.index(old)] = keep
                notes.append(f"two runs of {run.llm}: kept {keep.path} (newer), dropped {drop.path}")
            else:
                members.append(run)
            for name, ident in ops.items():
                gops.setdefault(name, ident)
            placed = True
            break
        if not placed:
            groups.append((key, [run], dict(ops), []))
    sections: list[Section] = []
    by_task: dict[str, list[int]] = {}
    for i, (key, _, _, _) in enumerate(groups):
        by_task.setdefault(key[0], []).append(i)
    for task, indices in sorted(by_task.items()):
        fields = _differences([groups[i][0] for i in indices], [groups[i][2] for i in indices])
        if strict and len(indices) > 1:
            a, b = groups[indices[0]], groups[indices[1]]
            raise LeaderboardInputError(
                f"{task}: runs that cannot be compared question by question (they differ in "
                f"{', '.join(fields)}): {[str(r.path) for r in a[1]]} vs {[str(r.path) for r in b[1]]}"
            )
        for j, i in enumerate(indices):
            key, members, gops, notes = groups[i]
            if len(indices) > 1:
                notes.insert(
                    0,
                    f"{task} has {len(indices)} sections: its runs differ in {', '.join(fields)} and are "
                    f"not compared across sections; this one has {_this(key, gops, fields)}",
                )
            paired = all(r.paired for r in members)
            if not paired:
                notes.append(
                    "breakdown-only runs: figures as the runs computed them, no paired tests or ranks"
                )
            n_questions = len(members[0].doc_ids) if paired else int(members[0].breakdown.get("n_docs") or 0)
            sections.append(
                Section(
                    id=f"{task}" if len(indices) == 1 else f"{task}#{j + 1}",
                    task=task,
                    runs=sorted(members, key=lambda r: r.llm),
                    n_questions=n_questions,
                    question_set=key[1],
                    n_samples=key[2],
                    judge=json.loads(key[3]),
                    operators=gops,
                    paired=paired,
                    label_set=members[0].label_set,
                    notes=notes,
                )
            )
    return sections
