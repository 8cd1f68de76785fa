"""DP-CTGAN (seed 004's baseline) as a configuration of the conditional WGAN-GP core: what differs from DTGAN_D.

The contract runs in tests/models/test_contract.py, the noise-off audits in test_noise_off_audits.py and the
canary-tag audit in tests/attacks/test_attack_contract.py; the shared core is tested in test_dtgan.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sklearn.base
import torch

from dpsynth.data.transformers import TableTransformer
from dpsynth.models import get_model_class, model_phases
from dpsynth.models._conditional_gan import Conditions, discriminator_units
from dpsynth.models.dp_ctgan import DPCTGAN
from dpsynth.models.dtgan import DTGANDiscriminator
from dpsynth.models.marginal_map import CategoryWeights
from dpsynth.models.networks.ctgan import ConditionalGenerator

FAST = dict(DPCTGAN.fast_params)


@pytest.fixture(scope="module")
def small(adult):
    train, _ = adult
    return train.sample(1000, random_state=2).reset_index(drop=True)


def test_registered_with_its_own_phases():
    assert get_model_class("dp-ctgan") is DPCTGAN
    assert model_phases("dp-ctgan") == ("metadata", "gan")
    model = sklearn.base.clone(DPCTGAN(gan_epochs=3.0))
    assert model.gan_epochs == 3.0 and "classifier_share" not in model.get_params()
    assert (DPCTGAN.interpolation, DTGANDiscriminator.interpolation) == ("linear", "spherical")


def test_ctgan_defaults():
    params = DPCTGAN().get_params()
    assert params["critic_iters"] == 1 and params["log_frequency"] and not params["match_marginals"]
    assert params["generator_hidden"] == (256, 256) and params["noise_dim"] == 128
    assert params["critic_hidden"] is None  # dtgan-d's width rule: CTGAN's (256, 256) is 4x the DP-SGD cost


def test_linear_interpolates_lie_on_the_segment(small, adult_schema):
    """CTGAN's gradient penalty is taken at t * real + (1 - t) * fake, t ~ U(0, 1) per row (DTGAN_D: on the
    sphere); the units are otherwise the same."""
    transformer = TableTransformer(adult_schema, numeric="mode_specific", max_modes=3).fit(None, rng=0)
    x = torch.as_tensor(transformer.transform(small.head(64), rng=0), dtype=torch.float32)
    conditions = Conditions(transformer)
    spans = [(int(s.start), int(s.end), str(s.activation)) for s in transformer.output_info]
    gen = ConditionalGenerator(8, conditions.dim, (16,), x.shape[1])
    real, fake, _, mixed = discriminator_units(x, gen, conditions, spans, noise_dim=8, gumbel_tau=0.2,
                                               generator=torch.Generator().manual_seed(0), interpolation="linear")
    # mixed - fake = t (real - fake) with one t in [0, 1] per row
    t = ((mixed - fake) * (real - fake)).sum(1) / ((real - fake) ** 2).sum(1)
    assert torch.allclose(mixed, fake + t[:, None] * (real - fake), atol=1e-5)
    assert (t >= 0).all() and (t <= 1).all() and t.std() > 0.1


def test_all_the_budget_goes_to_the_critic(small, adult_schema):
    model = DPCTGAN(**FAST).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    assert {e.phase for e in model.ledger_.entries} == {"metadata", "gan"}
    assert 0.5 < model.ledger_.epsilon() <= 1.0 + 1e-9  # calibrated by RDP (fast_params), reported by PLD
    gan = [e for e in model.ledger_.entries if e.phase == "gan"]
    assert gan and all(e.params["clipping"] == "per_example" for e in gan)
    assert model.budget_["phases"]["gan"]["generator_steps"] == sum(e.count for e in gan)  # critic_iters = 1
    assert len(model.sample(100, seed=0)) == 100


def test_non_private_mode(small, adult_schema):
    model = DPCTGAN(**FAST).fit(small, epsilon=math.inf, delta=1e-5, schema=adult_schema, seed=0)
    assert math.isinf(model.epsilon_) and len(model.sample(20, seed=1)) == 20


def test_without_the_marginal_map_categories_are_drawn_from_the_softmax(small, adult_schema):
    """CTGAN's sampling (Gumbel-softmax, then argmax) draws a category from the softmax of its logits; taking the
    most likely one instead gives every row the majority category wherever the generator is unsure. With the
    marginal map the reweighted logits are decoded by argmax, which is what its weights are fitted for."""
    model = DPCTGAN(**FAST).fit(small, epsilon=math.inf, delta=1e-5, schema=adult_schema, seed=0)
    assert model.category_weights_ is None  # match_marginals is off by default, as published
    sex = next(s for s in model.transformer_.output_info if s.column == "sex" and s.role == "category")
    first = model.transformer_.inverse_transform(np.eye(model.transformer_.output_dim, dtype=np.float32)[
        [sex.start]], softmax="argmax")["sex"].iloc[0]  # the category of the span's first slot
    logits = np.zeros(sex.width, dtype=np.float32)
    logits[:2] = np.log([0.7, 0.3])
    logits[2:] = -30.0  # a missing slot, if any, never drawn

    def generate(n, gen):
        rows = np.zeros((n, model.transformer_.output_dim), dtype=np.float32)
        rows[:, sex.start:sex.end] = logits
        return rows

    model._generate = generate
    drawn = (model.sample(4000, seed=3)["sex"] == first).mean()
    assert abs(drawn - 0.7) < 0.03  # binomial sd 0.007: a draw, not the argmax's 1.0
    model.category_weights_ = CategoryWeights({0: (sex.start, sex.end)}, {0: np.zeros(sex.width)}, "logits")
    assert (model.sample(500, seed=3)["sex"] == first).all()  # the map's decoding: argmax of the reweighted logits
