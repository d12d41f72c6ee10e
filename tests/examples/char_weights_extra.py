"""Adding a signal an operator yields and an aggregator reads: declare it once (CONTRIBUTING.md shows this file)."""

import numpy as np

from semuq_eval import aggregators, operators, signals
from semuq_eval.operators.lexical import LexicalOperator

signals.declare("char_weights", "(T,) each greedy-answer token's share of its characters", origin="tokens")


@operators.register("lexical_chars")
class LexicalCharsOperator(LexicalOperator):
    """``lexical``, yielding ``char_weights`` on the greedy answer's tokens too."""

    extras = (*LexicalOperator.extras, "char_weights")

    def char_weights(self, questions, answers, offsets):
        # per question: its greedy answer and the generating model's (start, end) token spans; one array back
        out = []
        for (spans,) in offsets:
            lengths = np.array([end - start for start, end in spans], dtype=float)
            out.append([lengths / max(lengths.sum(), 1.0)])
        return out


@aggregators.register("char_weighted_te", matrix=None, inputs=("token_entropies", "char_weights"))
def char_weighted_te(entropies: np.ndarray, weights: np.ndarray) -> float:
    """U = sum_t w_t H_t: token entropies weighted by each token's share of the answer's characters."""
    return float(np.sum(weights * entropies))
