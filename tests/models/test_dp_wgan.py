"""DP-WGAN and DP-GAN (issue 20): DP-auto-GAN's DP-SGD critic phase on the encoded rows, no autoencoder.

The contract runs in tests/models/test_contract.py, the noise-off audits in test_noise_off_audits.py and the
canary-tag audit in tests/attacks/test_attack_contract.py; the GAN phase itself is tested in test_dp_auto_gan.py."""

from __future__ import annotations

import math

import pytest
import torch

from dpsynth.models import _auto_gan_train, get_model_class, model_phases
from dpsynth.models.dp_wgan import DPGAN, DPWGAN

FAST = dict(DPWGAN.fast_params)


@pytest.fixture(scope="module")
def small(adult):
    train, _ = adult
    return train.sample(800, random_state=5).reset_index(drop=True)


def test_defaults_and_registration():
    assert get_model_class("dp-wgan") is DPWGAN and get_model_class("dp-gan") is DPGAN
    assert model_phases("dp-wgan") == model_phases("dp-gan") == ("metadata", "gan")
    assert DPWGAN().critic_loss == "wgan" and DPGAN().critic_loss == "bce"
    assert set(DPGAN().get_params()) == set(DPWGAN().get_params())


@pytest.mark.parametrize("cls", [DPWGAN, DPGAN])
def test_the_critic_is_dp_sgd_and_all_the_budget_goes_to_it(cls, small, adult_schema, monkeypatch):
    """Every access to the rows is a per-example-clipped DP-SGD critic step of phase "gan"; weight clipping keeps
    DP-WGAN's critic in [-0.05, 0.05] (post-processing of its DP weights)."""
    critics = []
    real = _auto_gan_train.train_gan

    def spy(gen_net, decoder, critic, *args, **kw):
        critics.append(critic)
        return real(gen_net, decoder, critic, *args, **kw)

    monkeypatch.setattr("dpsynth.models.dp_wgan.train_gan", spy)
    model = cls(**FAST).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    assert {e.phase for e in model.ledger_.entries} == {"metadata", "gan"}
    assert 0.5 < model.ledger_.epsilon() <= 1.0 + 1e-9  # calibrated by RDP (fast_params), reported by PLD
    gan = [e for e in model.ledger_.entries if e.phase == "gan"]
    assert gan and all(e.params["clipping"] == "per_example" for e in gan)
    steps = sum(e.count for e in gan)
    assert model.budget_["phases"]["gan"]["generator_steps"] == steps // 5  # critic_iters = 5
    bound = max(float(p.abs().max()) for p in critics[0].parameters())
    assert (bound <= 0.05 + 1e-7) == (cls is DPWGAN)
    assert len(model.sample(64, seed=0)) == 64


def test_noise_follows_the_budget(small, adult_schema):
    sigmas = [DPWGAN(**FAST).fit(small, epsilon=eps, delta=1e-5, schema=adult_schema, seed=0)
              .budget_["phases"]["gan"]["noise_multiplier"] for eps in (0.5, 2.0)]
    assert sigmas[0] > sigmas[1] > 0


def test_non_private_mode(small, adult_schema):
    model = DPWGAN(**FAST).fit(small, epsilon=math.inf, delta=1e-5, schema=adult_schema, seed=0)
    assert math.isinf(model.epsilon_) and model.budget_["phases"]["gan"]["noise_multiplier"] == 0.0
    with torch.no_grad():
        assert len(model.sample(20, seed=1)) == 20
