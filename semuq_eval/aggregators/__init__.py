"""Aggregators F: a comparison matrix S (or a single generation's tokens) -> uncertainty U = F(S).

Graph aggregators accept S of shape (N, N) or (B, N, N) and return a float or a (B,) array; higher means more
uncertain. ``get(name)`` and ``names()`` read the :class:`Aggregator` registry (README, "Estimators");
``register`` adds one, as does an installed package through the entry-point group ``semuq_eval.aggregators``.
Importing this package registers the built-in numpy aggregators."""

from __future__ import annotations

from semuq_eval.aggregators.base import (
    ACCEPTS,
    OPTIONS,
    Aggregator,
    MatrixKind,
    register,
    registry,
)
from semuq_eval.aggregators.baseline import length, msp, perplexity
from semuq_eval.aggregators.clustering import cluster, to_equivalence
from semuq_eval.aggregators.consistency import cocoa, consistency
from semuq_eval.aggregators.density import semantic_density
from semuq_eval.aggregators.eigenscore import eigenscore
from semuq_eval.aggregators.entropy import cae, numsets, se
from semuq_eval.aggregators.graph import deg, ecc, eigv
from semuq_eval.aggregators.kernel import kle_heat, kle_matern
from semuq_eval.aggregators.reflexive import p_true, verbalized
from semuq_eval.aggregators.sar import sentence_sar, token_sar
from semuq_eval.aggregators.snne import snne
from semuq_eval.aggregators.spectral import cos
from semuq_eval.aggregators.token import te, te_enc

get = registry.get
"""The aggregator registered under a name (KeyError listing the known names otherwise)."""


names = registry.names
"""Every registered aggregator name, sorted (installed packages' included)."""


__all__ = [
    "ACCEPTS",
    "OPTIONS",
    "Aggregator",
    "MatrixKind",
    "cae",
    "cluster",
    "cocoa",
    "consistency",
    "cos",
    "deg",
    "ecc",
    "eigenscore",
    "eigv",
    "get",
    "kle_heat",
    "kle_matern",
    "length",
    "msp",
    "names",
    "numsets",
    "p_true",
    "perplexity",
    "register",
    "registry",
    "se",
    "semantic_density",
    "sentence_sar",
    "snne",
    "te",
    "te_enc",
    "to_equivalence",
    "token_sar",
    "verbalized",
]
