"""Metrics: hand-computed values, agreement with scikit-learn, bootstrap and paired tests, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from semuq_eval import metrics as M
from semuq_eval.metrics.calibration import ece_weighted
from semuq_eval.metrics.ranking import auarc_weighted, auroc_weighted, prr_weighted


def brute_auarc(u, correct):
    """Mean over every order of ties of the accuracy-rejection area (exhaustive for small n)."""
    import itertools

    u, correct = np.asarray(u, float), np.asarray(correct, float)
    groups = [np.flatnonzero(u == v) for v in np.unique(u)]
    areas = []
    for perms in itertools.product(*[list(itertools.permutations(g)) for g in groups]):
        order = np.concatenate(perms)
        y = correct[order]
        areas.append(np.mean(np.cumsum(y) / np.arange(1, len(y) + 1)))
    return float(np.mean(areas))


class TestAUROC:
    def test_hand_computed(self):
        u = [0.9, 0.8, 0.3, 0.1]
        correct = [0, 1, 0, 1]  # incorrect at .9 and .3; correct at .8 and .1
        assert M.auroc(u, correct) == pytest.approx(3 / 4)

    def test_ties_count_half(self):
        assert M.auroc([1.0, 1.0], [0, 1]) == 0.5

    def test_round_off_is_a_tie(self):
        """0 and 3 in exact arithmetic, as another CPU's summation order leaves them: the same AUROC (ties count half),
        while a difference the float32 inputs could carry (1e-9) still ranks."""
        assert M.auroc([0.0, -4e-16, 3.0, 3 + 2e-15], [1, 0, 1, 0]) == M.auroc(
            [0.0, 0.0, 3.0, 3.0], [1, 0, 1, 0]
        )
        assert M.auroc([0.0, -4e-16, 3.0, 3 + 2e-15], [1, 0, 1, 0]) == 0.5
        assert M.auroc([1.0, 1.0 + 1e-9], [1, 0]) == 1.0
        assert M.auarc([3.0, 3 + 2e-15, 5.0], [0, 1, 1]) == M.auarc([3.0, 3.0, 5.0], [0, 1, 1])

    @settings(max_examples=50, deadline=None)
    @given(st.integers(0, 10_000), st.integers(2, 60))
    def test_round_off_noise_leaves_every_ranking_metric_unchanged(self, seed, n):
        rng = np.random.default_rng(seed)
        correct = rng.integers(0, 2, n).astype(float)
        correct[:2] = [0, 1]
        u = rng.integers(0, 4, n) * 0.7  # tie groups, one of them at 0
        noisy = u + rng.choice([-2, -1, 0, 1, 2], n) * np.spacing(np.maximum(u, 1.0))
        w = rng.integers(1, 4, (3, n)).astype(float)
        for core in (auroc_weighted, auarc_weighted, prr_weighted):
            np.testing.assert_allclose(core(noisy, correct, w), core(u, correct, w), rtol=0, atol=1e-12)

    def test_perfect_and_reversed(self):
        assert M.auroc([3, 2, 1], [0, 1, 1]) == 1.0
        assert M.auroc([1, 2, 3], [0, 1, 1]) == 0.0

    @settings(max_examples=50, deadline=None)
    @given(st.integers(0, 10_000), st.integers(2, 60), st.booleans())
    def test_matches_sklearn_with_weights(self, seed, n, ties):
        rng = np.random.default_rng(seed)
        correct = rng.integers(0, 2, n)
        correct[:2] = [0, 1]
        u = rng.integers(0, 4, n).astype(float) if ties else rng.normal(size=n)
        w = rng.integers(0, 4, n).astype(float)
        w[:2] = 1
        expected = roc_auc_score(1 - correct, u, sample_weight=w)
        assert auroc_weighted(u, correct.astype(float), w[None])[0] == pytest.approx(expected)

    def test_single_class_is_nan_with_counts(self):
        with pytest.warns(RuntimeWarning, match=r"n_incorrect=0, n_correct=3"):
            assert np.isnan(M.auroc([0.1, 0.2, 0.3], [1, 1, 1]))

    def test_nan_scores_are_left_out(self):
        assert M.auroc([0.9, np.nan, 0.1], [0, 0, 1]) == 1.0


class TestRejection:
    def test_auarc_hand_computed(self):
        # keep order by ascending u: correct, incorrect, correct -> a = 1, 1/2, 2/3
        assert M.auarc([0.1, 0.5, 0.9], [1, 0, 1]) == pytest.approx((1 + 0.5 + 2 / 3) / 3)

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1)), min_size=1, max_size=6))
    def test_auarc_breaks_ties_in_expectation(self, pairs):
        u, correct = np.array(pairs, dtype=float).T
        assert M.auarc(u, correct) == pytest.approx(brute_auarc(u, correct))

    @settings(max_examples=40, deadline=None)
    @given(st.integers(0, 10_000), st.integers(1, 25))
    def test_weighted_auarc_equals_expanded_list(self, seed, n):
        rng = np.random.default_rng(seed)
        u, correct = rng.normal(size=n), rng.integers(0, 2, n).astype(float)
        w = rng.integers(0, 4, n)
        w[0] = max(w[0], 1)
        expanded = np.repeat(np.arange(n), w)
        expected = M.auarc(u[expanded] + 1e-9 * np.arange(len(expanded)) * 0, correct[expanded])
        assert auarc_weighted(u, correct, w[None].astype(float))[0] == pytest.approx(expected)

    def test_prr_oracle_random_and_reversed(self):
        correct = np.array([1, 1, 0, 0, 1, 0, 1, 1])
        assert M.prr(1 - correct, correct) == pytest.approx(1.0)
        assert M.prr(np.zeros(8), correct) == pytest.approx(0.0)
        assert M.prr(correct, correct) < 0

    def test_prr_weighted_oracle_closed_form(self):
        rng = np.random.default_rng(0)
        correct = rng.integers(0, 2, 30).astype(float)
        counts = rng.integers(0, 3, (5, 30)).astype(float)
        np.testing.assert_allclose(prr_weighted(1 - correct, correct, counts), 1.0)

    def test_prr_single_class(self):
        with pytest.warns(RuntimeWarning, match="single class"):
            assert np.isnan(M.prr([0.2, 0.4], [0, 0]))


class TestECE:
    def test_binned_ece_hand_computed(self):
        confidence = np.array([0.95, 0.95, 0.15, 0.15])
        correct = np.array([1.0, 0.0, 0.0, 0.0])
        # bin 9: acc .5 conf .95 -> .45; bin 1: acc 0 conf .15 -> .15; mass .5 each
        assert ece_weighted(confidence, correct, np.ones((1, 4)))[0] == pytest.approx(0.3)

    def test_crossfit_scores_every_question_once_and_is_seeded(self):
        rng = np.random.default_rng(0)
        u = rng.normal(size=101)
        correct = (rng.random(101) < 1 / (1 + np.exp(2 * u))).astype(int)
        conf = M.calibrate(u, correct)
        assert np.all(np.isfinite(conf)) and np.all((conf >= 0) & (conf <= 1))
        np.testing.assert_array_equal(conf, M.calibrate(u, correct))
        other = M.calibrate(u, correct, M.CalibrationProtocol(seed=1))
        assert not np.array_equal(conf, other)

    def test_calibrator_never_sees_the_question_it_scores(self):
        u = np.arange(10.0)
        correct = np.array([1, 0] * 5)
        protocol = M.CalibrationProtocol(n_folds=2)
        folds = protocol.folds(10)
        conf = M.calibrate(u, correct, protocol)
        for k in range(2):
            fit = folds != k
            expected = M.calibrators._fit_predict(
                "isotonic", u[fit], correct[fit].astype(float), u[folds == k]
            )
            np.testing.assert_allclose(conf[folds == k], expected)

    def test_holdout_scores_only_the_rest(self):
        u = np.linspace(0, 1, 40)
        correct = (u < 0.5).astype(int)
        conf = M.calibrate(u, correct, M.CalibrationProtocol(split="holdout", holdout_fraction=0.25))
        assert np.isfinite(conf).sum() == 30

    def test_well_separated_scores_calibrate_well(self):
        rng = np.random.default_rng(0)
        u = rng.normal(size=4000)
        p = 1 / (1 + np.exp(3 * u))
        correct = (rng.random(4000) < p).astype(int)
        for calibrator in ("isotonic", "platt"):
            value = M.ece(u, correct, M.CalibrationProtocol(calibrator=calibrator))
            assert 0 <= value < 0.05, calibrator

    def test_ece_is_invariant_to_increasing_affine_rescaling(self):
        # (isotonic predictions interpolate linearly between fitted points, so a nonlinear
        # monotone map changes them slightly; an affine one does not)
        rng = np.random.default_rng(1)
        u = rng.normal(size=300)
        correct = rng.integers(0, 2, 300)
        for calibrator in ("isotonic", "platt"):
            protocol = M.CalibrationProtocol(calibrator=calibrator)
            assert M.ece(u, correct, protocol) == pytest.approx(M.ece(3 * u + 2, correct, protocol), rel=1e-6)

    def test_platt_with_single_class_fold_falls_back_to_base_rate(self):
        u = np.arange(6.0)
        conf = M.calibrate(u, np.ones(6), M.CalibrationProtocol(calibrator="platt"))
        np.testing.assert_allclose(conf, 1.0)

    def test_bad_protocol(self):
        with pytest.raises(ValueError, match="calibrator"):
            M.CalibrationProtocol(calibrator="beta")
        with pytest.raises(ValueError, match="n_folds"):
            M.CalibrationProtocol(n_folds=1)
        with pytest.raises(ValueError, match="holdout_fraction"):
            M.CalibrationProtocol(holdout_fraction=1.5)


class TestBootstrap:
    def setup_method(self):
        rng = np.random.default_rng(0)
        self.correct = rng.integers(0, 2, 400)
        self.good = rng.normal(size=400) + (1 - self.correct)
        self.noise = rng.normal(size=400)

    def test_same_index_sets_for_every_call(self):
        b = M.Bootstrap(n_resamples=50, seed=3)
        assert b.counts(400) is b.counts(400)
        np.testing.assert_array_equal(b.counts(400), M.Bootstrap(n_resamples=50, seed=3).counts(400))
        assert np.all(b.counts(400).sum(axis=1) == 400)

    def test_evaluate_contains_point_ci_and_counts(self):
        out = M.evaluate({"good": self.good, "noise": self.noise}, self.correct, bootstrap=M.Bootstrap(200))
        assert set(out) == {"good", "noise"} and set(out["good"]) == set(M.DEFAULT_METRICS)
        r = out["good"]["auroc"]
        assert r.value == pytest.approx(M.auroc(self.good, self.correct))
        assert r.ci_low < r.value < r.ci_high
        assert r.n_correct + r.n_incorrect == r.n == 400 and r.n_valid_resamples == 200
        assert out["good"]["ece"].value == pytest.approx(M.ece(self.good, self.correct))
        assert out["good"]["prr"].value == pytest.approx(M.prr(self.good, self.correct))
        assert out["noise"]["auroc"].ci_low < 0.5 < out["noise"]["auroc"].ci_high

    def test_resampled_auroc_matches_explicit_resampling(self):
        b = M.Bootstrap(n_resamples=20, seed=1)
        resampled = auroc_weighted(self.good, self.correct.astype(float), b.counts(400))
        idx = np.random.default_rng(1).integers(0, 400, size=(20, 400))
        explicit = [roc_auc_score(1 - self.correct[i], self.good[i]) for i in idx]
        np.testing.assert_allclose(resampled, explicit)

    def test_missing_scores_are_counted(self):
        u = self.good.copy()
        u[:10] = np.nan
        r = M.evaluate({"x": u}, self.correct, metrics=["auroc"], bootstrap=M.Bootstrap(50))["x"]["auroc"]
        assert r.n_missing == 10 and r.n == 390

    def test_single_class_gives_nan_not_crash(self):
        with pytest.warns(RuntimeWarning, match="single class"):
            out = M.evaluate({"x": self.good}, np.ones(400), bootstrap=M.Bootstrap(20))
        assert np.isnan(out["x"]["auroc"].value) and np.isnan(out["x"]["prr"].value)
        assert out["x"]["auroc"].n_incorrect == 0

    def test_paired_difference_detects_a_real_gap(self):
        d = M.paired_difference(self.good, self.noise, self.correct, bootstrap=M.Bootstrap(300))
        assert d.difference == pytest.approx(d.value_a - d.value_b)
        assert d.ci_low > 0 and d.p_value < 0.01

    def test_paired_difference_of_same_scores_is_zero(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            d = M.paired_difference(self.noise, self.noise, self.correct, bootstrap=M.Bootstrap(100))
        assert d.difference == 0 and d.ci_low == 0 and d.ci_high == 0 and d.p_value == 1.0

    def test_paired_difference_between_llms(self):
        other_correct = np.roll(self.correct, 1)
        d = M.paired_difference(
            self.good, self.good, self.correct, correct_b=other_correct, bootstrap=M.Bootstrap(100)
        )
        assert d.value_b == pytest.approx(M.auroc(self.good, other_correct))

    def test_paired_difference_ece(self):
        d = M.paired_difference(self.good, self.noise, self.correct, metric="ece", bootstrap=M.Bootstrap(100))
        assert d.value_a == pytest.approx(M.ece(self.good, self.correct))

    def test_paired_needs_same_questions(self):
        with pytest.raises(ValueError, match="same"):
            M.paired_difference(self.good, self.good[:10], self.correct)


class TestBadInput:
    def test_shapes(self):
        with pytest.raises(ValueError, match="3 values but correct has 2"):
            M.auroc([1, 2, 3], [0, 1])
        with pytest.raises(ValueError, match="1-D"):
            M.auroc(np.ones((2, 2)), np.ones((2, 2)))
        with pytest.raises(ValueError, match="empty"):
            M.auroc([], [])

    def test_labels_must_be_binary(self):
        with pytest.raises(ValueError, match="0/1"):
            M.auroc([1, 2], [0, 2])
        with pytest.raises(ValueError, match="0/1"):
            M.auroc([1, 2], [0, np.nan])

    def test_infinite_scores(self):
        with pytest.raises(ValueError, match="infinite"):
            M.auroc([1, np.inf], [0, 1])

    def test_registry(self):
        assert set(M.names()) >= {"auroc", "ece", "prr", "auarc"}
        assert M.get("ece").calibrated and not M.get("ece").higher_is_better


def reference_fit_predict(calibrator, u_fit, y_fit, u_new):
    """scikit-learn calibrators on explicit data, Platt solved tightly (the library's Newton solver is exact)."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    if calibrator == "isotonic":
        model = IsotonicRegression(increasing=False, y_min=0.0, y_max=1.0, out_of_bounds="clip")
        return model.fit(u_fit, y_fit).predict(u_new)
    if np.all(y_fit == y_fit[0]):
        return np.full(len(u_new), float(y_fit[0]))
    center, scale = u_fit.mean(), u_fit.std()
    model = LogisticRegression(C=np.inf, tol=1e-12, max_iter=100_000).fit(
        ((u_fit - center) / scale)[:, None], y_fit
    )
    return model.predict_proba(((u_new - center) / scale)[:, None])[:, 1]


def slow_refit_ece(u, correct, bootstrap, protocol):
    """The per-resample refit spelled out: for each resample, the explicit multiset of questions (copies
    repeated), split by the resample's folds, calibrators fitted on the copies in the other folds, ECE of
    the scored copies; a resample whose scored copies hold one class gives NaN."""
    u, correct = np.asarray(u, float), np.asarray(correct, float)
    n = len(u)
    counts, folds = bootstrap.counts(n), bootstrap.folds(n, protocol)
    out = []
    for r in range(len(counts)):
        idx = np.repeat(np.arange(n), counts[r].astype(int))
        idx = idx[np.isfinite(u[idx])]
        fold, uu, yy = folds[r, idx], u[idx], correct[idx]
        confidence = np.full(len(idx), np.nan)
        for k in range(protocol.n_folds) if protocol.split == "crossfit" else [1]:
            fit, scored = fold != k, fold == k
            if scored.any() and fit.any():
                confidence[scored] = reference_fit_predict(protocol.calibrator, uu[fit], yy[fit], uu[scored])
        keep = np.isfinite(confidence)
        if len(np.unique(yy[keep])) < 2:
            out.append(np.nan)
            continue
        out.append(ece_weighted(confidence[keep], yy[keep], np.ones((1, keep.sum())), protocol.n_bins)[0])
    return np.array(out)


def synthetic_run(n, seed, ties=False):
    """Scores with AUROC ~0.7 (incorrect answers 0.74 sd higher), accuracy 0.6."""
    rng = np.random.default_rng(seed)
    correct = (rng.random(n) < 0.6).astype(int)
    u = rng.normal(size=n) + 0.74 * (1 - correct)
    return (np.round(2 * u) if ties else u), correct


class TestRefitPerResample:
    @pytest.mark.parametrize(
        "split,n_folds,ties,n",
        [
            ("crossfit", 2, False, 40),
            ("crossfit", 2, True, 40),
            ("crossfit", 3, False, 60),
            ("holdout", 2, True, 50),
        ],
    )
    def test_isotonic_matches_explicit_reference(self, split, n_folds, ties, n):
        u, correct = synthetic_run(n, seed=n + n_folds, ties=ties)
        u = u.astype(float)
        u[3] = np.nan  # no score: neither fitted nor scored
        protocol = M.CalibrationProtocol(split=split, n_folds=n_folds, refit="per_resample")
        b = M.Bootstrap(n_resamples=40, seed=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = slow_refit_ece(u, correct, b, protocol)
        plan = (b.counts(n), b.folds(n, protocol))
        got = M.bootstrap._refit_resampled(M.get("ece"), u, plan, y=correct.astype(float), protocol=protocol)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
        r = M.evaluate({"u": u}, correct, metrics=["ece"], bootstrap=b, protocol=protocol)["u"]["ece"]
        assert (r.ci_low, r.ci_high) == pytest.approx(b.interval(expected), abs=1e-12)
        assert r.n_valid_resamples == int(np.isfinite(expected).sum())

    def test_platt_matches_explicit_reference(self):
        u, correct = synthetic_run(150, seed=1)
        protocol = M.CalibrationProtocol(calibrator="platt", refit="per_resample")
        b = M.Bootstrap(n_resamples=20, seed=0)
        expected = slow_refit_ece(u, correct, b, protocol)
        got = M.bootstrap._refit_resampled(
            M.get("ece"),
            u,
            (b.counts(150), b.folds(150, protocol)),
            y=correct.astype(float),
            protocol=protocol,
        )
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)

    def test_calibrate_resamples_scores_every_drawn_question_with_a_held_out_calibrator(self):
        u, correct = synthetic_run(30, seed=2)
        protocol = M.CalibrationProtocol()
        b = M.Bootstrap(n_resamples=5, seed=1)
        counts, folds = b.counts(30), b.folds(30, protocol)
        conf = M.calibrate_resamples(u, correct, counts, folds, protocol)
        np.testing.assert_array_equal(np.isfinite(conf), counts > 0)
        r = 2
        drawn = np.flatnonzero(counts[r] > 0)
        for k in range(2):
            fit, scored = drawn[folds[r, drawn] != k], drawn[folds[r, drawn] == k]
            w = counts[r, fit]
            expected = reference_fit_predict(
                "isotonic",
                np.repeat(u[fit], w.astype(int)),
                np.repeat(correct[fit], w.astype(int)),
                u[scored],
            )
            np.testing.assert_allclose(conf[r, scored], expected, atol=1e-12)

    def test_resample_folds_keep_copies_together_balanced_and_seeded(self):
        b = M.Bootstrap(n_resamples=50, seed=4)
        counts = b.counts(101)
        for n_folds in (2, 3):
            folds = M.CalibrationProtocol(n_folds=n_folds).resample_folds(counts, seed=4)
            assert folds.shape == counts.shape and folds.dtype == np.int8
            np.testing.assert_array_equal(folds < 0, counts == 0)  # one fold per drawn question
            for row in folds:
                sizes = np.bincount(row[row >= 0], minlength=n_folds)
                assert sizes.max() - sizes.min() <= 1  # distinct questions split evenly
        holdout = M.CalibrationProtocol(split="holdout", holdout_fraction=0.25).resample_folds(counts)
        n_distinct = (counts > 0).sum(axis=1)
        np.testing.assert_array_equal((holdout == 0).sum(axis=1), np.round(0.25 * n_distinct))
        p = M.CalibrationProtocol()
        np.testing.assert_array_equal(p.resample_folds(counts, 4), p.resample_folds(counts, 4))
        assert not np.array_equal(p.resample_folds(counts, 4), p.resample_folds(counts, 5))
        assert not np.array_equal(
            p.resample_folds(counts), M.CalibrationProtocol(seed=1).resample_folds(counts)
        )
        assert b.folds(101, p) is b.folds(101, p)  # drawn once per run, shared by every estimator

    def test_refit_intervals_are_at_least_as_wide_as_once(self):
        # statistical property, generous margin: the measured ratio is ~1.5 (bench/ece_refit.py)
        b = M.Bootstrap(n_resamples=200)
        ratios = []
        for seed in range(4):
            u, correct = synthetic_run(300, seed=10 + seed)
            width = {}
            for refit in ("once", "per_resample"):
                protocol = M.CalibrationProtocol(refit=refit)
                r = M.evaluate({"u": u}, correct, metrics=["ece"], bootstrap=b, protocol=protocol)["u"]["ece"]
                width[refit] = r.ci_high - r.ci_low
            ratios.append(width["per_resample"] / width["once"])
        assert np.mean(ratios) >= 1.0, ratios

    def test_point_estimate_and_result_fields(self):
        u, correct = synthetic_run(200, seed=5)
        b = M.Bootstrap(n_resamples=100)
        out = {
            refit: M.evaluate({"u": u}, correct, bootstrap=b, protocol=M.CalibrationProtocol(refit=refit))[
                "u"
            ]
            for refit in ("once", "per_resample")
        }
        assert out["once"]["ece"].value == out["per_resample"]["ece"].value == M.ece(u, correct)
        for refit, per in out.items():
            assert per["ece"].calibration_refit == refit and per["auroc"].calibration_refit is None
            assert per["auroc"].ci_method == "percentile bootstrap, 100 resamples, 95%"
            assert per["ece"].ci_method.startswith(
                "percentile bootstrap, 100 resamples, 95%; isotonic calibrator"
            )
            assert ("refitted in every resample" in per["ece"].ci_method) == (refit == "per_resample")
            d = per["ece"].as_dict()
            old_keys = {"metric", "value", "ci_low", "ci_high", "n", "n_correct", "n_incorrect", "n_missing"}
            assert old_keys | {"n_valid_resamples", "calibration_refit", "ci_method"} == set(d)
        assert out["per_resample"]["auroc"] == out["once"]["auroc"]  # other metrics untouched
        assert M.CalibrationProtocol().refit == "once"

    def test_one_class_resamples_are_nan_and_counted(self):
        # 2 incorrect answers in 25: many resamples draw none of them
        u = np.linspace(0, 1, 25)
        correct = np.ones(25, dtype=int)
        correct[[5, 20]] = 0
        b = M.Bootstrap(n_resamples=200, seed=0)
        protocol = M.CalibrationProtocol(refit="per_resample")
        r = M.evaluate({"u": u}, correct, metrics=["ece"], bootstrap=b, protocol=protocol)["u"]["ece"]
        drawn_incorrect = b.counts(25)[:, [5, 20]].sum(axis=1)
        assert r.n_valid_resamples == int((drawn_incorrect > 0).sum()) < 200
        assert np.isfinite(r.value) and r.ci_low <= r.ci_high
        with pytest.warns(RuntimeWarning, match="single class"):
            one = M.evaluate({"u": u}, np.ones(25), metrics=["ece"], bootstrap=b, protocol=protocol)["u"][
                "ece"
            ]
        assert one.n_valid_resamples == 0 and np.isnan(one.ci_low) and np.isnan(one.ci_high)

    def test_missing_scores_and_tiny_runs(self):
        u, correct = synthetic_run(60, seed=6)
        u[:10] = np.nan
        protocol = M.CalibrationProtocol(refit="per_resample")
        r = M.evaluate({"u": u}, correct, metrics=["ece"], bootstrap=M.Bootstrap(50), protocol=protocol)["u"][
            "ece"
        ]
        assert r.n_missing == 10 and r.n == 50 and r.n_valid_resamples == 50
        tiny = M.evaluate(
            {"u": [0.1, 0.9, 0.5]}, [1, 0, 1], metrics=["ece"], bootstrap=M.Bootstrap(30), protocol=protocol
        )
        assert tiny["u"]["ece"].n_valid_resamples <= 30  # two questions per fold at most: NaN, never a crash
        for calibrator in ("isotonic", "platt"):
            with pytest.warns(RuntimeWarning, match="single class"):  # no score at all: no class either
                none = M.evaluate(
                    {"u": [np.nan] * 3},
                    [1, 0, 1],
                    metrics=["ece"],
                    bootstrap=M.Bootstrap(10),
                    protocol=M.CalibrationProtocol(calibrator=calibrator, refit="per_resample"),
                )["u"]["ece"]
            assert none.n_missing == 3 and none.n_valid_resamples == 0 and np.isnan(none.value)

    def test_paired_difference_refits_on_shared_resamples(self):
        u, correct = synthetic_run(200, seed=7)
        protocol = M.CalibrationProtocol(refit="per_resample")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            same = M.paired_difference(
                u, u, correct, metric="ece", bootstrap=M.Bootstrap(100), protocol=protocol
            )
        assert same.difference == 0 and same.ci_low == 0 and same.ci_high == 0
        assert same.calibration_refit == "per_resample" and "refitted" in same.ci_method
        noise = np.random.default_rng(0).normal(size=200)
        d = M.paired_difference(
            u, noise, correct, metric="ece", bootstrap=M.Bootstrap(100), protocol=protocol
        )
        assert d.value_a == pytest.approx(M.ece(u, correct)) and d.ci_low <= d.difference <= d.ci_high

    def test_ece_weighted_accepts_one_confidence_per_resample(self):
        rng = np.random.default_rng(0)
        conf, correct = rng.random((6, 40)), rng.integers(0, 2, 40).astype(float)
        counts = rng.integers(0, 3, (6, 40)).astype(float)
        rows = [ece_weighted(conf[r], correct, counts[r : r + 1], 7)[0] for r in range(6)]
        np.testing.assert_allclose(ece_weighted(conf, correct, counts, 7), rows, rtol=1e-12)

    def test_bad_refit(self):
        with pytest.raises(ValueError, match="refit"):
            M.CalibrationProtocol(refit="always")
        with pytest.raises(ValueError, match="must both be"):
            M.calibrate_resamples([0.1, 0.2], [0, 1], np.ones((2, 2)), np.zeros((3, 2)))


def test_an_evaluation_computes_auarc_once_for_prr_and_auarc(monkeypatch):
    """PRR is declared derived from AUARC: evaluating both on a score runs AUARC's weighted core once on all
    questions and once on the resamples (not twice each), and PRR equals its direct computation."""
    from dataclasses import replace

    from semuq_eval.metrics import Bootstrap, evaluate
    from semuq_eval.metrics.base import registry

    calls = []

    def counting(u, correct, counts):
        calls.append(counts.shape)
        return auarc_weighted(u, correct, counts)

    monkeypatch.setitem(registry._entries, "auarc", replace(registry.get("auarc"), weighted=counting))
    rng = np.random.default_rng(3)
    correct = rng.integers(0, 2, 120).astype(float)
    u = rng.normal(size=120) + (1 - correct)
    u[:5] = np.nan
    bootstrap = Bootstrap(n_resamples=200)
    out = evaluate({"u": u}, correct, metrics=["prr", "auarc"], bootstrap=bootstrap)["u"]
    assert sorted(calls) == [(1, 120), (200, 120)]
    keep = np.isfinite(u)
    counts = bootstrap.counts(120) * keep
    direct = prr_weighted(np.where(keep, u, 0.0), correct, keep[None].astype(float))[0]
    assert out["prr"].value == pytest.approx(direct, abs=1e-15)
    resampled = prr_weighted(np.where(keep, u, 0.0), correct, counts)
    assert (out["prr"].ci_low, out["prr"].ci_high) == tuple(bootstrap.interval(resampled))
