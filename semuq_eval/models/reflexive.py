"""Reflexive follow-ups: after its greedy answer y*, the model is asked about y* itself (setting ``reflexive``).

The prompts (:data:`PROMPTS`) go RAW by default (setting ``reflexive_chat_template``: one user turn in the run's
chat template; ``semuq-api`` with ``endpoint=chat``: one user message, wrapped by the server); docs/running.md,
"Reflexive baselines":

- ``p_true`` (Kadavath et al., 2022, "Language Models (Mostly) Know What They Know", arXiv 2207.05221): the
  next-token distribution at the FIRST position (nothing generated) gives ``{"logprob_true": float | None,
  "logprob_false": float | None}``, the log masses of the True-ish and False-ish first tokens
  (:func:`classify_first_token`; None: no mass). ``semuq-api`` sums them among a server's top-k and marks the
  result ``"approximate": "topk_first_token_mass(k=K)"`` (:data:`APPROXIMATE_P_TRUE`).
- ``verbalized`` (Tian et al., 2023, "Just Ask for Calibration", arXiv 2305.14975; Xiong et al., 2024, "Can LLMs
  Express Their Uncertainty?", arXiv 2306.13063): a greedy reply of at most :data:`VERBALIZED_MAX_TOKENS` tokens,
  kept raw, ``{"reply": str}``, and parsed only when scored (:func:`parse_confidence`), so it can be audited.

A failed follow-up is ``{"error": str}``. Results ride on the greedy answer (``Generation.reflexive``) through the
journal and the run store. lm-eval builds every request before any is answered, so the task puts the prompts
(:func:`templates`) into the greedy request's generation kwargs under :data:`REFLEXIVE_KEY`; the semuq models
(:data:`REFLEXIVE_MODELS`) take them out (:func:`split_reflexive`) and answer them after the greedy answer. This
module imports numpy only."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = [
    "APPROXIMATE_P_TRUE",
    "FALSE_FORMS",
    "METHODS",
    "NOT_ASKED",
    "PROMPTS",
    "REFLEXIVE_KEY",
    "REFLEXIVE_MODELS",
    "SIGNALS",
    "TRUE_FORMS",
    "VERBALIZED_MAX_TOKENS",
    "check_model",
    "classify_first_token",
    "failed",
    "fill_answer",
    "masses",
    "p_true_result",
    "parse_confidence",
    "reflexive_approximation",
    "reflexive_signal",
    "split_reflexive",
    "templates",
    "token_sets",
]

APPROXIMATE_P_TRUE = "topk_first_token_mass"
"""The method of a P(True) read from a server's top-k first tokens (the True-ish / False-ish masses among them)."""

REFLEXIVE_KEY = "semuq_reflexive"
"""The reserved generation kwarg of the greedy request carrying the follow-up prompts (never reaches a model's
``generate``)."""

PROMPTS = {
    "p_true": "Question: {question}\nPossible answer: {answer}\nIs the possible answer:\n (A) True\n (B) False\n"
    "The possible answer is:",
    "verbalized": "Question: {question}\nProposed answer: {answer}\nHow likely is the proposed answer to be "
    "correct? Reply with a number from 0 to 100.\nConfidence:",
}
METHODS = tuple(PROMPTS)
"""The follow-ups the setting ``reflexive`` may name."""

REFLEXIVE_MODELS = ("semuq-hf", "semuq-api")
"""The lm-eval models that answer the follow-ups."""

VERBALIZED_MAX_TOKENS = 8
"""Token budget of the verbalized reply."""

NOT_ASKED = "the run did not ask for it (setting reflexive)"

TRUE_FORMS = frozenset({"A", "(A", "(A)", "A)", "True", "true", "TRUE"})
FALSE_FORMS = frozenset({"B", "(B", "(B)", "B)", "False", "false", "FALSE"})
"""A first token is True-ish (False-ish) when its text, stripped of surrounding white space, is one of these. So
" A", "A", " (A", "(A)" and " True" count, whatever the tokenizer splits ``" (A)"`` into; a lone " (" (many BPE
tokenizers' first piece of " (A)") counts as neither: it does not tell (A) from (B). Lower-case "a" is the article,
not the option, and is left out."""

_NUMBER = re.compile(r"(\d+(?:\.\d+)?)%?(?=$|[\s.,;:!?)])")


def templates(question: str, methods: Iterable[str]) -> dict[str, str]:
    """The follow-up prompts of ``methods`` with ``question`` filled in and ``{answer}`` left open.

    Examples
    --------
    >>> templates("Who wrote {Hamlet}?", ["verbalized"])["verbalized"].splitlines()[:2]
    ['Question: Who wrote {Hamlet}?', 'Proposed answer: {answer}']
    """
    return {m: PROMPTS[m].replace("{question}", question, 1) for m in methods}


def fill_answer(template: str, answer: str) -> str:
    """``template`` with its LAST ``{answer}`` replaced by ``answer`` (a question may spell ``{answer}`` itself).

    Examples
    --------
    >>> fill_answer("Question: say {answer}\\nProposed answer: {answer}\\n", "Paris")
    'Question: say {answer}\\nProposed answer: Paris\\n'
    """
    head, sep, tail = template.rpartition("{answer}")
    if not sep:
        raise ValueError(f"{REFLEXIVE_KEY}: a follow-up prompt has no {{answer}} placeholder")
    return head + answer + tail


def split_reflexive(gen_kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str] | None]:
    """``gen_kwargs`` without :data:`REFLEXIVE_KEY`, and the follow-up prompts it carried (None: none).

    ValueError when the key holds anything but ``{method: prompt with {answer}}`` of known methods.

    Examples
    --------
    >>> split_reflexive({"until": ["\\n"], "semuq_reflexive": {"verbalized": "Q {answer}"}})
    ({'until': ['\\n']}, {'verbalized': 'Q {answer}'})
    >>> split_reflexive({"until": ["\\n"]})
    ({'until': ['\\n']}, None)
    """
    rest = {k: v for k, v in gen_kwargs.items() if k != REFLEXIVE_KEY}
    value = gen_kwargs.get(REFLEXIVE_KEY)
    if value is None:
        return rest, None
    if not (
        isinstance(value, Mapping)
        and all(m in METHODS and isinstance(p, str) and "{answer}" in p for m, p in value.items())
    ):
        raise ValueError(
            f"{REFLEXIVE_KEY} must map follow-ups {list(METHODS)} to prompts with an {{answer}} placeholder, "
            f"got {value!r:.80}"
        )
    return rest, dict(value)


def check_model(methods: Iterable[str], model: str | None) -> None:
    """Refuse a run whose setting ``reflexive`` asks follow-ups of a model that cannot answer them.

    ``model`` is the lm-eval model's registered name (None: unknown, nothing to check).

    Examples
    --------
    >>> check_model(["p_true"], "semuq-api")
    >>> check_model(["p_true"], "hf")
    Traceback (most recent call last):
    ...
    ValueError: metadata reflexive ['p_true']: --model hf cannot answer the reflexive follow-ups; use semuq-hf or semuq-api
    """
    methods = list(methods)
    if methods and model is not None and model not in REFLEXIVE_MODELS:
        raise ValueError(
            f"metadata reflexive {methods}: --model {model} cannot answer the reflexive follow-ups; use "
            f"{' or '.join(REFLEXIVE_MODELS)}"
        )


def classify_first_token(text: str) -> str | None:
    """``"true"``, ``"false"`` or None for a first token's text (:data:`TRUE_FORMS`, :data:`FALSE_FORMS`).

    Examples
    --------
    >>> [classify_first_token(t) for t in [" (A", "A", " True", " (", "B)", " a"]]
    ['true', 'true', 'true', None, 'false', None]
    """
    word = text.strip()
    return "true" if word in TRUE_FORMS else "false" if word in FALSE_FORMS else None


def token_sets(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The ids of the True-ish and of the False-ish tokens of a vocabulary (``texts[i]``: token i decoded alone).

    Examples
    --------
    >>> token_sets([" (", "A", " (A", "B", "True", " a"])
    (array([1, 2, 4]), array([3]))
    """
    sides = [classify_first_token(t) for t in texts]
    return tuple(
        np.array([i for i, s in enumerate(sides) if s == side], dtype=np.int64) for side in ("true", "false")
    )


def masses(logprobs: Mapping[str, float]) -> dict[str, float | None]:
    """The log mass of the True-ish and False-ish tokens among ``{token text: logprob}`` (None: no such token).

    Examples
    --------
    >>> out = masses({" (A": math.log(0.5), " A": math.log(0.1), " (B": math.log(0.2), " (": math.log(0.2)})
    >>> round(math.exp(out["logprob_true"]), 6), round(math.exp(out["logprob_false"]), 6)
    (0.6, 0.2)
    """
    sides = {token: classify_first_token(token) for token in logprobs}
    return {
        f"logprob_{side}": _logsumexp([float(lp) for token, lp in logprobs.items() if sides[token] == side])
        for side in ("true", "false")
    }


def p_true_result(
    log_softmax: np.ndarray, true_ids: np.ndarray, false_ids: np.ndarray
) -> dict[str, float | None]:
    """The ``p_true`` result from a full next-token log-distribution (V,) and the token id sets.

    Examples
    --------
    >>> lp = np.log([0.5, 0.3, 0.2])
    >>> out = p_true_result(lp, np.array([0]), np.array([1]))
    >>> round(math.exp(out["logprob_true"]), 6), round(math.exp(out["logprob_false"]), 6)
    (0.5, 0.3)
    """
    lp = np.asarray(log_softmax, dtype=np.float64)
    sides = {"true": true_ids, "false": false_ids}
    return {
        f"logprob_{s}": _logsumexp(lp[np.asarray(ids, dtype=np.int64)].tolist()) for s, ids in sides.items()
    }


def _logsumexp(values: list[float]) -> float | None:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return None
    top = max(finite)
    return top + math.log(sum(math.exp(v - top) for v in finite))


def parse_confidence(reply: str) -> float:
    """The confidence c in [0, 100] a verbalized reply states, read STRICTLY: after leading white space, the first
    item must be a number (digits, optionally one decimal part, optionally ``%``) ending the reply or followed by
    white space or punctuation. No sign, no leading phrase ("I think 80"), nothing guessed: anything else is
    ValueError ``unparsable verbalized confidence: '<the reply's first 40 characters>'``.

    Examples
    --------
    >>> [parse_confidence(r) for r in ["85", "85%", " 7.5", "100", "90.\\nBecause"]]
    [85.0, 85.0, 7.5, 100.0, 90.0]
    >>> parse_confidence("I think 80")
    Traceback (most recent call last):
    ...
    ValueError: unparsable verbalized confidence: 'I think 80'
    """
    match = _NUMBER.match(reply.lstrip()) if isinstance(reply, str) else None
    value = float(match.group(1)) if match else math.nan
    if not 0.0 <= value <= 100.0:
        raise ValueError(f"unparsable verbalized confidence: {str(reply)[:40]!r}")
    return value


def failed(result: Mapping[str, Any] | None) -> bool:
    """Whether a greedy answer's follow-ups (``Generation.reflexive``) hold a failed request (not journaled:
    a resumed run asks again)."""
    return any("error" in r for r in (result or {}).values())


SIGNALS = {"p_true_logprobs": "p_true", "verbalized_confidence": "verbalized"}
"""The aggregator inputs read from the follow-ups, and the follow-up each is read from."""


def reflexive_approximation(reflexive: Mapping[str, Any] | None, name: str) -> str | None:
    """The method by which the reflexive input ``name`` (:data:`SIGNALS`) was estimated, or None when exact.

    Examples
    --------
    >>> reflexive_approximation({"p_true": {"logprob_true": -0.1, "approximate": "topk_first_token_mass(k=5)"}},
    ...                         "p_true_logprobs")
    'topk_first_token_mass(k=5)'
    """
    result = (reflexive or {}).get(SIGNALS[name]) or {}
    method = result.get("approximate")
    return str(method) if method else None


def reflexive_signal(reflexive: Mapping[str, Any] | None, name: str) -> tuple[Any, str | None]:
    """The aggregator input ``name`` (:data:`SIGNALS`) of a greedy answer's follow-ups, or ``(None, reason)``.

    ``p_true_logprobs``: (2,) log masses [True-ish, False-ish] (-inf: no mass); ``verbalized_confidence``: c.

    Examples
    --------
    >>> reflexive_signal(None, "p_true_logprobs")
    (None, 'the run did not ask for it (setting reflexive)')
    >>> reflexive_signal({"verbalized": {"reply": " 85%"}}, "verbalized_confidence")
    (85.0, None)
    >>> reflexive_signal({"verbalized": {"reply": "high"}}, "verbalized_confidence")
    (None, "unparsable verbalized confidence: 'high'")
    """
    method = SIGNALS[name]
    result = (reflexive or {}).get(method)
    if result is None:
        return None, NOT_ASKED
    if "error" in result:
        return None, f"the {method} follow-up failed: {result['error']}"
    if name == "verbalized_confidence":
        try:
            return parse_confidence(result.get("reply", "")), None
        except ValueError as err:
            return None, str(err)
    pair = [result.get("logprob_true"), result.get("logprob_false")]
    if all(v is None for v in pair):
        return None, "no True-ish or False-ish first token carries probability (p_true)"
    return np.array([-math.inf if v is None else float(v) for v in pair]), None
