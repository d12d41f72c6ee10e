"""Adding an operator: one file, one registration (CONTRIBUTING.md shows this file)."""

import numpy as np

from semuq_eval import operators
from semuq_eval.operators.base import Cost, TextOperator


@operators.register("word_overlap")
class WordOverlapOperator(TextOperator):
    """S_ij = Jaccard overlap of the lower-cased word sets of answers i and j (graded, no model)."""

    kind = "graded"  # what the matrix is: the harness pairs it with every graded / equivalence aggregator
    needs = frozenset({"answers"})  # what it reads (the harness checks it per question)

    def _score(self, questions: list[str], answers: list[list[str]], cost: Cost) -> list[np.ndarray]:
        # called once for all questions, with each question's distinct non-empty answers
        matrices = []
        for group in answers:
            words = [set(answer.lower().split()) for answer in group]
            overlap = [[len(a & b) / len(a | b) for b in words] for a in words]
            matrices.append(np.array(overlap).reshape(len(words), len(words)))
        return matrices
