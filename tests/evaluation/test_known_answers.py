"""Hand-computed examples and invariants, one or more per metric function."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsynth.errors import InputError
from dpsynth.evaluation import graph, ml_efficacy, quality, similarity, unsupervised
from dpsynth.evaluation._prep import hist_pair, infer_kinds

probs = st.lists(st.floats(0.0, 1.0), min_size=2, max_size=6).filter(lambda v: sum(v) > 1e-6)


# ------------------------------------------------------------------ similarity (seeds 000, 002)
def test_jsd_hand_computed():
    # P = (1, 0), Q = (1/2, 1/2), M = (3/4, 1/4): KL(P||M) = log2(4/3), KL(Q||M) = (log2(2/3) + 1)/2
    expected = (math.log2(4 / 3) + (math.log2(2 / 3) + 1) / 2) / 2
    assert similarity.js_divergence([1, 0], [0.5, 0.5]) == pytest.approx(expected)
    assert similarity.js_divergence([1, 0], [0, 1]) == pytest.approx(1.0)
    assert similarity.js_distance([1, 0], [0.5, 0.5]) == pytest.approx(math.sqrt(expected))


@settings(max_examples=60, deadline=None)
@given(probs, probs)
def test_jsd_bounded_and_symmetric(p, q):
    n = min(len(p), len(q))
    p, q = np.array(p[:n]) + 1e-12, np.array(q[:n]) + 1e-12
    d = similarity.js_divergence(p, q)
    assert 0.0 <= d <= 1.0
    assert d == pytest.approx(similarity.js_divergence(q, p), abs=1e-12)
    assert similarity.js_divergence(p, p) == pytest.approx(0.0, abs=1e-12)


def test_theils_u_hand_computed():
    assert similarity.theils_u(list("aabb"), [1, 1, 2, 2]) == pytest.approx(1.0)  # y determines x
    assert similarity.theils_u(list("aabb"), [1, 2, 1, 2]) == pytest.approx(0.0)  # independent
    assert similarity.theils_u(list("aaaa"), [1, 2, 1, 2]) == 1.0  # H(x) = 0
    # x = (a,a,b,b), y = (1,1,1,2): H(x) = ln 2, H(x|y) = 3/4 H(2/3,1/3)
    hx = math.log(2)
    h = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    assert similarity.theils_u(list("aabb"), [1, 1, 1, 2]) == pytest.approx((hx - 0.75 * h) / hx)


def test_correlation_ratio_hand_computed():
    assert similarity.correlation_ratio(list("aabb"), [1, 1, 3, 3]) == pytest.approx(1.0)
    assert similarity.correlation_ratio(list("aabb"), [1, 3, 1, 3]) == pytest.approx(0.0)
    # mean 2, total SS 8, group means 1 (n=2) and 4 (n=1): between SS 6
    assert similarity.correlation_ratio(list("aab"), [0, 2, 4]) == pytest.approx(math.sqrt(6 / 8))
    assert math.isnan(similarity.correlation_ratio(list("ab"), [5, 5]))


def test_scaled_wasserstein_uses_real_bounds():
    assert similarity.scaled_wasserstein([0, 10], [10, 10]) == pytest.approx(0.5)
    assert similarity.scaled_wasserstein([0, 10], [0, 10]) == 0.0
    assert similarity.scaled_wasserstein([0, 10], [20, 20]) == pytest.approx(1.5)  # outside the real range


def test_association_matrix_mixed():
    df = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [2.0, 4, 6, 8], "c": list("aabb")})
    m = similarity.association_matrix(df, {"x": "continuous", "y": "continuous", "c": "categorical"})
    assert m.loc["x", "y"] == pytest.approx(1.0)
    assert m.loc["c", "c"] == 1.0
    assert m.loc["c", "x"] == pytest.approx(similarity.correlation_ratio(list("aabb"), [1, 2, 3, 4]))


# ------------------------------------------------------------------ unsupervised (seeds 003, 001)
def test_tvd_and_kway_hand_computed():
    assert unsupervised.tvd([0.5, 0.5], [1, 0]) == pytest.approx(0.5)
    r = [np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])]
    s = [np.array([0, 0, 0, 0]), np.array([0, 1, 0, 1])]
    # real cells (0,0),(0,1),(1,0),(1,1) each 1/4; synthetic (0,0),(0,1) each 1/2 -> TVD 1/2
    assert unsupervised.kway_tvd(r, s) == pytest.approx(0.5)


def test_nist_bins_follow_the_formula():
    r, s = unsupervised.nist_bins(pd.Series([0.0, 50.0, 100.0]), pd.Series([-1.0, 99.9, np.nan]), "continuous")
    assert list(r) == [0, 50, 100]
    assert list(s[:2]) == [-1, 99]
    assert s[2] not in set(r)  # missing is a bin of its own


def test_decile_bins_cut_at_the_real_deciles():
    real = pd.Series(np.arange(100, dtype=float))  # deciles at 9.9, 19.8, ..., 89.1
    r, s = unsupervised.decile_bins(real, pd.Series([-5.0, 9.0, 10.0, 50.0, 1e9, np.nan]), "continuous")
    assert np.bincount(r).tolist() == [10] * 10  # ten equal bins of the real column
    assert list(s) == [0, 0, 1, 5, 9, -1]  # below, inside, above the range; missing a bin of its own
    spike = pd.Series([0.0] * 80 + list(range(1, 21)))  # 80% zeros: the lower deciles merge into one bin
    r, _ = unsupervised.decile_bins(spike, spike, "continuous")
    assert r[0] == 0 and (r[:80] == 0).all() and len(np.unique(r)) == 3


def test_kl_mu_hand_computed():
    value, mu = unsupervised.kl_mu([0.5, 0.5], [1.0, 0.0])
    assert mu == pytest.approx(math.exp(-2))
    expected = (0.5 + mu) * math.log((0.5 + mu) / (1 + mu)) + (0.5 + mu) * math.log((0.5 + mu) / mu)
    assert value == pytest.approx(expected)
    assert unsupervised.kl_mu([0.3, 0.7], [0.3, 0.7])[0] == pytest.approx(0.0)
    assert math.isnan(unsupervised.kl_mu([1.0, 0.0], [0.5, 0.5])[0])


def test_diversity_jsd_natural_log():
    assert unsupervised.diversity_jsd([1, 0], [0, 1]) == pytest.approx(math.log(2))


def test_bhattacharyya_hand_computed():
    assert unsupervised.bhattacharyya([0.5, 0.5], [1, 0]) == pytest.approx(-math.log(math.sqrt(0.5)))
    assert unsupervised.bhattacharyya([0.2, 0.8], [0.2, 0.8]) == pytest.approx(0.0, abs=1e-12)
    assert math.isinf(unsupervised.bhattacharyya([1, 0], [0, 1]))


def _quick(real, synth, schema=None, metrics=("unsupervised",)):
    from dpsynth.evaluation import evaluate

    return evaluate(real, synth, schema=schema, metrics=list(metrics), seeds=(0,), n_jobs=1)


def test_dimwise_probability_hand_computed():
    # color: real a, a, b, b (1/2, 1/2) vs synthetic a, b, b, b (1/4, 3/4): |difference| 1/4 per dimension
    real = pd.DataFrame({"color": list("aabb")})
    res = _quick(real, pd.DataFrame({"color": list("abbb")}))
    dims = res.metrics("dimwise.probability").set_index("subject").value
    assert dims["color=a"] == pytest.approx(0.25) and dims["color=b"] == pytest.approx(0.25)
    assert dims["(all)"] == pytest.approx(0.25)


def _xy_schema():
    from dpsynth.data.schema import Column, Schema

    return Schema(columns=(Column("x", "continuous", lower=-10, upper=10),
                           Column("y", "continuous", lower=-10, upper=10)))


def test_pca_tvd_hand_computed():
    # four distinct points (corners of the unit square), real counts (4, 3, 2, 1), synthetic (1, 2, 3, 4). PCA of
    # two columns is a rotation: the corners stay >= 1 apart while a bin is at most sqrt(2)/20 wide, so each
    # point has its own 2-D bin and TVD = (|.4-.1| + |.3-.2| + |.2-.3| + |.1-.4|) / 2 = 0.4
    corners = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]

    def table(counts):
        return pd.DataFrame([c for c, k in zip(corners, counts) for _ in range(k)], columns=["x", "y"])

    res = _quick(table((4, 3, 2, 1)), table((1, 2, 3, 4)), schema=_xy_schema())
    assert res.value("pca.tvd") == pytest.approx(0.4)
    assert _quick(table((4, 3, 2, 1)), table((4, 3, 2, 1)), schema=_xy_schema()).value("pca.tvd") == 0.0


def test_pearson_diff_hand_computed():
    # real r(x, y) = 1, synthetic r(x, y) = 0 (x deviations (-1.5, -.5, .5, 1.5) . y (1, -1, -1, 1) = 0):
    # the matrices differ by 1 in two entries -> Frobenius norm sqrt(2)
    real = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [2.0, 4, 6, 8]})
    synth = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [1.0, -1, -1, 1]})
    assert _quick(real, synth, schema=_xy_schema()).value("correlation.pearson_diff") == pytest.approx(math.sqrt(2))


def test_association_diff_hand_computed():
    kinds = {"x": "continuous", "y": "continuous", "c": "categorical"}
    real = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [2.0, 4, 6, 8], "c": list("aabb")})
    synth = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [1.0, -1, -1, 1], "c": list("abab")})
    # real: r(x,y) = 1; eta(c, x) = eta(c, y) = sqrt(between 4 / total 5). synthetic: r = 0; eta(c, x): group
    # means 2 and 3 around 2.5 -> sqrt(1/5); eta(c, y) = 0 (both group means 0). Each entry appears twice:
    # norm = sqrt(2 (1^2 + (sqrt(.8) - sqrt(.2))^2 + .8)) = sqrt(2 (1 + .2 + .8)) = 2
    a, b = similarity.association_matrix(real, kinds), similarity.association_matrix(synth, kinds)
    assert a.loc["x", "c"] == pytest.approx(math.sqrt(0.8)) and b.loc["c", "x"] == pytest.approx(math.sqrt(0.2))
    assert similarity.matrix_diff_row("similarity.association_diff", a, b).value == pytest.approx(2.0)


def test_pca_projection_is_fitted_on_real():
    rng = np.random.default_rng(0)
    real = rng.normal(size=(200, 3)) * [5, 1, 0.1]
    a, b = unsupervised.pca_projection(real, real + [100, 0, 0])
    assert np.allclose(b[:, 0] - a[:, 0], 100, atol=1e-6) or np.allclose(b[:, 0] - a[:, 0], -100, atol=1e-6)


def test_hist_pair_overflow_bins_count_out_of_range_mass():
    labels, p, q = hist_pair(pd.Series([0.0, 1.0]), pd.Series([2.0, 0.5]), "continuous", bins=2)
    assert p.sum() == pytest.approx(1) and q.sum() == pytest.approx(1)
    assert q[-1] == pytest.approx(0.5) and p[-1] == 0  # "> max" bin
    assert labels[0].startswith("<")


def test_kinds_rule():
    df = pd.DataFrame({"a": [1.5, 2.5] * 10 + list(range(20)), "b": ["x", "y"] * 20, "c": [0, 1] * 20,
                       "d": [True, False] * 20})
    assert infer_kinds(df) == {"a": "continuous", "b": "categorical", "c": "categorical", "d": "categorical"}


# ------------------------------------------------------------------ quality (seed 004)
def test_quality_similarities_identical_and_hand_computed():
    x = pd.Series(np.arange(100.0))
    assert quality.column_similarity(x, x.sample(frac=1, random_state=1), "continuous") == 1.0
    assert quality.statistical_similarity(x, x[::-1]) == 1.0
    ks = quality.ks_similarity(pd.Series([0.0, 0, 1, 1]), pd.Series([1.0, 1, 1, 1]), "continuous")
    assert ks == pytest.approx(0.5)
    assert quality.ks_similarity(pd.Series(list("aabb")), pd.Series(list("bbbb")), "categorical") == pytest.approx(0.5)
    cats = pd.Series(list("aaabbc") * 10)
    assert quality.column_similarity(cats, cats.sample(frac=1, random_state=2), "categorical") == pytest.approx(1.0)
    m = pd.DataFrame(np.eye(3) + 0.1)
    assert quality.correlation_similarity(m, m) == 1.0


def test_quality_correlation_similarity_hand_computed():
    def sym(a12, a13, a23):
        return pd.DataFrame([[1, a12, a13], [a12, 1, a23], [a13, a23, 1]], dtype=float)

    # off-diagonal pairs (0.1, 0.5, 0.9) vs (0.2, 0.4, 0.9), each twice: deviations from the means (0.5, 0.5)
    # are (-.4, 0, .4) and (-.3, -.1, .4): r = 0.28 / sqrt(0.32 * 0.26)
    value = quality.correlation_similarity(sym(0.1, 0.5, 0.9), sym(0.2, 0.4, 0.9))
    assert value == pytest.approx(0.28 / math.sqrt(0.32 * 0.26))
    assert quality.correlation_similarity(sym(0.1, 0.5, 0.9), sym(0.9, 0.5, 0.1)) == 0.0  # r = -1, clipped


def test_quality_statistical_similarity_hand_computed():
    # real (min, max, median, mean, std) = (1, 10, 3, 4, sqrt 10): ranks (1, 5, 2, 4, 3)
    # synthetic = (0, 20, 0, 4, 8): ranks (1.5, 5, 1.5, 3, 4); Spearman = Pearson of ranks = 8.5 / sqrt(10 * 9.5)
    value = quality.statistical_similarity(pd.Series([1.0, 2, 3, 4, 10]), pd.Series([0.0, 0, 0, 0, 20]))
    assert value == pytest.approx(8.5 / math.sqrt(95))


def test_quality_column_similarity_non_trivial():
    u = pd.Series(np.linspace(0.0, 1.0, 10001))
    # a linear map keeps the quantile function linear: r = 1 for different data
    assert quality.column_similarity(u, 3 * u + 5, "continuous") == pytest.approx(1.0)
    # quantiles of U vs U^2 (U uniform): corr(U, U^2) = (1/12) / sqrt(1/12 * 4/45) = sqrt(540) / 24
    assert quality.column_similarity(u, u ** 2, "continuous") == pytest.approx(math.sqrt(540) / 24, abs=1e-3)
    # categorical: real a, a, b, b vs synthetic a, b, b, b. Rank codes at 1,000 levels: real 0 on 500 levels then
    # 1; synthetic 0 on 250 levels then 1. U(real | synth) = (ln 2 - 3/4 H(1/3, 2/3)) / ln 2
    h = -(1 / 3 * math.log(1 / 3) + 2 / 3 * math.log(2 / 3))
    value = quality.column_similarity(pd.Series(list("aabb")), pd.Series(list("abbb")), "categorical")
    assert value == pytest.approx((math.log(2) - 0.75 * h) / math.log(2))


def test_quality_column_utility_and_fold_score_hand_computed():
    # 90th percentiles (linear interpolation): real (0.8, 0.9, 1.0) -> 0.98, synthetic (0.49,) * 3 -> 0.49
    assert quality.column_utility([0.8, 0.9, 1.0], [0.49] * 3) == (pytest.approx(0.5), "")
    assert quality.column_utility([0.5, 0.5, 0.5], [0.9, 0.9, 0.9]) == (1.0, "")  # capped at 1
    value, note = quality.column_utility([0.0, 0.0, 0.0], [0.5] * 3)
    assert math.isnan(value) and "real-trained score is 0" in note
    value, note = quality.column_utility([0.8, 0.9, 1.0], [np.nan] * 3)
    assert value == 0.0 and "scored 0" in note
    # one training class: the constant predictor of "x" on test labels x, x, y, y: F1_x = 2/3, F1_y = 0 -> 1/3
    X = np.zeros((5, 1), dtype=np.float32)
    y_test = np.array(["x", "x", "y", "y"], dtype=object)
    f1 = quality._fold_score("classification", X, np.array(["x"] * 5, dtype=object), X[:4], y_test, 0)
    assert f1 == pytest.approx(1 / 3)


def test_discriminability_score_formula_and_bayes_optimal_case():
    # 100 (1 - 2 mean |p - 0.5|): |p - 0.5| = (0, .25, .25, .5), mean 0.25 -> 50
    assert quality.discriminability_score([0.5, 0.75, 0.25, 1.0]) == pytest.approx(50.0)
    # real rows all have x = 0; half the synthetic rows x = 0, half x = 1 (plus a noise column). The best
    # probabilities are p(x = 1) = 1 and p(x = 0) = (n/2) / (n + n/2) = 1/3, so the score is
    # 100 (1 - 2 (1.5 n * 1/6 + 0.5 n * 1/2) / (2 n)) = 50; a good classifier gets close.
    rng = np.random.default_rng(0)
    n = 1000
    real = np.c_[np.zeros(n), rng.random(n)].astype(np.float32)
    synth = np.c_[np.repeat([0.0, 1.0], n // 2), rng.random(n)].astype(np.float32)
    assert quality.discriminability(real, synth, np.arange(2 * n), seed=0) == pytest.approx(50.0, abs=5.0)


def test_discriminability_identical_is_exactly_perfect():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3)).astype(np.float32)
    groups = np.r_[np.arange(200), np.arange(200)]  # row i of each table is the same row
    assert quality.discriminability(x, x.copy(), groups, seed=0, executor="sequential") == 100.0
    far = quality.discriminability(x, x + 10, np.arange(400), seed=0, executor="sequential")
    assert far < 10.0


# ------------------------------------------------------------------ ML efficacy scores (seeds 000, 002)
def test_classification_scores_hand_computed():
    classes = np.array(["a", "b"], dtype=object)
    y = np.array(["a", "b", "b", "a"], dtype=object)
    proba = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]])
    s = ml_efficacy.classification_scores(y, proba, classes, positive="b")
    assert s["accuracy"][0] == pytest.approx(0.75)
    assert s["f1"][0] == pytest.approx(2 / 3)  # tp 1, fn 1, fp 0
    assert s["auc"][0] == pytest.approx(1.0)  # positives' scores 0.8, 0.4 > negatives' 0.1, 0.3
    one = ml_efficacy.classification_scores(np.array(["a", "a"], dtype=object), proba[:2], classes, positive="b")
    assert math.isnan(one["auc"][0]) and "one class" in one["auc"][1]


def test_binary_scores_with_a_synthetic_only_label_hand_computed():
    """A binary real target whose synthetic rows also hold "__other__" (a DP-discovered slot): the classifier
    knows three classes; predicting "__other__" is a wrong, non-positive prediction (this used to raise
    "Target is multiclass but average='binary'")."""
    classes = np.array(["<=50K", ">50K", "__other__"], dtype=object)
    y = np.array(["<=50K", ">50K", ">50K", "<=50K"], dtype=object)
    proba = np.array([[0.1, 0.1, 0.8], [0.2, 0.7, 0.1], [0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    s = ml_efficacy.classification_scores(y, proba, classes, positive=">50K")
    # predictions: __other__, >50K, __other__, <=50K -> 2 right of 4; positive: tp 1, fn 1, fp 0 -> F1 2/3
    assert s["accuracy"][0] == pytest.approx(0.5)
    assert s["f1"][0] == pytest.approx(2 / 3)
    assert s["auc"][0] == pytest.approx(3.5 / 4)  # positives 0.7, 0.3 vs negatives 0.1, 0.3: 3 wins, 1 tie


def test_average_precision_and_auc_hand_computed():
    classes = np.array(["a", "b"], dtype=object)
    y = np.array(["b", "a", "b", "a"], dtype=object)
    p_b = np.array([0.8, 0.7, 0.4, 0.1])
    s = ml_efficacy.classification_scores(y, np.c_[1 - p_b, p_b], classes, positive="b")
    # ranked: 0.8 (pos: precision 1, recall 1/2), 0.7 (neg), 0.4 (pos: precision 2/3, recall 1), 0.1 (neg)
    assert s["ap"][0] == pytest.approx(0.5 * 1 + 0.5 * 2 / 3)
    assert s["auc"][0] == pytest.approx(3 / 4)  # pairs pos > neg: 0.8 > 0.7, 0.8 > 0.1, 0.4 > 0.1


def test_multiclass_macro_scores_hand_computed():
    classes = np.array(["a", "b", "c"], dtype=object)
    y = np.array(list("abcabc"), dtype=object)
    proba = np.array([[.6, .3, .1], [.2, .5, .3], [.1, .6, .3], [.5, .4, .1], [.3, .2, .5], [.2, .1, .7]])
    s = ml_efficacy.classification_scores(y, proba, classes, positive=None)
    # predictions a, b, b, a, c, c: accuracy 4/6; F1 a = 1, b = 1/2 (tp 1, fp 1, fn 1), c = 1/2
    assert s["accuracy"][0] == pytest.approx(4 / 6)
    assert s["f1"][0] == pytest.approx((1 + 0.5 + 0.5) / 3)
    # one-vs-rest AUC: a 1; b: positives (.5, .2) vs negatives (.3, .6, .4, .1) win 4 of 8 pairs; c: positives
    # (.3, .7) vs (.1, .3, .1, .5) win 6.5 of 8 (a tie counts 1/2)
    assert s["auc"][0] == pytest.approx((1 + 4 / 8 + 6.5 / 8) / 3)
    # AP: a 1; b: .6 neg, .5 pos (P 1/2, R 1/2), .4, .3 neg, .2 pos (P 2/5, R 1) -> .45;
    # c: .7 pos (P 1, R 1/2), .5 neg, the tie at .3 (one pos, one neg) -> P 2/4, R 1 -> .75
    assert s["ap"][0] == pytest.approx((1 + 0.45 + 0.75) / 3)


def test_regression_scores_hand_computed_and_constant_target():
    s = ml_efficacy.regression_scores(np.array([1.0, 2, 3]), np.array([1.0, 2, 4]))
    assert s["mae"][0] == pytest.approx(1 / 3)
    assert s["r2"][0] == pytest.approx(1 - 1 / 2)  # SSE 1, SST 2
    # residuals (0, 0, -1): variance 1/3 - 1/9 = 2/9; target variance 2/3 -> EVS = 1 - (2/9) / (2/3) = 2/3
    assert s["evs"][0] == pytest.approx(2 / 3)
    c = ml_efficacy.regression_scores(np.array([2.0, 2, 2]), np.array([1.0, 2, 3]))
    assert math.isnan(c["r2"][0]) and "constant" in c["r2"][1]


# ------------------------------------------------------------------ graph (seed 001)
def test_graph_metrics():
    g = nx.karate_club_graph()
    assert graph.degree_l1_error(g, g) == 0.0
    assert graph.edge_ratio(g, g) == 1.0
    # path a-b-c: degrees (1, 2, 1) -> P = (0, 2/3, 1/3); two disjoint edges: Q = (0, 1)
    assert graph.degree_l1_error([1, 2, 1], [1, 1, 1, 1]) == pytest.approx(2 / 3)
    assert graph.edge_ratio([1, 2, 1], [1, 1, 1, 1]) == pytest.approx(1.0)
    res = graph.evaluate_graph([0, 0], [[1, 1]])
    row = res.table[res.table.metric == "graph.edge_ratio"].iloc[0]
    assert math.isnan(row.value) and "no edges" in row.note
    with pytest.raises(InputError):
        graph.degree_distribution([1, -1])


# ------------------------------------------------------------------ dimension-wise prediction (seed 003)
def test_dimwise_predict_column_known_answers():
    from dpsynth.evaluation.dimwise import predict_column

    rng = np.random.default_rng(0)
    y = rng.choice(["a", "b"], size=200)
    X = np.c_[(y == "a"), rng.random(200)].astype(np.float32)
    s = predict_column("categorical", X, y, X, y, seed=0, n_jobs=1)
    assert s["f1"][0] == pytest.approx(1.0) and s["auc"][0] == pytest.approx(1.0)
    one = predict_column("categorical", X, np.full(200, "a"), X, y, seed=0, n_jobs=1)
    assert math.isnan(one["f1"][0]) and "no diversity" in one["f1"][1]
    t = 3.0 * X[:, 1] + 1.0
    assert predict_column("continuous", X, t, X, t, seed=0, n_jobs=1, y_center=t.mean(),
                          y_scale=t.std())["r2"][0] > 0.99
