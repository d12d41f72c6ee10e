"""The field's other estimators (issue 23): consistency / CoCoA, Semantic Density, SentenceSAR, TokenSAR, SNNE
and EigenScore: hand-computed values, bad input, batched = per question, permutation invariance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semuq_eval import aggregators as A

LOG = np.log


def sym(n: int, rng: np.random.Generator, low: float = 0.0) -> np.ndarray:
    """A random symmetric similarity matrix in [low, 1] with a unit diagonal."""
    S = rng.uniform(low, 1.0, (n, n))
    S = (S + S.T) / 2
    np.fill_diagonal(S, 1.0)
    return S


def gram(n: int, rng: np.random.Generator, d: int = 5) -> np.ndarray:
    phi = rng.normal(size=(n, d))
    phi /= np.linalg.norm(phi, axis=1, keepdims=True)
    return phi @ phi.T


# ---------------------------------------------------------------- consistency / CoCoA


class TestConsistency:
    def test_hand_computed(self):
        assert A.consistency([1.0, 0.5, 0.0]) == pytest.approx(0.5)
        assert A.consistency(np.array([0.8, 0.6])) == pytest.approx(0.3)
        np.testing.assert_allclose(A.consistency([[1.0, 1.0], [0.0, 0.5]]), [0.0, 0.75])

    def test_cocoa_hand_computed(self):
        # dissimilarity 0.3; -log p(y*) = 2 (MSP); mean negative token log-prob = 1 (perplexity)
        assert A.cocoa([0.8, 0.6], [-1.0, -1.0]) == pytest.approx(0.6)
        assert A.cocoa([0.8, 0.6], [-1.0, -1.0], confidence="perplexity") == pytest.approx(0.3)
        # a ragged batch of greedy answers
        np.testing.assert_allclose(A.cocoa([[0.8, 0.6], [0.0, 0.0]], [[-1.0, -1.0], [-0.5]]), [0.6, 0.5])

    def test_one_and_identical_samples(self):
        assert A.consistency([0.25]) == pytest.approx(0.75)
        assert A.consistency(np.ones(5)) == 0.0
        assert A.cocoa(np.ones(5), [-3.0]) == 0.0  # all samples agree with y*: no uncertainty, any confidence
        assert np.isnan(A.cocoa([0.5], []))  # a greedy answer with no tokens (as msp)

    def test_bad_input(self):
        with pytest.raises(ValueError, match="at least one sample"):
            A.consistency([])
        with pytest.raises(ValueError, match="greedy_similarities has NaN"):
            A.consistency([0.5, np.nan])
        with pytest.raises(ValueError, match="token_logprobs has NaN"):
            A.cocoa([0.5], [-0.1, np.nan])
        with pytest.raises(ValueError, match="<= 0"):
            A.cocoa([0.5], [0.3])
        with pytest.raises(ValueError, match="confidence must be one of"):
            A.cocoa([0.5], [-0.1], confidence="mte")
        with pytest.raises(ValueError, match="same batch size"):
            A.cocoa([[0.5], [0.5]], [[-0.1]])


# ---------------------------------------------------------------- Semantic Density


class TestSemanticDensity:
    LP = LOG([0.5, 0.25])
    GREEDY = [LOG(0.25), 0.0]  # p(y*) = 0.25 over T = 2 tokens: normalized 0.5

    def test_hand_computed(self):
        # normalized weights: 0.5, 0.25^(1/2) = 0.5, greedy 0.5; kernels 1, 0.5, 1
        u = A.semantic_density([1.0, 0.5], self.LP, [1, 2], self.GREEDY)
        assert u == pytest.approx(1 - (0.5 + 0.25 + 0.5) / 1.5)
        # raw probabilities 0.5, 0.25, greedy 0.25
        raw = A.semantic_density([1.0, 0.5], self.LP, [1, 2], self.GREEDY, length_normalized=False)
        assert raw == pytest.approx(1 - (0.5 + 0.125 + 0.25) / 1.0)
        alone = A.semantic_density([1.0, 0.5], self.LP, [1, 2], self.GREEDY, include_greedy=False)
        assert alone == pytest.approx(1 - (0.5 + 0.25) / 1.0)

    def test_kernel_is_clipped_to_0_1(self):
        # a cosine of -0.5 is as far as the kernel goes: K = 0
        assert A.semantic_density([-0.5], [-1.0], [1], [-1.0], include_greedy=False) == pytest.approx(1.0)

    def test_long_answers_do_not_underflow(self):
        u = A.semantic_density([1.0, 0.0], [-2000.0, -2001.0], [1, 1], [-5000.0], length_normalized=False)
        assert u == pytest.approx(1 - 1 / (1 + np.exp(-1.0)))

    def test_one_and_identical_samples(self):
        assert A.semantic_density([0.3], [-1.0], [4], [-1.0], include_greedy=False) == pytest.approx(0.7)
        assert A.semantic_density(np.ones(4), np.full(4, -2.0), [3] * 4, [-1.0, -1.0]) == pytest.approx(0.0)
        assert A.semantic_density([0.0], [-1.0], [0], [-1.0]) == pytest.approx(0.5)  # empty sample: L = 1
        assert np.isnan(A.semantic_density([1.0], [-1.0], [1], []))  # greedy answer with no tokens

    def test_bad_input(self):
        with pytest.raises(ValueError, match="seq_logprobs has NaN"):
            A.semantic_density([1.0, 0.5], [-1.0, np.nan], [1, 1], [-1.0])
        with pytest.raises(ValueError, match="<= 0"):
            A.semantic_density([1.0], [0.5], [1], [-1.0])
        with pytest.raises(ValueError, match="same questions and samples"):
            A.semantic_density([1.0, 0.5], [-1.0], [1, 1], [-1.0])
        with pytest.raises(ValueError, match="at least one sample"):
            A.semantic_density([], [], [], [-1.0])


# ---------------------------------------------------------------- SentenceSAR


def sar_reference(S: np.ndarray, lp: np.ndarray, t: float) -> float:
    """Duan et al.'s sentence-level SAR, one sample at a time in probability space."""
    p = np.exp(lp)
    n = len(p)
    terms = [-np.log(p[j] + sum(max(S[j, k], 0.0) * p[k] for k in range(n) if k != j) / t) for j in range(n)]
    return float(np.mean(terms))


class TestSentenceSAR:
    def test_hand_computed(self):
        S = np.array([[1.0, 0.4], [0.4, 1.0]])
        u = A.sentence_sar(S, LOG([0.5, 0.25]), t=1.0)
        assert u == pytest.approx(-(LOG(0.5 + 0.4 * 0.25) + LOG(0.25 + 0.4 * 0.5)) / 2)

    def test_equals_the_reference_default_t(self):
        rng = np.random.default_rng(0)
        for n in (2, 3, 6):
            S, lp = sym(n, rng, low=-0.5), LOG(rng.uniform(0.01, 1.0, n))
            assert A.sentence_sar(S, lp) == pytest.approx(sar_reference(S, lp, 0.001), rel=1e-12)

    def test_one_and_identical_samples(self):
        assert A.sentence_sar(np.ones((1, 1)), [-2.5]) == pytest.approx(2.5)
        # identical samples of probability p: -log(p + (N-1) p / t)
        u = A.sentence_sar(np.ones((3, 3)), LOG([0.2] * 3), t=0.5)
        assert u == pytest.approx(-LOG(0.2 + 2 * 0.2 / 0.5))

    def test_long_answers_do_not_underflow(self):
        u = A.sentence_sar(np.ones((2, 2)), [-3000.0, -3000.0], t=1.0)
        assert u == pytest.approx(3000.0 - LOG(2.0))

    def test_bad_input(self):
        with pytest.raises(ValueError, match="seq_logprobs has NaN"):
            A.sentence_sar(np.eye(2), [-1.0, np.nan])
        with pytest.raises(ValueError, match="seq_logprobs has shape"):
            A.sentence_sar(np.eye(3), [-1.0, -1.0])
        with pytest.raises(ValueError, match="<= 0"):
            A.sentence_sar(np.eye(2), [-1.0, 0.5])
        with pytest.raises(ValueError, match="t must be > 0"):
            A.sentence_sar(np.eye(2), [-1.0, -1.0], t=0.0)
        with pytest.raises(ValueError, match="NaN"):
            A.sentence_sar(np.full((2, 2), np.nan), [-1.0, -1.0])


class TestTokenSAR:
    def test_hand_computed(self):
        # relevances 0.1 and 0.3 -> weights 1/4 and 3/4 of -log 0.5 and -log 0.25
        u = A.token_sar(LOG([0.5, 0.25]), [0.9, 0.7])
        assert u == pytest.approx(0.25 * LOG(2) + 0.75 * LOG(4), rel=1e-12)
        # uniform relevance: the mean negative log-likelihood
        assert A.token_sar(LOG([0.5, 0.25, 0.125]), [0.2] * 3) == pytest.approx(2 * LOG(2))

    def test_relevance_variants_differ_only_on_negative_similarities(self):
        lp, sims = LOG([0.5, 0.25]), np.array([0.9, -0.5])
        # the paper: 1 - |s| = (0.1, 0.5); LM-Polygraph: 1 - s = (0.1, 1.5)
        assert A.token_sar(lp, sims) == pytest.approx((0.1 * LOG(2) + 0.5 * LOG(4)) / 0.6)
        assert A.token_sar(lp, sims, relevance="signed") == pytest.approx((0.1 * LOG(2) + 1.5 * LOG(4)) / 1.6)
        same = np.array([0.9, 0.5])
        assert A.token_sar(lp, same) == A.token_sar(lp, same, relevance="signed")

    def test_one_token_and_no_relevant_token(self):
        assert A.token_sar([-2.5], [0.0]) == pytest.approx(2.5)  # cut to nothing: all the weight
        assert np.isnan(A.token_sar([-1.0, -2.0], [1.0, 1.0]))  # nothing changes the meaning: undefined
        assert np.isnan(A.token_sar(np.zeros(0), np.zeros(0)))  # no tokens

    def test_bad_input(self):
        with pytest.raises(ValueError, match="token_logprobs has NaN"):
            A.token_sar([-1.0, np.nan], [0.5, 0.5])
        with pytest.raises(ValueError, match="2 token log-probabilities but 3 similarities"):
            A.token_sar([[-1.0, -1.0]], [[0.5, 0.5, 0.5]])
        with pytest.raises(ValueError, match="<= 0"):
            A.token_sar([-1.0, 0.5], [0.5, 0.5])
        with pytest.raises(ValueError, match="negative relevance"):
            A.token_sar([-1.0], [1.5])
        with pytest.raises(ValueError, match="relevance must be one of"):
            A.token_sar([-1.0], [0.5], relevance="cosine")


# ---------------------------------------------------------------- SNNE


class TestSNNE:
    def test_hand_computed(self):
        S = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        assert A.snne(S) == pytest.approx(-(2 * LOG(np.e + 1) + LOG(2)) / 3)
        # tau = 0.5 with self-similarity: rows sum e^2 + e^2 + 1 (twice) and 1 + 1 + e^2
        with_self = A.snne(S, temperature=0.5, self_similarity=True)
        assert with_self == pytest.approx(-(2 * LOG(2 * np.e**2 + 1) + LOG(2 + np.e**2)) / 3)

    def test_one_and_identical_samples(self):
        assert np.isnan(A.snne(np.ones((1, 1))))  # no neighbour: undefined, the estimator is unavailable
        assert A.snne(np.ones((1, 1)), self_similarity=True, temperature=0.5) == pytest.approx(-2.0)
        assert A.snne(np.ones((3, 3)), temperature=0.5) == pytest.approx(-2.0 - LOG(2))
        assert A.snne(np.ones((3, 3)), temperature=0.5, self_similarity=True) == pytest.approx(-2.0 - LOG(3))

    def test_more_agreement_is_less_uncertain(self):
        assert A.snne(np.ones((4, 4))) < A.snne(np.eye(4))

    def test_bad_input(self):
        with pytest.raises(ValueError, match="temperature must be > 0"):
            A.snne(np.eye(2), temperature=-1.0)
        with pytest.raises(ValueError, match="NaN"):
            A.snne(np.array([[1.0, np.nan], [np.nan, 1.0]]))


# ---------------------------------------------------------------- EigenScore


class TestEigenScore:
    def test_hand_computed(self):
        alpha = 0.5
        assert A.eigenscore(np.eye(2), alpha=alpha) == pytest.approx(LOG(1.5))
        # two orthogonal answers, centred over the samples: H I H = H has eigenvalues 1 and 0
        centred = A.eigenscore(np.eye(2), alpha=alpha, centering="samples")
        assert centred == pytest.approx((LOG(1 + alpha) + LOG(alpha)) / 2)
        # S = [[1, c], [c, 1]] has eigenvalues 1 +- c
        c = 0.6
        two = A.eigenscore(np.array([[1.0, c], [c, 1.0]]), alpha=1e-3)
        assert two == pytest.approx((LOG(1 + c + 1e-3) + LOG(1 - c + 1e-3)) / 2)

    def test_one_and_identical_samples(self):
        alpha = 1e-3
        assert A.eigenscore(np.ones((1, 1)), alpha=alpha) == pytest.approx(LOG(1 + alpha))
        assert A.eigenscore(np.ones((1, 1)), alpha=alpha, centering="samples") == pytest.approx(LOG(alpha))
        identical = A.eigenscore(np.ones((3, 3)), alpha=alpha)
        assert identical == pytest.approx((LOG(3 + alpha) + 2 * LOG(alpha)) / 3)
        assert A.eigenscore(np.ones((3, 3)), centering="samples") == pytest.approx(LOG(1e-3))
        assert identical < A.eigenscore(np.eye(3), alpha=alpha)

    def test_bad_input(self):
        with pytest.raises(ValueError, match="alpha must be > 0"):
            A.eigenscore(np.eye(2), alpha=0.0)
        with pytest.raises(ValueError, match="centering must be"):
            A.eigenscore(np.eye(2), centering="features")
        with pytest.raises(ValueError, match="shape"):
            A.eigenscore(np.ones((2, 3)))


# ---------------------------------------------------------------- batched = per question; declarations


def test_batched_equals_per_question():
    rng = np.random.default_rng(1)
    B, n = 4, 5
    sims = rng.uniform(-0.2, 1.0, (B, n))
    lp = LOG(rng.uniform(0.01, 1.0, (B, n)))
    lengths = rng.integers(0, 6, (B, n)).astype(float)
    greedy = [-rng.uniform(0, 2, k) for k in (1, 3, 2, 5)]
    S = np.stack([sym(n, rng, low=-0.3) for _ in range(B)])
    G = np.stack([gram(n, rng) for _ in range(B)])
    cases = [
        (A.consistency, (sims,), {}),
        (A.cocoa, (sims, greedy), {"confidence": "perplexity"}),
        (A.semantic_density, (sims, lp, lengths, greedy), {}),
        (A.sentence_sar, (S, lp), {"t": 0.01}),
        (A.token_sar, (greedy, [rng.uniform(-0.5, 1.0, len(g)) for g in greedy]), {}),
        (A.snne, (S,), {"temperature": 0.3}),
        (A.eigenscore, (G,), {"centering": "samples"}),
    ]
    for func, args, kwargs in cases:
        batched = func(*args, **kwargs)
        single = [func(*(a[b] for a in args), **kwargs) for b in range(B)]
        assert isinstance(single[0], float)
        np.testing.assert_allclose(batched, single, rtol=1e-12, err_msg=func.__name__)


def test_declarations():
    assert A.get("consistency").matrix is None and A.get("consistency").inputs == ("greedy_similarities",)
    assert A.get("cocoa").inputs == ("greedy_similarities", "token_logprobs")
    assert A.get("semantic_density").inputs == (
        "greedy_similarities",
        "seq_logprobs",
        "seq_lengths",
        "token_logprobs",
    )
    assert A.get("sentence_sar").matrix == "graded" and A.get("sentence_sar").inputs == ("seq_logprobs",)
    assert A.get("token_sar").matrix is None and A.get("token_sar").inputs == (
        "token_logprobs",
        "token_similarity",
    )
    assert A.get("snne").matrix == "graded" and A.get("eigenscore").matrix == "gram"
    for name in "consistency cocoa semantic_density sentence_sar token_sar snne eigenscore".split():
        assert (
            A.get(name).options == ()
        )  # their own options go through aggregator_options, never the run's tau


# ---------------------------------------------------------------- properties


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 7), seed=st.integers(0, 10_000))
def test_every_estimator_is_invariant_to_the_order_of_the_samples(n, seed):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    sims, lp, lengths = rng.uniform(0, 1, n), LOG(rng.uniform(0.01, 1, n)), rng.integers(1, 5, n)
    greedy = -rng.uniform(0, 2, 3)
    S, G = sym(n, rng), gram(n, rng)
    P = np.ix_(perm, perm)
    assert A.consistency(sims[perm]) == pytest.approx(A.consistency(sims))
    assert A.cocoa(sims[perm], greedy) == pytest.approx(A.cocoa(sims, greedy))
    sd = A.semantic_density(sims, lp, lengths, greedy)
    assert A.semantic_density(sims[perm], lp[perm], lengths[perm], greedy) == pytest.approx(sd)
    assert A.sentence_sar(S[P], lp[perm]) == pytest.approx(A.sentence_sar(S, lp))
    assert A.snne(S[P]) == pytest.approx(A.snne(S))
    assert A.eigenscore(G[P]) == pytest.approx(A.eigenscore(G))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 7), seed=st.integers(0, 10_000))
def test_ranges(n, seed):
    rng = np.random.default_rng(seed)
    sims, lp, lengths = rng.uniform(0, 1, n), LOG(rng.uniform(0.01, 1, n)), rng.integers(0, 5, n)
    assert 0.0 <= A.consistency(sims) <= 1.0
    assert 0.0 <= A.semantic_density(sims, lp, lengths, [-0.5]) <= 1.0
    # SAR never exceeds the mean surprisal of the samples: relevance only adds probability
    assert A.sentence_sar(sym(n, rng), lp) <= float(-lp.mean()) + 1e-12
    # EigenScore on unit embeddings: the eigenvalues of S sum to N, so log det <= N log(1 + alpha)
    assert A.eigenscore(gram(n, rng)) <= LOG(1 + 1e-3) + 1e-12
