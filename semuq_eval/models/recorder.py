"""The step recorder: per-step signals streamed out of `generate` by hooks, and finished rows dropped.

What is recorded, per decoding step and row (O(rows) per step instead of `output_logits=True`'s
O(rows x vocab), or `output_hidden_states=True`'s O(rows x layers x d)):

- a forward hook on the causal LM reads the logits of the last position (the logits the model returns, i.e.
  after any final soft-capping), takes `log_softmax` in float32, stores the Shannon entropy of that full
  distribution and, at the next step (whose input is the token just chosen), the log-prob of the chosen
  token. These are the raw distribution's values (temperature 1, no top-k/top-p/penalties), not the
  distribution the token was sampled from;
- a forward pre-hook on the LM head (`get_output_embeddings()`) keeps the last position of its input: the
  last-layer hidden state after the final norm. If a model has no LM head module, a hook on the final norm
  (`model.norm`, `transformer.ln_f`, ...) is used instead, and only if neither exists does `generate` run
  with `output_hidden_states=True`.

The state at the last answer token is computed by the step that *reads* that token. To have that step for
every kept token, generation runs one step past the budget (`max_gen_toks + 1`, the extra token is never
returned) and one step past the point where the stop-sequence criterion stops the batch (`OneStepLater`).

Row compaction: `generate` keeps computing every row until the slowest one ends. Rows that have finished
(EOS, or a stop sequence seen by HFLM's criteria) are removed from the KV cache and the step inputs by the
forward pre-hook, one step after they end; the forward hook gives `generate` full-size logits back.

Memory: per step and row one float (entropy), one float (log-prob) and one hidden vector (model dtype) are
kept until the batch ends; the full-vocabulary log-softmax exists for one step only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import transformers

from semuq_eval.models.kv_cache import passed_cache

__all__ = ["OneStepLater", "StepRecorder", "find_final_hidden_module", "generation_eos_ids"]

log = logging.getLogger(__name__)

_FINAL_NORM_NAMES = ("norm", "ln_f", "final_layer_norm", "final_layernorm", "norm_f", "final_norm")


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


def generation_eos_ids(model: torch.nn.Module) -> set[int]:
    """Token ids on which `generate` itself ends a row (then pads it): the generation config's EOS."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        return set()
    return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}


def _causal_lm(model: torch.nn.Module) -> torch.nn.Module:
    """The module whose forward returns `.logits` (unwraps PEFT)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


_COMPACTABLE_KWARGS = frozenset({"input_ids", "attention_mask", "position_ids", "cache_position"})


class StepRecorder:
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

    Parameters
    ----------
    model : the model `generate` runs (PEFT-wrapped or not); hooks go on its causal LM.
    want_hidden : record the last hidden state (hook on the LM head or the final norm).
    rows, prompt_len : rows of the `generate` call and its (padded) prompt length.
    compact : drop finished rows from the computation (see above).
    eos_ids : token ids on which `generate` ends a row.

    Use as a context manager around `generate` (hooks are installed on entry, removed on exit), with
    `OneStepLater` as the stopping criterion, then call `finish`.
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

    def generate_kwargs(self) -> dict[str, Any]:
        """Extra `generate` arguments: hidden states from `generate`'s output when no module was hooked."""
        if self.use_output_hidden_states:
            return {"output_hidden_states": True, "return_dict_in_generate": True}
        return {}

    def finish(self, output: Any, prompt_len: int) -> torch.Tensor:
        """Complete the record from `generate`'s output; returns its sequences (rows, P + G).

        Gathers the log-prob of the token chosen by the last forward call, and takes the hidden states from
        `output` when `generate_kwargs` asked for them.
        """
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

        Parameters
        ----------
        n_tok : generated tokens per row (columns of the sequences after the prompt).
        token_idx : per row, the indices of the answer's tokens among the generated ones.
        last_read : per row, the generated token after which the hidden state is taken (the last answer
            token; -1 for the last prompt token).

        Returns
        -------
        list
            Per row (token log-probs, token entropies, hidden state); an entry is None when it was not
            recorded (hidden states off) or, unexpectedly, not computed for that row: reported unavailable,
            never as zeros.
        """
        logprobs = torch.stack(self.logprobs, 1)[:, :n_tok].cpu().numpy() if self.logprobs else None
        entropies = torch.stack(self.entropies, 1)[:, :n_tok].cpu().numpy() if self.entropies else None
        out = []
        for r, (idx, t) in enumerate(zip(token_idx, last_read, strict=True)):
            signals = {
                "token_logprobs": None if logprobs is None else logprobs[r, idx],
                "token_entropies": None if entropies is None else entropies[r, idx],
            }
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

    Also reports which rows are done (per-row trackers of HFLM's stop-sequence criteria) to `recorder`.
    """

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
