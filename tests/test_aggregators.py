"""Aggregators: hand-computed values, properties (hypothesis), registry and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm, logm

from semuq_eval import aggregators as A

LOG = np.log


def entropy(p):
    p = np.asarray(p, dtype=float)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def equivalence_from_labels(labels):
    labels = np.asarray(labels)
    return labels[:, None] == labels[None, :]


def two_by_two(w):
    return np.array([[1.0, w], [w, 1.0]])


# ---------------------------------------------------------------- hand-computed values


class TestClustering:
    def test_groups_equivalent_answers(self):
        E = equivalence_from_labels([0, 1, 0, 2, 1])
        np.testing.assert_array_equal(A.cluster(E), [0, 1, 0, 2, 1])

    def test_joins_cluster_by_its_first_member_only(self):
        # 0~1 and 1~2 but not 0~2: 2 is compared with cluster 0's first member (0) only.
        E = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=bool)
        np.testing.assert_array_equal(A.cluster(E), [0, 0, 1])

    def test_earliest_cluster_wins(self):
        E = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 1]], dtype=bool)
        np.testing.assert_array_equal(A.cluster(E), [0, 1, 0])

    def test_one_direction_is_not_equivalence(self):
        E = np.array([[1, 1], [0, 1]], dtype=bool)
        np.testing.assert_array_equal(A.cluster(E), [0, 1])

    def test_batched_equals_loop(self):
        rng = np.random.default_rng(0)
        E = rng.random((7, 6, 6)) > 0.5
        np.testing.assert_array_equal(A.cluster(E), np.stack([A.cluster(e) for e in E]))

    def test_to_equivalence_is_strict_threshold(self):
        S = np.array([[1.0, 0.5, 0.51], [0.5, 1.0, 0.2], [0.51, 0.2, 1.0]])
        E = A.to_equivalence(S, tau=0.5)
        assert E.dtype == bool
        np.testing.assert_array_equal(E, [[1, 0, 1], [0, 1, 0], [1, 0, 1]])

    def test_cluster_rejects_graded(self):
        with pytest.raises(TypeError, match="to_equivalence"):
            A.cluster(np.eye(3))


class TestClusterEntropies:
    E = equivalence_from_labels([0, 0, 1, 2])

    def test_cae(self):
        assert A.cae(self.E) == pytest.approx(entropy([0.5, 0.25, 0.25]))

    def test_numsets(self):
        assert A.numsets(self.E) == 3.0

    def test_se_uses_normalized_joint_probabilities(self):
        p = np.array([0.04, 0.01, 0.03, 0.02])  # normalized: .4 .1 .3 .2
        assert A.se(self.E, np.log(p)) == pytest.approx(entropy([0.5, 0.3, 0.2]))

    def test_se_in_log_space_survives_tiny_probabilities(self):
        logp = np.array([-2000.0, -2000.0, -2000.0 + np.log(2), -2000.0])
        assert A.se(self.E, logp) == pytest.approx(entropy([0.4, 0.4, 0.2]))

    def test_se_length_normalized(self):
        logp = np.log([0.04, 0.01, 0.03, 0.02])
        lengths = np.array([2, 1, 4, 2])
        q = np.exp(logp / lengths)
        q = q / q.sum()
        expected = entropy([q[0] + q[1], q[2], q[3]])
        assert A.se(self.E, logp, length_normalized=True, n_tokens=lengths) == pytest.approx(expected)
        with pytest.raises(ValueError, match="n_tokens"):
            A.se(self.E, logp, length_normalized=True)

    def test_se_of_one_cluster_is_exactly_zero(self):
        # regression: log-space cluster mass exp(logsumexp) can exceed 1 by round-off
        assert A.se(np.ones((2, 2), dtype=bool), np.array([-5.0, -6.0])) == 0.0

    def test_graded_matrix_is_thresholded(self):
        S = np.where(self.E, 0.9, 0.1)
        assert A.cae(S) == pytest.approx(A.cae(self.E))
        assert A.cae(S, tau=0.95) == pytest.approx(np.log(4))


class TestKernelEntropies:
    @pytest.mark.parametrize("w", [0.0, 0.3, 1.0])
    def test_heat_two_answers(self, w):
        f = np.array([1.0, np.exp(-0.3 * 2 * w)])  # L = [[w, -w], [-w, w]] has eigenvalues 0, 2w
        assert A.kle_heat(two_by_two(w)) == pytest.approx(entropy(f / f.sum()))

    @pytest.mark.parametrize("w", [0.0, 0.3, 1.0])
    def test_matern_two_answers(self, w):
        f = np.array([1 / 2, 1 / (2 + 2 * w)])  # (2 nu / kappa^2 + mu)^-nu with nu = kappa = 1
        assert A.kle_matern(two_by_two(w)) == pytest.approx(entropy(f / f.sum()))

    def test_heat_equals_scipy_expm_von_neumann(self):
        rng = np.random.default_rng(1)
        X = rng.random((6, 6))
        W = (X + X.T) / 2
        L = np.diag(W.sum(1)) - W
        K = expm(-0.3 * L)
        K = K / np.trace(K)
        expected = -np.trace(K @ logm(K)).real
        assert A.kle_heat(W) == pytest.approx(expected, rel=1e-8)

    def test_diag_normalization_matches_definition(self):
        rng = np.random.default_rng(2)
        X = rng.random((5, 5))
        W = (X + X.T) / 2
        L = np.diag(W.sum(1)) - W
        K = expm(-0.3 * L)
        d = np.sqrt(np.diag(K))
        K = K / np.outer(d, d) / 5
        expected = entropy(np.linalg.eigvalsh(K))
        assert A.kle_heat(W, normalize="diag") == pytest.approx(expected, rel=1e-8)
        assert A.kle_heat(W, normalize="diag") != pytest.approx(A.kle_heat(W))

    def test_negative_and_asymmetric_weights_are_made_a_graph(self):
        S = np.array([[1.0, 0.8, -0.5], [0.4, 1.0, 0.2], [-0.5, 0.2, 1.0]])
        W = np.array([[1.0, 0.6, 0.0], [0.6, 1.0, 0.2], [0.0, 0.2, 1.0]])
        assert A.kle_heat(S) == pytest.approx(A.kle_heat(W))

    def test_bad_hyperparameters(self):
        with pytest.raises(ValueError):
            A.kle_heat(np.eye(2), t=0)
        with pytest.raises(ValueError):
            A.kle_matern(np.eye(2), nu=-1)
        with pytest.raises(ValueError, match="normalize"):
            A.kle_heat(np.eye(2), normalize="max")


class TestSpectral:
    @pytest.mark.parametrize("c", [0.0, 0.5, 0.9])
    def test_two_answers(self, c):
        assert A.cos(two_by_two(c)) == pytest.approx(entropy([(1 + c) / 2, (1 - c) / 2]))

    def test_rejects_zero_trace(self):
        with pytest.raises(ValueError, match="trace"):
            A.cos(np.zeros((3, 3)))


class TestGraphScores:
    @pytest.mark.parametrize("w", [0.0, 0.5, 1.0])
    def test_eigv_two_answers(self, w):
        # L_sym has eigenvalues 0 and 2w / (1 + w)
        assert A.eigv(two_by_two(w)) == pytest.approx(1 + max(0.0, 1 - 2 * w / (1 + w)))

    @pytest.mark.parametrize("w", [0.0, 0.5, 1.0])
    def test_deg_two_answers(self, w):
        assert A.deg(two_by_two(w)) == pytest.approx((1 - w) / 2)

    def test_ecc_two_answers(self):
        assert A.ecc(two_by_two(0.5)) == pytest.approx(1.0)  # second eigenvalue 2/3 < 0.9 is kept
        assert A.ecc(two_by_two(1.0)) == pytest.approx(0.0, abs=1e-12)  # only the constant one

    def test_isolated_answer_has_zero_degree_handled(self):
        S = np.array([[0.0, 0.0], [0.0, 1.0]])
        assert np.isfinite(A.eigv(S)) and np.isfinite(A.ecc(S))


class TestToken:
    def test_te(self):
        assert A.te([0.5, 1.0, 1.5]) == pytest.approx(1.0)

    def test_te_ragged_batch_and_empty(self):
        out = A.te([[1.0, 3.0], [2.0], []])
        np.testing.assert_allclose(out[:2], [2.0, 2.0])
        assert np.isnan(out[2])

    def test_te_rectangular_batch(self):
        np.testing.assert_allclose(A.te(np.array([[1.0, 3.0], [2.0, 2.0]])), [2.0, 2.0])

    def test_te_enc_weights(self):
        assert A.te_enc([1.0, 2.0, 4.0], [1.0, 1.0, 2.0]) == pytest.approx((1 + 2 + 8) / 4)

    def test_te_enc_equals_te_with_uniform_weights(self):
        h = [[0.1, 0.7, 0.3], [2.0]]
        np.testing.assert_allclose(A.te_enc(h, [[5, 5, 5], [3]]), A.te(h))

    def test_te_enc_zero_weights_is_nan(self):
        assert np.isnan(A.te_enc([1.0, 2.0], [0.0, 0.0]))

    def test_te_enc_bad_input(self):
        with pytest.raises(ValueError, match="sequence 0"):
            A.te_enc([[1.0, 2.0]], [[1.0]])
        with pytest.raises(ValueError, match="non-negative"):
            A.te_enc([1.0, 2.0], [1.0, -1.0])
        with pytest.raises(ValueError, match="NaN"):
            A.te([[1.0, np.nan]])


# ---------------------------------------------------------------- single-answer baselines


def test_baselines_hand_computed():
    lp = [-0.1, -2.0, -0.4]
    assert A.msp(lp) == pytest.approx(2.5)  # -sum log p
    assert A.perplexity(lp) == pytest.approx(2.5 / 3)  # -mean log p
    assert A.length([7, 8, 9]) == 3.0
    # empty greedy answer: no defined msp / perplexity, length 0
    assert np.isnan(A.msp([])) and np.isnan(A.perplexity([]))
    assert A.length([]) == 0.0


def test_baselines_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        A.msp([-0.1, np.nan])
    with pytest.raises(ValueError, match="<= 0"):
        A.perplexity([0.5])
    with pytest.raises(ValueError, match=r"\(T,\)"):
        A.msp([[-0.1], [-0.2]])


# ---------------------------------------------------------------- registry


def test_registry_has_every_design_name():
    expected = {"se", "cae", "kle_heat", "kle_matern", "cos", "numsets", "eigv", "deg", "ecc", "te", "te_enc"}
    expected |= {"msp", "perplexity", "length"}
    expected |= set("consistency cocoa semantic_density sentence_sar token_sar snne eigenscore".split())
    expected |= {"p_true", "verbalized"}
    assert set(A.names()) == expected
    assert A.get("kle_heat")(np.eye(3)) == pytest.approx(np.log(3))
    assert A.get("se").inputs == ("seq_logprobs",)
    assert A.get("cos").matrix == "gram" and A.get("se").matrix == "equivalence"
    assert A.get("te").matrix is None
    # the declarations the harness reads: tau only where the equivalence rule applies
    assert {n for n in A.names() if "tau" in A.get(n).options} == {"se", "cae", "numsets"}
    assert A.get("msp").inputs == ("token_logprobs",) and A.get("length").inputs == ("token_ids",)


def test_declarations_are_checked():
    from semuq_eval.aggregators.base import Aggregator

    with pytest.raises(ValueError, match="unknown input"):
        Aggregator("x", lambda S: 0.0, "graded", inputs=("logits",))
    with pytest.raises(ValueError, match="unknown matrix kind"):
        Aggregator("x", lambda S: 0.0, "kernel")
    with pytest.raises(ValueError, match="unknown option"):
        Aggregator("x", lambda S: 0.0, "graded", options=("temperature",))


def test_unknown_name_lists_known_ones():
    with pytest.raises(KeyError, match="kle_heat"):
        A.get("kle")


# ---------------------------------------------------------------- properties


@st.composite
def gram_stacks(draw):
    n = draw(st.integers(1, 8))
    b = draw(st.integers(1, 4))
    d = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**31 - 1))
    X = np.random.default_rng(seed).normal(size=(b, n, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    return X @ np.swapaxes(X, -1, -2)


@st.composite
def label_sets(draw):
    n = draw(st.integers(1, 10))
    labels = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    logp = draw(st.lists(st.floats(-30, 0), min_size=n, max_size=n))
    return np.array(labels), np.array(logp)


GRAPH = ["kle_heat", "kle_matern", "cos", "eigv", "deg", "ecc"]


@settings(max_examples=60, deadline=None)
@given(gram_stacks())
def test_entropies_between_zero_and_log_n(S):
    n = S.shape[-1]
    for name in ["kle_heat", "kle_matern", "cos"]:
        values = A.get(name)(S)
        assert np.all(values >= -1e-9) and np.all(values <= np.log(n) + 1e-9), name


@settings(max_examples=60, deadline=None)
@given(gram_stacks(), st.integers(0, 1000))
def test_graph_aggregators_invariant_under_permutation(S, seed):
    perm = np.random.default_rng(seed).permutation(S.shape[-1])
    P = S[:, perm][:, :, perm]
    for name in GRAPH:
        np.testing.assert_allclose(A.get(name)(S), A.get(name)(P), atol=1e-8, err_msg=name)


@settings(max_examples=80, deadline=None)
@given(label_sets(), st.integers(0, 1000))
def test_cluster_entropies_properties(case, seed):
    labels, logp = case
    n = len(labels)
    E = equivalence_from_labels(labels)
    perm = np.random.default_rng(seed).permutation(n)
    Ep = E[perm][:, perm]
    for name in ["cae", "numsets"]:
        assert A.get(name)(E) == pytest.approx(A.get(name)(Ep))
    assert A.se(E, logp) == pytest.approx(A.se(Ep, logp[perm]), abs=1e-9)
    assert 0 <= A.cae(E) <= np.log(n) + 1e-12
    assert 0 <= A.se(E, logp) <= np.log(n) + 1e-12
    assert A.se(E, np.full(n, -3.7)) == pytest.approx(A.cae(E))


@pytest.mark.parametrize("n", [1, 2, 5, 20])
def test_identical_answers(n):
    ones = np.ones((n, n))
    assert A.cae(ones) == 0.0
    assert A.cos(ones) == pytest.approx(0.0, abs=1e-9)
    assert A.numsets(ones) == 1.0
    if n > 1:
        for name in ["kle_heat", "kle_matern"]:
            assert A.get(name)(ones) < A.get(name)(np.eye(n))


@pytest.mark.parametrize("n", [2, 5, 20])
def test_identity_gives_log_n(n):
    for name in ["cos", "kle_heat", "kle_matern"]:
        assert A.get(name)(np.eye(n)) == pytest.approx(np.log(n)), name
    assert A.cae(np.eye(n)) == pytest.approx(np.log(n))


def test_vectorized_equals_per_matrix():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(9, 7, 4))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    S = X @ np.swapaxes(X, -1, -2)
    logp = rng.normal(size=(9, 7))
    for name in GRAPH + ["cae", "numsets"]:
        batched = A.get(name)(S)
        assert batched.shape == (9,)
        np.testing.assert_allclose(batched, [A.get(name)(s) for s in S], atol=1e-10, err_msg=name)
    np.testing.assert_allclose(A.se(S, logp), [A.se(s, lp) for s, lp in zip(S, logp, strict=True)])


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("name", GRAPH + ["cae", "numsets"])
def test_single_answer_is_defined(name):
    value = A.get(name)(np.ones((1, 1)))
    assert np.isfinite(value)
    if name in ("kle_heat", "kle_matern", "cos", "cae", "deg", "ecc"):
        assert value == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("name", GRAPH + ["cae"])
def test_malformed_matrices(name):
    f = A.get(name)
    with pytest.raises(ValueError, match="shape"):
        f(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        f(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="empty"):
        f(np.ones((0, 3, 3)))
    with pytest.raises(ValueError, match="shape"):
        f(np.ones(4))


def test_se_mismatched_or_nan_logprobs():
    E = np.eye(3, dtype=bool)
    with pytest.raises(ValueError, match="seq_logprobs must have shape"):
        A.se(E, np.zeros(4))
    with pytest.raises(ValueError, match="NaN"):
        A.se(E, np.array([0.0, np.nan, -1.0]))
