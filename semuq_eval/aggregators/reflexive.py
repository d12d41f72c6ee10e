"""Reflexive baselines: the model is asked about its own greedy answer (setting ``reflexive``, off by default).

Prompts, parsing and the first tokens that count as True or False: :mod:`semuq_eval.models.reflexive` (prompts
sent raw, no chat template). Without the setting they are unavailable ("the run did not ask for it (setting
reflexive)"); an unparsable verbalized reply makes ``verbalized`` unavailable for that question, with the
reply in the reason."""

from __future__ import annotations

import math

import numpy as np

from semuq_eval.aggregators.base import register

P_TRUE_FORMS = ("normalized", "raw")


@register("p_true", matrix=None, inputs=("p_true_logprobs",), equation="P(True) (Kadavath et al., 2022)")
def p_true(p_true_logprobs: np.ndarray, form: str = "normalized") -> float:
    """P(True) (Kadavath et al., 2022, "Language Models (Mostly) Know What They Know", arXiv 2207.05221).

    With m_T and m_F the first-token probability mass of the True-ish and False-ish tokens after the P(True)
    prompt (option ``form``, ``aggregator_options: {"p_true": {"form": "raw"}}``):

    - ``"normalized"`` (default): U = 1 - m_T / (m_T + m_F);
    - ``"raw"``: U = -log m_T, as LM-Polygraph's ``PTrue`` (Fadeeva et al., 2023) reads the probability of "True".

    Examples
    --------
    >>> lp = np.log([0.6, 0.2])
    >>> round(p_true(lp), 6), round(p_true(lp, form="raw"), 6)
    (0.25, 0.510826)
    """
    lt, lf = np.asarray(p_true_logprobs, dtype=np.float64).reshape(2)
    if form == "raw":
        if not math.isfinite(lt):
            raise ValueError("p_true form raw: no True-ish first token carries probability")
        return float(-lt)
    if form != "normalized":
        raise ValueError(f"p_true form must be one of {list(P_TRUE_FORMS)}, got {form!r}")
    top = max(lt, lf)
    return float(1.0 - math.exp(lt - top) / (math.exp(lt - top) + math.exp(lf - top)))


@register(
    "verbalized",
    matrix=None,
    inputs=("verbalized_confidence",),
    equation="verbalized confidence (Tian et al., 2023; Xiong et al., 2024)",
)
def verbalized(verbalized_confidence: float) -> float:
    """Verbalized confidence (Tian et al., 2023, "Just Ask for Calibration", arXiv 2305.14975; Xiong et al., 2024,
    "Can LLMs Express Their Uncertainty?", arXiv 2306.13063): U = 1 - c / 100 for the confidence c in [0, 100] the
    model states about its greedy answer (parsed strictly, :func:`semuq_eval.models.reflexive.parse_confidence`).

    Examples
    --------
    >>> round(verbalized(85.0), 6)
    0.15
    """
    c = float(verbalized_confidence)
    if not 0.0 <= c <= 100.0:
        raise ValueError(f"verbalized confidence must be in [0, 100], got {c}")
    return 1.0 - c / 100.0
