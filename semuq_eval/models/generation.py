"""`Generation`: one generated answer as a `str` that also carries the white-box signals.

A `Generation` *is* the answer text (a `str` subclass), so it flows through lm-eval's filters, caches and
`process_results` unchanged, while estimators that need more than text read its fields (None: unavailable):

- ``token_ids`` (T,) int64 and ``token_offsets`` (T, 2) int64: the generated tokens that make up the returned text,
  and the [start, end) character span of each in it.
- ``token_logprobs`` (T,) float32: log p(y_t | x, y_<t) under the model's *raw* next-token distribution (softmax of
  its output logits, after any final soft-capping; temperature 1, before any sampling processing), though the
  answer was *sampled* from the processed one; ``seq_logprob`` float: their sum, log p(y | x) (App. A.1, Eq. 1).
- ``token_entropies`` (T,) float32: Shannon entropy (nats) of that full raw softmax at each step, H_t of Eq.
  (token_level_entropy), App. A.1.
- ``hidden`` (d,) float32 | None: the last-layer hidden state (after the final norm: the LM head's input) at the last
  answer token, after the model has read the whole answer; for an empty answer, at the end of the prompt.
- ``greedy`` bool: produced by greedy decoding; ``error`` str | None: why this answer's signals (or the answer) are
  missing (a failed request, a protocol break).
- ``approximate`` dict[str, str]: the fields that are estimates, with their method, e.g. ``{"token_entropies":
  "topk_renormalized(k=20)"}`` (a server returns only the top-k); empty: every field is exact.
- ``source`` dict | None: what produced the answer (its kind, a server's capabilities and fallbacks), shared by a
  model's answers and written once into the run store's manifest and the breakdown.
- ``reflexive`` dict | None: the greedy answer's follow-ups, ``{"p_true": {...}, "verbalized": {...}}``
  (:mod:`semuq_eval.models.reflexive`); None: not asked.

Tokens removed by lm-eval's post-processing (from the first stop sequence on, EOS, padding, a thinking prefix) are
dropped from every array; a token only partly kept is kept, its span clipped to the text. `text[s:e]` is token t's
decoded piece, except that a character byte-level BPE splits over tokens goes to the completing token (the earlier
ones get an empty span there), special tokens kept in the text get empty spans, and tokenizers that rewrite spaces
on decoding (`clean_up_tokenization_spaces`) give approximate spans there. Spans are non-decreasing and
non-overlapping. Other lm-eval models' plain strings become text-only Generations through `as_generation`. This
module imports numpy only (no torch)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Generation", "GenerationFields", "as_generation"]


class GenerationFields(TypedDict, total=False):
    """The fields of a :class:`Generation` besides its text (the module docstring's table), each optional."""

    token_ids: Any
    token_logprobs: Any
    token_entropies: Any
    seq_logprob: float | None
    token_offsets: Any
    hidden: Any
    greedy: bool
    approximate: dict[str, str] | None
    error: str | None
    source: dict[str, Any] | None
    reflexive: dict[str, dict[str, Any]] | None


_FIELDS = tuple(GenerationFields.__annotations__)


def _array(x: Any, dtype, shape_tail: tuple[int, ...] = ()) -> np.ndarray | None:
    if x is None:
        return None
    arr = np.asarray(x, dtype=dtype)
    if arr.size == 0:
        arr = arr.reshape((0, *shape_tail))
    return arr


class Generation(str):
    """A generated answer: the text (this `str`) plus token-level signals. See the module docstring."""

    token_ids: np.ndarray | None
    token_logprobs: np.ndarray | None
    token_entropies: np.ndarray | None
    seq_logprob: float | None
    token_offsets: np.ndarray | None
    hidden: np.ndarray | None
    greedy: bool
    approximate: dict[str, str]
    error: str | None
    source: dict[str, Any] | None
    reflexive: dict[str, dict[str, Any]] | None

    def __new__(cls, text: str = "", **fields: Unpack[GenerationFields]) -> Generation:
        if unknown := sorted(set(fields) - set(_FIELDS)):
            raise TypeError(f"Generation got unknown field(s) {unknown}; the fields are {list(_FIELDS)}")
        obj = super().__new__(cls, text)
        obj.token_ids = _array(fields.get("token_ids"), np.int64)
        obj.token_logprobs = _array(fields.get("token_logprobs"), np.float32)
        obj.token_entropies = _array(fields.get("token_entropies"), np.float32)
        obj.token_offsets = _array(fields.get("token_offsets"), np.int64, (2,))
        obj.hidden = _array(fields.get("hidden"), np.float32)
        seq_logprob = fields.get("seq_logprob")
        if seq_logprob is None and obj.token_logprobs is not None:
            seq_logprob = float(np.sum(obj.token_logprobs, dtype=np.float64))
        obj.seq_logprob = None if seq_logprob is None else float(seq_logprob)
        obj.greedy = bool(fields.get("greedy", False))
        obj.approximate = {str(k): str(v) for k, v in (fields.get("approximate") or {}).items()}
        error = fields.get("error")
        obj.error = None if error is None else str(error)
        obj.source = fields.get("source")
        reflexive = fields.get("reflexive")
        obj.reflexive = None if reflexive is None else {str(k): dict(v) for k, v in reflexive.items()}
        obj._check()
        return obj

    def _check(self) -> None:
        lengths = {
            name: len(arr)
            for name in ("token_ids", "token_logprobs", "token_entropies", "token_offsets")
            if (arr := getattr(self, name)) is not None
        }
        if len(set(lengths.values())) > 1:
            raise ValueError(f"Generation arrays have different lengths: {lengths}")
        if self.token_offsets is not None and self.token_offsets.ndim != 2:
            raise ValueError(f"token_offsets must have shape (T, 2), got {self.token_offsets.shape}")
        if self.hidden is not None and self.hidden.ndim != 1:
            raise ValueError(f"hidden must have shape (d,), got {self.hidden.shape}")
        if unknown := sorted(set(self.approximate) - set(_FIELDS)):
            raise ValueError(f"approximate names unknown fields {unknown}")

    # -- text -----------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        """The answer as a plain `str`."""
        return str.__str__(self)

    # -- serialization ----------------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELDS}

    def __reduce__(self):
        # keeps the fields through pickle (lm-eval's cache, data-parallel gather_object)
        return (_rebuild, (self.text, self._state()))

    def __copy__(self) -> Generation:
        return _rebuild(self.text, self._state())

    def __deepcopy__(self, memo) -> Generation:
        state = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self._state().items()}
        return _rebuild(self.text, state)

    def to_record(self, *, include_hidden: bool = True) -> dict[str, Any]:
        """A JSON-safe dict (lists, floats, None) for the run store; `from_record` inverts it.

        Non-finite floats are stored as None; ``approximate``, ``error`` and ``reflexive`` are written only when
        set, ``source`` never (the run store's manifest holds it once)."""

        def floats(arr):
            if arr is None:
                return None
            return [v if math.isfinite(v) else None for v in arr.astype(np.float64).tolist()]

        seq = self.seq_logprob
        extra: dict[str, Any] = {}
        if self.approximate:
            extra["approximate"] = dict(self.approximate)
        if self.error is not None:
            extra["error"] = self.error
        if self.reflexive is not None:
            extra["reflexive"] = {k: dict(v) for k, v in self.reflexive.items()}
        return {
            "text": self.text,
            "greedy": self.greedy,
            "token_ids": None if self.token_ids is None else self.token_ids.tolist(),
            "token_logprobs": floats(self.token_logprobs),
            "token_entropies": floats(self.token_entropies),
            "seq_logprob": None if seq is None or not math.isfinite(seq) else seq,
            "token_offsets": None if self.token_offsets is None else self.token_offsets.tolist(),
            "hidden": floats(self.hidden) if include_hidden else None,
            **extra,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Generation:
        """Rebuild a Generation from `to_record()` output (missing keys -> unavailable fields)."""

        def floats(vals):
            if vals is None:
                return None
            return np.asarray([np.nan if v is None else v for v in vals], dtype=np.float32)

        return cls(
            record.get("text", ""),
            token_ids=record.get("token_ids"),
            token_logprobs=floats(record.get("token_logprobs")),
            token_entropies=floats(record.get("token_entropies")),
            seq_logprob=record.get("seq_logprob"),
            token_offsets=record.get("token_offsets"),
            hidden=floats(record.get("hidden")),
            greedy=bool(record.get("greedy", False)),
            approximate=record.get("approximate"),
            error=record.get("error"),
            reflexive=record.get("reflexive"),
        )


def _rebuild(text: str, state: dict[str, Any]) -> Generation:
    obj = str.__new__(Generation, text)
    # the fields a Generation pickled by an older version lacks
    obj.__dict__.update({"approximate": {}, "error": None, "source": None, "reflexive": None, **state})
    return obj


def as_generation(x: Any, *, greedy: bool | None = None) -> Generation:
    """Turn any lm-eval model's answer into a Generation.

    A Generation is returned as is (`greedy` overridden when given); anything else becomes, through `str()`, a
    text-only Generation whose white-box fields are all None."""
    if isinstance(x, Generation):
        if greedy is None or bool(greedy) == x.greedy:
            return x
        return _rebuild(x.text, {**x._state(), "greedy": bool(greedy)})
    if x is None:
        raise TypeError("as_generation got None instead of a generated answer")
    return Generation(str(x), greedy=bool(greedy))
