"""DP-SYN (issue 20): the routed per-label autoencoders, DP-EM's statistics and their sensitivity, the noisy release
and the ledger. The packaged contract runs in tests/models/test_contract.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from dp_accounting import dp_event
from scipy import stats as scipy_stats

from dpsynth.errors import BudgetExceededError
from dpsynth.models import get_model_class, model_phases
from dpsynth.models.dp_syn import DPSYN, EM_SENSITIVITY, RoutedAutoencoder, em_statistics, release_statistics
from dpsynth.privacy.ledger import PrivacyLedger


def _in_ball(n: int, d: int, gen: torch.Generator) -> torch.Tensor:
    z = torch.randn(n, d, generator=gen)
    return z / z.norm(dim=1, keepdim=True).clamp_min(1.0) * torch.rand(n, 1, generator=gen)


def test_em_statistics_known_answer():
    """One component per label: responsibilities are 1, so the statistics are each label's count, sum and sum of
    squares."""
    z = torch.tensor([[0.1, 0.2], [0.3, -0.4], [-0.5, 0.0]])
    labels = torch.tensor([0, 1, 0])
    got = em_statistics(z, labels, torch.ones(2, 1), torch.zeros(2, 1, 2), torch.ones(2, 1, 2))
    assert got.shape == (2, 1, 5)
    assert torch.allclose(got[0, 0], torch.tensor([2.0, -0.4, 0.2, 0.26, 0.04]))
    assert torch.allclose(got[1, 0], torch.tensor([1.0, 0.3, -0.4, 0.09, 0.16]))


def test_one_row_moves_the_statistics_by_at_most_sqrt_3():
    """The sensitivity the noise is calibrated to: adding any row in the unit ball, under any mixture, moves the
    whole release (all labels, all components) by at most sqrt 3 in L2, and only its own label's block."""
    gen = torch.Generator().manual_seed(0)
    k, m, d = 3, 4, 5
    worst = 0.0
    for _ in range(200):
        z = _in_ball(50, d, gen)
        labels = torch.randint(k, (50,), generator=gen)
        weights = torch.softmax(torch.randn(k, m, generator=gen), 1)
        means = _in_ball(k * m, d, gen).reshape(k, m, d)
        variances = torch.rand(k, m, d, generator=gen) * 0.1 + 1e-3
        base = em_statistics(z[1:], labels[1:], weights, means, variances)
        full = em_statistics(z, labels, weights, means, variances)
        change = full - base
        others = [j for j in range(k) if j != int(labels[0])]
        assert torch.allclose(change[others], torch.zeros_like(change[others]), atol=1e-6)
        worst = max(worst, float(change.norm()))
    assert worst <= EM_SENSITIVITY + 1e-6
    corner = torch.full((1, d), 1.0 / math.sqrt(d))  # a row on the sphere with one component: the bound is tight-ish
    one = em_statistics(corner, torch.zeros(1, dtype=torch.long), torch.ones(1, 1), torch.zeros(1, 1, d),
                        torch.ones(1, 1, d))
    assert float(one.norm()) == pytest.approx(math.sqrt(1 + 1 + 1 / d), rel=1e-5)


def test_release_is_charged_first_and_carries_the_calibrated_noise():
    ledger = PrivacyLedger(target_epsilon=3.0, target_delta=1e-5)
    gen = torch.Generator().manual_seed(1)
    sigma = 2.0
    noisy = release_statistics(torch.zeros(4000), sigma=sigma, ledger=ledger, generator=gen)
    assert [e.event for e in ledger.entries] == [dp_event.GaussianDpEvent(sigma)]
    assert ledger.entries[0].phase == "em"
    assert scipy_stats.kstest(noisy.numpy() / (sigma * EM_SENSITIVITY), "norm").pvalue > 1e-3
    state = gen.get_state()
    with pytest.raises(BudgetExceededError):  # over budget: refused before any noise is drawn
        release_statistics(torch.zeros(3), sigma=0.01, ledger=ledger, generator=gen)
    assert torch.equal(gen.get_state(), state) and len(ledger.entries) == 1


def test_routed_autoencoder_touches_only_the_rows_label():
    torch.manual_seed(0)
    model = RoutedAutoencoder(3, 6, (4,), 2)
    row, onehot = torch.randn(6), torch.tensor([0.0, 1.0, 0.0])
    assert torch.allclose(model(row, onehot), model.decoders[1](model.encoders[1](row)))
    model(row, onehot).pow(2).sum().backward()
    for j in range(3):
        grads = [p.grad for p in [*model.encoders[j].parameters(), *model.decoders[j].parameters()]]
        touched = any(g is not None and g.abs().sum() > 0 for g in grads)
        assert touched == (j == 1)


def test_dp_syn_fit_accounts_every_round(adult, adult_schema, tmp_path):
    train, _ = adult
    small = train.sample(800, random_state=5).reset_index(drop=True)
    assert get_model_class("dp-syn") is DPSYN and model_phases("dp-syn") == ("metadata", "autoencoder", "em")
    fast = dict(DPSYN.fast_params)
    model = DPSYN(**fast).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    em = [e for e in model.ledger_.entries if e.phase == "em"]
    settings = model.budget_["phases"]["em"]
    assert sum(e.count for e in em) == fast["em_iterations"] == settings["iterations"] and settings["labels"] == 2
    assert all(e.event == dp_event.GaussianDpEvent(settings["noise_std"] / EM_SENSITIVITY) for e in em)
    assert 0.95 < model.ledger_.epsilon() <= 1.0 + 1e-9
    assert model.mixture_["weights"].shape == (2, fast["components"])
    rows = model.sample(400, seed=2)
    assert set(rows["income"].dropna()) <= set(adult_schema["income"].categories)
    loaded = DPSYN.load(model.save(tmp_path / "dp-syn.dpsynth"))
    assert loaded.sample(400, seed=2).equals(rows)
    exact = DPSYN(**fast).fit(small, epsilon=math.inf, delta=1e-5, schema=adult_schema, seed=0)
    assert exact.budget_["phases"]["em"]["noise_std"] == 0.0
    assert all(isinstance(e.event, dp_event.NonPrivateDpEvent) for e in exact.ledger_.entries if e.phase == "em")
    np.testing.assert_allclose(exact.label_probs_.sum(), 1.0)
