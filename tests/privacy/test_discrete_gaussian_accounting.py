"""Accounting of the discrete Gaussian (``DiscreteGaussianDpEvent``, the count noise of ``noise="secure"``).

Known answers from dp-accounting's own PLD of the mechanism and from the zCDP bound; the PLD must not read the event
as a continuous Gaussian (at sigma 1 the discrete one's epsilon is the larger, so that reading would understate it).
"""

from __future__ import annotations

import math

import pytest
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution

from dpsynth.errors import InputError, ModelFileError
from dpsynth.privacy.accounting import epsilon_of
from dpsynth.privacy.calibration import calibrate_noise
from dpsynth.privacy.events import DiscreteGaussianDpEvent, describe_event, event_from_dict, event_to_dict
from dpsynth.privacy.ledger import PrivacyLedger

DELTA = 1e-5


@pytest.mark.parametrize("sigma, count", [(1.0, 1), (3.0, 4), (40.0, 20)])
def test_the_pld_is_dp_accountings_discrete_gaussian(sigma, count):
    pld = privacy_loss_distribution.from_discrete_gaussian_mechanism(sigma, value_discretization_interval=1e-4,
                                                                      use_connect_dots=True)
    expected = pld.self_compose(count).get_epsilon_for_delta(DELTA)
    got = epsilon_of([(DiscreteGaussianDpEvent(sigma), count)], DELTA, accountant="pld")
    assert got == pytest.approx(expected, rel=1e-9)


def test_the_discrete_gaussian_is_not_read_as_the_continuous_one():
    """At sigma 1 (sensitivity 1) the discrete Gaussian's epsilon at delta 1e-5 is 4.430, the continuous one's
    4.377 (dp-accounting); ``best`` takes the discrete PLD, which is below RDP's 4.8."""
    discrete = epsilon_of([(DiscreteGaussianDpEvent(1.0), 1)], DELTA)
    continuous = epsilon_of([(dp_event.GaussianDpEvent(1.0), 1)], DELTA)
    assert discrete == pytest.approx(4.430, abs=2e-3) and continuous == pytest.approx(4.377, abs=2e-3)
    assert discrete < epsilon_of([(DiscreteGaussianDpEvent(1.0), 1)], DELTA, accountant="rdp")


@pytest.mark.parametrize("sigma, sensitivity", [(2.0, 1), (30.0, 1), (9.0, 3)])
def test_the_rdp_curve_is_the_zcdp_bound(sigma, sensitivity):
    """sensitivity^2 / (2 sigma^2)-zCDP (Canonne, Kamath and Steinke 2020): the continuous Gaussian's RDP curve at
    noise multiplier sigma / sensitivity, and the same epsilon as a ZCDpEvent of that rho."""
    event = DiscreteGaussianDpEvent(sigma, sensitivity)
    rdp = epsilon_of([(event, 5)], DELTA, accountant="rdp")
    assert rdp == pytest.approx(epsilon_of([(dp_event.GaussianDpEvent(sigma / sensitivity), 5)], DELTA,
                                           accountant="rdp"), rel=1e-12)
    rho = sensitivity ** 2 / (2 * sigma ** 2)
    assert rdp == pytest.approx(epsilon_of([(dp_event.ZCDpEvent(rho), 5)], DELTA, accountant="rdp"), rel=1e-3)


def test_composed_with_dp_sgd_by_pld():
    """A secure DP-SGD fit's ledger: the metadata's discrete Gaussians and Poisson-subsampled Gaussian steps. PLD takes
    both (the composed epsilon is below RDP's by the margin a numpy-noise ledger gets), and a discrete Gaussian
    under Poisson sampling, which dpsynth never records, is refused by both accountants (infinite: never a
    continuous reading)."""
    steps = (dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)), 3000)
    secure = [(DiscreteGaussianDpEvent(50.0), 30), steps]
    numpy = [(dp_event.GaussianDpEvent(50.0), 30), steps]
    pld, rdp = epsilon_of(secure, DELTA, accountant="pld"), epsilon_of(secure, DELTA, accountant="rdp")
    assert pld < 0.93 * rdp and epsilon_of(secure, DELTA) == pld
    assert pld == pytest.approx(epsilon_of(numpy, DELTA, accountant="pld"), rel=2e-3)
    sampled = [(dp_event.PoissonSampledDpEvent(0.01, DiscreteGaussianDpEvent(1.0)), 10)]
    assert math.isinf(epsilon_of(sampled, DELTA, accountant="pld"))
    assert math.isinf(epsilon_of(sampled, DELTA, accountant="rdp"))


@pytest.mark.parametrize("sigma, count", [(256.0, 4_000), (1810.0, 192_000)])
def test_thousands_of_compositions_stay_tight(sigma, count):
    """PATE's secure argmax composes thousands of discrete Gaussians (192,000 at its defaults on Adult). The
    connect-the-dots PLD keeps them at the continuous Gaussian's epsilon (within 0.5%), below RDP's; the privacy
    buckets' rounding, added up over the compositions, would put them far above (1.11 and 10.5 against 0.91 and
    0.89)."""
    events = [(DiscreteGaussianDpEvent(sigma), count)]
    pld = epsilon_of(events, DELTA, accountant="pld")
    continuous = epsilon_of([(dp_event.GaussianDpEvent(sigma / math.sqrt(count)), 1)], DELTA, accountant="pld")
    assert continuous <= pld < 1.005 * continuous and pld < 0.95 * epsilon_of(events, DELTA, accountant="rdp")
    buckets = privacy_loss_distribution.from_discrete_gaussian_mechanism(sigma, value_discretization_interval=1e-4)
    assert buckets.self_compose(count).get_epsilon_for_delta(DELTA) > 1.2 * pld


@pytest.mark.parametrize("target, steps", [(4.43, 1), (1.0, 60)])
def test_calibration_of_discrete_counts_meets_the_target_the_ledger_evaluates(target, steps):
    """``discrete=True`` calibrates discrete Gaussian counts against a ledger that records them as such: the sigma
    fits (a continuous calibration at sigma ~1 would not: the discrete mechanism needs more noise there)."""
    sigma = calibrate_noise(target_epsilon=target, delta=DELTA, sample_rate=1.0, steps=steps, accountant="best",
                            discrete=True, rtol=1e-4)
    ledger = PrivacyLedger(target_epsilon=target, target_delta=DELTA)
    ledger.spend(dp_event.SelfComposedDpEvent(DiscreteGaussianDpEvent(sigma), steps), phase="metadata",
                 mechanism="counts")
    assert target * 0.995 < ledger.epsilon() <= target
    continuous = calibrate_noise(target_epsilon=target, delta=DELTA, sample_rate=1.0, steps=steps,
                                 accountant="best", rtol=1e-4)
    if steps == 1:
        assert continuous < sigma
        assert epsilon_of([(DiscreteGaussianDpEvent(continuous), 1)], DELTA) > target
    with pytest.raises(InputError, match="not subsampled"):
        calibrate_noise(target_epsilon=1.0, delta=DELTA, sample_rate=0.5, steps=10, discrete=True)


def test_the_event_is_stored_and_read_back():
    event = dp_event.SelfComposedDpEvent(DiscreteGaussianDpEvent(12.5, 2), 3)
    assert event_from_dict(event_to_dict(event)) == event
    assert describe_event(event) == "3 x DiscreteGaussian(sigma=12.5, sensitivity=2)"
    with pytest.raises(ModelFileError):
        event_from_dict({"type": "ContinuousGaussianDpEvent", "sigma": 1.0})
    for bad in ({"sigma": 0.0, "sensitivity": 1}, {"sigma": 2.0, "sensitivity": 0.5}):
        with pytest.raises(ModelFileError, match="discrete Gaussian"):
            event_from_dict({"type": "DiscreteGaussianDpEvent", **bad})
