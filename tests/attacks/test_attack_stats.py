"""Known answers for the statistics: intervals against scipy, privacy gain and relative risk by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.metrics import roc_auc_score

from dpsynth.attacks.base import fit_threshold, membership_result
from dpsynth.attacks.stats import (
    auc_score,
    clopper_pearson_interval,
    privacy_gain,
    relative_risk,
    relative_risk_interval,
    wilson_interval,
)
from dpsynth.errors import InputError

CASES = [(0, 10), (1, 10), (5, 10), (10, 10), (3, 57), (500, 1000), (999, 1000), (17, 40)]


@pytest.mark.parametrize("k,n", CASES)
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_matches_scipy(k, n, level):
    ref = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    assert wilson_interval(k, n, confidence=level) == pytest.approx((ref.low, ref.high), abs=1e-12)


@pytest.mark.parametrize("k,n", CASES)
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_clopper_pearson_matches_scipy(k, n, level):
    ref = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    assert clopper_pearson_interval(k, n, confidence=level) == pytest.approx((ref.low, ref.high), abs=1e-10)


def test_interval_input_errors():
    with pytest.raises(InputError, match="0 <= k <= n"):
        wilson_interval(5, 3)
    with pytest.raises(InputError, match="confidence"):
        clopper_pearson_interval(1, 3, confidence=1.5)


def test_privacy_gain_by_hand():
    # seed 002: PG = (P_real - P_fake) / 2, P_real = 1 for membership
    assert privacy_gain(0.5) == 0.25  # chance: the paper's "close to 0.25" for DP models
    assert privacy_gain(1.0) == 0.0
    assert privacy_gain(0.7) == pytest.approx(0.15)
    assert privacy_gain(0.02, p_real=0.03) == pytest.approx(0.005)  # attribute inference
    with pytest.raises(InputError):
        privacy_gain(1.2)


def test_relative_risk_by_hand():
    assert relative_risk(0.6, 0.2) == pytest.approx(0.5)  # (0.6 - 0.2) / 0.8
    assert relative_risk(0.75, 0.5) == pytest.approx(0.5)  # membership: 2 acc - 1
    assert relative_risk(0.1, 0.1) == 0.0
    with pytest.raises(InputError, match="undefined"):
        relative_risk(1.0, 1.0)
    value, (lo, hi) = relative_risk_interval(30, 50, 10, 50)
    assert value == pytest.approx((0.6 - 0.2) / 0.8)
    assert lo < value < hi
    value, (lo, hi) = relative_risk_interval(75, 100, None, None, tau_control=0.5)
    w = wilson_interval(75, 100)
    assert value == pytest.approx(0.5) and (lo, hi) == pytest.approx((2 * w[0] - 1, 2 * w[1] - 1))


def test_membership_metrics_by_hand():
    labels = np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)
    decisions = np.array([1, 1, 1, 0, 1, 0, 0, 0], bool)
    scores = np.array([0.9, 0.8, 0.7, 0.2, 0.6, 0.3, 0.1, 0.05])
    r = membership_result("x", labels, decisions, scores)
    assert r.metric("accuracy") == 0.75 and r.metric("tpr") == 0.75 and r.metric("fpr") == 0.25
    assert r.metric("advantage") == pytest.approx(0.5)
    assert r.metric("privacy_gain") == pytest.approx((1 - 0.75) / 2)
    assert r.value == pytest.approx(0.5) and r.metric("relative_risk") == pytest.approx(0.5)
    assert r.metric("auc") == pytest.approx(roc_auc_score(labels, scores))
    assert r.details["tp"] == 3 and r.details["fp"] == 1


def test_auc_with_ties_matches_sklearn():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200).astype(bool)
    s = rng.integers(0, 5, 200).astype(float)
    assert auc_score(y, s) == pytest.approx(roc_auc_score(y, s))


def test_fit_threshold_breaks_ties_towards_the_highest_threshold():
    # cuts above 4 and above 2 are both 75% accurate: the docstring promises the higher one (fewer "member" guesses)
    scores = np.array([4.0, 3.0, 2.0, 1.0])
    labels = np.array([1, 0, 1, 0], bool)
    assert fit_threshold(scores, labels) == 4.0
    assert fit_threshold(np.array([1.0, 2.0]), np.array([0, 0], bool)) == np.inf  # no member: guess none


def test_membership_intervals_use_the_stated_level():
    from scipy.stats import norm

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 400).astype(bool)
    p = rng.uniform(size=400)
    for level in (0.8, 0.95, 0.99):
        r = membership_result("x", labels, labels, p.astype(float), p_correct=p, confidence=level)
        half = norm.ppf(0.5 + level / 2) * p.std(ddof=1) / np.sqrt(400)
        assert r.metrics["p_fake"].ci == pytest.approx((p.mean() - half, p.mean() + half))
        assert r.metrics["tpr"].level == pytest.approx(np.sqrt(level)) and r.metrics["accuracy"].level is None


def test_fit_threshold_maximises_accuracy():
    scores = np.array([5.0, 4.0, 3.0, 3.0, 2.0, 1.0])
    labels = np.array([1, 1, 0, 1, 0, 0], bool)
    t = fit_threshold(scores, labels)
    acc = np.mean((scores >= t) == labels)
    best = max(np.mean((scores >= c) == labels) for c in [*scores, np.inf])
    assert acc == best


def test_clustered_intervals_use_the_fit_as_unit():
    # 4 fits x 5 sets: sets of one fit are copies, so the evidence is 4 observations, not 20
    labels = np.repeat([1, 1, 0, 0], 5).astype(bool)
    decisions = np.repeat([1, 0, 0, 0], 5).astype(bool)
    clusters = np.repeat(np.arange(4), 5)
    flat = membership_result("x", labels, decisions, decisions.astype(float))
    clustered = membership_result("x", labels, decisions, decisions.astype(float), clusters=clusters)
    assert clustered.metric("accuracy") == flat.metric("accuracy") == 0.75
    lo, hi = clustered.metrics["accuracy"].ci
    from scipy.stats import t

    half = t.ppf(0.975, 3) * np.std([1, 0, 1, 1], ddof=1) / 2
    assert (lo, hi) == pytest.approx((max(0.0, 0.75 - half), min(1.0, 0.75 + half)))
    assert hi - lo > flat.metrics["accuracy"].ci[1] - flat.metrics["accuracy"].ci[0]
