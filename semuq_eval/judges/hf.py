"""The ``hf`` judge: a local transformers causal LM reads each prompt and we read its NEXT-TOKEN logits.

Nothing is generated or parsed: ``p_correct`` is the "yes" tokens' probability mass over that of the "yes" and "no"
tokens at the reply's first position, and the label is ``p_correct > 0.5``. The prompt goes through the model's chat
template when it has one (``chat_template="auto"``). A question's prompts share a prefix (instructions, question,
references) that runs once, its KV cache serving every answer (:func:`common_prefix_length`); the rest runs in
batches of ``batch_size``. Greedy by construction; verdicts are cached (:class:`PromptedJudge`).

Example
-------
::

    semuq-eval judge out/semuq/semuq_webquestions/my-llm --judge hf \\
        --judge_args model=Qwen/Qwen2.5-7B-Instruct,batch_size=8 --name qwen7b
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from semuq_eval.judges.base import Verdict
from semuq_eval.judges.prompted import PromptedJudge
from semuq_eval.local_models import local_revision
from semuq_eval.models.kv_cache import cache_keyword

__all__ = ["HFJudge", "common_prefix_length", "yes_no_token_ids"]

YES = ("yes", "Yes", "YES", " yes", " Yes", " YES")
NO = ("no", "No", "NO", " no", " No", " NO")


def yes_no_token_ids(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The single-token spellings of "yes" and "no" in a tokenizer (ValueError when one has none)."""

    def ids(words: Sequence[str]) -> list[int]:
        encoded = (tokenizer.encode(word, add_special_tokens=False) for word in words)
        return list(dict.fromkeys(toks[0] for toks in encoded if len(toks) == 1))

    yes, no = ids(YES), ids(NO)
    if not yes or not no:
        raise ValueError(
            "the judge's tokenizer has no single-token 'yes' or 'no'; use the openai judge instead"
        )
    if set(yes) & set(no):
        raise ValueError("the judge's tokenizer maps 'yes' and 'no' to a shared token")
    return yes, no


class HFJudge(PromptedJudge):
    """A local transformers causal LM as judge (module docstring).

    ``model``: a hub id (at ``revision``) or a local folder (``semuq_eval.assets.locate("smollm2-135m-instruct")``);
    ``batch_size``: prompts per forward pass; ``device``: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda:0"``,
    ...; ``dtype``: ``"auto"`` (float32 on CPU, float16 on CUDA), ``"float32"``, ``"float16"`` or ``"bfloat16"``;
    ``chat_template``: ``"auto"`` (when the tokenizer has one), True or False; ``max_length``: prompts are cut from
    the left to this many tokens or the model's context (question, answer and request come last); ``**options``:
    the prompt and cache options of :class:`~semuq_eval.judges.prompted.PromptedJudge`.

    Examples
    --------
    >>> judge = HFJudge(model="path/to/model", cache="none")  # doctest: +SKIP
    >>> judge.batch(["Capital of France?"], ["Paris"], [["Paris"]])  # doctest: +SKIP
    [Verdict(label=True, p_correct=0.93, reply='yes', error=None)]
    """

    share_instructions = True
    """Run the prompts' common prefix (the chat template's start and the instructions, the same for every question)
    once per block of questions, and each question's own prefix on top of it; False runs each question's whole
    prefix on its own: the same verdicts, more computation (``bench/judge_prefix.py`` compares them)."""

    def __init__(
        self,
        model: str | os.PathLike,
        *,
        revision: str | None = None,
        batch_size: int = 16,
        device: str = "auto",
        dtype: str = "auto",
        chat_template: str | bool = "auto",
        max_length: int = 1024,
        trust_remote_code: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        from semuq_eval.operators.loading import resolve_device, resolve_dtype

        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if chat_template not in ("auto", True, False, "true", "false"):
            raise ValueError(f"chat_template must be 'auto', true or false, got {chat_template!r}")
        self.model_name = os.fspath(model)
        self.revision = revision
        self.batch_size = int(batch_size)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.chat_template = {"true": True, "false": False}.get(chat_template, chat_template)
        self.max_length = int(max_length)
        self.trust_remote_code = bool(trust_remote_code)
        self._loaded: tuple[Any, Any, list[int], list[int]] | None = None
        self._local_revision: str | None = None

    def _load(self) -> tuple[Any, Any, list[int], list[int]]:
        if self._loaded is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            from semuq_eval.operators.loading import DTYPES, auto_dtype

            kw = {"revision": self.revision, "trust_remote_code": self.trust_remote_code}
            tok = AutoTokenizer.from_pretrained(self.model_name, **kw)
            tok.padding_side = "left"
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token
            lm = AutoModelForCausalLM.from_pretrained(self.model_name, **kw)
            dtype = self.dtype
            if dtype == "auto":
                dtype = auto_dtype(getattr(lm.config, "model_type", None), self.device)
            lm = lm.to(device=self.device, dtype=DTYPES[dtype]).eval()
            yes, no = yes_no_token_ids(tok)
            limit = getattr(lm.config, "max_position_embeddings", None) or getattr(
                lm.config, "n_positions", None
            )
            self._max_tokens = min(self.max_length, int(limit)) if limit else self.max_length
            self._loaded = (tok, lm, yes, no)
            self._torch = torch
        return self._loaded

    @property
    def identity(self) -> dict[str, Any]:
        # hashed once: the verdict cache reads it often
        if self.revision is None and self._local_revision is None and Path(self.model_name).is_dir():
            self._local_revision = local_revision(self.model_name)
        return {
            "judge": self.name,
            "model": self.model_name,
            "revision": self.revision or self._local_revision,
            "decoding": "next-token p(yes) / (p(yes) + p(no)), label p > 0.5",
            "chat_template": self.chat_template,
            "dtype": self.dtype,
        }

    def _text(self, tok: Any, prompt: str) -> str:
        if self.chat_template is True or (self.chat_template == "auto" and tok.chat_template):
            return tok.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
        return prompt + ("" if prompt.endswith((" ", "\n")) else " ")

    def judge_prompts(self, prompts: Sequence[str], questions: Sequence[int]) -> list[Verdict]:
        tok, lm, yes, no = self._load()
        ids = [tok(self._text(tok, p), add_special_tokens=False)["input_ids"] for p in prompts]
        ids = [x[-self._max_tokens :] for x in ids]  # cut from the left: the request comes last
        out: list[Verdict] = [Verdict(None, error="not judged")] * len(ids)
        with self._torch.inference_mode():
            # the block's common prefix (the instructions), run once
            base = self._prefix(lm, ids, None) if self.share_instructions else None
            for group in _groups(questions):
                rows = [ids[i] for i in group]
                probs = self._next_token_probs(lm, rows, tok.pad_token_id, base)
                for i, row_probs in zip(group, probs, strict=True):
                    py, pn = float(row_probs[yes].sum()), float(row_probs[no].sum())
                    if not py + pn > 0.0:
                        out[i] = Verdict(None, error="no probability on yes or no")
                    else:
                        p = py / (py + pn)
                        out[i] = Verdict(p > 0.5, p, "yes" if p > 0.5 else "no")
        return out

    def _prefix(self, lm: Any, rows: list[list[int]], base: tuple[Any, int] | None) -> tuple[Any, int] | None:
        """The KV cache of the rows' common prefix (every row keeps at least one token to compute) and its
        length, built on ``base`` (a shorter prefix's cache, copied, not changed); ``base`` itself when the
        prefix is less than :data:`MIN_SHARED_TOKENS` longer, None when there is none worth a pass."""
        import copy

        from transformers import DynamicCache

        shared = min(common_prefix_length(rows), min(len(r) for r in rows) - 1)
        start = base[1] if base else 0
        if shared - start < MIN_SHARED_TOKENS:
            return base
        cache = (
            copy.deepcopy(base[0]) if base else DynamicCache(config=lm.config.get_text_config(decoder=True))
        )
        tokens = self._torch.tensor([rows[0][start:shared]], device=self.device)
        lm(input_ids=tokens, use_cache=True, logits_to_keep=1, **{cache_keyword(lm): cache})
        return cache, shared

    def _next_token_probs(
        self, lm: Any, rows: list[list[int]], pad_id: int, base: tuple[Any, int] | None = None
    ) -> list[Any]:
        """The next-token distribution after each row. The rows' common prefix runs once (on top of ``base``,
        the block's common prefix); its KV cache serves the rows' remaining tokens, ``batch_size`` at a time,
        left-padded between prefix and row (masked, not counted in positions), so every row ends at the last
        position, the only one whose logits are computed (``logits_to_keep=1``)."""
        import copy

        torch = self._torch
        prefix = self._prefix(lm, rows, base)
        cache, shared = prefix if prefix else (None, 0)
        keyword = cache_keyword(lm)
        out = []
        for start in range(0, len(rows), self.batch_size):
            chunk = [r[shared:] for r in rows[start : start + self.batch_size]]
            width = max(len(r) for r in chunk)
            input_ids = torch.tensor([[pad_id] * (width - len(r)) + r for r in chunk], device=self.device)
            suffix_mask = torch.tensor(
                [[0] * (width - len(r)) + [1] * len(r) for r in chunk], device=self.device
            )
            positions = (shared + suffix_mask.cumsum(-1) - 1).clamp(min=shared)
            kwargs: dict[str, Any] = {}
            if cache is not None:
                past = copy.deepcopy(cache)
                past.batch_repeat_interleave(len(chunk))
                kwargs[keyword] = past
            prefix_mask = torch.ones(len(chunk), shared, dtype=suffix_mask.dtype, device=self.device)
            logits = lm(
                input_ids=input_ids,
                attention_mask=torch.cat([prefix_mask, suffix_mask], 1),
                position_ids=positions,
                use_cache=cache is not None,
                logits_to_keep=1,
                **kwargs,
            ).logits
            out.extend(torch.softmax(logits[:, -1].float(), dim=-1))
        return out


MIN_SHARED_TOKENS = 8
"""A common prefix shorter than this is not worth a separate pass."""


def common_prefix_length(rows: Sequence[Sequence[int]]) -> int:
    """The number of leading tokens all rows share.

    Examples
    --------
    >>> common_prefix_length([[1, 2, 3], [1, 2, 4], [1, 2]])
    2
    """
    first, n = rows[0], min(len(r) for r in rows)
    for k in range(n):
        if any(r[k] != first[k] for r in rows):
            return k
    return n


def _groups(questions: Sequence[int]) -> list[list[int]]:
    """Prompt indices grouped by their question number, in first-seen order."""
    groups: dict[int, list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault(q, []).append(i)
    return list(groups.values())
