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
from dpsynth.evaluate import graph, ml_efficacy, quality, similarity, unsupervised
from dpsynth.evaluate._prep import hist_pair, infer_kinds

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


def test_discriminability_identical_is_exactly_perfect():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3)).astype(np.float32)
    groups = np.r_[np.arange(200), np.arange(200)]  # row i of each table is the same row
    assert quality.discriminability(x, x.copy(), groups, seed=0, n_jobs=1) == 100.0
    far = quality.discriminability(x, x + 10, np.arange(400), seed=0, n_jobs=1)
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


def test_regression_scores_hand_computed_and_constant_target():
    s = ml_efficacy.regression_scores(np.array([1.0, 2, 3]), np.array([1.0, 2, 4]))
    assert s["mae"][0] == pytest.approx(1 / 3)
    assert s["r2"][0] == pytest.approx(1 - 1 / 2)  # SSE 1, SST 2
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
    from dpsynth.evaluate.dimwise import predict_column

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
