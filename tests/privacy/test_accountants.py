"""Accountants pinned to reference/accountant_values.md; GDP; composition of phases; the ledger's guarantees."""

from __future__ import annotations

import json
import math

import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant

from dpsynth.errors import BudgetExceededError, InputError
from dpsynth.privacy import PrivacyLedger, epsilon, gdp, ledger_gdp_report
from dpsynth.privacy.calibration import dpsgd_event
from dpsynth.privacy.gdp import mu_poisson_clt, separation

DELTA = 1e-5
# case: (q, sigma, T, RDP eps, PLD eps)
CASES = {
    "A": (0.01, 1.1, 10000, 5.63201, 5.19258),
    "B": (64 / 32561, 2.5, 10000, 0.30514, 0.27612),
    "C": (128 / 32561, 7.5, 225000, 1.01198, 0.92577),
    "D": (0.004, 1.0, 1000, 1.06071, 0.67848),
    "E": (256 / 48842, 1.5, 3000, 0.88846, 0.80780),
    "F": (1.0, 10.0, 100, 4.72851, 4.37718),
}
# case: (mu CLT, eps from it, separation, mu seed 004, eps, separation)
GDP = {
    "A": (1.133659, 5.06473, 0.30347, 1.457417, 6.81292, 0.37747),
    "B": (0.081874, 0.27399, 0.02309, 0.093809, 0.31776, 0.02645),
    "C": (0.249733, 0.92525, 0.07027, 0.262653, 0.97791, 0.07388),
    "D": (0.165809, 0.59116, 0.04672, 0.216318, 0.79052, 0.06090),
    "E": (0.214761, 0.78430, 0.06047, 0.263274, 0.98045, 0.07405),
    "F": (1.002505, 4.38988, 0.27139, 1.041684, 4.58942, 0.28109),
}
OPACUS_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))


@pytest.mark.parametrize("case", sorted(CASES))
def test_rdp_matches_reference(case):
    q, s, t, rdp, _ = CASES[case]
    # the accountant the reference used (dp-accounting with Opacus' orders): within 1e-4
    acc = rdp_privacy_accountant.RdpAccountant(OPACUS_ORDERS)
    acc.compose(dpsgd_event(q, s), t)
    assert acc.get_epsilon(DELTA) == pytest.approx(rdp, abs=1e-4)
    # dpsynth's order grid is a superset: never looser than the reference, and at most slightly tighter
    ours = epsilon(sample_rate=q, noise_multiplier=s, steps=t, delta=DELTA, accountant="rdp")
    assert rdp - 5e-4 <= ours <= rdp + 1e-4


@pytest.mark.parametrize("case", sorted(CASES))
def test_pld_matches_reference(case):
    q, s, t, rdp, pld = CASES[case]
    ours = epsilon(sample_rate=q, noise_multiplier=s, steps=t, delta=DELTA, accountant="pld")
    assert ours == pytest.approx(pld, abs=2e-3)
    assert ours >= pld - 1e-4  # pessimistic PLD: an upper bound, never below the exact value
    assert ours < rdp  # PLD is tighter than RDP on every reference case


@pytest.mark.parametrize("case", sorted(GDP))
def test_gdp_matches_reference(case):
    q, s, t, *_ = CASES[case]
    mu_c, eps_c, sep_c, mu_4, eps_4, sep_4 = GDP[case]
    m1 = gdp.mu_poisson_clt(sample_rate=q, noise_multiplier=s, steps=t)
    m2 = gdp.mu_seed004(sample_rate=q, noise_multiplier=s, steps=t)
    assert m1 == pytest.approx(mu_c, abs=1e-6)
    assert m2 == pytest.approx(mu_4, abs=1e-6)
    assert gdp.gdp_epsilon(m1, DELTA) == pytest.approx(eps_c, abs=1e-4)
    assert gdp.gdp_epsilon(m2, DELTA) == pytest.approx(eps_4, abs=1e-4)
    assert gdp.separation(m1) == pytest.approx(sep_c, abs=1e-5)
    assert gdp.separation(m2) == pytest.approx(sep_4, abs=1e-5)


def test_gdp_conversions():
    assert gdp.mu_from_separation(0.1) == pytest.approx(0.356368, abs=1e-6)
    assert gdp.separation(gdp.mu_from_separation(0.25)) == pytest.approx(0.25)
    eps = gdp.gdp_epsilon(1.0, DELTA)
    assert gdp.gdp_delta(eps, 1.0) == pytest.approx(DELTA, rel=1e-6)
    # q = 1: sqrt(T)/sigma-GDP is exact, and the PLD accountant agrees with it (case F, mu = 1)
    assert gdp.gdp_epsilon(1.0, DELTA) == pytest.approx(CASES["F"][4], abs=2e-3)


def test_ledger_gdp_report_beside_epsilon():
    ledger = PrivacyLedger(target_epsilon=10, target_delta=DELTA)
    q, s, t, *_ = CASES["D"]
    ledger.spend(dpsgd_event(q, s), phase="vae", mechanism="dp-sgd", count=t)
    ledger.spend(dpsgd_event(q, s), phase="diffusion", mechanism="dp-sgd", count=t)
    ledger.spend(dp_event.LaplaceDpEvent(10.0), phase="meta", mechanism="histogram")
    rep = ledger_gdp_report(ledger)
    one = gdp.mu_poisson_clt(sample_rate=q, noise_multiplier=s, steps=t)
    assert rep["mu_clt"] == pytest.approx(math.sqrt(2) * one)
    assert rep["separation_clt"] == pytest.approx(gdp.separation(rep["mu_clt"]))
    assert rep["epsilon"] == pytest.approx(ledger.epsilon())  # the guarantee is always there
    assert rep["not_covered"] == ["meta/histogram"]
    assert len(rep["entries"]) == 2


def test_phase_composition_beats_sum_of_phase_epsilons():
    """Seed 003 Lemma 4: compose phases at the RDP/PLD level, not by adding their epsilons."""
    ledger = PrivacyLedger(target_epsilon=10, target_delta=DELTA)
    ledger.spend(dpsgd_event(0.02, 2.0), phase="autoencoder", mechanism="dp-sgd", count=300)
    ledger.spend(dpsgd_event(0.05, 2.0), phase="gan", mechanism="dp-sgd", count=100)
    phases = ledger.phases()
    assert set(phases) == {"autoencoder", "gan"}
    for accountant in ("rdp", "pld"):
        assert ledger.epsilon(accountant) < sum(phases.values())
    assert ledger.epsilon() < 0.9 * sum(phases.values())


def test_ledger_json_round_trip():
    ledger = PrivacyLedger(target_epsilon=3, target_delta=DELTA)
    ledger.spend(dpsgd_event(0.01, 1.1), phase="train", mechanism="dp-sgd", count=50, clipping="per_example")
    ledger.spend(dp_event.GaussianDpEvent(20.0), phase="meta", mechanism="counts")
    ledger.spend(dp_event.SampledWithoutReplacementDpEvent(10, 1, dp_event.GaussianDpEvent(2.0)), phase="g",
                 mechanism="gradient-sanitizer", count=3)
    text = json.dumps(ledger.to_dict())
    back = PrivacyLedger.from_dict(json.loads(text))
    assert back.epsilon() == pytest.approx(ledger.epsilon())
    assert [e.to_dict() for e in back.entries] == [e.to_dict() for e in ledger.entries]
    assert "add/remove" in str(back)


def test_ledger_raises_budget_exceeded_and_records_nothing():
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=DELTA, accountant="rdp")
    ledger.spend(dpsgd_event(0.01, 1.1), phase="train", mechanism="dp-sgd", count=10)
    before = ledger.epsilon()
    with pytest.raises(BudgetExceededError):
        ledger.spend(dpsgd_event(0.01, 1.1), phase="train", mechanism="dp-sgd", count=5000)
    assert ledger.epsilon() == before


def test_allowance_stops_before_target():
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=DELTA, accountant="rdp")
    allowance = ledger.allowance(dpsgd_event(0.01, 1.1), phase="train", mechanism="dp-sgd", max_steps=5000)
    taken = 0
    while allowance.take():
        taken += 1
    assert 0 < taken < 5000
    assert ledger.epsilon() <= 1.0
    assert ledger.epsilon_if(dpsgd_event(0.01, 1.1), 1) > 1.0  # one more step would exceed the target


def _drain(allowance) -> int:
    taken = 0
    while allowance.take():
        taken += 1
    return taken


def test_two_live_allowances_never_pass_the_target_together():
    """Two training loops on one ledger (e.g. a DP critic and a DP classifier), interleaved step by step."""
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=DELTA, accountant="rdp")
    event = dpsgd_event(0.01, 1.1)
    a = ledger.allowance(event, phase="critic", mechanism="dp-sgd", max_steps=5000)
    b = ledger.allowance(event, phase="aux", mechanism="dp-sgd", max_steps=5000)
    assert b.allowed < a.allowed  # a's untaken steps are reserved
    while a.take() | b.take():
        pass
    assert ledger.epsilon() <= 1.0
    assert ledger.epsilon_if(event, 1) > 1.0


def test_spend_beside_a_live_allowance_counts_its_reserved_steps():
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=DELTA, accountant="rdp")
    event = dpsgd_event(0.01, 1.1)
    allowance = ledger.allowance(event, phase="train", mechanism="dp-sgd", max_steps=5000)
    with pytest.raises(BudgetExceededError):
        ledger.spend(dp_event.GaussianDpEvent(5.0), phase="meta", mechanism="counts", count=20)
    _drain(allowance)
    assert ledger.epsilon() <= 1.0


def test_released_steps_return_to_the_ledger_and_a_resumed_phase_continues():
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=DELTA, accountant="rdp")
    event = dpsgd_event(0.01, 1.1)
    first = ledger.allowance(event, phase="train", mechanism="dp-sgd", max_steps=5000)
    for _ in range(100):
        assert first.take()
    first.release()
    assert not first.take() and first.remaining == 0
    second = ledger.allowance(event, phase="train", mechanism="dp-sgd", max_steps=5000)  # same entry: resumed
    assert second.allowed > 0 and second.remaining == second.allowed
    assert _drain(second) == second.allowed
    assert ledger.entries[0].count == 100 + second.allowed
    assert ledger.epsilon() <= 1.0 < ledger.epsilon_if(event, 1)


def test_ledger_json_and_text_carry_the_gaussian_dp_view():
    ledger = PrivacyLedger(target_epsilon=3, target_delta=DELTA)
    ledger.spend(dpsgd_event(0.01, 1.1), phase="train", mechanism="dp-sgd", count=50)
    gdp = ledger.to_dict()["gdp"]
    assert gdp["mu_clt"] == pytest.approx(mu_poisson_clt(sample_rate=0.01, noise_multiplier=1.1, steps=50))
    assert gdp["separation_clt"] == pytest.approx(separation(gdp["mu_clt"]))
    assert "Gaussian-DP view" in str(ledger) and "separation" in str(ledger)
    plain = PrivacyLedger(target_epsilon=10, target_delta=DELTA)
    plain.spend(dp_event.GaussianDpEvent(2.0), phase="meta", mechanism="counts", count=4)
    assert plain.to_dict()["gdp"]["mu_clt"] == pytest.approx(2.0 / 2.0)  # q = 1: exactly sqrt(T)/sigma


def test_unknown_accountant_is_refused():
    with pytest.raises(InputError, match="accountant must be"):
        epsilon(sample_rate=0.01, noise_multiplier=1.1, steps=10, delta=DELTA, accountant="gdp")
    with pytest.raises(InputError, match="accountant must be"):
        PrivacyLedger(target_epsilon=1.0, target_delta=DELTA, accountant="moments")


def test_rdp_at_large_sampling_rate_logs_nothing(caplog):
    """dp-accounting warns per fractional order that fails to converge (q ~ 0.25); dpsynth keeps the bound
    (the order is dropped: sound) and keeps the user's terminal clean."""
    import logging

    from dpsynth.privacy import epsilon

    absl, level = logging.getLogger("absl"), logging.getLogger("absl").level
    absl.setLevel(logging.NOTSET)  # undo tests/privacy/conftest.py: the library must do it
    try:
        with caplog.at_level(logging.WARNING):
            eps = epsilon(sample_rate=0.251463, noise_multiplier=1.0, steps=80, delta=1e-5, accountant="rdp")
    finally:
        absl.setLevel(level)
    assert math.isfinite(eps) and eps > 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    "event, text",
    [
        (dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)), 100),
         "100 x Poisson(q=0.01) o Gaussian(z=1.1)"),
        (dp_event.SampledWithoutReplacementDpEvent(10, 1, dp_event.GaussianDpEvent(1.5)),
         "WithoutReplacement(1 of 10) o Gaussian(z=1.5)"),
        (dp_event.LaplaceDpEvent(2.0), "Laplace(b=2)"),
        (dp_event.NonPrivateDpEvent(), "non-private"),
    ],
)
def test_events_read_as_text(event, text):
    from dpsynth.privacy.events import describe_event

    assert describe_event(event) == text
