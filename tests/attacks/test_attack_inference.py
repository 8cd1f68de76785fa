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
    return pop.iloc[:1500].reset_index(drop=True), pop.iloc[1500:3000].reset_index(drop=True), pop.iloc[3000:].reset_index(drop=True)


def test_singling_out_copy_is_maximal(parts):
    train, control, _ = parts
    r = SinglingOutRisk(train, train, control=control, mode="univariate", n_attacks=200, seed=0).evaluate()
    assert r.kind == "singling_out" and r.value > 0.9 and r.metric("success_rate") > 0.9
    assert r.baseline < 0.2


def test_singling_out_disjoint_is_near_zero(parts):
    train, control, disjoint = parts
    r = SinglingOutRisk(train, disjoint, control=control, mode="univariate", n_attacks=200, seed=0).evaluate()
    assert r.value < 0.1 and r.ci[0] <= 0.02


def test_singling_out_multivariate_runs(parts):
    train, control, _ = parts
    r = SinglingOutRisk(train, train, control=control, mode="multivariate", n_attacks=50, max_attempts=5000,
                        seed=0).evaluate()
    assert r.attack == "singling_out_multivariate" and 0.0 <= r.value <= 1.0


def test_linkability_copy_beats_disjoint(parts):
    train, control, disjoint = parts
    cols = ["age", "education", "occupation", "race", "sex", "hours-per-week", "native-country", "fnlwgt"]
    aux = (cols[:4], cols[4:])
    hi = LinkabilityRisk(train[cols], train[cols], control=control[cols], aux_cols=aux, n_attacks=300, seed=0).evaluate()
    lo = LinkabilityRisk(train[cols], disjoint[cols], control=control[cols], aux_cols=aux, n_attacks=300, seed=0).evaluate()
    assert hi.value > lo.value + 0.2
    assert lo.ci[0] <= 0.02
    with pytest.raises(InputError, match="disjoint"):
        LinkabilityRisk(train, train, aux_cols=(["age"], ["age"]))


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
