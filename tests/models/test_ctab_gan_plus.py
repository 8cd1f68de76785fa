"""The non-private CTAB-GAN+ reference (issue 20): its image networks, spherical penalty, information loss, auxiliary
classifier, the non-private-only contract and a dependency it must learn. The packaged contract runs in
test_contract.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from dpsynth.data.schema import Column, Schema
from dpsynth.errors import InputError
from dpsynth.models import get_model_class, model_phases
from dpsynth.models.ctab_gan_plus import (
    AuxiliaryClassifier,
    CTABGANPlus,
    information_loss,
    spherical_penalty,
    target_block,
)
from dpsynth.models.networks.ctab_gan import ConvDiscriminator, ConvGenerator, image_side


@pytest.mark.parametrize(("width", "side"), [(1, 4), (16, 4), (17, 8), (64, 8), (65, 16), (257, 24), (577, 32),
                                             (4096, 64)])
def test_image_side_is_the_smallest_square_that_holds_the_row(width, side):
    assert image_side(width) == side


def test_image_side_refuses_a_row_wider_than_the_largest_image():
    with pytest.raises(ValueError, match="does not fit"):
        image_side(64 * 64 + 1)


@pytest.mark.parametrize("width", [5, 60, 170, 300])
def test_networks_give_one_row_per_row_independently_of_the_batch(width):
    """Shapes, and layer normalisation over each example's own map: a row's output does not depend on the others."""
    torch.manual_seed(0)
    gen, critic = ConvGenerator(8, 3, width, channels=4), ConvDiscriminator(width + 3, channels=4)
    z, cond = torch.randn(6, 8), torch.randn(6, 3)
    rows = gen(z, cond)
    assert rows.shape == (6, width)
    assert torch.allclose(gen(z[:2], cond[:2]), rows[:2], atol=1e-5)
    score, features = critic(torch.cat([rows, cond], 1).detach())
    assert score.shape == (6,) and features.shape[0] == 6 and (score >= 0).all()  # CTAB-GAN+'s final ReLU
    alone, _ = critic(torch.cat([rows, cond], 1).detach()[3:4])
    assert torch.allclose(alone, score[3:4], atol=1e-5)


def test_spherical_penalty_of_a_linear_critic_is_its_slope_error():
    """For D(m) = m . w the input gradient is w everywhere: the penalty is (||w|| - 1)^2 whatever the interpolates."""
    w = torch.tensor([3.0, 0.0, 4.0])  # ||w|| = 5

    def critic(m):
        return m @ w, m

    real, fake = torch.randn(32, 3), torch.randn(32, 3)
    got = spherical_penalty(critic, real, fake, torch.Generator().manual_seed(0))
    assert got.item() == pytest.approx(16.0, rel=1e-4)


def test_information_loss_known_answer():
    fake = torch.tensor([[0.0, 1.0], [2.0, 1.0]])  # means (1, 1), stds (sqrt 2, 0)
    real = torch.tensor([[1.0, 0.0], [1.0, 4.0]])  # means (1, 2), stds (0, 2 sqrt 2)
    assert information_loss(fake, real).item() == pytest.approx(1.0 + math.sqrt(2) + 2 * math.sqrt(2), rel=1e-6)
    assert information_loss(real, real).item() == 0.0


def test_classifier_reads_every_column_but_the_target():
    torch.manual_seed(0)
    clf = AuxiliaryClassifier(6, (2, 4), (8,)).eval()
    rows = torch.tensor([[0.1, 0.2, 0.0, 1.0, 0.5, -0.3]])
    changed = rows.clone()
    changed[0, 2:4] = torch.tensor([1.0, 0.0])
    logits, label = clf(rows)
    assert logits.shape == (1, 2) and label.tolist() == [1]
    assert torch.equal(clf(changed)[0], logits) and clf(changed)[1].tolist() == [0]
    numeric = AuxiliaryClassifier(6, (4, 5), (8,)).eval()
    value, label = numeric(rows)
    assert value.shape == (1,) and label.tolist() == [0.5]
    assert numeric.loss(rows).item() >= 0


def test_target_block_of_a_categorical_target(adult_schema):
    from dpsynth.data.transformers import TableTransformer

    transformer = TableTransformer(adult_schema, numeric="mode_specific").fit(None, rng=0)
    start, end = target_block(transformer, "income")
    span = next(s for s in transformer.output_info if s.column == "income")
    assert (start, end) == (span.start, span.end) and end - start == 2
    assert target_block(transformer, None) is None


def test_ctab_gan_plus_is_non_private_only(adult_small, adult_schema):
    assert not CTABGANPlus.supports_dp and get_model_class("ctab-gan-plus") is CTABGANPlus
    assert model_phases("ctab-gan-plus") == ("metadata", "gan")
    with pytest.raises(InputError, match="non-private baseline"):
        CTABGANPlus(**CTABGANPlus.fast_params).fit(adult_small, epsilon=1.0, delta=1e-5, schema=adult_schema)
    with pytest.raises(InputError, match="batch_size"):
        CTABGANPlus(batch_size=1).fit(adult_small, epsilon=math.inf, delta=1e-5, schema=adult_schema)


def test_ctab_gan_plus_learns_a_dependency_and_its_target(tmp_path):
    """A category decides another one and the target: the samples keep both pairings (independent columns would
    get them right about half the time); the auxiliary classifier is trained (the schema has a target)."""
    rng = np.random.default_rng(0)
    n = 2000
    a = rng.choice(["x", "y", "z"], n, p=[0.5, 0.3, 0.2])
    frame = pd.DataFrame({"a": a, "b": np.where(a == "x", "p", "q"), "v": rng.normal(size=n),
                          "label": np.where(a == "y", "yes", "no")})
    schema = Schema([Column("a", "categorical", categories=("x", "y", "z")),
                     Column("b", "categorical", categories=("p", "q")),
                     Column("v", "continuous", lower=-5.0, upper=5.0),
                     Column("label", "categorical", categories=("no", "yes"))], provenance="public", target="label")
    model = CTABGANPlus(epochs=25, batch_size=100, noise_dim=16, channels=16, classifier_hidden=(32,),
                        learning_rate=2e-3, max_modes=3)
    model.fit(frame, epsilon=math.inf, delta=1e-5, schema=schema, seed=0)
    assert model.budget_["phases"]["gan"]["classifier"] is True
    rows = model.sample(3000, seed=1)
    assert ((rows["a"] == "x") == (rows["b"] == "p")).mean() > 0.85
    assert ((rows["a"] == "y") == (rows["label"] == "yes")).mean() > 0.85
    path = model.save(tmp_path / "m.dpsynth")
    pd.testing.assert_frame_equal(model.sample(200, seed=2), get_model_class("ctab-gan-plus").load(path).sample(
        200, seed=2))
