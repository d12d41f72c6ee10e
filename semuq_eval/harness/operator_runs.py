"""Operators over all questions of a rank: one batched call per shared pass, checked inputs, honest failures.

:func:`compute_operators` checks each operator's needs per question (one lacking a need, e.g. hidden states, has the
operator *unavailable*, with the reason); runs each shared pass (``Operator.share_key``: ``nli`` and ``nli_soft``) ONCE,
batched over the remaining questions; and computes extras for the greedy answers: ``greedy_similarities`` in the same
pass, then the token extras the run's estimators read (:mod:`semuq_eval.signals`).

An operator that cannot run is unavailable for the whole pass (logged ONCE, recorded in its :class:`OperatorRun`, not
retried per question), except when the pass runs out of memory: it is then split in halves down to single questions (up
to :data:`MAX_FAILED_PASSES` failed passes), so only questions that still fail lose it. Nothing is filled with zeros.
Answers read only in part (ROUGE-L's word cap) are recorded per question, counted (``n_truncated``) and logged once."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semuq_eval import signals
from semuq_eval.harness.doc import Doc
from semuq_eval.harness.estimators import OperatorSpec

__all__ = [
    "OperatorRun",
    "compute_operators",
    "get_operator",
    "merge_operator_runs",
    "operator_spec",
]

log = logging.getLogger(__name__)

_OPERATORS: dict[str, Any] = {}

MAX_FAILED_PASSES = 32
"""Failed passes of one operator (or shared group) over one set of questions after which a pass that ran out of
memory is no longer split: enough to find a few failing questions among millions, few when every pass fails."""


def get_operator(name: str, options: Mapping[str, Any] | None = None):
    """The operator ``name`` built with ``options``, cached per process (models load once)."""
    from semuq_eval import operators

    key = f"{name}:{json.dumps(options or {}, sort_keys=True, default=str)}"
    if key not in _OPERATORS:
        _OPERATORS[key] = operators.get(name, **dict(options or {}))
    return _OPERATORS[key]


def operator_spec(name: str, options: Mapping[str, Any] | None = None) -> OperatorSpec:
    """The declarations (class ``kind`` and ``extras``) of operator ``name``: registered, or a named variant
    (:func:`semuq_eval.operators.resolve`)."""
    from semuq_eval import operators

    cls = operators.registry.get(operators.resolve(name, options)[0])
    return OperatorSpec(cls.kind, tuple(cls.extras))


@dataclass
class OperatorRun:
    """What one operator did on this rank: identity, cost, and where it was unavailable."""

    name: str
    kind: str | None = None
    status: str = "ok"  # ok | partial | unavailable
    info: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    n_questions: int = 0
    n_unavailable: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    n_truncated: int = 0
    #: under data parallelism, what each rank's run did (:func:`merge_operator_runs`); None otherwise
    per_rank: list[dict[str, Any]] | None = None

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        if out["per_rank"] is None:  # single process: the record is the rank's own
            del out["per_rank"]
        return out


#: cost entries that are not summed over ranks: the ranks run at the same time, so a run takes the longest
MAX_OVER_RANKS = ("wall_time_s",)


def merge_operator_runs(per_rank: Sequence[Mapping[str, OperatorRun]]) -> dict[str, OperatorRun]:
    """One run per operator from every rank's runs (``per_rank[r]`` = rank r's), for the breakdown.
    Counts and costs are summed, wall time is the maximum; ``per_rank`` keeps each rank's status, counts and cost.
    Status is ``unavailable`` when no question had the operator, ``partial`` when some lacked it, else ``ok``."""
    names = list(dict.fromkeys(n for runs in per_rank for n in runs))
    merged: dict[str, OperatorRun] = {}
    for name in names:
        ranked = [(r, runs[name]) for r, runs in enumerate(per_rank) if name in runs]
        out = merged[name] = OperatorRun(name)
        out.kind = next((run.kind for _, run in ranked if run.kind is not None), None)
        out.info = dict(next((run.info for _, run in ranked if run.info), {}))
        out.per_rank = []
        for r, run in ranked:
            out.n_questions += run.n_questions
            out.n_unavailable += run.n_unavailable
            out.n_truncated += run.n_truncated
            for reason, count in run.reasons.items():
                out.reasons[reason] = out.reasons.get(reason, 0) + count
            for key, value in run.cost.items():
                if key in MAX_OVER_RANKS:
                    out.cost[key] = max(out.cost.get(key, value), value)
                else:
                    out.cost[key] = out.cost.get(key, 0) + value
            out.per_rank.append(
                {
                    "rank": r,
                    "status": run.status,
                    "n_questions": run.n_questions,
                    "n_unavailable": run.n_unavailable,
                    "cost": dict(run.cost),
                }
            )
        counted = [run for _, run in ranked if run.n_questions > 0] or [run for _, run in ranked]
        if all(run.status == "unavailable" for run in counted) or (
            out.n_questions > 0 and out.n_unavailable >= out.n_questions
        ):
            out.status = "unavailable"
        elif out.n_unavailable or any(run.status != "ok" for run in counted):
            out.status = "partial"
    return merged


def _missing_need(doc: Doc, name: str, needs: frozenset[str], hidden: np.ndarray | None) -> str | None:
    """Why ``doc`` cannot feed operator ``name`` with these needs (``hidden``: its stacked hidden states), or None."""
    if "answers" in needs and not doc.samples:
        return "no sampled answers"
    if "hidden_states" in needs and hidden is None:
        return (
            f"{name} needs the generating model's hidden states (black-box model, or missing, zero or "
            "non-finite hidden vectors)"
        )
    if "images" in needs:
        return f"{name} needs the question's images, which the pipeline does not pass to operators yet"
    return None


def _anchor_hidden(greedy: Any, stack: np.ndarray | None) -> np.ndarray | None:
    """The greedy answer's hidden state as a vector the samples' ``stack`` can be compared with, or None."""
    if stack is None or getattr(greedy, "hidden", None) is None:
        return None
    h = np.asarray(greedy.hidden, dtype=np.float64).reshape(-1)
    ok = h.shape == (stack.shape[1],) and np.all(np.isfinite(h)) and np.linalg.norm(h) > 0
    return h if ok else None


def _hidden_stack(samples: Sequence[Any]) -> np.ndarray | None:
    if not samples or any(g.hidden is None for g in samples):
        return None
    try:
        h = np.stack([np.asarray(g.hidden, dtype=np.float64) for g in samples])
    except ValueError:
        return None
    ok = np.all(np.isfinite(h)) and np.all(np.linalg.norm(h, axis=1) > 0)
    return h if ok else None


def compute_operators(
    docs: Sequence[Doc],
    names: Sequence[str],
    options: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    token_extras: Collection[str] | None = None,
) -> dict[str, OperatorRun]:
    """Fill ``matrices`` / ``extras`` / ``unavailable`` of every doc in place; one run record per operator.

    ``options[name]`` are operator ``name``'s keyword options; ``token_extras`` the token extras to compute (default:
    every declared one; a run asks for those its estimators read), each by the operator's method of that name on the
    questions, greedy answers and their token offsets."""
    from semuq_eval.operators.sharing import share_groups

    options = options or {}
    runs = {name: OperatorRun(name, n_questions=len(docs)) for name in names}
    built = []
    for name in names:
        try:
            op = get_operator(name, options.get(name))
        except Exception as err:
            _unavailable(runs[name], docs, range(len(docs)), f"operator {name} is unavailable: {_why(err)}")
            continue
        runs[name].kind, runs[name].info = op.kind, dict(op.info)
        built.append((name, op))
    ops_by_id = {id(op): name for name, op in built}
    stacks: dict[int, np.ndarray | None] = {}  # each doc's hidden states, stacked once for every operator
    for group in share_groups([op for _, op in built]):
        group_names = [ops_by_id[id(op)] for op in group]
        reads_hidden = "hidden_states" in group[0].needs
        if reads_hidden:
            stacks.update({i: _hidden_stack(d.samples) for i, d in enumerate(docs) if i not in stacks})
        todo = []
        for i, doc in enumerate(docs):
            whys = [_missing_need(doc, name, group[0].needs, stacks.get(i)) for name in group_names]
            if whys[0] is None:
                todo.append(i)
            for name, why in zip(group_names, whys, strict=True):
                if why is not None:
                    _unavailable(runs[name], docs, [i], why)
        if not todo:
            continue
        if not reads_hidden or not all("greedy_similarities" in op.extras for op in group):
            _run_group(group, group_names, docs, todo, stacks if reads_hidden else None, runs)
            continue
        # a hidden-state operator compares the greedy answer by its own hidden state, where there is one
        greedy = {i: _anchor_hidden(docs[i].greedy, stacks[i]) for i in todo}
        with_anchor = [i for i in todo if greedy[i] is not None]
        without = [i for i in todo if greedy[i] is None]
        if with_anchor:
            _run_group(group, group_names, docs, with_anchor, stacks, runs, greedy)
        if without:
            _run_group(group, group_names, docs, without, stacks, runs)
            for i in without:
                for name in group_names:
                    docs[i].unavailable[f"{name}.greedy_similarities"] = (
                        "no usable hidden state for the greedy answer (missing, zero, non-finite or of another size)"
                    )
    for name, op in built:
        for extra in signals.names(origin="tokens"):
            wanted = token_extras is None or extra in token_extras
            if wanted and extra in op.extras and runs[name].status != "unavailable":
                _token_extra(op, name, docs, extra)
    return runs


def _in_parts(call: Callable[[list[int]], Any], n: int) -> Iterator[tuple[list[int], Any, str | None]]:
    """``call`` on positions ``0..n-1`` in one pass; a pass that runs out of memory is split in halves, each
    run again. Yields ``(positions, result, None)`` for a pass that ran, ``(positions, None, why)`` for one given up on.
    The error itself is not kept: its frames may hold what exhausted memory."""
    queue, failed = [list(range(n))], 0
    while queue:
        part = queue.pop(0)
        try:
            result, why, split = call(part), None, False
        except Exception as err:
            result, why, split = None, _why(err), _out_of_memory(err)
        if why is None:
            yield part, result, None
            continue
        failed += 1
        if split and len(part) > 1 and failed <= MAX_FAILED_PASSES:
            log.debug("a pass over %d questions failed (%s): trying its halves", len(part), why)
            queue[:0] = [part[: len(part) // 2], part[len(part) // 2 :]]
        else:
            yield part, None, why


def _run_group(
    group,
    names: list[str],
    docs: Sequence[Doc],
    todo: list[int],
    hidden: Mapping[int, np.ndarray] | None,
    runs: dict[str, OperatorRun],
    anchor_hidden: Mapping[int, np.ndarray] | None = None,
) -> None:
    """Batched passes of the group over ``todo`` (:func:`_in_parts`); the greedy answers are anchored when every
    operator declares it (hidden-state operators: with ``anchor_hidden``, given only then). ``hidden`` and
    ``anchor_hidden`` hold the docs' stacked and greedy hidden states by doc position."""
    from semuq_eval.operators.sharing import compute_shared

    start = time.perf_counter()
    anchored = all("greedy_similarities" in op.extras for op in group) and (
        hidden is None or anchor_hidden is not None
    )

    def run_pass(part: list[int]):
        idx = [todo[p] for p in part]
        return compute_shared(
            group,
            [docs[i].question for i in idx],
            [[g.text for g in docs[i].samples] for i in idx],
            hidden_states=None if hidden is None else [hidden[i] for i in idx],
            anchors=[docs[i].greedy.text for i in idx] if anchored else None,
            anchor_hidden_states=None if anchor_hidden is None else [anchor_hidden[i] for i in idx],
        )

    for part, outputs, why in _in_parts(run_pass, len(todo)):
        idx = [todo[p] for p in part]
        if why is not None:
            for name, op in zip(names, group, strict=True):
                hint = op.load_hint()
                _unavailable(
                    runs[name], docs, idx, f"operator {name} failed: {why}" + (f"; {hint}" if hint else "")
                )
            continue
        for name, out in zip(names, outputs, strict=True):
            _keep(runs[name], docs, idx, out)
    log.debug("operators %s: %d questions in %.1f s", names, len(todo), time.perf_counter() - start)


def _keep(run: OperatorRun, docs: Sequence[Doc], idx: list[int], out) -> None:
    """One pass's output of operator ``run.name`` on the docs ``idx``: matrices, extras, truncations, cost."""
    name = run.name
    for key, value in vars(out.cost).items():
        run.cost[key] = run.cost.get(key, 0) + value
    run.info = dict(out.info)
    for i, matrix in zip(idx, out.matrices, strict=True):
        docs[i].matrices[name] = matrix
    for i, similarities in zip(idx, out.anchored, strict=True) if out.anchored is not None else ():
        docs[i].extras.setdefault(name, {})["greedy_similarities"] = similarities
    cut = [(i, note) for i, note in zip(idx, out.truncated or [None] * len(idx), strict=True) if note]
    for i, note in cut:
        docs[i].truncated[name] = note
    if cut and not run.n_truncated:
        log.warning(
            "%s read the answers of some questions only in part (doc %d: %s); their problems say which",
            name,
            docs[cut[0][0]].doc_id,
            cut[0][1],
        )
    run.n_truncated += len(cut)


def _token_extra(op, name: str, docs: Sequence[Doc], extra: str) -> None:
    """The operator's ``extra`` on the greedy answers' tokens (needs the generating model's token offsets)."""
    key, idx = f"{name}.{extra}", []
    for i, doc in enumerate(docs):
        if name not in doc.matrices:
            doc.unavailable[key] = doc.unavailable.get(name, f"{name} did not run")
        elif doc.greedy.token_offsets is None:
            doc.unavailable[key] = "needs the greedy answer's token offsets (black-box model)"
        else:
            idx.append(i)
    if not idx:
        return

    def run_pass(part: list[int]):
        return getattr(op, extra)(
            [docs[idx[p]].question for p in part],
            [[docs[idx[p]].greedy.text] for p in part],
            [[docs[idx[p]].greedy.token_offsets] for p in part],
        )

    what = extra.replace("_", " ")
    for part, values, why in _in_parts(run_pass, len(idx)):
        if why is not None:
            log.warning("%s %s failed on %d questions: %s", name, what, len(part), why)
            for p in part:
                docs[idx[p]].unavailable[key] = f"{name} {what} failed: {why}"
            continue
        for p, v in zip(part, values, strict=True):
            docs[idx[p]].extras.setdefault(name, {})[extra] = np.asarray(v[0], dtype=np.float64)


def _out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` says memory ran out (the host's ``MemoryError``, torch's ``OutOfMemoryError``)."""
    return isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError"


def _why(err: BaseException) -> str:
    """The error's type and message (its type alone when it has none, as a MemoryError)."""
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def _unavailable(run: OperatorRun, docs: Sequence[Doc], idx, reason: str) -> None:
    """Mark questions ``idx`` without this operator; a reason met for the first time is logged once."""
    idx = list(idx)
    if not idx:
        return
    for i in idx:
        docs[i].unavailable[run.name] = reason
    if reason not in run.reasons:
        log.warning("%s: %d question(s): %s", run.name, len(idx), reason)
    run.n_unavailable += len(idx)
    run.reasons[reason] = run.reasons.get(reason, 0) + len(idx)
    run.status = "unavailable" if run.n_unavailable >= run.n_questions else "partial"
