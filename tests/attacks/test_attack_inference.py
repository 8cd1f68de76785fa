"""Attribute inference (seed 002 linear regression, anonymeter nearest neighbour), singling out, linkability."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpsynth.attacks.anonymeter_wrap import InferenceRisk, LinkabilityRisk, SinglingOutRisk
from dpsynth.attacks.attribute import GaussianLinearModel, LinearRegressionAttributeAttack
from dpsynth.errors import InputError


@pytest.fixture(scope="module")
def parts(adult):
    """Three disjoint, equally sized samples of one population: train, control, disjoint synthetic."""
    train_full, test_full = adult
    pop = pd.concat([train_full, test_full], ignore_index=True).sample(4500, random_state=5).reset_index(drop=True)
    parts = pop.iloc[:1500], pop.iloc[1500:3000], pop.iloc[3000:]
    return tuple(p.reset_index(drop=True) for p in parts)


@pytest.mark.anonymeter
def test_singling_out_copy_is_maximal(parts):
    train, control, _ = parts
    r = SinglingOutRisk(train, train, control=control, mode="univariate", n_attacks=200, seed=0).evaluate()
    assert r.kind == "singling_out" and r.value > 0.9 and r.metric("success_rate") > 0.9
    assert r.baseline < 0.2


@pytest.mark.anonymeter
def test_singling_out_disjoint_is_near_zero(parts):
    train, control, disjoint = parts
    r = SinglingOutRisk(train, disjoint, control=control, mode="univariate", n_attacks=200, seed=0).evaluate()
    assert r.value < 0.1 and r.ci[0] <= 0.02


@pytest.mark.anonymeter
def test_singling_out_multivariate_runs(parts):
    train, control, _ = parts
    r = SinglingOutRisk(train, train, control=control, mode="multivariate", n_attacks=50, max_attempts=5000,
                        seed=0).evaluate()
    assert r.attack == "singling_out_multivariate" and r.value > 0.5 and r.ci[0] > 0.2  # a copy singles out


@pytest.mark.anonymeter
def test_linkability_copy_beats_disjoint(parts):
    train, control, disjoint = parts
    cols = ["age", "education", "occupation", "race", "sex", "hours-per-week", "native-country", "fnlwgt"]
    aux = (cols[:4], cols[4:])
    hi = LinkabilityRisk(train[cols], train[cols], control=control[cols], aux_cols=aux, n_attacks=300,
                         seed=0).evaluate()
    lo = LinkabilityRisk(train[cols], disjoint[cols], control=control[cols], aux_cols=aux, n_attacks=300,
                         seed=0).evaluate()
    assert hi.value > lo.value + 0.2
    assert lo.ci[0] <= 0.02
    with pytest.raises(InputError, match="disjoint"):
        LinkabilityRisk(train, train, aux_cols=(["age"], ["age"]))


@pytest.mark.anonymeter
def test_nearest_neighbour_inference(parts):
    train, control, disjoint = parts
    hi = InferenceRisk(train, train, control=control, secret="income", n_attacks=300, seed=0).evaluate()
    lo = InferenceRisk(train, disjoint, control=control, secret="income", n_attacks=300, seed=0).evaluate()
    assert hi.kind == "attribute" and hi.value > 0.5
    assert lo.value < 0.15 and lo.ci[0] <= 0.05


def test_linear_model_recovers_coefficients():
    rng = np.random.default_rng(0)
    x = rng.normal(size=2000)
    g = rng.choice(["a", "b"], size=2000)
    y = 3.0 + 2.0 * x + np.where(g == "b", 5.0, 0.0) + rng.normal(scale=0.5, size=2000)
    m = GaussianLinearModel(pd.DataFrame({"x": x, "g": g, "y": y}), "y")
    assert m.sigma == pytest.approx(0.5, rel=0.1)
    pred = m.predict(pd.DataFrame({"x": [1.0, 1.0], "g": ["a", "b"], "y": [0.0, 0.0]}))
    assert pred == pytest.approx([5.0, 10.0], abs=0.1)


def test_linear_regression_privacy_gain_known_answers(parts):
    train, control, disjoint = parts
    copy = LinearRegressionAttributeAttack(train, train, sensitive="age", control=control, seed=0).evaluate()
    # synthetic == training data: the attacker infers exactly as well as with the raw data
    assert copy.metric("privacy_gain") == pytest.approx(0.0, abs=1e-12)
    assert copy.metric("p_real") == pytest.approx(copy.metric("p_fake"))
    other = LinearRegressionAttributeAttack(train, disjoint, sensitive="age", control=control, seed=0).evaluate()
    assert abs(other.metric("privacy_gain")) < 0.01  # same population: same inference power
    noise = train.assign(age=np.random.default_rng(0).integers(17, 91, len(train)))
    worse = LinearRegressionAttributeAttack(train, noise, sensitive="age", control=control, seed=0).evaluate()
    assert worse.metric("privacy_gain") > other.metric("privacy_gain")  # a useless release protects more
    assert "R_Test" in copy.notes


def test_linear_regression_needs_numeric(parts):
    train, control, _ = parts
    with pytest.raises(InputError, match="numeric sensitive"):
        LinearRegressionAttributeAttack(train, train, sensitive="income")


def _gaussian_frame(n: int, noise: float, rng: np.random.Generator) -> pd.DataFrame:
    x = rng.uniform(0.0, 10.0, n)
    return pd.DataFrame({"x": x, "y": 2.0 * x + rng.normal(scale=noise, size=n)})


def test_linear_regression_intervals_cover_the_known_privacy_gain():
    """Real data y = 2x + N(0, 1), x ~ U(0, 10); a least-squares model N(b0 + b1 x, s^2) puts mass
    P(|N(b0 + b1 x - 2x, 1 + s^2)| <= h/2) on the cell of width h around a test row's y, so the averages the
    intervals are about (over test rows, for the two fitted models) are known exactly. The synthetic data has
    noise N(0, 2^2). The 95% intervals must cover the truth in most of 40 repetitions with fresh test rows (a point
    estimate or a too narrow interval fails) and be short enough to say something."""
    from scipy.stats import norm

    h, rng = 1.0, np.random.default_rng(0)
    train, synthetic = _gaussian_frame(5000, 1.0, rng), _gaussian_frame(5000, 2.0, rng)
    x = np.linspace(0.0, 10.0, 10_001)

    def expected_p(model: GaussianLinearModel) -> float:
        bias, s = model.beta[0] + (model.beta[1] - 2.0) * x, np.sqrt(1.0 + model.sigma ** 2)
        return float(np.mean(norm.cdf((h / 2 - bias) / s) - norm.cdf((-h / 2 - bias) / s)))

    p_real, p_fake = expected_p(GaussianLinearModel(train, "y")), expected_p(GaussianLinearModel(synthetic, "y"))
    truth = {"p_real": p_real, "p_fake": p_fake, "privacy_gain": (p_real - p_fake) / 2}
    covered = {k: 0 for k in truth}
    for rep in range(40):
        control = _gaussian_frame(300, 1.0, rng)
        r = LinearRegressionAttributeAttack(train, synthetic, sensitive="y", control=control, n_targets=300,
                                            resolution=h, seed=rep).evaluate()
        for k, v in truth.items():
            lo, hi = r.metrics[k].ci
            covered[k] += lo <= v <= hi
            assert lo <= r.metric(k) <= hi and hi - lo < 0.06
    assert all(c >= 34 for c in covered.values()), covered  # expected 38 of 40; P(< 34) ~ 1e-3 if well calibrated
