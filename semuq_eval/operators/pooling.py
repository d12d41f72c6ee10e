"""Answer-token mean pooling: the ``enc`` operator's named pooling variant (``pooling="answer"``).

Eq. encoder mean-pools ALL tokens of "question <sep> answer", so for short answers the question dominates and
two answers embed close whatever they say (docs/leaderboard.md). :class:`AnswerMeanPooling` averages only the
tokens AFTER the first separator (which still attend to the question, D2); rows without one pool all tokens.
Trained folders are saved with standard mean ``Pooling`` (:func:`use_mean_pooling`, no custom code) and the
variant in their card; ``enc`` restores it with :func:`answer_pooled`.

Examples
--------
>>> import torch
>>> pool = AnswerMeanPooling(2, separator_token_id=9)
>>> features = {"token_embeddings": torch.tensor([[[1., 0.], [5., 5.], [0., 2.], [0., 4.], [7., 7.]]]),
...             "input_ids": torch.tensor([[1, 4, 9, 6, 9]]), "attention_mask": torch.ones(1, 5)}
>>> pool(features)["sentence_embedding"].tolist()   # tokens 3 (answer) only; the closing separator is left out
[[0.0, 4.0]]
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from sentence_transformers.sentence_transformer.modules import Pooling

__all__ = ["POOLINGS", "AnswerMeanPooling", "answer_mask", "answer_pooled", "use_mean_pooling"]

POOLINGS = ("all", "answer")
"""``all``: Eq. encoder (mean over every token of "question <sep> answer"); ``answer``: mean over the answer's
tokens only (:class:`AnswerMeanPooling`)."""


def answer_mask(
    input_ids: torch.Tensor, attention_mask: torch.Tensor, separator_token_id: int
) -> torch.Tensor:
    """(B, T) mask of the tokens after the first separator, excluding separators; rows with no separator before
    their last real token keep ``attention_mask``.

    Examples
    --------
    >>> answer_mask(torch.tensor([[1, 4, 9, 6, 9], [1, 6, 9, 0, 0]]), torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]), 9)
    tensor([[0, 0, 0, 1, 0],
            [1, 1, 1, 0, 0]])
    """
    attention = attention_mask.to(torch.long)
    is_sep = (input_ids == separator_token_id) & (attention == 1)
    after = (torch.cumsum(is_sep.to(torch.long), dim=1) >= 1) & ~is_sep & (attention == 1)
    mask = after.to(torch.long)
    empty = mask.sum(dim=1) == 0
    return torch.where(empty.unsqueeze(1), attention, mask)


class AnswerMeanPooling(Pooling):
    """Mean pooling over the answer's tokens only (module docstring).

    ``separator_token_id``: the separator between question and answer (the tokenizer's ``sep_token_id``, else
    ``eos_token_id``: what ``enc`` writes). Eq. encoder (mean over all tokens) stays the default; this is a
    named option measured against it."""

    config_keys = ["embedding_dimension", "pooling_mode", "include_prompt", "separator_token_id"]

    def __init__(
        self,
        embedding_dimension: int,
        pooling_mode: str = "mean",
        include_prompt: bool = True,
        separator_token_id: int = 0,
        **_: Any,
    ) -> None:
        if pooling_mode != "mean":
            raise ValueError(f"AnswerMeanPooling pools with 'mean' only, got {pooling_mode!r}")
        super().__init__(embedding_dimension, pooling_mode="mean", include_prompt=include_prompt)
        self.separator_token_id = int(separator_token_id)

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        tokens = features["token_embeddings"]
        attention = features.get("attention_mask")
        if attention is None or attention.size(-1) != tokens.size(1):
            attention = torch.ones(tokens.shape[:-1], dtype=torch.long, device=tokens.device)
        mask = answer_mask(features["input_ids"], attention, self.separator_token_id).to(tokens.device)
        summed = (tokens * mask.unsqueeze(-1).to(tokens.dtype)).sum(dim=1)
        features["sentence_embedding"] = summed / mask.sum(dim=1, keepdim=True).clamp(min=1).to(tokens.dtype)
        return features


def answer_pooled(model: Any) -> Any:
    """A copy of the sentence-transformers ``model`` whose mean ``Pooling`` is :class:`AnswerMeanPooling`; the
    copy shares every other module (and the weights) and ``model`` is left as it was, so a cached or
    user-supplied model still mean-pools for other operators. A model already pooling over the answer is
    returned as is. Raises ValueError when there is no mean Pooling module, or the tokenizer has neither a sep
    nor an eos token."""
    tokenizer = model.tokenizer
    separator = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    for index, module in enumerate(model):
        if isinstance(module, AnswerMeanPooling):
            return model
        if isinstance(module, Pooling):
            if module.pooling_mode != "mean":
                raise ValueError(
                    f"answer pooling replaces mean pooling; this model pools with {module.pooling_mode!r}"
                )
            if separator is None:
                raise ValueError(
                    "answer pooling needs a separator token: the tokenizer has no sep or eos token"
                )
            pooled = copy.copy(model)
            pooled._modules = dict(model._modules)
            name = list(model._modules)[index]
            pooled._modules[name] = AnswerMeanPooling(
                module.embedding_dimension, separator_token_id=separator
            )
            return pooled
    raise ValueError("answer pooling replaces a Pooling module; the model has none")


def use_mean_pooling(model: Any) -> bool:
    """Put sentence-transformers' standard mean ``Pooling`` back in place of :class:`AnswerMeanPooling`
    (in place; no weights change); returns False when the model has none to replace."""
    for index, module in enumerate(model):
        if isinstance(module, AnswerMeanPooling):
            name = list(model._modules)[index]
            model._modules[name] = Pooling(module.embedding_dimension, pooling_mode="mean")
            return True
    return False
