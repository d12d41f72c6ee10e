"""The four traps of Sec. 3.2 / App. F, built as pairs of answers from run stores.

Each builder returns :class:`PairSet`: the pairs (at most one per question, as in App. F) and, per reason, how many
questions gave none. A good operator scores ``context`` and ``autoregressive`` LOW, ``entailment`` and ``ood_syntax``
HIGH (:data:`TRAPS`). Pairs identical after the operators' normalization are not built: every operator scores them 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semuq_eval.diagnose.questions import DiagnosticQuestion
from semuq_eval.diagnose.rewrite import FactRewriter, RewriteRequest, SampleSubstitution
from semuq_eval.diagnose.spans import alias_spans, last_words, word_spans
from semuq_eval.operators.base import normalize_answer

__all__ = [
    "TRAPS",
    "Pair",
    "PairSet",
    "autoregressive_pairs",
    "build_traps",
    "context_pairs",
    "entailment_pairs",
    "ood_syntax_pairs",
    "sample_pair",
]

TRAPS: dict[str, dict[str, str]] = {
    "context": {
        "title": "context trap",
        "pair": "correct greedy answer vs the same answer with the fact replaced",
        "better": "lower",
    },
    "autoregressive": {
        "title": "autoregressive bias",
        "pair": "correct vs incorrect sample sharing their last four words",
        "better": "lower",
    },
    "entailment": {
        "title": "entailment trap",
        "pair": "shortest vs longest correct sample",
        "better": "higher",
    },
    "ood_syntax": {
        "title": "OOD syntax",
        "pair": "correct greedy sentence vs the bare reference string",
        "better": "higher",
    },
}
"""The traps: title, what a pair is, and which direction a good operator goes (App. F)."""


@dataclass(frozen=True)
class Pair:
    """Two answers to one question, with the generating model's hidden vectors when both were generated.

    ``sample_a`` / ``sample_b``: the answers' indices among the question's sampled answers when both are samples
    (their similarity is then read from the question's sample matrix), else None."""

    uid: str
    question: str
    a: str
    b: str
    hidden_a: np.ndarray | None = None
    hidden_b: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    sample_a: int | None = None
    sample_b: int | None = None


@dataclass
class PairSet:
    """The pairs of one diagnostic, how many questions were eligible, and why the others gave no pair."""

    name: str
    pairs: list[Pair]
    n_questions: int
    skipped: dict[str, int] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


def sample_pair(q: DiagnosticQuestion, i: int, j: int, meta: dict[str, Any]) -> Pair:
    """The pair of samples ``i`` and ``j`` of ``q``, with their hidden vectors when the store kept them."""
    hidden = q.sample_hidden
    return Pair(
        q.uid,
        q.question,
        q.samples[i],
        q.samples[j],
        None if hidden is None else hidden[i],
        None if hidden is None else hidden[j],
        meta,
        i,
        j,
    )


def _same(a: str, b: str) -> bool:
    return normalize_answer(a) == normalize_answer(b)


def context_pairs(questions: Sequence[DiagnosticQuestion], rewriter: FactRewriter | None = None) -> PairSet:
    """Context trap: each correct greedy answer naming a reference vs its rewrite with the fact replaced.

    ``rewriter`` defaults to :class:`~semuq_eval.diagnose.rewrite.SampleSubstitution` (offline).

    Examples
    --------
    >>> from semuq_eval.diagnose.questions import DiagnosticQuestion
    >>> from semuq_eval.harness.doc import Doc
    >>> doc = Doc.of_texts("Capital of France?", ["It is Lyon.", "Paris"], greedy="It is Paris.", references=["Paris"])
    >>> q = DiagnosticQuestion("0:0", doc, 1, [0, 1])
    >>> ps = context_pairs([q])
    >>> [(p.a, p.b) for p in ps.pairs]
    [('It is Paris.', 'It is Lyon.')]
    """
    rewriter = rewriter or SampleSubstitution()
    skipped: Counter[str] = Counter()
    requests, owners = [], []
    for q in questions:
        if q.greedy_label != 1:
            continue
        mentions = alias_spans(q.greedy, q.references)
        if not mentions:
            skipped["correct greedy answer names no reference verbatim"] += 1
            continue
        wrong = tuple(q.samples[i] for i in q.incorrect_samples())
        requests.append(RewriteRequest(q.question, q.greedy, tuple(q.references), tuple(mentions), wrong))
        owners.append(q)
    pairs, sources = [], Counter()
    for q, request, result in zip(owners, requests, rewriter.rewrite(requests), strict=True):
        if result.text is None:
            skipped[result.reason or "no rewrite"] += 1
        elif _same(result.text, q.greedy):
            skipped["the rewrite is the answer unchanged"] += 1
        else:
            route, _, k = (result.source or "").partition(":")
            sources[route] += 1
            source = result.source
            if route in ("aligned", "short") and k.isdigit():  # k-th incorrect sample -> its sample index
                source = f"{route}:{q.incorrect_samples()[int(k)]}"
            meta = {"fact": request.fact, "source": source}
            pairs.append(Pair(q.uid, q.question, q.greedy, result.text, meta=meta))
    n = sum(1 for q in questions if q.greedy_label == 1)
    return PairSet("context", pairs, n, dict(skipped), {"rewriter": rewriter.info, "sources": dict(sources)})


def autoregressive_pairs(questions: Sequence[DiagnosticQuestion], n_words: int = 4) -> PairSet:
    """Autoregressive bias: the first correct / incorrect sample pair sharing their last ``n_words`` words.

    Words are lowercased runs of letters and digits; samples are searched in stored order, correct sample first.

    Examples
    --------
    >>> from semuq_eval.diagnose.questions import DiagnosticQuestion
    >>> from semuq_eval.harness.doc import Doc
    >>> doc = Doc.of_texts("Who played the Joker?", ["Heath Ledger played the role in the film.",
    ...                    "Jack Nicholson played the role in the film!"], greedy="Heath Ledger", references=["Heath Ledger"])
    >>> q = DiagnosticQuestion("0:0", doc, 1, [1, 0])
    >>> [p.b for p in autoregressive_pairs([q]).pairs]
    ['Jack Nicholson played the role in the film!']
    """
    pairs, skipped, n = [], Counter(), 0
    for q in questions:
        good, bad = q.correct_samples(), q.incorrect_samples()
        if not good or not bad:
            continue
        n += 1
        ends = {j: last_words(q.samples[j], n_words) for j in bad}
        found = None
        for i in good:
            tail = last_words(q.samples[i], n_words)
            if tail is None:
                continue
            found = next((j for j in bad if ends[j] == tail), None)
            if found is not None:
                meta = {"correct": i, "incorrect": found, "suffix": " ".join(tail)}
                pairs.append(sample_pair(q, i, found, meta))
                break
        if found is None:
            skipped[f"no correct / incorrect samples share their last {n_words} words"] += 1
    return PairSet("autoregressive", pairs, n, dict(skipped), {"n_words": n_words})


def entailment_pairs(questions: Sequence[DiagnosticQuestion]) -> PairSet:
    """Entailment trap: the shortest vs the longest correct sample (by words, then characters, then order).

    Examples
    --------
    >>> from semuq_eval.diagnose.questions import DiagnosticQuestion
    >>> from semuq_eval.harness.doc import Doc
    >>> doc = Doc.of_texts("Who wrote it?", ["Charles Darwin wrote it in 1859.", "Darwin.", "It was Darwin.", "Wallace"],
    ...                    greedy="Darwin", references=["Darwin"])
    >>> q = DiagnosticQuestion("0:0", doc, 1, [1, 1, 1, 0])
    >>> [(p.a, p.b) for p in entailment_pairs([q]).pairs]
    [('Darwin.', 'Charles Darwin wrote it in 1859.')]
    """
    pairs, skipped, n = [], Counter(), 0
    for q in questions:
        good = q.correct_samples()
        if len(good) < 2:
            continue
        n += 1
        size = {i: (len(word_spans(q.samples[i])), len(q.samples[i].strip())) for i in good}
        short = min(good, key=lambda i: (*size[i], i))
        long = max(good, key=lambda i: (*size[i], -i))
        if short == long or _same(q.samples[short], q.samples[long]):
            skipped["all correct samples are the same answer"] += 1
            continue
        meta = {"shortest": short, "longest": long, "words": [size[short][0], size[long][0]]}
        pairs.append(sample_pair(q, short, long, meta))
    return PairSet("entailment", pairs, n, dict(skipped))


def ood_syntax_pairs(questions: Sequence[DiagnosticQuestion]) -> PairSet:
    """OOD syntax: each correct greedy answer vs the bare reference string it names.

    Examples
    --------
    >>> from semuq_eval.diagnose.questions import DiagnosticQuestion
    >>> from semuq_eval.harness.doc import Doc
    >>> doc = Doc.of_texts("Capital of France?", [], greedy="The capital of France is Paris.",
    ...                    references=["Paris", "City of Light"])
    >>> q = DiagnosticQuestion("0:0", doc, 1, [])
    >>> [(p.a, p.b) for p in ood_syntax_pairs([q]).pairs]
    [('The capital of France is Paris.', 'Paris')]
    """
    pairs, skipped, n = [], Counter(), 0
    for q in questions:
        if q.greedy_label != 1:
            continue
        n += 1
        if not q.references:
            skipped["no reference string"] += 1
            continue
        mentions = alias_spans(q.greedy, q.references)
        reference = mentions[0].alias if mentions else q.references[0]
        if _same(reference, q.greedy):
            skipped["the greedy answer is the bare reference"] += 1
            continue
        meta = {"reference": "named in the answer" if mentions else "first reference"}
        pairs.append(Pair(q.uid, q.question, q.greedy, reference, meta=meta))
    return PairSet("ood_syntax", pairs, n, dict(skipped))


def build_traps(
    questions: Sequence[DiagnosticQuestion],
    *,
    rewriter: FactRewriter | None = None,
    n_words: int = 4,
) -> dict[str, PairSet]:
    """All four traps (:data:`TRAPS`) of ``questions``, keyed by trap name."""
    return {
        "context": context_pairs(questions, rewriter),
        "autoregressive": autoregressive_pairs(questions, n_words),
        "entailment": entailment_pairs(questions),
        "ood_syntax": ood_syntax_pairs(questions),
    }
