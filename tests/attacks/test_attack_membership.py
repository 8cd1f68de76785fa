"""Known answers: a copy of the training data is maximally exposed; a disjoint sample is not."""

from __future__ import annotations

import pytest

from dpsynth.attacks.membership import ClosestDistanceHamming, ClosestDistanceL2, DensityMIA, GanLeaksMIA
from dpsynth.errors import InputError

ATTACKS = [ClosestDistanceHamming, ClosestDistanceL2, DensityMIA, GanLeaksMIA]


@pytest.fixture(scope="module")
def split(adult):
    train_full, test_full = adult
    train = train_full.sample(2000, random_state=1).reset_index(drop=True)
    pool = test_full.sample(6000, random_state=2).reset_index(drop=True)
    members = train.sample(300, random_state=3).reset_index(drop=True)
    non_members, reference, disjoint = pool.iloc[:300], pool.iloc[300:2300], pool.iloc[2300:4300]
    rest = (non_members, reference, disjoint)
    return (train, members, *(p.reset_index(drop=True) for p in rest))


@pytest.mark.parametrize("cls", [ClosestDistanceHamming, ClosestDistanceL2])
def test_copy_of_training_data_is_maximal_risk(split, cls):
    train, members, non_members, reference, _ = split
    r = cls(members, non_members, train, reference=reference, seed=0).evaluate()
    assert r.kind == "membership"
    assert r.value >= 0.95 and r.metric("accuracy") >= 0.97 and r.metric("auc") >= 0.97
    assert r.metric("privacy_gain") <= 0.02  # PG -> 0: the release reveals membership like the raw data
    assert r.ci[0] <= r.value <= r.ci[1]


def test_gan_leaks_copy_is_high_risk(split):
    # the calibration term (distance to reference rows) blurs the exact-copy signal, but the risk stays high
    train, members, non_members, reference, _ = split
    r = GanLeaksMIA(members, non_members, train, reference=reference, seed=0).evaluate()
    assert r.value > 0.5 and r.metric("tpr") > 0.9
    plain = GanLeaksMIA(members, non_members, train, seed=0).evaluate()  # uncalibrated = closest distance L2
    assert plain.value >= 0.95


@pytest.mark.parametrize("cls", ATTACKS)
def test_disjoint_population_is_near_zero_and_covered(split, cls):
    _, members, non_members, reference, disjoint = split
    r = cls(members, non_members, disjoint, reference=reference, seed=0).evaluate()
    rr = r.metrics["relative_risk"]
    assert rr.ci[0] <= 0.0 <= rr.ci[1], rr
    assert abs(rr.value) < 0.2
    assert 0.15 <= r.metric("privacy_gain") <= 0.35  # around the chance value 0.25


def test_threshold_is_fitted_on_held_out_targets(split):
    train, members, non_members, reference, _ = split
    r = ClosestDistanceL2(members, non_members, train, seed=0, fit_fraction=0.5).evaluate()
    assert r.n_targets == 300  # half of the 600 targets; the other half fitted the threshold
    assert "held-out" in r.notes


def test_input_errors(split):
    train, members, non_members, _, _ = split
    with pytest.raises(InputError, match="same columns"):
        ClosestDistanceL2(members.drop(columns=["age"]), non_members, train)
    with pytest.raises(InputError, match="fit_fraction"):
        ClosestDistanceL2(members, non_members, train, fit_fraction=1.0)
    with pytest.raises(InputError, match="at least 2"):
        ClosestDistanceL2(members.iloc[:1], non_members, train)


def test_result_serialises(split):
    train, members, non_members, _, _ = split
    d = ClosestDistanceHamming(members, non_members, train, seed=0).evaluate().to_dict()
    import json

    json.dumps(d, allow_nan=False)
    assert set(d["metrics"]) >= {"accuracy", "tpr", "fpr", "auc", "advantage", "privacy_gain", "relative_risk"}
