"""The semuq filter: keep exactly N samples per question and run every operator once per rank.

lm-eval applies a task's filters to all instances of the task on a rank at once, before
``process_results``. The semuq task calls :class:`SemuqFilter` from its ``apply_filters`` (it needs
the instances' ``doc_id`` / ``idx`` to tell the greedy request from the sampled one, which a
stock ``Filter.apply(resps, docs)`` does not see). For every question it

1. keeps the greedy answer (first response of request idx 0) and EXACTLY ``n_samples`` sampled
   answers (request idx 1). lm-eval's data-parallel padding repeats a rank's last request, so that
   question receives extra responses: they are dropped and counted (``n_extra_responses``);
2. turns every answer into a :class:`~semuq_eval.models.generation.Generation` (plain strings
   from black-box models become text-only Generations);
3. runs each configured operator ONCE over all questions of the rank (one batched call per
   operator, :func:`compute_operators`), plus the ``enc`` token weights of the greedy answers;
4. attaches the result: the sampled instance's filtered response is a :class:`SampleList` (a
   ``list`` of the N Generations) whose ``.inputs`` holds the :class:`DocInputs` (matrices,
   weights, unavailable operators and why), so ``process_results`` only aggregates.

An operator that cannot run (model fails to load, ``cos_int`` without hidden states from a black-box
model, a question its model rejects) is *unavailable* for the questions concerned, with the reason,
never a matrix of zeros.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semuq_eval.harness.scoring import DocInputs
from semuq_eval.harness.settings import Settings
from semuq_eval.models.generation import Generation, as_generation

__all__ = [
    "OperatorRun",
    "SampleList",
    "SemuqFilter",
    "compute_operators",
    "get_operator",
    "merge_operator_runs",
]

log = logging.getLogger(__name__)

_OPERATORS: dict[str, Any] = {}


def get_operator(name: str, options: dict[str, Any] | None = None):
    """The operator ``name`` built with ``options``, cached per process (models load once)."""
    from semuq_eval import operators

    key = f"{name}:{json.dumps(options or {}, sort_keys=True, default=str)}"
    if key not in _OPERATORS:
        _OPERATORS[key] = operators.get(name, **(options or {}))
    return _OPERATORS[key]


class SampleList(list):
    """The N sampled Generations of one question, carrying its :class:`DocInputs` as ``.inputs``."""

    inputs: DocInputs | None = None
    extra: dict[str, Any]

    def __init__(self, items=(), inputs: DocInputs | None = None, extra: dict | None = None):
        super().__init__(items)
        self.inputs = inputs
        self.extra = extra or {}

    def __reduce__(self):  # pickles as a plain list (data-parallel gathers, lm-eval's cache)
        return (list, (list(self),))


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

    Counts (questions, unavailable questions, reasons) and costs are summed over the ranks, except the wall
    time, which is the maximum (the ranks run in parallel); ``per_rank`` keeps each rank's status, counts and
    cost. The status is ``unavailable`` when no question of any rank had the operator, ``partial`` when some
    did not, else ``ok`` (ranks without questions do not count). ``kind`` and ``info`` are the first rank's
    that has them.
    """
    names: list[str] = []
    for runs in per_rank:
        names.extend(n for n in runs if n not in names)
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


def _hidden_stack(samples: Sequence[Generation]) -> np.ndarray | None:
    if not samples or any(g.hidden is None for g in samples):
        return None
    try:
        h = np.stack([np.asarray(g.hidden, dtype=np.float64) for g in samples])
    except ValueError:
        return None
    return h if np.all(np.isfinite(h)) else None


def _add(run: OperatorRun, cost) -> None:
    for k, v in vars(cost).items():
        run.cost[k] = run.cost.get(k, 0) + v


def compute_operators(
    docs: list[DocInputs], settings: Settings, operator_names: Sequence[str] | None = None
) -> dict[str, OperatorRun]:
    """Fill ``matrices`` / ``unavailable_operators`` / ``token_weights`` of every doc in place.

    One batched call per operator over all docs; if the batch fails, each doc is retried alone
    so that one bad question only loses its own matrix (after three failures in a row the
    operator is declared unavailable for the rest, e.g. its model cannot load).
    """
    runs: dict[str, OperatorRun] = {}
    for name in operator_names if operator_names is not None else settings.operators:
        run = runs[name] = OperatorRun(name)
        try:
            op = get_operator(name, settings.operator_options.get(name))
            run.kind, run.info = op.kind, dict(op.info)
        except Exception as err:
            reason = f"operator {name} is unavailable: {type(err).__name__}: {err}"
            _mark(run, docs, range(len(docs)), reason, status="unavailable")
            continue
        todo = [i for i, d in enumerate(docs) if len(d.samples) > 0]
        _mark(run, docs, [i for i, d in enumerate(docs) if len(d.samples) == 0], "no sampled answers")
        hidden = None
        if name == "cos_int":
            stacks = {i: _hidden_stack(docs[i].samples) for i in todo}
            no_hidden = [i for i in todo if stacks[i] is None]
            _mark(
                run,
                docs,
                no_hidden,
                "cos_int needs the generating model's hidden states "
                "(black-box model, or missing / non-finite hidden vectors)",
            )
            todo = [i for i in todo if stacks[i] is not None]
            hidden = stacks
        run.n_questions = len(docs)
        if not todo:
            run.status = "unavailable" if run.n_unavailable == len(docs) else run.status
            continue

        start = time.perf_counter()
        try:
            out = _call(op, docs, todo, hidden)
            _add(run, out.cost)
            run.info = dict(out.info)
            for i, m in zip(todo, out.matrices, strict=True):
                docs[i].matrices[name] = m
        except Exception as err:
            log.warning(
                "operator %s failed on a batch of %d questions (%s); retrying one by one",
                name,
                len(todo),
                err,
            )
            failures, last = 0, ""
            for pos, i in enumerate(todo):
                if (
                    pos >= 3 and failures == pos
                ):  # every question so far failed: the operator itself is broken
                    _mark(run, docs, todo[pos:], f"operator {name} is unavailable: {last}")
                    break
                try:
                    out = _call(op, docs, [i], hidden)
                    _add(run, out.cost)
                    docs[i].matrices[name] = out.matrices[0]
                except Exception as err_i:
                    failures += 1
                    last = f"{type(err_i).__name__}: {err_i}"
                    _mark(run, docs, [i], f"operator {name} failed on this question: {last}")
        run.cost["wall_time_s"] = time.perf_counter() - start
        if name == "enc":
            _enc_weights(op, docs, run)
        if run.n_unavailable:
            run.status = "unavailable" if run.n_unavailable >= len(docs) else "partial"
    return runs


def _call(op, docs: list[DocInputs], idx: list[int], hidden: dict[int, np.ndarray] | None):
    questions = [docs[i].question for i in idx]
    answers = [[g.text for g in docs[i].samples] for i in idx]
    hs = [hidden[i] for i in idx] if hidden is not None else None
    return op(questions, answers, hidden_states=hs)


def _mark(run: OperatorRun, docs: list[DocInputs], idx, reason: str, status: str | None = None) -> None:
    idx = list(idx)
    for i in idx:
        docs[i].unavailable_operators[run.name] = reason
    if idx:
        run.n_unavailable += len(idx)
        run.reasons[reason] = run.reasons.get(reason, 0) + len(idx)
    if status:
        run.status = status
        run.n_questions = len(docs)


def _enc_weights(op, docs: list[DocInputs], run: OperatorRun) -> None:
    """te_enc weights on the greedy answers' tokens (needs the generating model's token offsets)."""
    idx = []
    for i, d in enumerate(docs):
        if "enc" not in d.matrices:
            d.token_weights_reason = d.unavailable_operators.get("enc", "enc did not run")
        elif d.greedy.token_offsets is None:
            d.token_weights_reason = "te_enc needs the greedy answer's token offsets (black-box model)"
        else:
            idx.append(i)
    if not idx or not hasattr(op, "token_weights"):
        return
    try:
        weights = op.token_weights(
            [docs[i].question for i in idx],
            [[docs[i].greedy.text] for i in idx],
            [[docs[i].greedy.token_offsets] for i in idx],
        )
        for i, w in zip(idx, weights, strict=True):
            docs[i].token_weights = np.asarray(w[0], dtype=np.float64)
    except Exception as err:
        for i in idx:
            docs[i].token_weights_reason = f"enc token weights failed: {type(err).__name__}: {err}"


class SemuqFilter:
    """Keep-all filter batched over a rank's instances (see the module docstring)."""

    name = "none"

    def __init__(self, settings: Settings, question_of, references_of) -> None:
        self.settings = settings
        self.question_of = question_of
        self.references_of = references_of
        self.operator_runs: dict[str, OperatorRun] = {}

    def apply_instances(self, instances: Sequence[Any]) -> list[DocInputs]:
        n = self.settings.n_samples
        by_doc: dict[int, dict[int, Any]] = {}
        for inst in instances:
            by_doc.setdefault(inst.doc_id, {})[inst.idx] = inst
        docs: list[DocInputs] = []
        sample_insts = []
        for doc_id in sorted(by_doc):
            insts = by_doc[doc_id]
            greedy_inst, sample_inst = insts.get(0), insts.get(1)
            doc = (greedy_inst or sample_inst).doc
            g_resps = list(greedy_inst.resps) if greedy_inst is not None else []
            s_resps = list(sample_inst.resps) if sample_inst is not None else []
            extra = max(0, len(g_resps) - 1) + max(0, len(s_resps) - n)
            greedy = as_generation(g_resps[0], greedy=True) if g_resps else Generation("", greedy=True)
            samples = [as_generation(x, greedy=False) for x in s_resps[:n]]
            inputs = DocInputs(
                question=self.question_of(doc),
                greedy=greedy,
                samples=samples,
                doc_id=doc_id,
                references=self.references_of(doc),
                n_extra_responses=extra,
            )
            if extra:
                log.info(
                    "doc %s received %d extra responses (data-parallel padding); kept 1 greedy + %d",
                    doc_id,
                    extra,
                    n,
                )
            docs.append(inputs)
            if greedy_inst is not None:
                greedy_inst.filtered_resps[self.name] = [greedy]
            if sample_inst is not None:
                sample_insts.append((sample_inst, inputs))
        self.operator_runs = compute_operators(docs, self.settings)
        for inst, inputs in sample_insts:
            inst.filtered_resps[self.name] = SampleList(inputs.samples, inputs)
        return docs
