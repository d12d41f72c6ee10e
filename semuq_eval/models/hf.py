"""`semuq-hf`: lm-eval's HFLM that samples N answers per `generate` call and returns `Generation`s.

How a `generate_until` call is served
-------------------------------------
1. Grouping. lm-eval's evaluator puts the SAME Instance `repeats` times into the request list. Requests are
   grouped by identical (context, gen_kwargs) (for multimodal requests: and the same image objects). A group
   of k sampled requests is served by ONE `generate` call producing its k rows; a greedy group
   (`do_sample=False`) is generated once and its answer returned k times (the same object).
2. Batching. Groups with the same gen_kwargs and k are sorted longest-prompt-first (as HFLM does) and batched
   into `generate` calls of at most `batch_size * N` sequences, N the largest group of the request list: a
   sampled call serves `batch_size` prompts with all their samples (so batch_size=1 still serves the N samples
   of a prompt in one call) and a greedy call `batch_size * N` prompts, one row each. `batch_size="auto"`
   takes HFLM's detected number of sequences as that bound. Tokenization, left padding, left truncation, chat templates (applied by lm-eval before the
   requests arrive), stop sequences (HFLM's `MultiTokenEOSCriteria`, sized for all rows), EOS handling and text
   post-processing (`postprocess_generated_text`, thinking tokens) are HFLM's own, so the text is exactly what
   HFLM would return for the same tokens.
3. Less work per call than k independent rows (both on by default, both model arguments):
   - `share_prefill`: `generate` with `num_return_sequences=k` repeats the prompt k times *before* the
     prefill. Instead, each prompt except its last token runs through the model once, the KV cache is expanded
     to k rows (`Cache.batch_repeat_interleave`), and `generate` starts from it (computing only the last prompt
     token per row). Falls back to `num_return_sequences=k` if the model's cache does not allow it.
   - `compact_rows`: `generate` keeps computing every row until the slowest one ends. Rows that have finished
     (EOS, or a stop sequence seen by HFLM's criteria) are removed from the KV cache and the step inputs by a
     forward pre-hook, one step after they end; the forward hook gives `generate` full-size logits back.
     Results are the same as without it (checked in tests).
4. Signals, streamed during `generate` by hooks that keep O(rows) per step instead of O(rows x vocab) or
   O(rows x layers x d):
   - a forward hook on the causal LM reads the logits of the last position at each step (the logits the model
     returns, i.e. after any final soft-capping), takes `log_softmax` in float32, stores the Shannon entropy of
     that full distribution and, at the next step (whose input is the token just chosen), the log-prob of the
     chosen token. These are the raw distribution's values (temperature 1, no top-k/top-p/penalties), not the
     distribution the token was sampled from.
   - a forward pre-hook on the LM head (`get_output_embeddings()`) keeps the last position of its input: the
     last-layer hidden state after the final norm. If a model has no LM head module, a hook on the final norm
     (`model.norm`, `transformer.ln_f`, ...) is used instead, and only if neither exists does `generate` run
     with `output_hidden_states=True`.
   The state at the last answer token is computed by the step that *reads* that token. To have that step for
   every kept token, generation runs one step past the budget (`max_gen_toks + 1`, the extra token is never
   returned) and one step past the point where the stop-sequence criterion stops the batch. To leave room for
   that step, a prompt is left-truncated to `max_length - max_gen_toks - 1` tokens (HFLM: one more).
5. Post-processing per row: the text is HFLM's; the kept tokens are those whose characters make up the text
   (see `semuq_eval.models.generation` for the exact rule and the token offsets).

Resume: every prompt's answers are appended to a journal as soon as its `generate` call returns, and
looked up there before generating (`semuq_eval.models.journal`), so a killed run restarted with the same
arguments generates only the prompts it had not finished.

Memory: besides HFLM's generation memory, per step and row one float (entropy), one float (log-prob) and one
hidden vector (model dtype) are kept until the batch ends; the full-vocabulary log-softmax exists for one step
only. `output_logits=True` would keep rows x steps x vocab floats instead (3 GB for 20 x 256 steps x 152k).

Data parallelism: only `generate_until` is overridden; HFLM's accelerate set-up (rank, world_size, devices,
gather) is kept, and each rank serves its own share of the requests. One addition: HFLM turns data parallelism on
only when it counts more than one GPU, so under `accelerate launch` / `torchrun` on CPU (accelerate's MULTI_CPU
state, gloo backend) every process would evaluate every question; `semuq-hf` then takes rank and world size from
the accelerator itself (`SemuqGenerateMixin._semuq_enable_cpu_data_parallel`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM
from lm_eval.models.utils import handle_stop_sequences, normalize_gen_kwargs, postprocess_generated_text
from lm_eval.models.utils_hf import stop_sequences_criteria
from tqdm import tqdm

from semuq_eval.distributed import process_group
from semuq_eval.models.generation import Generation, as_generation
from semuq_eval.models.journal import GenerationJournal, journal_key
from semuq_eval.paths import default_output_dir, safe_name

__all__ = ["SemuqGenerateMixin", "SemuqHFLM", "find_final_hidden_module", "token_char_ends"]

eval_logger = logging.getLogger(__name__)

_FINAL_NORM_NAMES = ("norm", "ln_f", "final_layer_norm", "final_layernorm", "norm_f", "final_norm")


# ----------------------------------------------------------------------------------------------------------
# hooks
# ----------------------------------------------------------------------------------------------------------
def find_final_hidden_module(model: torch.nn.Module) -> tuple[torch.nn.Module | None, str]:
    """Module whose input (`"pre"`) or output (`"post"`) is the last-layer hidden state after the final norm.

    The LM head's input (`get_output_embeddings()`) is used when there is one; otherwise the final norm of
    the decoder (`model.norm`, `transformer.ln_f`, `decoder.final_layer_norm`, `language_model.norm`, ...).
    Returns (None, "none") when neither is found.
    """
    get_head = getattr(model, "get_output_embeddings", None)
    head = get_head() if callable(get_head) else None
    if isinstance(head, torch.nn.Module):
        return head, "pre"
    candidates = []
    for name, module in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if leaf in _FINAL_NORM_NAMES and "layers" not in name.split(".") and ".h." not in f".{name}.":
            candidates.append((name.count("."), name, module))
    # shallowest match outside the vision tower, if any
    candidates = [c for c in candidates if "vision" not in c[1] and "visual" not in c[1]] or candidates
    if candidates:
        return min(candidates, key=lambda c: c[0])[2], "post"
    return None, "none"


def _causal_lm(model: torch.nn.Module) -> torch.nn.Module:
    """The module whose forward returns `.logits` (unwraps PEFT)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


_COMPACTABLE_KWARGS = frozenset({"input_ids", "attention_mask", "position_ids", "cache_position"})


class _StepRecorder:
    """Streams per-step entropies, chosen-token log-probs and last hidden states out of `generate`, and
    drops finished rows from the computation.

    Forward call i of `generate` (0 = prefill) computes the distribution of generated token i and reads
    token i-1 (the last prompt token for i = 0): `entropies[i]`, `logprobs[i]` are those of token i and
    `hidden[i]` is the final-norm state at the position of token i-1. All three are kept in the full row
    space (rows, ...); entries of rows not computed at a step are NaN.

    Row compaction (`compact=True`): `generate` keeps computing every row until the whole batch is done.
    Once a row has finished (EOS, or a stop sequence detected by HFLM's criteria, reported through
    `observe`) and the step that reads its last token has run, a forward pre-hook removes it from the KV
    cache (`Cache.batch_select_indices`) and from the step's inputs, and the forward hook hands `generate`
    full-size logits again (zeros for removed rows: whatever is sampled there lies after the row's end and is
    cut from its text, or replaced by padding after EOS). Compaction is only used when the decoding inputs
    are the plain ones (token ids, 2-D mask and positions, cache positions) and the cache supports it.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        want_hidden: bool,
        rows: int = 0,
        prompt_len: int = 0,
        compact: bool = False,
        eos_ids: set[int] | None = None,
    ) -> None:
        self.model = model
        self.want_hidden = want_hidden
        self.rows = rows
        self.prompt_len = prompt_len
        self.compact = compact and rows > 1
        self.eos_ids = eos_ids or set()
        self.entropies: list[torch.Tensor] = []
        self.logprobs: list[torch.Tensor] = []
        self.hidden: list[torch.Tensor] = []
        self.done_step: list[int | None] = [None] * rows
        self.active: torch.Tensor | None = None  # rows the model computes (None: all)
        self.calls = 0
        self.compacted_row_steps = 0  # rows x steps saved, for diagnostics
        self._compact_ok: bool | None = None
        self._pending: torch.Tensor | None = None
        self._pending_rows: torch.Tensor | None = None
        self._last_tokens: torch.Tensor | None = None
        self._handles: list[Any] = []
        self.use_output_hidden_states = False
        self.hidden_source = "none"

    # per-row completion, from the stopping criteria ----------------------------------------------------------
    def observe(self, input_ids: torch.Tensor, stop_trackers: list[list[bool]]) -> None:
        t = input_ids.shape[1] - self.prompt_len - 1  # index of the newest generated token
        if t < 0 or not self.compact:
            return
        newest = input_ids[:, -1].tolist()
        for r in range(self.rows):
            if self.done_step[r] is None and (
                newest[r] in self.eos_ids or any(tr[r] for tr in stop_trackers if r < len(tr))
            ):
                self.done_step[r] = t

    # hooks ---------------------------------------------------------------------------------------------
    def _full(self, values: torch.Tensor, rows_idx: torch.Tensor | None) -> torch.Tensor:
        if rows_idx is None:
            return values
        out = values.new_full((self.rows, *values.shape[1:]), float("nan"))
        out[rows_idx] = values
        return out

    def _can_compact(self, args, kwargs) -> bool:
        cache = kwargs.get("past_key_values")
        tensors = {k for k, v in kwargs.items() if torch.is_tensor(v)}
        pos = kwargs.get("position_ids")
        ids = kwargs.get("input_ids")
        return (
            not args
            and torch.is_tensor(ids)
            and ids.shape[0] == self.rows
            and tensors <= _COMPACTABLE_KWARGS
            and (pos is None or pos.ndim == 2)
            and callable(getattr(cache, "batch_select_indices", None))
        )

    def _on_pre_forward(self, module, args, kwargs):
        if self.calls == 0:
            return None
        ids = kwargs.get("input_ids")
        if ids is None and args and torch.is_tensor(args[0]):
            ids = args[0]
        if ids is not None:
            self._last_tokens = ids[:, -1]
        if not self.compact:
            return None
        if self._compact_ok is None:
            self._compact_ok = self._can_compact(args, kwargs)
        if not self._compact_ok:
            return None
        i = self.calls
        current = list(range(self.rows)) if self.active is None else self.active.tolist()
        # call i reads token i-1: a row that finished at token t is needed up to call t + 1
        keep = [r for r in current if self.done_step[r] is None or self.done_step[r] >= i - 1]
        if not keep:
            keep = current[:1]
        if len(keep) < len(current):
            position = {r: j for j, r in enumerate(current)}
            rel = torch.tensor([position[r] for r in keep], device=ids.device)
            kwargs["past_key_values"].batch_select_indices(rel)
            self.active = torch.tensor(keep, device=ids.device)
        if self.active is None:
            return None
        self.compacted_row_steps += self.rows - len(self.active)
        for k in ("input_ids", "attention_mask", "position_ids"):
            if torch.is_tensor(kwargs.get(k)):
                kwargs[k] = kwargs[k][self.active]
        return args, kwargs

    def _on_forward(self, module, args, kwargs, output) -> None:
        self.calls += 1
        logits = getattr(output, "logits", None)
        if logits is None and isinstance(output, (tuple, list)):
            logits = output[0]
        if logits is None:
            raise RuntimeError("semuq-hf: the model's forward returned no logits")
        logp = torch.log_softmax(logits[:, -1, :].float(), dim=-1)
        active = self.active
        if self._pending is not None:
            toks = self._last_tokens
            if toks is None:
                raise RuntimeError(
                    "semuq-hf: a decoding step was called without input_ids; cannot read the chosen token"
                )
            toks = toks.to(self._pending.device)
            prev = self._pending_rows
            chosen = toks if prev is None else toks[prev]
            lp = self._pending.gather(1, chosen[:, None]).squeeze(1)
            self.logprobs.append(self._full(lp, prev))
        # p * log p with p = 0 where log p = -inf (masked vocabulary entries) must count as 0, not NaN
        finite = logp.clamp_min(torch.finfo(logp.dtype).min)
        self.entropies.append(self._full(-(logp.exp() * finite).sum(-1), active))
        self._pending, self._pending_rows = logp, active
        if active is not None:  # `generate` expects every row
            full = logits.new_zeros((self.rows, *logits.shape[1:]))
            full[active] = logits
            output.logits = full

    def _on_head_input(self, module, args) -> None:
        if args and torch.is_tensor(args[0]):
            self.hidden.append(self._full(args[0][:, -1, :].detach().clone(), self.active))

    def _on_norm_output(self, module, args, output) -> None:
        out = output[0] if isinstance(output, (tuple, list)) else output
        self.hidden.append(self._full(out[:, -1, :].detach().clone(), self.active))

    # context manager -------------------------------------------------------------------------------------
    def __enter__(self) -> _StepRecorder:
        lm = _causal_lm(self.model)
        self._handles.append(lm.register_forward_pre_hook(self._on_pre_forward, with_kwargs=True))
        self._handles.append(lm.register_forward_hook(self._on_forward, with_kwargs=True))
        if self.want_hidden:
            module, kind = find_final_hidden_module(lm)
            if kind == "pre":
                self._handles.append(module.register_forward_pre_hook(self._on_head_input))
                self.hidden_source = "lm_head_input"
            elif kind == "post":
                self._handles.append(module.register_forward_hook(self._on_norm_output))
                self.hidden_source = "final_norm_output"
            else:
                self.use_output_hidden_states = True
                self.compact = False
                self.hidden_source = "output_hidden_states"
        return self

    def __exit__(self, *exc) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def finish(self, sequences: torch.Tensor, prompt_len: int) -> None:
        """Gather the log-prob of the token chosen by the last forward call."""
        if self._pending is not None:
            i = prompt_len + len(self.logprobs)
            if i < sequences.shape[1]:
                toks = sequences[:, i].to(self._pending.device)
                prev = self._pending_rows
                chosen = toks if prev is None else toks[prev]
                lp = self._pending.gather(1, chosen[:, None]).squeeze(1)
                self.logprobs.append(self._full(lp, prev))
            self._pending = None


class _OneStepLater(transformers.StoppingCriteria):
    """Stop one decoding step after `inner` asks to, so that the step reading the last kept token runs.

    Also reports which rows are done (per-row trackers of HFLM's stop-sequence criteria) to `recorder`.
    """

    def __init__(
        self, inner: transformers.StoppingCriteriaList, recorder: _StepRecorder | None = None
    ) -> None:
        self.inner = inner
        self.recorder = recorder
        self.fired = False

    def __call__(self, input_ids: torch.LongTensor, scores, **kwargs) -> bool:
        if self.fired:
            return True
        done = self.inner(input_ids, scores, **kwargs)
        if self.recorder is not None:
            trackers = [
                c.done_tracker for c in self.inner if isinstance(getattr(c, "done_tracker", None), list)
            ]
            self.recorder.observe(input_ids, trackers)
        self.fired = bool(done.all()) if torch.is_tensor(done) else bool(done)
        return False


# ----------------------------------------------------------------------------------------------------------
# token <-> character alignment
# ----------------------------------------------------------------------------------------------------------
def _incremental_ends(decode: Callable[[list[int]], str], ids: Sequence[int]) -> tuple[list[int], str]:
    """Character end of each token, by incremental detokenization with a short context window.

    Text is emitted once the window decodes to more than its previous part and does not end in U+FFFD (an
    incomplete UTF-8 sequence), as in vLLM's incremental detokenizer; tokens that complete nothing get an
    empty span.
    """
    ends: list[int] = []
    text = ""
    prefix, read = 0, 0
    for t in range(len(ids)):
        prefix_text = decode(list(ids[prefix:read])) if read > prefix else ""
        new_text = decode(list(ids[prefix : t + 1]))
        if len(new_text) > len(prefix_text) and not new_text.endswith("\ufffd"):
            text += new_text[len(prefix_text) :]
            prefix, read = read, t + 1
        ends.append(len(text))
    return ends, text


def _prefix_ends(
    batch_decode: Callable[[list[list[int]]], list[str]], ids: Sequence[int], full: str, stop_at: int
) -> list[int]:
    """Character end of each token as the common prefix of decode(ids[:t+1]) with `full` (exact, O(T^2))."""
    import os.path

    ends: list[int] = []
    prev = 0
    chunk = 64
    for c0 in range(0, len(ids), chunk):
        texts = batch_decode([list(ids[: t + 1]) for t in range(c0, min(len(ids), c0 + chunk))])
        for p in texts:
            prev = max(prev, len(os.path.commonprefix([p, full])))
            ends.append(prev)
        if prev >= stop_at:
            break
    ends.extend([prev] * (len(ids) - len(ends)))
    return ends


def token_char_ends(
    decode: Callable[[list[int]], str],
    batch_decode: Callable[[list[list[int]]], list[str]],
    ids: Sequence[int],
    full: str,
    stop_at: int | None = None,
) -> list[int]:
    """End offset in `full` (= decode(ids)) of each token's text; non-decreasing, last = len(full).

    Fast incremental detokenization when it reproduces `full`; otherwise (tokenizers whose decoding rewrites
    spaces, an unfinished UTF-8 sequence at the end) the exact prefix method, computed up to `stop_at`.
    """
    if not ids:
        return []
    ends, text = _incremental_ends(decode, ids)
    if text == full:
        return ends
    return _prefix_ends(batch_decode, ids, full, len(full) if stop_at is None else stop_at)


def kept_token_range(
    ends: Sequence[int], a: int, b: int, special_ids: set[int], ids: Sequence[int]
) -> tuple[int, int]:
    """Half-open range [lo, hi) of the tokens whose characters make up full[a:b] (empty when a == b).

    lo: the first token ending after a, extended back over empty-span non-special tokens (the first bytes of
    a character split by byte-level BPE); hi - 1: the first token ending at or after b.
    """
    if b <= a or not ends:
        return 0, 0
    lo = next(t for t, e in enumerate(ends) if e > a)
    while lo > 0:
        p = lo - 1
        p_begin = ends[p - 1] if p > 0 else 0
        if ends[p] != p_begin or ids[p] in special_ids or p_begin < a:
            break
        lo = p
    hi = next(t for t, e in enumerate(ends) if e >= b) + 1
    return lo, hi


# ----------------------------------------------------------------------------------------------------------
# the generate_until override, shared by the text and multimodal models
# ----------------------------------------------------------------------------------------------------------
def _freeze(x: Any) -> Any:
    if isinstance(x, dict):
        return tuple(sorted((str(k), _freeze(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    hash(x)
    return x


@dataclass
class _Group:
    context: str
    gen_kwargs: dict
    aux: dict | None
    positions: list[int] = field(default_factory=list)
    n_gen: int = 1
    greedy: bool = True
    length: int = 0


class SemuqGenerateMixin:
    """`generate_until` returning `Generation`s, N samples of a prompt per `generate` call.

    Mixed into HFLM (`SemuqHFLM`) and HFMultimodalLM (`SemuqHFMultimodalLM`); see the module docstring.
    Subclasses provide `_semuq_encode` (tokenize a batch of groups into `generate` inputs) and may override
    `_semuq_postprocess` (text post-processing).
    """

    #: keep the last hidden state (model argument `return_hidden`)
    return_hidden: bool = True
    #: run a prompt's prefill once for its k samples (model argument `share_prefill`)
    share_prefill: bool = True
    #: stop computing rows that have finished (model argument `compact_rows`)
    compact_rows: bool = True
    #: journal folder, "off", or None for the default (model argument `journal`; see models.journal)
    journal: str | None = None
    _semuq_journal_obj: GenerationJournal | None = None
    #: expand prompts to k rows with `num_return_sequences` (text) rather than in the inputs (multimodal)
    _semuq_expand_with_generate: bool = True

    # -- construction --------------------------------------------------------------------------------------------
    def _semuq_setup(
        self,
        pretrained: Any,
        kwargs: dict[str, Any],
        *,
        return_hidden: Any,
        share_prefill: Any,
        compact_rows: Any,
        journal: str | None,
    ) -> None:
        """The constructor body of the semuq models: the lm-eval model's own `__init__`, then the options."""
        self._semuq_parallelize = _as_bool(kwargs.get("parallelize", False))
        self._semuq_tp_plan = kwargs.get("tp_plan")
        super().__init__(pretrained, **kwargs)  # the lm-eval model after this mixin in the MRO
        self._semuq_enable_cpu_data_parallel()
        self.return_hidden = _as_bool(return_hidden)
        self.compact_rows = _as_bool(compact_rows)
        self.share_prefill = self._semuq_resolve_share_prefill(share_prefill)
        self.journal = journal

    def _semuq_resolve_share_prefill(self, value: Any) -> bool:
        return _as_bool(value)

    # -- data parallelism on CPU -----------------------------------------------------------------------------
    def _semuq_enable_cpu_data_parallel(self) -> None:
        """Split the requests over the processes of a multi-process CPU launch.

        HFLM keeps ``rank = 0, world_size = 1`` unless it sees more than one GPU, even when `accelerate launch`
        / `torchrun` started several CPU processes with a gloo process group: each process would then evaluate
        every question. When HFLM kept the accelerator (more than one process), its device is the CPU, and
        neither model parallelism nor a tensor-parallel plan is in use, take rank and world size from it (as
        HFLM does on GPUs; the global process index, so that ``gather_object(dst=0)`` reaches process 0).
        """
        accelerator = getattr(self, "accelerator", None)
        if accelerator is None or int(getattr(self, "_world_size", 1)) > 1:
            return
        if accelerator.num_processes <= 1 or getattr(accelerator.device, "type", None) != "cpu":
            return
        if getattr(self, "_semuq_parallelize", False) or getattr(self, "_semuq_tp_plan", None) is not None:
            return
        self._rank = int(accelerator.process_index)
        self._world_size = int(accelerator.num_processes)
        if self._rank == 0:
            eval_logger.info(
                "semuq-hf: data parallelism over %d CPU processes (%s backend)",
                self._world_size,
                getattr(accelerator.state, "backend", "?"),
            )

    # -- request grouping -----------------------------------------------------------------------------------
    def _semuq_group_key(self, req: Instance) -> Any:
        args = req.args
        try:
            aux = args[2] if len(args) > 2 else None
            aux_key = None
            if isinstance(aux, dict):
                # images are compared by identity: the same Instance repeated shares its image objects
                aux_key = tuple(
                    (k, tuple(id(v) for v in val) if isinstance(val, (list, tuple)) else id(val))
                    for k, val in sorted(aux.items())
                )
            return (args[0], _freeze(args[1]), aux_key)
        except TypeError:
            return ("__instance__", id(req))

    def _semuq_groups(self, requests: list[Instance]) -> list[_Group]:
        groups: dict[Any, _Group] = {}
        for pos, req in enumerate(requests):
            key = self._semuq_group_key(req)
            group = groups.get(key)
            if group is None:
                args = req.args
                if not isinstance(args[1], dict):
                    raise ValueError(f"Expected `kwargs` to be of type `dict` but got {type(args[1])}")
                group = _Group(args[0], args[1], args[2] if len(args) > 2 else None)
                groups[key] = group
            group.positions.append(pos)
        for group in groups.values():
            kwargs = normalize_gen_kwargs(group.gen_kwargs, self.max_gen_toks)
            group.greedy = not kwargs.get("do_sample", False)
            group.n_gen = 1 if group.greedy else len(group.positions)
            group.length = len(self.tok_encode(group.context))
        return list(groups.values())

    def _semuq_rows_per_call(self, max_n: int) -> int:
        """Most sequences in one `generate` call: `batch_size` prompts of the largest group (or HFLM's
        detected number of sequences for batch_size="auto")."""
        if self.batch_size == "auto":
            if getattr(self, "_semuq_auto_rows", None) is None:
                print("Passed argument batch_size = auto. Detecting largest batch size")
                self._semuq_auto_rows = self._detect_batch_size()
                print(f"Determined largest batch size (sequences): {self._semuq_auto_rows}")
            return max(1, int(self._semuq_auto_rows))
        return max(1, int(self.batch_size)) * max(1, max_n)

    def _semuq_batches(self, groups: list[_Group]) -> list[list[_Group]]:
        """Batches of groups sharing gen_kwargs and k; a call holds at most `_semuq_rows_per_call` rows, so
        with batch_size=b and N samples, sampled calls take b prompts and greedy calls b * N prompts."""
        buckets: dict[Any, list[_Group]] = {}
        for g in groups:
            buckets.setdefault((_freeze(g.gen_kwargs), g.n_gen), []).append(g)
        rows = self._semuq_rows_per_call(max(g.n_gen for g in groups))
        batches = []
        for (_, n_gen), members in buckets.items():
            members.sort(key=lambda g: (-g.length, g.context))
            size = max(1, rows // n_gen)
            batches.extend(members[i : i + size] for i in range(0, len(members), size))
        return batches

    # -- lm-eval entry point ----------------------------------------------------------------------------------
    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[Generation]:
        if not requests:
            return []
        if getattr(self, "backend", "causal") != "causal":
            eval_logger.warning("semuq-hf: seq2seq models are served by HFLM's generate_until (text only)")
            return [as_generation(s) for s in super().generate_until(requests, disable_tqdm=disable_tqdm)]
        groups = self._semuq_groups(requests)
        results: list[Generation | None] = [None] * len(requests)
        pbar = tqdm(
            total=len(requests),
            disable=(disable_tqdm or (self.rank != 0)),
            desc="semuq-hf: generate_until (N samples per generate call)",
        )

        def deliver(group: _Group, outs: list[Generation]) -> None:
            for j, pos in enumerate(group.positions):
                gen = outs[j] if len(outs) > 1 else outs[0]
                results[pos] = gen
                self.cache_hook.add_partial("generate_until", (group.context, group.gen_kwargs), gen)
                pbar.update(1)

        journal = self._semuq_journal()
        keys = {}
        if journal is not None:
            identity, seed = self._semuq_model_identity(), torch.initial_seed()
            keys = {
                id(g): journal_key(identity, g.context, g.gen_kwargs, g.aux, g.n_gen, seed) for g in groups
            }
        todo = []
        for group in groups:
            stored = journal.get(keys[id(group)], group.n_gen) if journal is not None else None
            if stored is None:
                todo.append(group)
            else:
                deliver(group, stored)
        if journal is not None and len(todo) < len(groups):
            eval_logger.info(
                "semuq-hf: %d of %d prompts restored from the journal %s",
                len(groups) - len(todo),
                len(groups),
                journal.directory,
            )
        eos = self.tok_decode(self.eot_token_id, skip_special_tokens=False)
        for batch in self._semuq_batches(todo) if todo else []:
            outputs = self._semuq_generate_batch(batch, eos)
            for group, outs in zip(batch, outputs, strict=True):
                deliver(group, outs)
            if journal is not None:
                journal.add((keys[id(g)], outs) for g, outs in zip(batch, outputs, strict=True))
        pbar.close()
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    # -- resume ------------------------------------------------------------------------------------------------
    def _semuq_journal(self) -> GenerationJournal | None:
        """This rank's generation journal (model argument `journal`: a folder, "off", or None for
        `<output_dir>/semuq/_journal/<model>/`), or None when off or no output directory is known."""
        if self._semuq_journal_obj is None:
            setting = self.journal
            if isinstance(setting, str) and setting.strip().lower() in ("off", "none", "false", "no", "0"):
                return None
            if setting:
                directory = Path(setting)
            else:
                out = default_output_dir()
                if not out:
                    return None
                directory = Path(out) / "semuq" / "_journal" / safe_name(self._semuq_model_identity()["name"])
            # the process's rank: two processes that lm-eval both calls rank 0 (a model that is not
            # data-parallel) must not append to one file
            self._semuq_journal_obj = GenerationJournal(
                directory, rank=(process_group() or (self.rank, 1))[0]
            )
            if len(self._semuq_journal_obj):
                eval_logger.info(
                    "semuq-hf: journal %s holds %d prompts", directory, len(self._semuq_journal_obj)
                )
        return self._semuq_journal_obj

    def _semuq_model_identity(self) -> dict[str, Any]:
        model = self.model
        name = getattr(model, "name_or_path", None) or getattr(
            getattr(model, "config", None), "_name_or_path", None
        )
        return {
            "name": str(name or self.pretrained),
            "revision": getattr(self, "revision", None),
            "dtype": str(getattr(model, "dtype", "")),
            "max_length": int(self.max_length),
            "hidden": bool(self.return_hidden),
        }

    # -- one generate call ---------------------------------------------------------------------------------
    def _semuq_encode(self, batch: list[_Group], left_truncate_len: int, repeat: int = 1) -> dict[str, Any]:
        """Tokenize the batch's prompts into `generate` inputs, each prompt's row repeated `repeat` times."""
        raise NotImplementedError

    def _semuq_can_share_prefill(self) -> bool:
        if not self.share_prefill or getattr(self, "_semuq_share_failed", False):
            return False
        model = self.model
        gen_cfg = getattr(model, "generation_config", None)
        if getattr(gen_cfg, "cache_implementation", None) not in (None, "dynamic"):
            return False
        supports = getattr(model, "_supports_default_dynamic_cache", None)
        return not (callable(supports) and not supports())

    def _semuq_eos_ids(self) -> set[int]:
        """Token ids on which `generate` itself ends a row (then pads it): the generation config's EOS."""
        eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        if eos is None:
            return set()
        return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}

    def _semuq_share_ok(self, inputs: dict[str, Any]) -> bool:
        """Whether this batch's encoded prompts can be split for a shared prefill."""
        return True

    def _semuq_shared_prefill(self, inputs: dict[str, Any], n: int) -> dict[str, Any]:
        """Run each prompt (all but its last token) once, then expand the KV cache to n rows per prompt.

        `generate` then starts from that cache and only computes the last prompt token of each row, so the
        n samples of a prompt share one prefill. Positions follow `generate`'s rule for left padding
        (`cumsum(attention_mask) - 1`). Returns the expanded `generate` inputs (ids, mask, cache); other inputs
        (image tensors) are consumed here.
        """
        import inspect

        from transformers import DynamicCache

        model = self.model
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        extra = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
        cache = DynamicCache(config=model.config.get_text_config(decoder=True))
        call = {
            "input_ids": ids[:, :-1],
            "attention_mask": mask[:, :-1],
            "past_key_values": cache,
            "use_cache": True,
        }
        params = inspect.signature(model.forward).parameters
        if "position_ids" in params:
            pos = mask.long().cumsum(-1) - 1
            call["position_ids"] = pos.masked_fill(mask == 0, 0)[:, :-1]
        if "logits_to_keep" in params:
            call["logits_to_keep"] = 1
        model(**call, **extra)
        cache.batch_repeat_interleave(n)
        return {
            "input_ids": ids.repeat_interleave(n, dim=0),
            "attention_mask": mask.repeat_interleave(n, dim=0),
            "past_key_values": cache,
        }

    def _semuq_run_generate(
        self,
        batch: list[_Group],
        n_gen: int,
        left_truncate_len: int,
        shared: bool,
        until: list[str],
        max_gen_toks: int,
        max_length: int | None,
        gen: dict[str, Any],
    ) -> tuple[torch.Tensor, _StepRecorder, int, int]:
        """One `generate` call for the batch; returns (sequences (rows, P + G), recorder, P, budget)."""
        autocast = torch.autocast(
            device_type=self.device.type,
            dtype=self.mixed_precision_dtype,
            enabled=self.mixed_precision_dtype is not None,
        )
        inputs = self._semuq_encode(batch, left_truncate_len)
        prompt_len = inputs["input_ids"].shape[1]
        expand = n_gen
        if shared and prompt_len >= 2 and self._semuq_share_ok(inputs):
            with torch.no_grad(), autocast:
                inputs = self._semuq_shared_prefill(inputs, n_gen)
            expand = 1
        elif n_gen > 1 and not self._semuq_expand_with_generate:
            # expand the raw inputs (multimodal: one processor call covering every row)
            inputs = self._semuq_encode(batch, left_truncate_len, repeat=n_gen)
            expand = 1
        # HFLM: `max_length` counts the (padded) prompt too
        budget = max_gen_toks if max_length is None else max(0, int(max_length) - prompt_len)
        rows = len(batch) * n_gen
        recorder = _StepRecorder(
            self.model,
            want_hidden=self.return_hidden,
            rows=rows,
            prompt_len=prompt_len,
            compact=self.compact_rows,
            eos_ids=self._semuq_eos_ids(),
        )
        stopping = transformers.StoppingCriteriaList(
            [_OneStepLater(stop_sequences_criteria(self.tokenizer, list(until), prompt_len, rows), recorder)]
        )
        with recorder:
            extra: dict[str, Any] = {}
            if recorder.use_output_hidden_states:
                extra = {"output_hidden_states": True, "return_dict_in_generate": True}
            with torch.no_grad(), autocast:
                out = self.model.generate(
                    **inputs,
                    max_length=prompt_len + budget + 1,
                    stopping_criteria=stopping,
                    pad_token_id=self.tokenizer.pad_token_id,
                    use_cache=True,
                    num_return_sequences=expand,
                    **extra,
                    **gen,
                )
        sequences = out.sequences if extra else out
        recorder.finish(sequences, prompt_len)
        self._semuq_last_stats = {
            "rows": rows,
            "prompt_len": prompt_len,
            "forward_calls": recorder.calls,
            "shared_prefill": "past_key_values" in inputs,
            "compacted_row_steps": recorder.compacted_row_steps,
            "hidden_source": recorder.hidden_source,
        }
        if extra:
            # hidden_states[i][-1]: last layer at forward call i
            recorder.hidden = [h[-1][:, -1, :] for h in out.hidden_states]
        return sequences, recorder, prompt_len, budget

    def _semuq_generate_batch(self, batch: list[_Group], eos: str) -> list[list[Generation]]:
        n_gen = batch[0].n_gen
        greedy = batch[0].greedy
        kwargs = dict(normalize_gen_kwargs(batch[0].gen_kwargs, self.max_gen_toks))
        until = handle_stop_sequences(kwargs.pop("until", None), eos=eos)
        max_gen_toks = kwargs.pop("max_gen_toks")
        if kwargs.pop("num_return_sequences", None) is not None:
            eval_logger.warning("semuq-hf: ignoring `num_return_sequences` in gen_kwargs (use repeats)")
        if greedy:
            kwargs.pop("temperature", None)
            kwargs["do_sample"] = False
        max_ctx_len = self.max_length - max_gen_toks - 1  # one position for the look-ahead step
        if max_ctx_len <= 0:
            raise ValueError(
                f"Invalid configuration: requested max tokens to generate ({max_gen_toks}) must be less than "
                f"the model's maximum sequence length ({self.max_length}) minus 1."
            )
        max_length = kwargs.pop("max_length", None)
        if max_length is not None:
            eval_logger.warning("`max_length` in generation kwargs. Please use `max_gen_toks` instead.")
        args = (batch, n_gen, max_ctx_len)
        rest = (until, max_gen_toks, max_length, kwargs)
        result = None
        if n_gen > 1 and self._semuq_can_share_prefill():
            try:
                result = self._semuq_run_generate(*args, True, *rest)
            except torch.OutOfMemoryError:
                raise
            except Exception as err:  # a cache or architecture that cannot be shared: plain generate
                eval_logger.warning(
                    "semuq-hf: shared prefill failed (%s: %s); falling back to num_return_sequences",
                    type(err).__name__,
                    err,
                )
                self._semuq_share_failed = True
        if result is None:
            result = self._semuq_run_generate(*args, False, *rest)
        sequences, recorder, prompt_len, budget = result
        return self._semuq_rows_to_generations(batch, sequences, prompt_len, budget, until, recorder)

    def _semuq_postprocess(self, full: str, until: list[str]) -> tuple[str, int]:
        """HFLM's text post-processing of `full` (decode of the generated tokens); returns (text, start).

        `text` is exactly HFLM's result and equals `full[start:start + len(text)]`.
        """
        s, start = full, 0
        if isinstance(self.think_end_token, int):
            s = full.lstrip()
            start = len(full) - len(s)
        think = self.think_end_token if isinstance(self.think_end_token, str) else None
        if think:
            after = s.split(think)[-1].lstrip()
            start += len(s) - len(after)
        text = postprocess_generated_text(generation=s, stop=until, think_end_token=think)
        return text, start

    def _semuq_rows_to_generations(
        self,
        batch: list[_Group],
        sequences: torch.Tensor,
        prompt_len: int,
        budget: int,
        until: list[str],
        rec: _StepRecorder,
    ) -> list[list[Generation]]:
        n_gen = batch[0].n_gen
        greedy = batch[0].greedy
        gen_tokens = sequences[:, prompt_len:].tolist()
        n_tok = len(gen_tokens[0]) if gen_tokens else 0
        logprobs = torch.stack(rec.logprobs, 1)[:, :n_tok].cpu().numpy() if rec.logprobs else None
        entropies = torch.stack(rec.entropies, 1)[:, :n_tok].cpu().numpy() if rec.entropies else None
        special = set(self.tokenizer.all_special_ids)
        think_int = self.think_end_token if isinstance(self.think_end_token, int) else None

        def batch_decode(seqs: list[list[int]]) -> list[str]:
            return self.tokenizer.batch_decode(seqs, skip_special_tokens=True)

        rows: list[dict[str, Any]] = []
        for r, toks in enumerate(gen_tokens):
            toks = toks[:budget]
            start_tok = 0
            if think_int is not None and think_int in toks:
                start_tok = len(toks) - toks[::-1].index(think_int)
            body = toks[start_tok:]
            full = self.tok_decode(body)
            text, a = self._semuq_postprocess(full, until)
            if full[a : a + len(text)] != text:  # defensive: locate the text if a rule above missed it
                a = max(0, full.find(text))
            b = a + len(text)
            ends = token_char_ends(self.tok_decode, batch_decode, body, full, stop_at=b) if b > a else []
            lo, hi = kept_token_range(ends, a, b, special, body)
            begins = [0, *ends[:-1]]
            offsets = np.asarray(
                [[min(max(begins[t], a), b) - a, min(max(ends[t], a), b) - a] for t in range(lo, hi)],
                dtype=np.int64,
            ).reshape(-1, 2)
            idx = np.arange(start_tok + lo, start_tok + hi)
            # hidden state at the last kept token: read by forward call (position + 1); empty answer: the
            # state at the last token before the generated body (end of prompt / thinking token)
            hidden_call = int(idx[-1]) + 1 if len(idx) else start_tok
            rows.append(
                {
                    "text": text,
                    "token_ids": np.asarray(body[lo:hi], dtype=np.int64),
                    "token_logprobs": None if logprobs is None else logprobs[r, idx],
                    "token_entropies": None if entropies is None else entropies[r, idx],
                    "token_offsets": offsets,
                    "hidden_call": hidden_call,
                }
            )

        hidden: list[np.ndarray | None] = [None] * len(rows)
        if self.return_hidden and rec.hidden:
            n_calls = len(rec.hidden)
            for r, row in enumerate(rows):
                c = row["hidden_call"]
                h = rec.hidden[c][r].float().cpu().numpy() if c < n_calls else None
                if h is None or np.isnan(h).any():  # not expected; report unavailable, never zeros
                    eval_logger.warning("semuq-hf: hidden state of row %d not computed (step %d)", r, c)
                    h = None
                hidden[r] = h
        for row in rows:  # not expected either: a kept token computed for a removed row
            for name in ("token_logprobs", "token_entropies"):
                if row[name] is not None and np.isnan(row[name]).any():
                    eval_logger.warning("semuq-hf: %s missing for some tokens; reported unavailable", name)
                    row[name] = None

        out: list[list[Generation]] = []
        for g in range(len(batch)):
            gens = []
            for r in range(g * n_gen, (g + 1) * n_gen):
                row = rows[r]
                gens.append(
                    Generation(
                        row["text"],
                        token_ids=row["token_ids"],
                        token_logprobs=row["token_logprobs"],
                        token_entropies=row["token_entropies"],
                        token_offsets=row["token_offsets"],
                        hidden=hidden[r],
                        greedy=greedy,
                    )
                )
            out.append(gens)
        return out


class SemuqHFLM(SemuqGenerateMixin, HFLM):
    """lm-eval `hf` model whose `generate_until` returns `Generation`s (registered as `semuq-hf`).

    Accepts every HFLM argument, plus
    - `return_hidden` (default True): keep the last hidden state of every answer;
    - `share_prefill` (default True): compute the prompt of a sampled group once and expand its KV cache to
      the k rows (falls back to plain `num_return_sequences` when the model's cache does not allow it);
    - `compact_rows` (default True): stop computing the rows of a `generate` call that have finished;
    - `journal` (default: `<output_dir>/semuq/_journal/<model>/`): where answers are journaled as they are
      generated so that a killed run, restarted, skips them (`off` disables; see `semuq_eval.models.journal`).
    `loglikelihood*` are HFLM's, unchanged.
    """

    def __init__(
        self,
        pretrained: Any,
        return_hidden: bool = True,
        share_prefill: bool = True,
        compact_rows: bool = True,
        journal: str | None = None,
        **kwargs: Any,
    ) -> None:
        self._semuq_setup(
            pretrained,
            kwargs,
            return_hidden=return_hidden,
            share_prefill=share_prefill,
            compact_rows=compact_rows,
            journal=journal,
        )

    def _semuq_encode(self, batch: list[_Group], left_truncate_len: int, repeat: int = 1) -> dict[str, Any]:
        context_enc, attn_masks = self.tok_batch_encode(
            [g.context for g in batch],
            left_truncate_len=left_truncate_len,
            truncation=self.truncation,
        )
        if repeat > 1:
            context_enc = context_enc.repeat_interleave(repeat, dim=0)
            attn_masks = attn_masks.repeat_interleave(repeat, dim=0)
        return {"input_ids": context_enc.to(self.device), "attention_mask": attn_masks.to(self.device)}


def _as_bool(x: Any) -> bool:
    if isinstance(x, str):
        return x.strip().lower() in ("1", "true", "yes", "y", "on")
    return bool(x)
