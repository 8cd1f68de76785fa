"""Empirical audit: check values of both lower bounds; the harness passes correct DP-SGD and catches missing noise."""

from __future__ import annotations

import pytest
import torch

import dpsynth.privacy.dpsgd as dpsgd_mod
from dpsynth.errors import InputError
from dpsynth.privacy import CanaryAudit, DPSGDConfig, PrivacyLedger, audit_dpsgd
from dpsynth.privacy.audit import eps_lower_bound_cp, eps_lower_bound_one_run


def test_clopper_pearson_check_value():
    # TP 500/1000, FP 10/1000, alpha 0.05, delta 1e-5 -> 3.2420 (jax_privacy form = second term of the max)
    assert eps_lower_bound_cp(500, 500, 10, 990, alpha=0.05, delta=1e-5) == pytest.approx(3.2420, abs=1e-4)


def test_clopper_pearson_uses_the_max_of_both_forms():
    # an attack that is good at saying "out": symmetric to the check value
    assert eps_lower_bound_cp(990, 10, 500, 500, alpha=0.05, delta=1e-5) == pytest.approx(3.2420, abs=1e-4)
    assert eps_lower_bound_cp(500, 500, 500, 500) == 0.0  # a coin flip proves nothing
    with pytest.raises(InputError):
        eps_lower_bound_cp(0, 0, 1, 1)


@pytest.mark.parametrize("m,r,v,delta,expected", [
    (1000, 100, 90, 0.0, 1.6308),
    (1000, 100, 90, 1e-5, 1.6261),
    (10000, 1000, 800, 1e-5, 1.2508),
])
def test_one_run_check_values(m, r, v, delta, expected):
    assert eps_lower_bound_one_run(m, r, v, p=0.05, delta=delta) == pytest.approx(expected, abs=1e-4)


def test_canary_audit_scores_to_bound():
    audit = CanaryAudit(400, generator=torch.Generator().manual_seed(0))
    perfect = audit.included.double()
    res = audit.lower_bound(perfect, k_plus=50)
    assert res.correct == 100 and res.eps_lower_bound > 2.0
    random = torch.rand(400, generator=torch.Generator().manual_seed(1))
    assert audit.lower_bound(random, k_plus=50).eps_lower_bound < 1.0


CONFIG = DPSGDConfig(noise_multiplier=4.0, max_grad_norm=1.0, sample_rate=0.2)


def test_audit_lower_bound_below_ledger_epsilon_for_correct_dpsgd():
    ledger = PrivacyLedger(target_epsilon=10.0, target_delta=1e-5, accountant="rdp")
    res = audit_dpsgd(CONFIG, ledger=ledger, m=1000, steps=50, k=250, seed=0)
    assert res.eps_lower_bound <= ledger.epsilon() and not res.exceeds


def test_audit_fails_when_noise_is_switched_off(monkeypatch):
    """The ledger still claims the same DP; the forgotten noise term makes eps_LB far exceed it."""
    monkeypatch.setattr(dpsgd_mod, "gaussian_noise", lambda shape, std, gen: torch.zeros(shape))
    ledger = PrivacyLedger(target_epsilon=10.0, target_delta=1e-5, accountant="rdp")
    res = audit_dpsgd(CONFIG, ledger=ledger, m=1000, steps=50, k=250, seed=0)
    claimed = ledger.epsilon()
    assert claimed < 2.0
    assert res.eps_lower_bound > 2.5 * claimed


# ----------------------------------------------------------------- power against a factor of two (issue 14)
# A claim of epsilon = 1 (delta 1e-5) by 4 steps of Poisson(q = 0.5) DP-SGD, audited with 100,000 Dirac canaries
# (20 runs of 5,000). Measured over seeds 0-3: eps_LB 0.49-0.67 for the correct engine, 1.16-1.45 with the
# sensitivity halved (true epsilon ~2.4); a q recorded at half its real value (sigma recalibrated to claim 1, true
# epsilon ~1.9) gives 0.94-1.17, so that bug is only sometimes caught at this size.
Q, STEPS, CANARIES, RUNS = 0.5, 4, 5000, 20


@pytest.fixture(scope="module")
def claim_one():
    from dpsynth.privacy.calibration import calibrate_noise

    sigma = calibrate_noise(target_epsilon=1.0, delta=1e-5, sample_rate=Q, steps=STEPS)
    return DPSGDConfig(noise_multiplier=sigma, max_grad_norm=1.0, sample_rate=Q)


def _white_box(config):
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5)
    res = audit_dpsgd(config, ledger=ledger, m=CANARIES, runs=RUNS, steps=STEPS, seed=0)
    assert res.m == CANARIES * RUNS and 0.99 < res.claimed_epsilon <= 1.0
    return res


def test_white_box_audit_is_consistent_with_a_correct_claim_of_one(claim_one):
    res = _white_box(claim_one)
    assert res.max_eps_lower_bound > 2.0  # it could refute far more than the claim
    assert not res.exceeds and res.eps_lower_bound <= res.claimed_epsilon


def test_white_box_audit_catches_a_sensitivity_halved_by_mistake(claim_one, monkeypatch):
    """The broken twin: noise calibrated to C/2 (as batch clipping's 2C taken for C) while the ledger claims 1."""
    monkeypatch.setattr(dpsgd_mod.DPSGDConfig, "sensitivity", property(lambda self: 0.5 * self.max_grad_norm))
    assert claim_one.noise_std == pytest.approx(0.5 * claim_one.noise_multiplier)
    res = _white_box(claim_one)
    assert res.exceeds and res.eps_lower_bound > 1.1


def test_white_box_audit_result_reports_its_reach():
    ledger = PrivacyLedger(target_epsilon=10.0, target_delta=1e-5, accountant="rdp")
    res = audit_dpsgd(CONFIG, ledger=ledger, m=200, runs=2, steps=5, k=20, seed=0)
    assert res.m == 400 and res.guesses == 40
    assert res.max_eps_lower_bound == pytest.approx(eps_lower_bound_one_run(400, 40, 40, delta=1e-5))
    assert res.claimed_epsilon == pytest.approx(ledger.epsilon())
    with pytest.raises(InputError, match="runs"):
        audit_dpsgd(CONFIG, ledger=ledger, m=200, runs=0)
