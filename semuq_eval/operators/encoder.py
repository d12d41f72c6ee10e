"""Sentence-encoder operators: ``cos_ext`` and ``enc`` (paper Eq. encoder, Eq. operator_cosine).

Both embed every distinct answer with one forward pass (O(N) per question, desideratum D3) and return the PSD
Gram matrix S = Phi Phi^T of the L2-normalized embeddings. ``cos_ext`` encodes the answer alone (COS-ext);
``enc`` encodes "question <sep> answer" (Eq. encoder) and exposes the answer's token norms (Eq. te_enc). Any
sentence-transformers folder or hub id works; a call's inputs are encoded together, sorted by length."""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import torch

from semuq_eval.operators.base import Cost, _describe, check_inputs
from semuq_eval.operators.gram import gram_matrix, unit_rows
from semuq_eval.operators.loading import (
    ModelTextOperator,
    batches,
    load_sentence_transformer,
    loaded_dtype,
)
from semuq_eval.operators.token_weights import EMPTY_TOKEN_NORMS, TokenNorms, align_weights, as_spans
from semuq_eval.operators.training_record import operator_defaults

DEFAULT_SENTENCE_ENCODER = "sentence-transformers/sentence-t5-large"
"""COS-ext's encoder in the paper, and the initialization of the trained Enc operator (App. E.3)."""


def format_input(question: str | None, answer: str, separator: str) -> tuple[str, int]:
    """The encoder input of Eq. encoder, "question <sep> answer", or the answer alone when
    ``question`` is None; returns the text and the character offset where the answer starts."""
    if question is None:
        return answer, 0
    prefix = f"{question} {separator} "
    return prefix + answer, len(prefix)


def pooling_mode(model: Any) -> str | None:
    """The pooling of a sentence-transformers model ("mean", "cls", ..., or "answer_mean" for
    :class:`~semuq_eval.operators.pooling.AnswerMeanPooling`), if it has a Pooling module."""
    for module in model:
        if type(module).__name__ == "AnswerMeanPooling":
            return "answer_mean"
        if type(module).__name__ == "Pooling":
            mode = getattr(module, "pooling_mode", None)
            return str(mode if mode is not None else module.get_pooling_mode_str())
    return None


class _SentenceEncoderOperator(ModelTextOperator):
    """Shared machinery: encode distinct inputs once, return Gram matrices of unit embeddings; the answer's
    similarity with itself without each of its tokens (TokenSAR's relevance)."""

    kind = "gram"
    extras = ("greedy_similarities", "token_similarity")
    _keeps_token_norms = False

    def __init__(
        self,
        model: str | os.PathLike | Any = DEFAULT_SENTENCE_ENCODER,
        *,
        condition_on_question: bool,
        separator: str | None = None,
        **options: Any,
    ) -> None:
        """``options``: the model options of :class:`~semuq_eval.operators.loading.ModelTextOperator`."""
        super().__init__(model, **options)
        self.condition_on_question = condition_on_question
        self.separator = separator
        self._token_norms: dict[str, TokenNorms] = {}

    def _load(self) -> tuple[Any, int, str]:
        """(sentence-transformers model, max_length, separator), loaded on first use."""
        if self._loaded is None:
            if isinstance(self.model, str):
                model = load_sentence_transformer(
                    self.model, self.revision, self.device, self.dtype, self.trust_remote_code
                )
            else:
                model = self.model.eval()
            tokenizer = model.tokenizer
            separator = self.separator or tokenizer.sep_token or tokenizer.eos_token
            if self.condition_on_question and not separator:
                raise ValueError(f"{self.model}: the tokenizer has no sep or eos token; pass separator=")
            max_length = self.max_length or model.max_seq_length or tokenizer.model_max_length
            self._loaded = (model, int(max_length), separator)
        return self._loaded

    def _input(self, question: str, answer: str) -> tuple[str, int]:
        return format_input(question if self.condition_on_question else None, answer, self._load()[2])

    def _encode(
        self, inputs: list[tuple[str, int, int]], *, keep_norms: bool
    ) -> tuple[np.ndarray, list[TokenNorms]]:
        """Encode (text, answer start, answer length) inputs: unit embeddings (M, d), and with
        ``keep_norms`` the :class:`TokenNorms` of each answer, from the same forward pass."""
        model, max_length, _ = self._load()
        tokenizer = model.tokenizer
        texts = [text for text, _, _ in inputs]
        lengths = np.array([len(ids) for ids in tokenizer(texts, verbose=False)["input_ids"]])
        n_long = int(np.count_nonzero(lengths > max_length))
        if n_long:
            warnings.warn(
                f"{self.name}: {n_long} of {len(texts)} inputs are longer than max_length={max_length} "
                "tokens and were truncated",
                stacklevel=5,
            )
        embeddings: list[np.ndarray | None] = [None] * len(texts)
        norms: list[TokenNorms] = [EMPTY_TOKEN_NORMS] * len(texts)
        order = np.argsort(-lengths, kind="stable").tolist()
        with torch.inference_mode():
            for idx in batches(order, self.batch_size, progress=self.progress, desc=f"{self.name} encode"):
                encoded = tokenizer(
                    [texts[k] for k in idx],
                    padding=True,
                    truncation=True,
                    max_length=max_length,
                    return_tensors="pt",
                    return_offsets_mapping=keep_norms,
                    return_special_tokens_mask=keep_norms,
                )
                offsets = encoded.pop("offset_mapping", None)
                special = encoded.pop("special_tokens_mask", None)
                features = {key: value.to(model.device) for key, value in encoded.items()}
                out = model(features)
                for row, vector in zip(idx, out["sentence_embedding"].float().cpu().numpy(), strict=True):
                    embeddings[row] = vector
                if keep_norms:
                    token_norms = out["token_embeddings"].float().norm(dim=-1).cpu().numpy()
                    real = (encoded["attention_mask"] == 1) & (special == 0)
                    for r, k in enumerate(idx):
                        _, start, n_chars = inputs[k]
                        spans = offsets[r][real[r]].numpy()
                        inside = (spans[:, 1] > start) & (spans[:, 0] < start + n_chars)
                        norms[k] = TokenNorms(
                            np.clip(spans[inside] - start, 0, n_chars),
                            token_norms[r][real[r].numpy()][inside],
                        )
        return np.stack(embeddings) if embeddings else np.zeros((0, 0)), norms

    def _score(self, questions: list[str], answers: list[list[str]], cost: Cost) -> list[np.ndarray]:
        flat: dict[str, tuple[int, tuple[str, int, int]]] = {}
        rows_per_question = []
        for question, group in zip(questions, answers, strict=True):
            rows = []
            for answer in group if len(group) > 1 else ():  # one answer: S = [[1]] without a pass
                text, start = self._input(question, answer)
                rows.append(flat.setdefault(text, (len(flat), (text, start, len(answer))))[0])
            rows_per_question.append(rows)
        if not flat:
            return [np.eye(len(group)) for group in answers]
        embeddings, norms = self._encode(
            [spec for _, spec in flat.values()], keep_norms=self._keeps_token_norms
        )
        cost.forward_passes += len(flat)
        if self._keeps_token_norms:
            self._token_norms = dict(zip(flat, norms, strict=True))
        return [
            gram_matrix(embeddings[rows]) if rows else np.eye(len(group))
            for rows, group in zip(rows_per_question, answers, strict=True)
        ]

    def token_similarity(
        self,
        questions: list[str],
        answers: list[list[str]],
        answer_token_offsets: list[list[np.ndarray]],
    ) -> list[list[np.ndarray]]:
        """s_t = cos(phi(y), phi(y without token t)) for every token t of the GENERATING model (TokenSAR).

        ``answer_token_offsets[b][i]`` is the (T, 2) character spans of the generating model's tokens in
        answer i of question b; each cut answer is encoded as the answer is (after the question for ``enc``),
        each distinct text once. An empty span cuts nothing (s_t = 1); T = 0 gives an empty array."""
        check_inputs(questions, answers)
        if len(answer_token_offsets) != len(answers):
            raise ValueError(f"got {len(answers)} questions but {len(answer_token_offsets)} offset lists")
        flat: dict[str, int] = {}
        inputs: list[tuple[str, int, int]] = []

        def row(question: str, text: str) -> int | None:
            """The input's row (None: a blank text, which has no embedding)."""
            if not text.strip():
                return None
            encoded, start = self._input(question, text)
            if encoded not in flat:
                flat[encoded] = len(inputs)
                inputs.append((encoded, start, len(text)))
            return flat[encoded]

        plan = []
        for b, (question, group, offsets) in enumerate(
            zip(questions, answers, answer_token_offsets, strict=True)
        ):
            if len(offsets) != len(group):
                raise ValueError(
                    f"{_describe(questions, b)}: {len(group)} answers but {len(offsets)} offset arrays"
                )
            plan_b = []
            for i, (answer, spans) in enumerate(zip(group, offsets, strict=True)):
                try:
                    cuts = as_spans(spans, name="answer_token_offsets", text_length=len(answer))
                except ValueError as err:
                    raise ValueError(f"{_describe(questions, b)}, answer {i}: {err}") from None
                full = row(question, answer)
                plan_b.append((full, [row(question, answer[:s] + answer[e:]) for s, e in cuts.tolist()]))
            plan.append(plan_b)
        phi = unit_rows(self._encode(inputs, keep_norms=False)[0]) if inputs else np.zeros((0, 0))

        def similarities(full: int | None, cuts: list[int | None]) -> np.ndarray:
            if full is None:  # a blank answer: no meaning to lose
                return np.ones(len(cuts))
            # a cut that leaves nothing keeps none of the meaning
            return np.array([np.clip(phi[c] @ phi[full], -1.0, 1.0) if c is not None else 0.0 for c in cuts])

        return [[similarities(full, cuts) for full, cuts in plan_b] for plan_b in plan]

    def _identity(self) -> dict[str, Any]:
        loaded = self._loaded
        model = loaded[0] if loaded else (None if isinstance(self.model, str) else self.model)
        config = model[0].auto_model.config if model is not None and hasattr(model[0], "auto_model") else None
        if isinstance(self.model, str):
            name = self.model
        else:
            name = getattr(config, "_name_or_path", "") or type(self.model).__name__
        return {
            "model": name,
            "revision": self.weights_revision(config),
            "question_conditioned": self.condition_on_question,
            "separator": loaded[2] if loaded and self.condition_on_question else None,
            "pooling": pooling_mode(model) if model is not None else None,
            "max_length": loaded[1] if loaded else self.max_length,
            "dtype": loaded_dtype(loaded[0]) if loaded else self.dtype,
            **super()._identity(),
        }


class ExternalCosineOperator(_SentenceEncoderOperator):
    """COS-ext: cosine similarity of an external sentence encoder's embeddings of the answers
    alone (no question), S = Phi Phi^T (App. A.2, S^cos)."""

    needs = frozenset({"answers"})

    def __init__(self, model: str | os.PathLike | Any = DEFAULT_SENTENCE_ENCODER, **options) -> None:
        """Options as for :class:`EncoderOperator`, except that the question is never read."""
        super().__init__(model, condition_on_question=False, **options)


class EncoderOperator(_SentenceEncoderOperator):
    """Enc: the question-conditioned bi-encoder (Eq. encoder, Eq. operator_cosine).

    "question <sep> answer" (the encoder's separator unless ``separator=``), all T' tokens mean-pooled and
    L2-normalized into phi_i, S_ij = <phi_i, phi_j>; ``condition_on_question=False`` is the paper's
    answer-only ablation. The default model is the untrained initialization (sentence-t5-large). The pass that
    builds S keeps the token norms for :meth:`token_weights`. ``pooling="answer"``
    (:mod:`semuq_eval.operators.pooling`) pools the answer's tokens only, the default for a folder trained so.
    """

    extras = ("token_weights", "greedy_similarities", "token_similarity")
    _keeps_token_norms = True

    def __init__(
        self,
        model: str | os.PathLike | Any = DEFAULT_SENTENCE_ENCODER,
        *,
        condition_on_question: bool | None = None,
        pooling: str | None = None,
        **options,
    ) -> None:
        """``model``: sentence-transformers hub id, local folder, or a loaded SentenceTransformer.
        Options: ``separator`` and the model options of
        :class:`~semuq_eval.operators.loading.ModelTextOperator`. ``condition_on_question`` and ``separator``
        default to what a folder trained by ``semuq-eval train-operator`` records (an answer-only operator is
        evaluated answer-only), else True and the tokenizer's separator."""
        trained = operator_defaults(model)
        if condition_on_question is None:
            condition_on_question = trained.get("condition_on_question", True)
        elif "condition_on_question" in trained and condition_on_question != trained["condition_on_question"]:
            warnings.warn(
                f"enc: {model} was trained with condition_on_question={trained['condition_on_question']} "
                f"but is used with {condition_on_question}",
                stacklevel=2,
            )
        if options.get("separator") is None and trained.get("separator"):
            options["separator"] = trained["separator"]
        from semuq_eval.operators.pooling import POOLINGS

        if pooling is None:
            pooling = trained.get("pooling", "all")
        elif "pooling" in trained and pooling != trained["pooling"]:
            warnings.warn(
                f"enc: {model} was trained with pooling='answer' but is used with {pooling!r}", stacklevel=2
            )
        if pooling not in POOLINGS:
            raise ValueError(f"enc: pooling must be one of {POOLINGS}, got {pooling!r}")
        self.pooling = pooling
        super().__init__(model, condition_on_question=condition_on_question, **options)

    def _load(self) -> tuple[Any, int, str]:
        first = self._loaded is None
        loaded = super()._load()
        if first and self.pooling == "answer":
            from semuq_eval.operators.pooling import answer_pooled

            # a copy: the loaded model may be cached or the caller's, and mean-pools for everyone else
            loaded = self._loaded = (answer_pooled(loaded[0]), *loaded[1:])
        mode = pooling_mode(loaded[0])
        if first and mode not in ("mean", "answer_mean"):
            warnings.warn(
                f"enc implements Eq. encoder (mean pooling) but {self.model} pools with {mode!r}",
                stacklevel=2,
            )
        return loaded

    def token_norms(self, questions: list[str], answers: list[list[str]]) -> list[list[TokenNorms]]:
        """||h_t|| of every answer's encoder tokens (Sec. 4.2), with their character spans in the
        answer; reuses the last forward pass for inputs already seen; an empty answer has no tokens."""
        check_inputs(questions, answers)
        needed: dict[str, tuple[str, int, int]] = {}
        keys = []
        for question, group in zip(questions, answers, strict=True):
            row = []
            for answer in group:
                if answer.strip():
                    text, start = self._input(question, answer)
                    needed.setdefault(text, (text, start, len(answer)))
                    row.append(text)
                else:
                    row.append(None)
            keys.append(row)
        missing = [spec for text, spec in needed.items() if text not in self._token_norms]
        if missing:
            _, norms = self._encode(missing, keep_norms=True)
            self._token_norms.update(zip((text for text, _, _ in missing), norms, strict=True))
        self._token_norms = {text: self._token_norms[text] for text in needed}
        return [[self._token_norms[k] if k is not None else EMPTY_TOKEN_NORMS for k in row] for row in keys]

    def token_weights(
        self,
        questions: list[str],
        answers: list[list[str]],
        answer_token_offsets: list[list[np.ndarray]],
    ) -> list[list[np.ndarray]]:
        """Per-token weights w_t of Eq. te_enc on the GENERATING model's tokens.

        ``answer_token_offsets[b][i]`` is the (T, 2) character spans of the generating model's tokens in
        answer i of question b; the encoder's answer-token norms are mapped onto them by character overlap
        (:mod:`semuq_eval.operators.token_weights`) and normalized to sum to 1. Empty answer or no overlap:
        uniform 1/T; T = 0: an empty array."""
        check_inputs(questions, answers)
        if len(answer_token_offsets) != len(answers):
            raise ValueError(f"got {len(answers)} questions but {len(answer_token_offsets)} offset lists")
        for b, (group, offsets) in enumerate(zip(answers, answer_token_offsets, strict=True)):
            if len(offsets) != len(group):
                raise ValueError(
                    f"{_describe(questions, b)}: {len(group)} answers but {len(offsets)} offset arrays"
                )
        weights = []
        all_norms = self.token_norms(questions, answers)
        for b, (group, offsets, norms) in enumerate(
            zip(answers, answer_token_offsets, all_norms, strict=True)
        ):
            row = []
            for i, (answer, spans, enc) in enumerate(zip(group, offsets, norms, strict=True)):
                try:
                    target = as_spans(spans, name="answer_token_offsets", text_length=len(answer))
                except ValueError as err:
                    raise ValueError(f"{_describe(questions, b)}, answer {i}: {err}") from None
                row.append(align_weights(enc.spans, enc.norms, target))
            weights.append(row)
        return weights
