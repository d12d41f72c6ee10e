"""``cos_int``: cosine of the generating model's own hidden states (COS-int, App. A.2 and E.3).

phi_i is the generating model's last-layer hidden state at the last token of answer i (``hidden_states=``,
from the white-box model), L2-normalized; S = Phi Phi^T. No text is read, so no deduplication or empty-answer
rule; the greedy answer is compared by its own hidden state (``anchor_hidden_states``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from semuq_eval.operators.base import Cost, Operator, _describe
from semuq_eval.operators.gram import gram_matrix


class HiddenStateCosineOperator(Operator):
    """S_ij = <h_i / ||h_i||, h_j / ||h_j||> for the given (N_b, d) hidden states of each question."""

    kind = "gram"
    needs = frozenset({"answers", "hidden_states"})
    extras = ("greedy_similarities",)  # the greedy answer by its own hidden state (``anchor_hidden_states``)

    def _compute(
        self, questions: list[str], answers: list[list[str]], hidden_states: Sequence[np.ndarray] | None
    ) -> tuple[list[np.ndarray], Cost]:
        if hidden_states is None:
            raise ValueError(
                "cos_int needs hidden_states=: one (N_b, d) array per question, the generating model's "
                "last-layer hidden state at the last token of each answer"
            )
        if len(hidden_states) != len(answers):
            raise ValueError(f"got {len(answers)} questions but {len(hidden_states)} hidden-state arrays")
        matrices = []
        for b, (group, states) in enumerate(zip(answers, hidden_states, strict=True)):
            h = np.asarray(states, dtype=np.float64)
            if h.ndim != 2 or h.shape[0] != len(group):
                raise ValueError(
                    f"{_describe(questions, b)}: hidden states must have shape ({len(group)}, d), got {h.shape}"
                )
            try:
                matrices.append(gram_matrix(h))
            except ValueError as err:
                raise ValueError(f"{_describe(questions, b)}: hidden-state {err}") from None
        pairs = sum(len(group) * (len(group) - 1) // 2 for group in answers)
        return matrices, Cost(pairs_scored=pairs)

    def _identity(self) -> dict[str, str]:
        return {"source": "generating model, last layer, last answer token"}
