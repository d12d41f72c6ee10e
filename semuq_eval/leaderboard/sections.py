"""Lining runs up question by question: sections of comparable runs, common questions, and whether a record may
join a board. A section holds runs with the same task, questions (doc ids and question ids), N, judge (label set)
and identity of every operator two of them share; runs differing in any go to separate sections, each saying
why (``strict=True`` refuses instead). :func:`check_join` checks a record joining a section (``--add``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from semuq_eval.leaderboard.runs import LeaderboardInputError, Run, Section

__all__ = ["check_join", "common_questions", "group_sections"]


def check_join(run: Run, sections: Sequence[Section]) -> None:
    """Refuse a run (a record sent from another machine) that cannot join its task's section of a board.

    It must match one of the board's sections of its task and label set in the question set (doc ids, question ids
    and, between records, the questions' texts), N, the judge, the sampling decoding and the identity of every
    operator both ran, and its LLM must not be there yet. Raises LeaderboardInputError: one line naming the file, the
    record and the first field that differs from the nearest section.

    Examples
    --------
    >>> from pathlib import Path
    >>> a = Run(path=Path("a.jsonl.gz"), task="t", llm="a", breakdown={"n_samples": 5}, settings={},
    ...         doc_ids=np.arange(3), scores={}, labels={})
    >>> b = Run(path=Path("b.jsonl.gz"), task="t", llm="b", breakdown={"n_samples": 10}, settings={},
    ...         doc_ids=np.arange(3), scores={}, labels={})
    >>> check_join(b, group_sections([a]))
    Traceback (most recent call last):
    ...
    semuq_eval.leaderboard.runs.LeaderboardInputError: b.jsonl.gz: record t/b: field 'n_samples' is 10, the section t has 5; it cannot join the board
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

    Runs of one task on different question sets (e.g. the first 400 and the first 150) cannot share a section; on
    their common questions (doc id, and question id when every run of the task carries one) they can. A task whose
    runs share no question, or all, is left as is; breakdown-only runs are never touched; every figure of a restricted
    run is recomputed from its scores. Returns the runs and ``{task: note}`` for the tasks restricted.

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

    ``strict``: raise when a task's runs do not all fit in one section, instead of splitting them. ``on_duplicate``:
    two runs of one LLM in a section are an error naming both (``"error"``), or the newer breakdown (``created``) is
    kept and the one dropped named in the section's notes (``"latest"``). Raises LeaderboardInputError for that error
    or for split sections under ``strict``."""
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
                    id=_section_id(task, j, [groups[i][1][0].label_set for i in indices], fields),
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


def _section_id(task: str, j: int, label_sets: Sequence[str], fields: Sequence[str]) -> str:
    """The ``j``-th section of ``task``: the task alone; ``task:label_set`` when its sections differ only in their
    judge, one label set each; else ``task#j`` (from 1)."""
    if len(label_sets) == 1:
        return task
    if list(fields) == ["judge"] and len(set(label_sets)) == len(label_sets):
        return f"{task}:{label_sets[j]}"
    return f"{task}#{j + 1}"
