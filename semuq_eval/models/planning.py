"""Planning `generate_until`: requests grouped into prompts, prompts batched into `generate` calls.

lm-eval puts the SAME Instance `repeats` times into the request list, so a prompt's k copies are served as k rows of
one `generate` call (a greedy group once, its answer returned k times). Batches share gen_kwargs and k, longest
prompt first (as HFLM), at most `batch_size * N` rows. A greedy request's reflexive follow-up prompts
(`semuq_eval.models.reflexive.REFLEXIVE_KEY`) move into `PromptGroup.reflexive`, so they never reach `generate` or
split a batch."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.models.utils import handle_stop_sequences, normalize_gen_kwargs

from semuq_eval.models.reflexive import REFLEXIVE_KEY, split_reflexive

__all__ = ["GenerateCall", "PromptGroup", "batch_groups", "deliver", "group_key", "group_requests"]

log = logging.getLogger(__name__)


def _freeze(x: Any) -> Any:
    """A hashable stand-in for nested dicts / lists of hashable values; TypeError otherwise."""
    if isinstance(x, dict):
        return tuple(sorted((str(k), _freeze(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    hash(x)
    return x


@dataclass
class PromptGroup:
    """The requests of one prompt: served by one `generate` call's rows.

    `context`, `gen_kwargs` (the decoding, without the reflexive follow-ups), `aux` (the multimodal `{"visual": [...]}`
    or None): the request's arguments; `request_kwargs`: its gen_kwargs as lm-eval sent them (lm-eval's cache, the
    journal key); `reflexive`: a greedy request's follow-up prompts (`semuq_eval.models.reflexive`) or None;
    `positions`: the requests' indices in the request list; `n_gen`: rows generated (the number of requests, 1 when
    greedy); `greedy`: decoded greedily, one answer for every request; `length`: prompt tokens (longest-first)."""

    context: str
    gen_kwargs: dict
    aux: dict | None
    request_kwargs: dict = field(default_factory=dict)
    reflexive: dict[str, str] | None = None
    positions: list[int] = field(default_factory=list)
    n_gen: int = 1
    greedy: bool = True
    length: int = 0


def deliver(
    results: list, cache_hook: Any, source: dict[str, Any] | None, group: PromptGroup, answers: Sequence[Any]
) -> None:
    """Each request of ``group`` gets its answer in ``results`` (the one answer for all when greedy) and in
    lm-eval's request cache (``cache_hook``), each answer's ``source`` set first (`Generation.source`)."""
    for answer in answers:
        answer.source = source
    for j, pos in enumerate(group.positions):
        answer = answers[j] if len(answers) > 1 else answers[0]
        results[pos] = answer
        cache_hook.add_partial("generate_until", (group.context, group.request_kwargs), answer)


def group_key(req: Instance) -> Any:
    """The key under which requests are merged: (context, gen_kwargs, identity of the image objects).

    Images are compared by identity: the same Instance repeated shares its image objects, and two documents
    with equal text but other images are never merged. Unhashable arguments make the request its own group."""
    args = req.args
    try:
        aux = args[2] if len(args) > 2 else None
        aux_key = None
        if isinstance(aux, dict):
            aux_key = tuple(
                (k, tuple(id(v) for v in val) if isinstance(val, (list, tuple)) else id(val))
                for k, val in sorted(aux.items())
            )
        return (args[0], _freeze(args[1]), aux_key)
    except TypeError:
        return ("__instance__", id(req))


def group_requests(
    requests: Sequence[Instance], max_gen_toks: int, tok_encode: Callable[[str], list[int]]
) -> list[PromptGroup]:
    """Group `requests` by `group_key`, in order of first appearance.

    `max_gen_toks`: the model's default generation budget (to normalize gen_kwargs as HFLM does); `tok_encode`: the
    model's tokenizer, for the prompt lengths."""
    groups: dict[Any, PromptGroup] = {}
    for pos, req in enumerate(requests):
        key = group_key(req)
        group = groups.get(key)
        if group is None:
            args = req.args
            if not isinstance(args[1], dict):
                raise ValueError(f"Expected `kwargs` to be of type `dict` but got {type(args[1])}")
            decoding, reflexive = split_reflexive(args[1])
            aux = args[2] if len(args) > 2 else None
            group = PromptGroup(args[0], decoding, aux, request_kwargs=args[1], reflexive=reflexive)
            groups[key] = group
        group.positions.append(pos)
    for group in groups.values():
        kwargs = normalize_gen_kwargs(group.gen_kwargs, max_gen_toks)
        group.greedy = not kwargs.get("do_sample", False)
        group.n_gen = 1 if group.greedy else len(group.positions)
        if group.reflexive is not None and not group.greedy:
            raise ValueError(f"{REFLEXIVE_KEY}: only a greedy request (do_sample false) can carry follow-ups")
        group.length = len(tok_encode(group.context))
    return list(groups.values())


def batch_groups(groups: Sequence[PromptGroup], rows: int) -> list[list[PromptGroup]]:
    """Batches of groups sharing gen_kwargs and k, longest prompt first, at most `rows` rows per batch.

    With rows = batch_size * N, sampled batches take batch_size prompts and greedy ones batch_size * N."""
    buckets: dict[Any, list[PromptGroup]] = {}
    for g in groups:
        buckets.setdefault((_freeze(g.gen_kwargs), g.n_gen), []).append(g)
    batches = []
    for (_, n_gen), members in buckets.items():
        members.sort(key=lambda g: (-g.length, g.context))
        size = max(1, rows // n_gen)
        batches.extend(members[i : i + size] for i in range(0, len(members), size))
    return batches


@dataclass(frozen=True)
class GenerateCall:
    """Everything one `generate` call of a batch needs besides the model.

    `batch`: the prompt groups (same gen_kwargs and `n_gen`), rows group-major, `n_gen` rows per prompt;
    `left_truncate_len`: prompt tokens kept (HFLM's, minus one position for the look-ahead step); `until`: stop
    sequences (HFLM's `handle_stop_sequences`, EOS included); `max_gen_toks`: the budget; `max_length`: gen_kwargs'
    `max_length` (counting the padded prompt, as in HFLM) or None; `gen`: the other `generate` keyword arguments;
    `shared`: run the shared prefill (`semuq_eval.models.prefill`) instead of repeating the prompt."""

    batch: list[PromptGroup]
    n_gen: int
    left_truncate_len: int
    until: list[str]
    max_gen_toks: int
    max_length: int | None
    gen: dict[str, Any]
    shared: bool = False

    @property
    def greedy(self) -> bool:
        """Whether the batch is decoded greedily."""
        return self.batch[0].greedy

    @property
    def rows(self) -> int:
        """Sequences generated by the call."""
        return len(self.batch) * self.n_gen

    @classmethod
    def for_batch(
        cls, batch: list[PromptGroup], eos: str, default_max_gen_toks: int, model_max_length: int
    ) -> GenerateCall:
        """Normalize the batch's gen_kwargs as HFLM's `generate_until` does (stop sequences, budget,
        greedy decoding), leaving one context position for the look-ahead step."""
        kwargs = dict(normalize_gen_kwargs(batch[0].gen_kwargs, default_max_gen_toks))
        until = handle_stop_sequences(kwargs.pop("until", None), eos=eos)
        max_gen_toks = kwargs.pop("max_gen_toks")
        if kwargs.pop("num_return_sequences", None) is not None:
            log.warning("semuq-hf: ignoring `num_return_sequences` in gen_kwargs (use repeats)")
        if batch[0].greedy:
            kwargs.pop("temperature", None)
            kwargs["do_sample"] = False
        max_ctx_len = model_max_length - max_gen_toks - 1  # one position for the look-ahead step
        if max_ctx_len <= 0:
            raise ValueError(
                f"Invalid configuration: requested max tokens to generate ({max_gen_toks}) must be less than "
                f"the model's maximum sequence length ({model_max_length}) minus 1."
            )
        max_length = kwargs.pop("max_length", None)
        if max_length is not None:
            log.warning("`max_length` in generation kwargs. Please use `max_gen_toks` instead.")
        return cls(
            batch=batch,
            n_gen=batch[0].n_gen,
            left_truncate_len=max_ctx_len,
            until=until,
            max_gen_toks=max_gen_toks,
            max_length=max_length,
            gen=kwargs,
        )
