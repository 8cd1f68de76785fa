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
    assert res.eps_lower_bound <= ledger.epsilon()


def test_audit_fails_when_noise_is_switched_off(monkeypatch):
    """The ledger still claims the same DP; the forgotten noise term makes eps_LB far exceed it."""
    monkeypatch.setattr(dpsgd_mod, "_gaussian_noise", lambda shape, std, gen: torch.zeros(shape))
    ledger = PrivacyLedger(target_epsilon=10.0, target_delta=1e-5, accountant="rdp")
    res = audit_dpsgd(CONFIG, ledger=ledger, m=1000, steps=50, k=250, seed=0)
    claimed = ledger.epsilon()
    assert claimed < 2.0
    assert res.eps_lower_bound > 2.5 * claimed
