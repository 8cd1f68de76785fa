"""Noise / steps calibration: reference sigmas, never overshoots (property test), composes with a ledger."""

from __future__ import annotations

import pytest
from dp_accounting import dp_event
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsynth.errors import InputError, PrivacyError
from dpsynth.privacy import PrivacyLedger, calibrate_noise, calibrate_steps, epsilon
from dpsynth.privacy.calibration import dpsgd_event

DELTA = 1e-5
Q, T = 256 / 32561, 2543


def test_reference_sigmas():
    rdp = calibrate_noise(target_epsilon=1.0, delta=DELTA, sample_rate=Q, steps=T, accountant="rdp")
    pld = calibrate_noise(target_epsilon=1.0, delta=DELTA, sample_rate=Q, steps=T, accountant="pld")
    assert rdp == pytest.approx(1.78589, rel=2e-3) and rdp <= 1.78589 * (1 + 1e-4)  # more orders: never looser
    assert pld == pytest.approx(1.66399, rel=1e-3)
    assert pld < rdp
    assert epsilon(sample_rate=Q, noise_multiplier=pld, steps=T, delta=DELTA, accountant="pld") <= 1.0


@settings(max_examples=6, deadline=None, derandomize=True)
@given(
    target=st.floats(0.3, 8.0),
    q=st.floats(0.001, 0.2),
    steps=st.integers(1, 3000),
)
def test_calibrate_noise_never_overshoots_rdp(target, q, steps):
    sigma = calibrate_noise(target_epsilon=target, delta=DELTA, sample_rate=q, steps=steps, accountant="rdp")
    assert epsilon(sample_rate=q, noise_multiplier=sigma, steps=steps, delta=DELTA, accountant="rdp") <= target
    lower = sigma * (1 - 1.01e-4)
    assert epsilon(sample_rate=q, noise_multiplier=lower, steps=steps, delta=DELTA, accountant="rdp") > target


@pytest.mark.slow(reason="PLD evaluations at several (q, steps): about a minute")
@pytest.mark.ci
@settings(max_examples=4, deadline=None, derandomize=True)
@given(target=st.floats(0.5, 4.0), q=st.floats(0.005, 0.05), steps=st.integers(10, 500))
def test_calibrate_noise_never_overshoots_pld(target, q, steps):
    sigma = calibrate_noise(target_epsilon=target, delta=DELTA, sample_rate=q, steps=steps, accountant="pld")
    assert epsilon(sample_rate=q, noise_multiplier=sigma, steps=steps, delta=DELTA, accountant="pld") <= target


def test_calibrate_noise_with_ledger_composes_with_what_is_spent():
    ledger = PrivacyLedger(target_epsilon=2.0, target_delta=DELTA, accountant="rdp")
    ledger.spend(dp_event.GaussianDpEvent(5.0), phase="meta", mechanism="counts", count=3)
    alone = calibrate_noise(target_epsilon=2.0, delta=DELTA, sample_rate=0.01, steps=500, accountant="rdp")
    sigma = calibrate_noise(target_epsilon=2.0, delta=DELTA, sample_rate=0.01, steps=500, ledger=ledger,
                            accountant="rdp")
    assert sigma > alone  # the budget already spent needs more noise
    ledger.spend(dpsgd_event(0.01, sigma), phase="train", mechanism="dp-sgd", count=500)  # fits: no error
    assert ledger.epsilon() <= 2.0


def test_calibrate_noise_refuses_a_spent_ledger():
    ledger = PrivacyLedger(target_epsilon=10.0, target_delta=DELTA, accountant="rdp")
    ledger.spend(dp_event.GaussianDpEvent(1.0), phase="meta", mechanism="counts")  # eps ~ 4.7 already spent
    with pytest.raises(PrivacyError, match="no noise multiplier"):
        calibrate_noise(target_epsilon=1.0, delta=DELTA, sample_rate=0.01, steps=10, ledger=ledger, accountant="rdp")


@settings(max_examples=3, deadline=None, derandomize=True)
@given(target=st.floats(0.5, 5.0), q=st.floats(0.005, 0.1), sigma=st.floats(0.8, 3.0))
def test_calibrate_steps_is_the_largest_that_fits(target, q, sigma):
    steps = calibrate_steps(target_epsilon=target, delta=DELTA, sample_rate=q, noise_multiplier=sigma,
                            accountant="rdp", max_steps=100000)
    def eps(t):
        return epsilon(sample_rate=q, noise_multiplier=sigma, steps=t, delta=DELTA, accountant="rdp")
    if steps:
        assert eps(steps) <= target
    if steps < 100000:
        assert eps(steps + 1) > target


def test_one_calibration_routine_behind_every_noise_and_count_search():
    """Gaussian queries of a model, the metadata phase's counts and DP-SGD phases all get their sigma from
    calibrate_noise (each just meets the target: 0.2% less noise would exceed it), and counts from largest_count."""
    from dp_accounting import dp_event

    from dpsynth.data.discovery import calibrate_metadata_sigma
    from dpsynth.privacy.accounting import epsilon_of, largest_count
    from dpsynth.privacy.mechanisms import calibrate_gaussian_queries

    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=DELTA)
    ledger.spend(dp_event.GaussianDpEvent(20.0), phase="metadata", mechanism="counts", count=3)
    sigma = calibrate_gaussian_queries(ledger, 12)
    assert sigma == pytest.approx(calibrate_noise(target_epsilon=1.0, delta=DELTA, sample_rate=1.0, steps=12,
                                                  accountant=ledger.accountant, ledger=ledger, rtol=1e-3), rel=1e-9)
    assert not ledger.would_exceed(dp_event.GaussianDpEvent(sigma), 12)
    assert ledger.would_exceed(dp_event.GaussianDpEvent(sigma * 0.998), 12)

    meta = calibrate_metadata_sigma(16, 0.1, 5e-6)
    assert epsilon_of([(dp_event.GaussianDpEvent(meta), 16)], 5e-6) <= 0.1
    assert epsilon_of([(dp_event.GaussianDpEvent(meta * 0.998), 16)], 5e-6) > 0.1

    assert largest_count(lambda k: k * k <= 50, 1000) == 7
    assert largest_count(lambda k: k <= 0, 10) == 0 and largest_count(lambda k: True, 10) == 10
    step = dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0))
    k = ledger.max_count(step, 10**6)
    assert not ledger.would_exceed(step, k) and ledger.would_exceed(step, k + 1)


def test_calibration_of_any_mechanism_matches_the_dpsgd_case():
    """``mechanism=``: the step's event as a function of sigma. Given DP-SGD's own event it returns DP-SGD's sigma;
    given the sanitizer's shard event it returns a sigma whose composed epsilon meets the target, tightly."""
    from dpsynth.privacy.accounting import epsilon_of
    from dpsynth.privacy.calibration import calibrate_noise, dpsgd_event
    from dpsynth.privacy.sanitizer import SanitizerConfig

    plain = calibrate_noise(target_epsilon=1.0, delta=1e-5, sample_rate=0.01, steps=500, accountant="rdp")
    same = calibrate_noise(target_epsilon=1.0, delta=1e-5, sample_rate=1.0, steps=500, accountant="rdp",
                           mechanism=lambda s: dpsgd_event(0.01, s))
    assert same == pytest.approx(plain, rel=1e-3)

    def event(s):
        return SanitizerConfig(max_grad_norm=1.0, noise_multiplier=s, batch_size=16, n_shards=20).event()

    sigma = calibrate_noise(target_epsilon=1.0, delta=1e-5, sample_rate=1.0, steps=200, accountant="rdp",
                            rtol=0.01, mechanism=event)
    assert epsilon_of([(event(sigma), 200)], 1e-5, accountant="rdp") <= 1.0
    assert epsilon_of([(event(sigma * 0.97), 200)], 1e-5, accountant="rdp") > 1.0
    with pytest.raises(InputError):
        calibrate_noise(target_epsilon=1.0, delta=1e-5, sample_rate=1.0, weights=[(1.0, 3)], mechanism=event)
