"""Contract every Attack passes (STYLE.md habit 9), and the audit of every registered DP model (DESIGN §1.7)."""

from __future__ import annotations

import json
import math

import pytest

from dpsynth.attacks import (
    ClosestDistanceHamming,
    ClosestDistanceL2,
    DensityMIA,
    GanLeaksMIA,
    LinearRegressionAttributeAttack,
    LinkabilityRisk,
    NearestNeighbourAttributeAttack,
    SinglingOutRisk,
)
from dpsynth.attacks.base import KINDS, Attack, Result


@pytest.fixture(scope="module")
def frames(adult):
    train_full, test_full = adult
    train = train_full.sample(600, random_state=11).reset_index(drop=True)
    control = test_full.sample(600, random_state=11).reset_index(drop=True)
    synthetic = train_full.sample(600, random_state=12).reset_index(drop=True)
    return train, control, synthetic


BUILDERS = {
    "hamming": lambda t, c, s: ClosestDistanceHamming(t.iloc[:100], c.iloc[:100], s, seed=0),
    "l2": lambda t, c, s: ClosestDistanceL2(t.iloc[:100], c.iloc[:100], s, seed=0),
    "density": lambda t, c, s: DensityMIA(t.iloc[:100], c.iloc[:100], s, reference=c.iloc[100:], seed=0),
    "gan_leaks": lambda t, c, s: GanLeaksMIA(t.iloc[:100], c.iloc[:100], s, reference=c.iloc[100:], seed=0),
    "linear": lambda t, c, s: LinearRegressionAttributeAttack(t, s, sensitive="age", control=c, seed=0),
    "nn": lambda t, c, s: NearestNeighbourAttributeAttack(t, s, secret="sex", control=c, n_attacks=100, seed=0),
    "singling_out": lambda t, c, s: SinglingOutRisk(t, s, control=c, n_attacks=100, seed=0),
    "linkability": lambda t, c, s: LinkabilityRisk(t, s, control=c, n_attacks=100, seed=0),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_attack_contract(frames, name):
    attack = BUILDERS[name](*frames)
    assert isinstance(attack, Attack) and attack.name and attack.kind in KINDS
    r = attack.evaluate()
    assert isinstance(r, Result) and r.kind == attack.kind
    assert 0.0 <= r.value <= 1.0 and 0.0 <= r.ci[0] <= r.value <= r.ci[1] <= 1.0
    assert r.baseline_name and r.n_targets > 0 and r.metrics
    for est in r.metrics.values():
        if est.ci is not None:
            assert est.ci[0] <= est.value + 1e-12 and est.value <= est.ci[1] + 1e-12
    json.dumps(r.to_dict(), allow_nan=False)


def _dp_models():
    from dpsynth.models import available_models, get_model_class

    return [m for m in available_models() if get_model_class(m).supports_dp and m != "marginals"]


@pytest.mark.slow
@pytest.mark.parametrize("model", _dp_models())
def test_every_dp_model_audit_is_below_its_epsilon(adult, adult_schema, model):
    from dpsynth.attacks import audit_model
    from dpsynth.models import get_model_class

    train, _ = adult
    params = dict(getattr(get_model_class(model), "fast_params", {}) or {})
    audit = audit_model(model, train, epsilon=1.0, delta=1e-5, schema=adult_schema, params=params, n_fits=40,
                        n_rows=200, seed=0)
    assert audit.eps_lb <= audit.epsilon, str(audit)
    assert not math.isinf(audit.epsilon)
