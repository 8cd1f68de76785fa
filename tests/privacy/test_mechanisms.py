"""Noisy counting mechanisms: one test per guarantee in dpsynth/privacy/mechanisms.py's docstring."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpsynth.errors import BudgetExceededError, InputError
from dpsynth.privacy import PrivacyLedger
from dpsynth.privacy.mechanisms import (
    calibrate_gaussian_queries,
    gaussian_counts,
    gaussian_event,
    gaussian_partition_selection,
    selection_delta,
    selection_threshold,
)


@pytest.mark.parametrize("factor, accept", [(1.0, True), (2 / 3, False), (1.5, False)])
def test_gaussian_counts_noise_has_std_sigma(factor, accept):
    """KS test of the released noise against N(0, (factor * sigma)^2): accepts sigma, rejects 2/3 and 1.5 sigma."""
    sigma = 7.0
    counts = np.arange(4000, dtype=float)
    noise = gaussian_counts(counts, sigma=sigma, rng=np.random.default_rng(0)) - counts
    p = stats.kstest(noise, "norm", args=(0.0, factor * sigma)).pvalue
    assert bool(p > 0.01) == accept


def test_sigma_zero_is_exact_and_non_private():
    counts = np.array([3, 0, 5])
    assert np.array_equal(gaussian_counts(counts, sigma=0.0, rng=np.random.default_rng(0)), counts)
    assert gaussian_event(0.0).__class__.__name__ == "NonPrivateDpEvent"
    with pytest.raises(InputError, match="sigma must be >= 0"):
        gaussian_event(-1.0)


def test_threshold_and_delta_are_inverse():
    for sigma, delta in [(10.0, 1e-6), (130.0, 2.5e-7), (1.0, 0.01)]:
        tau = selection_threshold(sigma, delta)
        assert selection_delta(sigma, tau) == pytest.approx(delta, rel=1e-9)
    with pytest.raises(InputError):
        selection_threshold(1.0, 0.0)


def test_singleton_key_is_released_with_probability_delta():
    """The extra delta of partition selection: a key of true count 1 clears the threshold w.p. delta."""
    sigma, delta, trials = 3.0, 0.02, 20_000
    tau = selection_threshold(sigma, delta)
    rng = np.random.default_rng(1)
    released = sum("rare" in gaussian_partition_selection({"rare": 1}, sigma=sigma, threshold=tau, rng=rng)
                   for _ in range(trials))
    lo, hi = stats.binomtest(released, trials).proportion_ci(0.999)
    assert lo <= delta <= hi


def test_frequent_keys_are_released_with_noisy_counts():
    rng = np.random.default_rng(2)
    kept = gaussian_partition_selection({"a": 10_000, "b": 2}, sigma=5.0, threshold=selection_threshold(5.0, 1e-6),
                                        rng=rng)
    assert set(kept) == {"a"} and kept["a"] != 10_000 and abs(kept["a"] - 10_000) < 40
    exact = gaussian_partition_selection({"a": 3, "b": 1}, sigma=0.0, threshold=1e9, rng=rng)
    assert exact == {"a": 3.0, "b": 1.0}


def test_calibrated_queries_fit_the_ledger_and_count_reserved_steps():
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5)
    sigma = calibrate_gaussian_queries(ledger, 10)
    ledger.spend(gaussian_event(sigma), phase="m", mechanism="counts", count=10)  # fits: no error
    assert ledger.epsilon() <= 1.0
    assert ledger.epsilon() > 0.99  # tight to the bisection tolerance
    full = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5, accountant="rdp")
    allowance = full.allowance(gaussian_event(30.0), phase="t", mechanism="counts", max_steps=100_000)
    assert 0 < allowance.allowed < 100_000  # the live allowance reserves the whole budget
    fresh = calibrate_gaussian_queries(PrivacyLedger(target_epsilon=1.0, target_delta=1e-5, accountant="rdp"), 1)
    assert calibrate_gaussian_queries(full, 1) > 100 * fresh  # only the sliver the allowance left is usable
    full.spend(gaussian_event(1e7), phase="m", mechanism="x")  # an almost free query still fits
    with pytest.raises(BudgetExceededError):
        full.spend(gaussian_event(30.0), phase="m", mechanism="counts")
