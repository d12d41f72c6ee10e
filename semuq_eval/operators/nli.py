"""NLI cross-encoder operators (paper Eq. S_nli): ``nli`` (hard) and ``nli_soft`` (graded).

Question-conditioned as in Eq. S_nli (premise = question + answer i, hypothesis = question + answer j, both
directions). A call's ordered pairs go through the model together, sorted by length, in batches; labels are
read from ``config.id2label``. N(N-1) forward passes per question (O(N^2), desideratum D3)."""

from __future__ import annotations

import itertools
import os
import warnings
from typing import Any

import numpy as np
import torch

from semuq_eval.operators.base import Cost
from semuq_eval.operators.loading import (
    ModelTextOperator,
    batches,
    load_sequence_classifier,
    loaded_dtype,
    model_id,
)

DEFAULT_NLI_MODEL = "microsoft/deberta-v2-xlarge-mnli"

RULES = {
    "bidirectional_entailment": "entailment predicted in both directions (Eq. S_nli, the paper's rule)",
    "no_contradiction": "contradiction predicted in neither direction",
    "either_entailment": "entailment predicted in at least one direction",
}
"""Equivalence rules of the hard ``nli`` operator; the rule in force is reported in ``info``."""

ENTAILMENT, CONTRADICTION = 0, 1
"""Positions in the last axis of the shared pass's probabilities (the third is every other label)."""


def label_index(id2label: dict[int, str], label: str) -> int:
    """Index of the one label whose name starts with ``label`` (case-insensitive)."""
    found = [int(i) for i, name in id2label.items() if str(name).lower().startswith(label)]
    if len(found) != 1:
        raise ValueError(
            f"cannot find one {label!r} label in the model's config.id2label={dict(id2label)}: the NLI "
            "operators need a classifier with entailment / neutral / contradiction labels"
        )
    return found[0]


class _NLIOperator(ModelTextOperator):
    """Shared machinery: directional entailment / contradiction probabilities for every ordered pair.

    ``nli`` and ``nli_soft`` with the same model options share one cross-encoder pass (:meth:`share_key`)."""

    min_length = 8
    default_batch_size = 64

    def __init__(
        self,
        model: str | os.PathLike | Any = DEFAULT_NLI_MODEL,
        *,
        tokenizer: str | os.PathLike | Any | None = None,
        condition_on_question: bool = True,
        **options: Any,
    ) -> None:
        """``model``: hub id, local path, or an already loaded ``PreTrainedModel`` (then
        ``tokenizer`` must be given too). ``options``: the model options of
        :class:`~semuq_eval.operators.loading.ModelTextOperator` (longer pairs than ``max_length`` are
        truncated with a warning)."""
        if not isinstance(model, (str, os.PathLike)) and tokenizer is None:
            raise ValueError("pass tokenizer= along with an in-memory model")
        super().__init__(model, **options)
        self.tokenizer = tokenizer
        self.condition_on_question = condition_on_question

    def _load(self) -> tuple[Any, Any, int]:
        """(tokenizer, model, max_length), loaded on first use."""
        if self._loaded is None:
            if isinstance(self.model, str):
                tokenizer, model = load_sequence_classifier(
                    self.model, self.revision, self.device, self.dtype, self.trust_remote_code
                )
            else:
                model = self.model.eval()
                tokenizer = None
            if self.tokenizer is not None:
                tokenizer = self.tokenizer
                if isinstance(tokenizer, (str, os.PathLike)):
                    from transformers import AutoTokenizer

                    tokenizer = AutoTokenizer.from_pretrained(
                        model_id(tokenizer), trust_remote_code=self.trust_remote_code
                    )
            label_index(model.config.id2label, "entailment")
            label_index(model.config.id2label, "contradiction")
            limits = [tokenizer.model_max_length, getattr(model.config, "max_position_embeddings", None)]
            limits = [n for n in limits if isinstance(n, int) and 0 < n < 1_000_000]
            max_length = self.max_length or (min(limits) if limits else 512)
            self._loaded = (tokenizer, model, max_length)
        return self._loaded

    def _segment(self, question: str, answer: str) -> str:
        """One side of an NLI pair: question + answer (Eq. S_nli), or the answer alone."""
        if self.condition_on_question and question.strip():
            return f"{question} {answer}"
        return answer

    def share_key(self) -> tuple:
        """Equal for NLI operators that would run the same cross-encoder on the same pairs."""
        model = self.model if isinstance(self.model, str) else id(self.model)
        tokenizer = (
            self.tokenizer
            if self.tokenizer is None or isinstance(self.tokenizer, str)
            else id(self.tokenizer)
        )
        return (
            "nli-pairs", model, tokenizer, self.revision, self.device, self.dtype, self.max_length,
            self.condition_on_question, self.dedup, self.trust_remote_code,
        )  # fmt: skip

    def _score(self, questions: list[str], answers: list[list[str]], cost: Cost) -> list[np.ndarray]:
        """Per question, a (U, U, 3) array: P[i, j] = p(entailment, contradiction, any other label | premise
        i, hypothesis j); the diagonal is unused. The model's own label order is read from ``id2label``."""
        tokenizer, model, max_length = self._load()
        segments: dict[str, int] = {}
        pairs: dict[tuple[int, int], int] = {}
        ids_per_question = []
        for question, group in zip(questions, answers, strict=True):
            ids = [segments.setdefault(self._segment(question, a), len(segments)) for a in group]
            for i, j in itertools.permutations(ids, 2):
                pairs.setdefault((i, j), len(pairs))
            ids_per_question.append(ids)
        n_labels = model.config.num_labels
        probs = np.zeros((len(pairs), n_labels))
        if pairs:
            texts = list(segments)
            lengths = [len(x) for x in tokenizer(texts, add_special_tokens=False)["input_ids"]]
            pair_list = list(pairs)
            n_special = tokenizer.num_special_tokens_to_add(pair=True)
            est = np.array([lengths[p] + lengths[h] + n_special for p, h in pair_list])
            n_long = int(np.count_nonzero(est > max_length))
            if n_long:
                warnings.warn(
                    f"{self.name}: {n_long} of {len(pair_list)} premise-hypothesis pairs are longer than "
                    f"max_length={max_length} tokens and were truncated",
                    stacklevel=5,
                )
            device = next(model.parameters()).device
            order = np.argsort(-est, kind="stable").tolist()
            with torch.inference_mode():
                for idx in batches(order, self.batch_size, progress=self.progress, desc=f"{self.name} pairs"):
                    encoded = tokenizer(
                        [texts[pair_list[k][0]] for k in idx],
                        [texts[pair_list[k][1]] for k in idx],
                        padding=True,
                        truncation=True,
                        max_length=max_length,
                        return_tensors="pt",
                    ).to(device)
                    probs[idx] = model(**encoded).logits.float().softmax(-1).cpu().numpy()
            cost.forward_passes += len(pair_list)
        entail = label_index(model.config.id2label, "entailment")
        contra = label_index(model.config.id2label, "contradiction")
        canonical = np.stack(
            [probs[:, entail], probs[:, contra], 1.0 - probs[:, entail] - probs[:, contra]], -1
        )
        out = []
        for ids in ids_per_question:
            p = np.zeros((len(ids), len(ids), 3))
            for (i, a), (j, b) in itertools.permutations(enumerate(ids), 2):
                p[i, j] = canonical[pairs[(a, b)]]
            out.append(p)
        return out

    def _identity(self) -> dict[str, Any]:
        loaded = self._loaded
        config = loaded[1].config if loaded else None
        name = self.model if isinstance(self.model, str) else getattr(self.model.config, "_name_or_path", "")
        return {
            "model": name or type(self.model).__name__,
            "revision": self.weights_revision(config),
            "id2label": dict(config.id2label) if config is not None else None,
            "question_conditioned": self.condition_on_question,
            "max_length": loaded[2] if loaded else self.max_length,
            "dtype": loaded_dtype(loaded[1]) if loaded else self.dtype,
            **super()._identity(),
        }


class NLIOperator(_NLIOperator):
    """Hard NLI equivalence (Eq. S_nli): a boolean matrix under a named ``rule`` (see :data:`RULES`).

    The default ``"bidirectional_entailment"`` is the paper's rule (predicted label entailment in both
    directions); ``"no_contradiction"`` and ``"either_entailment"`` are other implementations' rules."""

    kind = "equivalence"

    def __init__(
        self,
        model: str | os.PathLike | Any = DEFAULT_NLI_MODEL,
        *,
        rule: str = "bidirectional_entailment",
        **options,
    ) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown NLI rule {rule!r}; choose one of {sorted(RULES)}")
        super().__init__(model, **options)
        self.rule = rule

    def _derive(self, probs: np.ndarray) -> np.ndarray:
        # the predicted label: entailment, contradiction, or another one (neutral)
        pred = probs.argmax(-1)
        entails, contradicts = pred == ENTAILMENT, pred == CONTRADICTION
        if self.rule == "bidirectional_entailment":
            return entails & entails.T
        if self.rule == "either_entailment":
            return entails | entails.T
        return ~contradicts & ~contradicts.T

    def _identity(self) -> dict[str, Any]:
        return {"rule": self.rule, **super()._identity()}


class NLISoftOperator(_NLIOperator):
    """Graded NLI similarity: the entailment probability averaged over both directions,
    S_ij = (p_ent(i -> j) + p_ent(j -> i)) / 2, in [0, 1] (the soft S_nli of App. A.2)."""

    kind = "graded"

    def _derive(self, probs: np.ndarray) -> np.ndarray:
        e = probs[..., ENTAILMENT]
        return (e + e.T) / 2
