"""The step recorder: per-step signals streamed out of `generate` by hooks, and finished rows dropped.

Hooks keep O(rows) per step, not `output_logits`' O(rows x vocab): on the causal LM, a float32 log-softmax of the
last position's logits (after any soft-capping) gives that raw distribution's entropy and, one step later, the
chosen token's log-prob (temperature 1, no sampling processing: not the distribution sampled from); on the LM head's
input (else the final norm's output, else `output_hidden_states=True`), the last-layer hidden state. The state at
the last answer token comes from the step that *reads* it, so generation runs one step past the budget and the stop
criterion (`OneStepLater`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import transformers

from semuq_eval.models.kv_cache import base_model, passed_cache

__all__ = ["OneStepLater", "StepRecorder", "find_final_hidden_module", "generation_eos_ids"]

log = logging.getLogger(__name__)

_FINAL_NORM_NAMES = ("norm", "ln_f", "final_layer_norm", "final_layernorm", "norm_f", "final_norm")


def find_final_hidden_module(model: torch.nn.Module) -> tuple[torch.nn.Module | None, str]:
    """Module whose input (`"pre"`) or output (`"post"`) is the last-layer hidden state after the final norm.

    The LM head's input (`get_output_embeddings()`) when there is one, else the decoder's final norm (`model.norm`,
    `transformer.ln_f`, `decoder.final_layer_norm`, `language_model.norm`, ...); (None, "none") when neither exists."""
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


def generation_eos_ids(model: torch.nn.Module) -> set[int]:
    """Token ids on which `generate` itself ends a row (then pads it): the generation config's EOS."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        return set()
    return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}


_COMPACTABLE_KWARGS = frozenset({"input_ids", "attention_mask", "position_ids", "cache_position"})


class StepRecorder:
    """Streams per-step entropies, chosen-token log-probs and last hidden states out of `generate`, and
    drops finished rows from the computation.

    Forward call i of `generate` (0 = prefill) computes token i's distribution and reads token i-1: `entropies[i]`,
    `logprobs[i]` are token i's and `hidden[i]` the final-norm state at token i-1, in the full row space (NaN for rows
    not computed). With `compact=True` (plain decoding inputs, a cache that supports it), once a finished row's last
    token is read (EOS, or a stop sequence reported through `observe`), a pre-hook removes it from the KV cache and the
    step's inputs and the forward hook hands `generate` full-size logits. Use as a context manager around `generate`
    with `OneStepLater`, then call `finish`."""

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
        """Note the rows whose newest token ends them (EOS, or a stop sequence per HFLM's trackers)."""
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

    def _append_chosen(self, toks: torch.Tensor) -> None:
        """Record the log-prob, under the previous step's distribution, of the tokens it chose (`toks`)."""
        toks = toks.to(self._pending.device)
        prev = self._pending_rows
        chosen = toks if prev is None else toks[prev]
        lp = self._pending.gather(1, chosen[:, None]).squeeze(1)
        self.logprobs.append(self._full(lp, prev))

    def _can_compact(self, args, kwargs) -> bool:
        cache = passed_cache(kwargs)
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
            passed_cache(kwargs).batch_select_indices(rel)
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
            self._append_chosen(toks)
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
    def __enter__(self) -> StepRecorder:
        lm = base_model(self.model)  # the module whose forward returns `.logits`
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

    def generate_kwargs(self) -> dict[str, Any]:
        """Extra `generate` arguments: hidden states from `generate`'s output when no module was hooked."""
        if self.use_output_hidden_states:
            return {"output_hidden_states": True, "return_dict_in_generate": True}
        return {}

    def finish(self, output: Any, prompt_len: int) -> torch.Tensor:
        """Complete the record from `generate`'s output; returns its sequences (rows, P + G).

        Gathers the log-prob of the token the last forward call chose, and the hidden states from `output` when
        `generate_kwargs` asked for them."""
        sequences = output.sequences if self.use_output_hidden_states else output
        if self._pending is not None:
            i = prompt_len + len(self.logprobs)
            if i < sequences.shape[1]:
                self._append_chosen(sequences[:, i])
            self._pending = None
        if self.use_output_hidden_states:
            # hidden_states[i][-1]: last layer at forward call i
            self.hidden = [h[-1][:, -1, :] for h in output.hidden_states]
        return sequences

    def answer_signals(
        self, n_tok: int, token_idx: Sequence[np.ndarray], last_read: Sequence[int]
    ) -> list[tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]]:
        """The recorded signals of each row's answer, after `finish`.

        `n_tok`: generated tokens per row; `token_idx`, `last_read`: per row, the answer's token indices and the token
        after which the hidden state is taken (-1: the last prompt token). Returns per row (token log-probs, token
        entropies, hidden state), None where not recorded or not computed: reported unavailable, never as zeros."""
        recorded = {
            name: torch.stack(steps, 1)[:, :n_tok].cpu().numpy() if steps else None
            for name, steps in (("token_logprobs", self.logprobs), ("token_entropies", self.entropies))
        }
        out = []
        for r, (idx, t) in enumerate(zip(token_idx, last_read, strict=True)):
            signals = {name: None if values is None else values[r, idx] for name, values in recorded.items()}
            for name, values in signals.items():  # a kept token computed for a removed row
                if values is not None and np.isnan(values).any():
                    log.warning("semuq-hf: %s missing for some tokens; reported unavailable", name)
                    signals[name] = None
            hidden = None
            if self.want_hidden and self.hidden:
                c = t + 1  # forward call c reads generated token c - 1
                hidden = self.hidden[c][r].float().cpu().numpy() if c < len(self.hidden) else None
                if hidden is None or np.isnan(hidden).any():
                    log.warning("semuq-hf: hidden state of row %d not computed (step %d)", r, c)
                    hidden = None
            out.append((signals["token_logprobs"], signals["token_entropies"], hidden))
        return out


class OneStepLater(transformers.StoppingCriteria):
    """Stop one decoding step after `inner` asks to, so that the step reading the last kept token runs.

    Also reports the rows that are done (HFLM's per-row stop-sequence trackers) to `recorder`."""

    def __init__(
        self, inner: transformers.StoppingCriteriaList, recorder: StepRecorder | None = None
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
