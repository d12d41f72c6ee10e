"""Wrong-answer clustering (App. A.1): does the operator group equivalent WRONG answers as it groups
equivalent correct ones?

Two answers are equivalent when they state the same fact, whatever its truth: the correctness judge accepts one with
the other as its reference, in either direction (default ``string``, ``contains``: "Madrid" ~ "It is Madrid."), for
correct and incorrect pairs alike. Pairs identical after the operators' normalization are left out (every operator
scores them 1) and counted. A good operator scores ``incorrect_equivalent`` as high as ``correct_equivalent``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations

from semuq_eval.diagnose.questions import DiagnosticQuestion
from semuq_eval.diagnose.traps import Pair, PairSet, sample_pair
from semuq_eval.judges import Judge, StringJudge
from semuq_eval.judges.base import as_verdict
from semuq_eval.operators.base import normalize_answer

__all__ = ["CLUSTER_GROUPS", "clustering_pairs"]

CLUSTER_GROUPS: dict[str, str] = {
    "incorrect_equivalent": "both incorrect, equivalent",
    "correct_equivalent": "both correct, equivalent",
    "incorrect_different": "both incorrect, not equivalent",
}


def clustering_pairs(
    questions: Sequence[DiagnosticQuestion],
    *,
    judge: Judge | None = None,
    max_pairs_per_question: int | None = None,
) -> dict[str, PairSet]:
    """The pairs of each group of :data:`CLUSTER_GROUPS`.

    ``judge`` decides equivalence (default ``StringJudge("contains")``); ``max_pairs_per_question`` judges at most
    that many candidate pairs per question and label class (the first, in sample order), bounding an LLM judge's work.

    Examples
    --------
    >>> from semuq_eval.diagnose.questions import DiagnosticQuestion
    >>> from semuq_eval.harness.doc import Doc
    >>> doc = Doc.of_texts("Capital of France?", ["Madrid", "It is Madrid.", "Paris.", "It is Paris!", "Rome"],
    ...                    greedy="Paris", references=["Paris"])
    >>> q = DiagnosticQuestion("0:0", doc, 1, [0, 0, 1, 1, 0])
    >>> groups = clustering_pairs([q])
    >>> [(p.a, p.b) for p in groups["incorrect_equivalent"].pairs]
    [('Madrid', 'It is Madrid.')]
    >>> len(groups["incorrect_different"].pairs), len(groups["correct_equivalent"].pairs)
    (2, 1)
    """
    judge = judge or StringJudge("contains")
    candidates: list[tuple[DiagnosticQuestion, int, int, str]] = []
    identical: Counter[str] = Counter()
    for q in questions:
        for kind, idx in (("incorrect", q.incorrect_samples()), ("correct", q.correct_samples())):
            taken = 0
            for i, j in combinations(idx, 2):
                if normalize_answer(q.samples[i]) == normalize_answer(q.samples[j]):
                    identical[kind] += 1
                elif max_pairs_per_question is None or taken < max_pairs_per_question:
                    candidates.append((q, i, j, kind))
                    taken += 1
    qs, answers, refs = [], [], []
    for q, i, j, _ in candidates:
        qs += [q.question, q.question]
        answers += [q.samples[i], q.samples[j]]
        refs += [[q.samples[j]], [q.samples[i]]]
    verdicts = [as_verdict(v).label for v in judge.batch(qs, answers, refs)] if qs else []
    groups: dict[str, list[Pair]] = {name: [] for name in CLUSTER_GROUPS}
    for k, (q, i, j, kind) in enumerate(candidates):
        equivalent = bool(verdicts[2 * k]) or bool(verdicts[2 * k + 1])
        if kind == "correct" and not equivalent:
            continue
        groups[f"{kind}_{'equivalent' if equivalent else 'different'}"].append(
            sample_pair(q, i, j, {"samples": [i, j]})
        )
    info = {"equivalence": getattr(judge, "info", {"judge": getattr(judge, "name", "?")})}
    left_out = {kind: {"identical pairs left out": n} for kind, n in identical.items() if n}
    return {
        name: PairSet(
            name, pairs, len({p.uid for p in pairs}), dict(left_out.get(name.split("_")[0], {})), info
        )
        for name, pairs in groups.items()
    }
