"""``Doc``: one question as the pipeline carries it, from the generated answers to the estimators' inputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semuq_eval import signals
from semuq_eval.models.generation import Generation
from semuq_eval.models.reflexive import SIGNALS as REFLEXIVE_SIGNALS
from semuq_eval.models.reflexive import reflexive_approximation, reflexive_signal

__all__ = ["NO_GREEDY", "Doc"]

NO_GREEDY = "no greedy answer stored"
"""The ``error`` of the placeholder greedy answer of a question whose source kept none."""

_TOKEN_ARRAYS = {"token_entropies": "entropies", "token_logprobs": "log-probabilities"}


@dataclass
class Doc:
    """One question on its way through the pipeline: its answers, then what the operators made of them.

    Its builder sets ``doc_id`` (lm-eval's index), ``key`` (the dataset's id), ``question``, ``references``, ``greedy``,
    the N ``samples`` and ``n_extra_responses`` (dropped padding);
    :func:`~semuq_eval.harness.operator_runs.compute_operators` fills ``matrices[op]`` ((N, N)), ``extras[op][name]``
    (e.g. ``token_weights``), ``unavailable[op]`` or ``[f"{op}.{extra}"]`` (why none) and ``truncated[op]`` (answers
    read only in part)."""

    doc_id: int
    question: str
    references: list[str]
    greedy: Generation
    samples: list[Generation]
    key: str | None = None
    n_extra_responses: int = 0
    matrices: dict[str, np.ndarray] = field(default_factory=dict)
    extras: dict[str, dict[str, Any]] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    truncated: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of_texts(
        cls,
        question: str,
        samples: Sequence[str],
        *,
        greedy: str | None = None,
        references: Sequence[str] = (),
        doc_id: int = 0,
    ) -> Doc:
        """A question given by its texts alone (a training-data file, a test): no tokens, no hidden vectors.
        Without ``greedy`` the greedy answer is an empty placeholder whose ``error`` is :data:`NO_GREEDY`.

        Examples
        --------
        >>> d = Doc.of_texts("Capital of France?", ["Paris", "Lyon"], greedy="Paris", references=["Paris"])
        >>> d.greedy.text, [g.text for g in d.samples]
        ('Paris', ['Paris', 'Lyon'])
        """
        first = Generation(greedy or "", greedy=True, error=NO_GREEDY if greedy is None else None)
        return cls(doc_id, question, list(references), first, [Generation(t) for t in samples])

    def signal(self, name: str) -> tuple[Any, str | None]:
        """``(value, None)`` for a signal read from the generating model's answers (origin ``answers``,
        :mod:`semuq_eval.signals`), or ``(None, reason)``."""
        if name == "seq_logprobs":
            missing = [g for g in self.samples if g.seq_logprob is None]
            if missing:
                why = next((g.error for g in missing if g.error), "black-box model")
                return None, f"the model returned no sequence log-probabilities ({why})"
            lp = np.array([g.seq_logprob for g in self.samples], dtype=np.float64)
            bad = np.flatnonzero(~np.isfinite(lp))
            if bad.size:
                return None, f"samples {bad.tolist()[:10]} have NaN or infinite log-probabilities"
            return lp, None
        if name == "seq_lengths":
            # token ids, or the token log-probabilities of a server that returns no ids: one per token either way
            tokens = [g.token_ids if g.token_ids is not None else g.token_logprobs for g in self.samples]
            if any(t is None for t in tokens):
                return None, "the model returned no tokens (black-box model)"
            return np.array([len(t) for t in tokens], dtype=np.float64), None
        if name in _TOKEN_ARRAYS:
            values, what = getattr(self.greedy, name), _TOKEN_ARRAYS[name]
            if values is None:
                return None, f"the model returned no token {what} ({self.greedy.error or 'black-box model'})"
            arr = np.asarray(values, dtype=np.float64)
            if arr.size == 0:
                return None, "the greedy answer has no tokens"
            if not np.all(np.isfinite(arr)):
                return None, f"the greedy answer has NaN or infinite token {what}"
            return arr, None
        if name == "token_ids":
            if self.greedy.token_ids is None:
                return None, "the model returned no token ids (black-box model, or a server: token text only)"
            return np.asarray(self.greedy.token_ids), None
        if name in REFLEXIVE_SIGNALS:
            return reflexive_signal(self.greedy.reflexive, name)
        raise KeyError(
            f"no reader of signal {name!r} in the answers; they hold {signals.names(origin='answers')}"
        )

    def approximation(self, name: str) -> str | None:
        """The method by which the generating-model signal ``name`` (origin ``answers``) was estimated, or None
        when it is exact."""
        if name in REFLEXIVE_SIGNALS:
            return reflexive_approximation(self.greedy.reflexive, name)
        answers = [self.greedy] if name in _TOKEN_ARRAYS or name == "token_ids" else self.samples
        field = {"seq_logprobs": "token_logprobs", "seq_lengths": "token_ids"}.get(name, name)
        methods = sorted({g.approximate[field] for g in answers if field in g.approximate})
        return "; ".join(methods) or None
