"""The context trap's corrupted answers: a correct answer with its fact replaced by a wrong one (App. F).

Two routes implement :class:`FactRewriter` (``rewrite(requests) -> list[Rewrite]``):

- :class:`SampleSubstitution` (offline, default) replaces the reference's mentions in the greedy answer with a WRONG
  answer the LLM itself sampled (its incorrect samples in stored order): *aligned*, when a word alignment
  (``difflib.SequenceMatcher`` on lowercased words) has one ``replace`` block covering the whole mention, changing at
  most ``context_slack`` other words and putting 1 to ``max_words`` sample words in its place ("The capital is
  Paris." + "The capital is Lyon." -> "Lyon"); else *short*, an incorrect sample of at most ``max_short_words`` words.
  Candidates holding a reference alias are skipped; a result is kept only if the string judge (``contains``) calls it
  incorrect.
- :class:`LLMRewriter`: any text-completion callable (``complete(prompt) -> str``), e.g. an OpenAI-compatible server
  (:meth:`LLMRewriter.from_openai`); the reply is checked the same way.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from semuq_eval.diagnose.spans import AliasSpan, word_spans
from semuq_eval.judges.string import StringJudge, normalize

__all__ = [
    "MAX_ALIGNED_WORDS",
    "REWRITE_PROMPT",
    "FactRewriter",
    "LLMRewriter",
    "Rewrite",
    "RewriteRequest",
    "SampleSubstitution",
    "substitute",
]

_CONTAINS = StringJudge("contains")

REWRITE_PROMPT = (
    "Question: {question}\n"
    "Correct fact: {fact}\n"
    "Answer: {answer}\n\n"
    'Rewrite the answer so that it states a plausible but DIFFERENT, incorrect fact instead of "{fact}". '
    "Keep every other word, the sentence structure and the style. Reply with the rewritten answer only."
)
"""The LLM route's prompt (App. F: the question, the matched ground truth and the greedy answer)."""


@dataclass(frozen=True)
class RewriteRequest:
    """One correct answer to corrupt: its question, references, the mentions of a reference in it
    (:func:`~semuq_eval.diagnose.spans.alias_spans`, at least one) and the question's incorrect sampled
    answers (what the offline route draws the wrong fact from)."""

    question: str
    answer: str
    references: tuple[str, ...]
    mentions: tuple[AliasSpan, ...]
    wrong_answers: tuple[str, ...] = ()

    @property
    def fact(self) -> str:
        """The first mention's text: the fact to replace."""
        return self.mentions[0].text


@dataclass(frozen=True)
class Rewrite:
    """A rewritten answer (``text``), how it was made (``source``), or why there is none (``reason``)."""

    text: str | None
    source: str | None = None
    reason: str | None = None


@runtime_checkable
class FactRewriter(Protocol):
    """Rewrites correct answers with their fact replaced: one :class:`Rewrite` per request, in order."""

    name: str

    def rewrite(self, requests: Sequence[RewriteRequest]) -> list[Rewrite]: ...

    @property
    def info(self) -> dict[str, Any]: ...


def substitute(answer: str, mentions: Sequence[AliasSpan], replacement: str) -> str:
    """``answer`` with every mention replaced by ``replacement``.

    Examples
    --------
    >>> from semuq_eval.diagnose.spans import alias_spans
    >>> substitute("Paris, yes, Paris.", alias_spans("Paris, yes, Paris.", ["Paris"]), "Lyon")
    'Lyon, yes, Lyon.'
    """
    out, pos = [], 0
    for m in sorted(mentions, key=lambda m: m.start):
        if m.start < pos:  # overlapping mentions of two aliases: the first one's replacement covers both
            pos = max(pos, m.end)
            continue
        out += [answer[pos : m.start], replacement]
        pos = m.end
    return "".join(out) + answer[pos:]


def _still_correct(request: RewriteRequest, text: str) -> bool:
    return _CONTAINS(request.question, text, request.references) is not False


_STRIP = " \t\n\"'`“”‘’.,;:!?"
MAX_ALIGNED_WORDS = 512
"""The longest greedy answer or sample (in words) that :class:`SampleSubstitution` aligns."""


@dataclass(frozen=True)
class SampleSubstitution:
    """The offline route (module docstring): the reference mention replaced by a wrong sampled answer.

    ``max_words``: the longest aligned wrong fact, in words; ``max_short_words``: the longest incorrect sample taken
    whole as the wrong fact; ``context_slack``: words besides the mention an aligned ``replace`` block may change.

    Examples
    --------
    >>> from semuq_eval.diagnose.spans import alias_spans
    >>> answer = "The capital of France is Paris."
    >>> req = RewriteRequest("Capital of France?", answer, ("Paris",), tuple(alias_spans(answer, ["Paris"])),
    ...                      ("The capital of France is Lyon.",))
    >>> SampleSubstitution().rewrite([req])[0]
    Rewrite(text='The capital of France is Lyon.', source='aligned:0', reason=None)
    """

    max_words: int = 6
    max_short_words: int = 3
    context_slack: int = 2

    name = "offline"

    @property
    def info(self) -> dict[str, Any]:
        return {
            "route": self.name,
            "rule": "reference mention replaced by a wrong sampled answer (aligned block, else a short sample)",
            "max_words": self.max_words,
            "max_short_words": self.max_short_words,
            "context_slack": self.context_slack,
        }

    def candidates(self, request: RewriteRequest) -> list[tuple[str, str]]:
        """``(wrong fact, source)`` candidates in preference order (aligned blocks first, then short samples)."""
        greedy = word_spans(request.answer)
        gw = [w for _, _, w in greedy]
        first = request.mentions[0]
        inside = [i for i, (s, e, _) in enumerate(greedy) if s >= first.start and e <= first.end]
        aligned, short = [], []
        for k, wrong in enumerate(request.wrong_answers):
            words = word_spans(wrong)
            if inside and max(len(gw), len(words)) <= MAX_ALIGNED_WORDS:
                lo, hi = inside[0], inside[-1] + 1
                matcher = difflib.SequenceMatcher(a=gw, b=[w for _, _, w in words], autojunk=False)
                for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                    if (
                        tag == "replace"
                        and i1 <= lo
                        and i2 >= hi
                        and (i2 - i1) - (hi - lo) <= self.context_slack
                        and 1 <= j2 - j1 <= self.max_words
                    ):
                        aligned.append((wrong[words[j1][0] : words[j2 - 1][1]], f"aligned:{k}"))
            if 1 <= len(words) <= self.max_short_words:
                short.append((wrong.strip(_STRIP), f"short:{k}"))
        return aligned + short

    def rewrite(self, requests: Sequence[RewriteRequest]) -> list[Rewrite]:
        return [self._one(request) for request in requests]

    def _one(self, request: RewriteRequest) -> Rewrite:
        if not request.wrong_answers:
            return Rewrite(None, reason="no incorrect sample for this question")
        for fact, source in self.candidates(request):
            if not normalize(fact) or _CONTAINS(request.question, fact, request.references):
                continue
            text = substitute(request.answer, request.mentions, fact)
            if not _still_correct(request, text):
                return Rewrite(text, source)
        return Rewrite(None, reason="no incorrect sample gives a short wrong answer")


class LLMRewriter:
    """The LLM route: ``complete(prompt) -> reply`` rewrites each answer (prompt :data:`REWRITE_PROMPT`).

    ``complete`` raising marks that request failed; ``name`` identifies the model behind it (in the report);
    ``prompt`` is a template with ``{question}``, ``{fact}`` and ``{answer}``; ``concurrency`` requests run at once.

    Examples
    --------
    >>> from semuq_eval.diagnose.spans import alias_spans
    >>> fake = lambda prompt: "The capital of France is Lyon."
    >>> answer = "The capital of France is Paris."
    >>> req = RewriteRequest("Capital of France?", answer, ("Paris",), tuple(alias_spans(answer, ["Paris"])))
    >>> LLMRewriter(fake, name="fake", progress=False).rewrite([req])[0].text
    'The capital of France is Lyon.'
    """

    def __init__(
        self,
        complete: Callable[[str], str],
        *,
        name: str = "llm",
        prompt: str = REWRITE_PROMPT,
        concurrency: int = 4,
        progress: bool = True,
        identity: dict[str, Any] | None = None,
    ) -> None:
        if not callable(complete):
            raise TypeError(f"complete must be callable (prompt -> reply), got {type(complete).__name__}")
        for field in ("{question}", "{fact}", "{answer}"):
            if field not in prompt:
                raise ValueError(f"the rewrite prompt must contain {field}")
        self.complete, self.name, self.prompt = complete, str(name), prompt
        self.concurrency, self.progress = max(1, int(concurrency)), bool(progress)
        self._identity = dict(identity or {})

    @property
    def info(self) -> dict[str, Any]:
        return {"route": "llm", "model": self.name, "prompt": self.prompt, **self._identity}

    @classmethod
    def from_openai(
        cls,
        base_url: str,
        model: str,
        *,
        max_tokens: int = 128,
        concurrency: int = 4,
        progress: bool = True,
        **transport: Any,
    ) -> LLMRewriter:
        """A rewriter on an OpenAI-compatible server, through the one transport to such servers
        (:class:`~semuq_eval.openai_client.ServerClient`). Greedy decoding; ``endpoint="chat"`` (default) sends the
        prompt as a user message, ``"completions"`` raw; ``**transport`` are the transport's other options
        (``api_key_env``, ``timeout``, ``max_retries``, ``backoff``)."""
        from semuq_eval.openai_client import TRANSPORT_OPTIONS, ServerClient
        from semuq_eval.openai_replies import choice_text, first_choice

        unknown = sorted(set(transport) - set(TRANSPORT_OPTIONS))
        if unknown:
            raise TypeError(f"unknown rewriter option(s) {unknown}; the transport takes {TRANSPORT_OPTIONS}")
        client = ServerClient.take(base_url, model, transport, endpoint="chat", concurrency=concurrency)
        endpoint = client.endpoint

        def complete(prompt: str) -> str:
            body = client.body(prompt, temperature=0.0, max_tokens=int(max_tokens))
            return client.send(body, lambda reply: choice_text(first_choice(reply), endpoint))

        identity = {"base_url": client.base_url, "endpoint": endpoint, "decoding": "temperature 0"}
        return cls(complete, name=model, concurrency=concurrency, progress=progress, identity=identity)

    def _one(self, request: RewriteRequest) -> Rewrite:
        prompt = self.prompt.format(question=request.question, fact=request.fact, answer=request.answer)
        try:
            reply = self.complete(prompt)
        except Exception as err:  # one failed request skips one question, counted with its reason
            if getattr(err, "code", None) in (401, 403, 404):  # wrong key, model or URL: every request fails
                raise RuntimeError(
                    f"rewrite server refused the request (HTTP {err.code}): check base_url, model and the key"
                ) from err
            return Rewrite(None, reason=f"rewrite request failed: {type(err).__name__}")
        text = (reply or "").strip().split("\n\n")[0].strip().strip('"').strip()
        if not text:
            return Rewrite(None, reason="empty rewrite")
        if _still_correct(request, text):
            return Rewrite(None, reason="the rewrite still names a reference")
        if normalize(text) == normalize(request.answer):
            return Rewrite(None, reason="the rewrite is the answer unchanged")
        return Rewrite(text, "llm")

    def rewrite(self, requests: Sequence[RewriteRequest]) -> list[Rewrite]:
        from tqdm.auto import tqdm

        bar = {"total": len(requests), "desc": f"rewrite {self.name}", "disable": not self.progress}
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(tqdm(pool.map(self._one, requests), **bar))
