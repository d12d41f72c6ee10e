"""Operators that share one model pass (``Operator.share_key``: ``nli`` and ``nli_soft`` read the same entailment
probabilities), and the greedy answer compared with the samples in the same pass (anchors)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from semuq_eval.operators.base import Cost, Operator, OperatorOutput, TextOperator, check_inputs

__all__ = ["compute_shared", "share_groups"]


def compute_shared(
    operators: Sequence[Operator],
    questions: Sequence[str],
    answers: Sequence[Sequence[str]],
    *,
    hidden_states: Sequence[np.ndarray] | None = None,
    anchors: Sequence[str] | None = None,
    anchor_hidden_states: Sequence[np.ndarray] | None = None,
) -> list[OperatorOutput]:
    """The outputs of ``operators`` (in order) on the same questions, computing a shared pass once.

    Operators sharing a :meth:`Operator.share_key`: the first runs the model, the others derive from its pass
    (``info["shared_pass"]`` names it). ``anchors`` (one per question) join their question's answers in the
    same pass (with ``anchor_hidden_states`` for hidden-state operators) and are split off into
    :attr:`OperatorOutput.anchored`. Raises ValueError for operators that share no pass, or anchors that are
    undeclared or do not match."""
    check_inputs(questions, answers)
    if anchors is not None:
        outputs = _anchored(operators, questions, answers, hidden_states, anchors, anchor_hidden_states)
    elif anchor_hidden_states is not None:
        raise ValueError("anchor_hidden_states are the anchors' hidden states: pass anchors too")
    else:
        outputs = _shared(operators, list(questions), [list(group) for group in answers], hidden_states)
    for op, out in zip(operators, outputs, strict=True):
        out.truncated = op.truncations(answers, anchors)
    return outputs


def _shared(
    operators: Sequence[Operator],
    questions: list[str],
    answers: list[list[str]],
    hidden_states: Sequence[np.ndarray] | None,
) -> list[OperatorOutput]:
    """:func:`compute_shared` without anchors, on checked inputs."""
    if len(operators) == 1 and operators[0].share_key() is None:
        op = operators[0]
        start = time.perf_counter()
        matrices, cost = op._compute(questions, answers, hidden_states)
        cost.wall_time_s = time.perf_counter() - start
        return [OperatorOutput(matrices, cost, op.info)]
    keys = {op.share_key() for op in operators}
    if None in keys or len(keys) != 1 or not all(isinstance(op, TextOperator) for op in operators):
        raise ValueError(f"operators {[op.name for op in operators]} do not share a pass")
    lead = operators[0]
    start = time.perf_counter()
    groups, raw, lead_cost = lead._pass(questions, answers)
    outputs = []
    for op in operators:
        matrices = [g.expand(op._derive(r), op.kind) for g, r in zip(groups, raw, strict=True)]
        if op is lead:
            cost = lead_cost
        else:
            cost = Cost(pairs_scored=lead_cost.pairs_scored, duplicates_skipped=lead_cost.duplicates_skipped)
        cost.wall_time_s = time.perf_counter() - start
        info = op.info if op is lead else {**op.info, "shared_pass": lead.name}
        outputs.append(OperatorOutput(matrices, cost, info))
        start = time.perf_counter()
    return outputs


def _anchored(
    operators: Sequence[Operator],
    questions: Sequence[str],
    answers: Sequence[Sequence[str]],
    hidden_states: Sequence[np.ndarray] | None,
    anchors: Sequence[str],
    anchor_hidden_states: Sequence[np.ndarray] | None,
) -> list[OperatorOutput]:
    """:func:`compute_shared` with each anchor appended to its question's answers (and its hidden state to
    the question's hidden states), then split off."""
    undeclared = [op.name for op in operators if "greedy_similarities" not in op.extras]
    if undeclared:
        raise ValueError(f"operators {undeclared} do not declare greedy_similarities: they take no anchors")
    if isinstance(anchors, (str, bytes)) or len(anchors) != len(answers):
        raise ValueError(f"anchors must be one str per question ({len(answers)}), got {anchors!r:.80}")
    check_inputs(questions, [[anchor] for anchor in anchors])
    if hidden_states is not None:
        if anchor_hidden_states is None or len(anchor_hidden_states) != len(hidden_states):
            raise ValueError(
                f"operators {[op.name for op in operators]} compare an anchor by its hidden state: pass "
                "anchor_hidden_states, one (d,) vector per question"
            )
        hidden_states = [
            np.vstack([np.asarray(h, dtype=np.float64), np.asarray(a, dtype=np.float64).reshape(1, -1)])
            for h, a in zip(hidden_states, anchor_hidden_states, strict=True)
        ]
    outputs = _shared(
        operators,
        list(questions),
        [[*group, anchor] for group, anchor in zip(answers, anchors, strict=True)],
        hidden_states,
    )
    for out in outputs:
        out.anchored = [np.asarray(m[-1, :-1], dtype=np.float64) for m in out.matrices]
        out.matrices = [m[:-1, :-1] for m in out.matrices]
    return outputs


def share_groups(operators: Sequence[Operator]) -> list[list[Operator]]:
    """``operators`` grouped by :meth:`Operator.share_key`, in order of first appearance."""
    groups: dict[Any, list[Operator]] = {}
    for op in operators:
        key = op.share_key()
        groups.setdefault(("alone", id(op)) if key is None else ("shared", key), []).append(op)
    return list(groups.values())
