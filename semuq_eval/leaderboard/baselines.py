"""Which estimator each ``@enc`` estimator is compared with: its published counterpart, and an offline base.

The ``paper`` pairs follow the paper (Tab. 1 and the per-cell tables), 7 per model-dataset cell: ``se`` and
``cae`` on ``nli`` (bidirectional entailment), ``kle_heat`` and ``kle_matern`` on ``nli_soft`` (entailment
probabilities), ``cos`` on both ``cos_int`` and ``cos_ext``, and ``te`` against ``te_enc@enc``. No NLI
cross-encoder ships on PyPI, so the ``offline`` pairs replace both by ``lexical`` (ROUGE-L between answers, no
model): does the trained operator beat a comparison that does not understand the question? The ``cos`` and ``te``
pairs are the same in both sets. A pair whose base (or ``@enc`` estimator) a run lacks is reported
``unavailable`` and counted as such, never as a loss.

Examples
--------
>>> [f"{a} vs {b}" for a, b in PAIRS["offline"][:2]]
['se@enc vs se@lexical', 'cae@enc vs cae@lexical']
>>> len(PAIRS["paper"])
7
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["PAIRS", "PAIR_SETS", "operator_pairs", "parse_compare"]

PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    "paper": (
        ("se@enc", "se@nli"),
        ("cae@enc", "cae@nli"),
        ("kle_heat@enc", "kle_heat@nli_soft"),
        ("kle_matern@enc", "kle_matern@nli_soft"),
        ("cos@enc", "cos@cos_int"),
        ("cos@enc", "cos@cos_ext"),
        ("te_enc@enc", "te"),
    ),
    "offline": (
        ("se@enc", "se@lexical"),
        ("cae@enc", "cae@lexical"),
        ("kle_heat@enc", "kle_heat@lexical"),
        ("kle_matern@enc", "kle_matern@lexical"),
        ("cos@enc", "cos@cos_int"),
        ("cos@enc", "cos@cos_ext"),
        ("te_enc@enc", "te"),
    ),
}
"""Comparison set -> (estimator, base) pairs, in the paper's order."""

PAIR_SETS = {
    "paper": "published counterpart (the paper's 7 comparisons per cell)",
    "offline": "offline base: nli / nli_soft replaced by lexical (ROUGE-L); cos and te pairs as in the paper",
}
"""Comparison set -> what it compares, in words."""


def operator_pairs(
    operator: str, bases: Sequence[str], estimators: Iterable[str]
) -> dict[str, tuple[str, tuple[tuple[str, str], ...]]]:
    """Pair sets comparing ``operator`` with each of ``bases`` aggregator by aggregator (``--compare``).

    One set per base, ``"<operator> vs <base>"``: ``agg@operator`` against ``agg@base`` for every aggregator both
    have among the board's ``estimators``, in their order; returns ``{name: (description, pairs)}``. Made for a
    trained operator run as a named variant beside its untrained backbone and the other operators.

    Examples
    --------
    >>> sets = operator_pairs("enc_nq", ["enc"], ["cae@enc", "cos@enc", "cae@enc_nq", "cos@enc_nq", "te"])
    >>> sets["enc_nq vs enc"][1]
    (('cae@enc_nq', 'cae@enc'), ('cos@enc_nq', 'cos@enc'))
    """
    names = list(dict.fromkeys(estimators))
    out = {}
    for base in bases:
        if base == operator:
            raise ValueError(f"--compare {operator}: an operator is not compared with itself")
        pairs = tuple(
            (name, f"{name[: -len(operator)]}{base}")
            for name in names
            if name.endswith(f"@{operator}") and f"{name[: -len(operator)]}{base}" in names
        )
        out[f"{operator} vs {base}"] = (
            f"`{operator}` against `{base}`, every aggregator both operators have",
            pairs,
        )
    return out


def parse_compare(spec: str) -> tuple[str, tuple[str, ...]]:
    """``"OP:BASE1,BASE2"`` -> ``("OP", ("BASE1", "BASE2"))``, the ``--compare`` option.

    Examples
    --------
    >>> parse_compare("enc_nq:enc,cos_ext")
    ('enc_nq', ('enc', 'cos_ext'))
    """
    operator, sep, rest = spec.partition(":")
    bases = tuple(b.strip() for b in rest.split(",") if b.strip())
    if not sep or not operator.strip() or not bases:
        raise ValueError(f"--compare {spec!r}: give OPERATOR:BASE[,BASE...], e.g. enc_nq:enc,cos_ext,lexical")
    return operator.strip(), bases
