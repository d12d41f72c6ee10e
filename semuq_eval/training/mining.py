"""More training signal per question than App. C's samples alone: guided answers, references, fact swaps.

A weak LLM rarely gives two correct answers to one question, so the paper's triplets are too few to move the
encoder (docs/training-data.md). :func:`mine` adds correct and incorrect texts to each question, each tagged with
its **origin**, every origin with a **style** (:func:`style_of`); the sampler draws the negative in the positive's
style, so only a text's fact tells a positive from a negative. Origins (style, label; the option that adds them):

- ``sample`` (llm, the judge's label): a sampled answer of the natural run (always; App. C);
- ``guided`` (llm, 1): a reference-guided answer the judge found correct, with no trace of the prompt (``guided``);
- ``reference`` (raw, 1) and ``reference_sentence`` (sentence, 1): a reference alias as the dataset gives it, bare
  or in the answer template (``"The answer is X."``), with ``positives`` references / both;
- ``wrong`` (raw, 0) and ``wrong_sentence`` (sentence, 0): a short incorrect sample stripped to its words, bare or
  in the template (the same option);
- ``swapped`` (llm, 0): a correct answer with its reference mention replaced by a wrong answer of the same question
  (``fact_swap``; the context trap of :mod:`semuq_eval.diagnose.rewrite` as training data);
- ``repaired`` (llm, 1): an incorrect sample whose wrong fact (aligned with a correct answer) is replaced by the
  reference mention (``fact_swap``).

``positives="samples"`` with no guided questions and no fact swaps leaves every question as App. C has it; with
``"references"`` the LLM's own correct samples are not positives, with ``"both"`` they are. Guided answers whose
verdict is not "correct", or that echo the guiding prompt (:data:`ECHO`), are left out and counted.

Examples
--------
>>> from semuq_eval.harness.doc import Doc
>>> doc = Doc.of_texts("Capital of France?", ("The capital is Paris.", "Lyon"), references=("Paris",))
>>> q = LabelledQuestion("s", doc, (1, 0))
>>> mined, counts = mine([q], positives="both", fact_swap=True)
>>> mined[0].origins
('sample', 'sample', 'reference', 'reference_sentence', 'wrong', 'wrong_sentence', 'swapped')
>>> mined[0].answers[-3:]
('Lyon', 'The answer is Lyon.', 'The capital is Lyon.')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from semuq_eval.training.stores import LabelledQuestion

__all__ = ["ECHO", "ORIGINS", "POSITIVES", "SENTENCE_TEMPLATE", "mine", "style_of"]

POSITIVES = ("samples", "references", "both")
"""Where positives come from: the LLM's correct samples (App. C), the dataset's references, or both."""

ORIGINS = {
    **dict.fromkeys(("sample", "guided", "swapped", "repaired"), "llm"),
    **dict.fromkeys(("reference", "wrong"), "raw"),
    **dict.fromkeys(("reference_sentence", "wrong_sentence"), "sentence"),
}
"""origin -> style (module docstring)."""

SENTENCE_TEMPLATE = "The answer is {}."
"""How a bare answer is written as a sentence (references and short wrong answers alike)."""

ECHO = re.compile(
    r"\b(?:its answer|the answer is|correct answer|answer is given|you (?:said|told|mentioned|know)|"
    r"as (?:given|stated|mentioned|you said)|i was told|hint)\b",
    re.IGNORECASE,
)
"""A guided answer that matches this repeats the guiding prompt instead of answering in the LLM's own words."""

MAX_WRONG_WORDS = 4
"""An incorrect sample of at most this many words is a bare wrong answer (origins ``wrong`` / ``wrong_sentence``)."""

_STRIP = " \t\n\"'`“”‘’.,;:!?"


def style_of(origin: str) -> str:
    """The style of an origin.

    Examples
    --------
    >>> style_of("guided"), style_of("reference")
    ('llm', 'raw')
    """
    try:
        return ORIGINS[origin]
    except KeyError:
        raise ValueError(f"unknown origin {origin!r}; known: {sorted(ORIGINS)}") from None


@dataclass(frozen=True)
class MinedText:
    """One text of a question: the answer, its verdict (1 / 0 / None) and its origin."""

    text: str
    label: int | None
    origin: str

    @property
    def style(self) -> str:
        return style_of(self.origin)


def _bare(text: str) -> str | None:
    words = text.strip(_STRIP)
    return words if words and len(words.split()) <= MAX_WRONG_WORDS else None


def _written(text: str, label: int, origin: str, template: str) -> list[MinedText]:
    """``text`` bare and as a sentence of ``template`` (origins ``origin`` and ``<origin>_sentence``)."""
    return [MinedText(text, label, origin), MinedText(template.format(text), label, f"{origin}_sentence")]


def _fact_swaps(q: LabelledQuestion, texts: list[MinedText]) -> list[MinedText]:
    """Swapped negatives of the correct LLM-style texts, and repaired positives of the incorrect samples."""
    from semuq_eval.diagnose.rewrite import RewriteRequest, SampleSubstitution, substitute
    from semuq_eval.diagnose.spans import alias_spans
    from semuq_eval.judges.string import StringJudge

    contains = StringJudge("contains")
    rewriter = SampleSubstitution()
    wrong = tuple(t.text for t in texts if t.origin == "sample" and t.label == 0 and t.text.strip())
    out: list[MinedText] = []
    seen = {t.text for t in texts}
    for t in texts:
        mentions = tuple(alias_spans(t.text, q.references)) if t.label == 1 and t.style == "llm" else ()
        if not mentions or not wrong:
            continue
        candidates = rewriter.candidates(RewriteRequest(q.question, t.text, q.references, mentions, wrong))
        for fact, _ in candidates:  # the first wrong fact that gives a new, incorrect text
            if not fact.strip() or contains(q.question, fact, q.references):
                continue
            swapped = substitute(t.text, mentions, fact)
            if swapped not in seen and contains(q.question, swapped, q.references) is False:
                seen.add(swapped)
                out.append(MinedText(swapped, 0, "swapped"))
                break
        for fact, source in candidates:
            if not source.startswith("aligned:"):
                continue
            repaired = wrong[int(source.split(":")[1])].replace(fact, mentions[0].text, 1)
            if repaired not in seen and contains(q.question, repaired, q.references):
                seen.add(repaired)
                out.append(MinedText(repaired, 1, "repaired"))
    return out


def mine(
    questions: Sequence[LabelledQuestion],
    guided: Sequence[LabelledQuestion] = (),
    *,
    positives: str = "samples",
    fact_swap: bool = False,
    template: str = SENTENCE_TEMPLATE,
) -> tuple[list[LabelledQuestion], dict[str, int]]:
    """Every question of ``questions`` with the texts the options add (module docstring), and the counts.

    ``guided`` are the same LLM's reference-guided answers, matched by
    :attr:`~semuq_eval.training.stores.LabelledQuestion.key` (one without a natural counterpart is counted and left
    out); ``template`` is the sentence template, with one ``{}``. Each question keeps its samples first, as stored;
    the counts are the texts added per origin (``added_<origin>``) and the guided answers left out
    (``guided_incorrect``, ``guided_echo``, ``guided_unmatched``).
    """
    if positives not in POSITIVES:
        raise ValueError(f"positives must be one of {POSITIVES}, got {positives!r}")
    if template.count("{}") != 1:
        raise ValueError(f"the sentence template needs exactly one '{{}}', got {template!r}")
    counts = dict.fromkeys(
        [*(f"added_{o}" for o in ORIGINS), "guided_incorrect", "guided_echo", "guided_unmatched"], 0
    )
    by_key: dict[str, list[LabelledQuestion]] = {}
    for g in guided:
        by_key.setdefault(g.key, []).append(g)
    out = []
    for q in questions:
        # with positives="references" the LLM's own correct samples are not positives
        texts = [
            MinedText(answer, None if (positives == "references" and label == 1) else label, "sample")
            for answer, label in zip(q.answers, q.labels, strict=True)
        ]
        seen = {t.text for t in texts}
        for g in by_key.get(q.key, ()):
            for answer, label in zip(g.answers, g.labels, strict=True):
                if label != 1:
                    counts["guided_incorrect"] += 1
                elif ECHO.search(answer):
                    counts["guided_echo"] += 1
                elif answer.strip() and answer not in seen:
                    seen.add(answer)
                    texts.append(MinedText(answer, 1, "guided"))
        if positives != "samples":
            refs = dict.fromkeys(r.strip() for r in q.references if r.strip())
            bare = dict.fromkeys(_bare(t.text) for t in texts if t.label == 0 and t.origin == "sample")
            texts += [t for ref in refs for t in _written(ref, 1, "reference", template)]
            texts += [t for b in bare if b for t in _written(b, 0, "wrong", template)]
        if fact_swap and q.references:
            texts += _fact_swaps(q, texts)
        for t in texts[len(q.answers) :]:
            counts[f"added_{t.origin}"] += 1
        out.append(
            q.with_answers([t.text for t in texts], [t.label for t in texts], [t.origin for t in texts])
        )
    counts["guided_unmatched"] = len(set(by_key) - {q.key for q in questions})
    return out, counts
