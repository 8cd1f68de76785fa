"""DP-TabDDPM and TabDDPM (issue 20): the multinomial diffusion's forward draw and posterior against Bayes' rule by
enumeration, the mixed loss (its t = 1 term, its zero, its per-row form under vmap), the normal scores, the ledger of
a DP fit and what a non-private fit learns. The packaged contract runs in tests/models/test_contract.py and the
noise-off audits in tests/models/test_noise_off_audits.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from dp_accounting import dp_event
from scipy import stats as scipy_stats
from torch.func import vmap

from dpsynth.data.schema import Column, Schema
from dpsynth.models import get_model_class, model_phases
from dpsynth.models.dp_tabddpm import DPTabDDPM, TabDDPM
from dpsynth.models.networks.tabddpm import (
    MixedDenoiser,
    MixedLayout,
    categorical_posterior,
    degaussianize,
    forward_categories,
    gaussianize,
    mixed_loss,
    mixed_sample,
)


def _one_hot(k: int, width: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(k), width).float()


def test_posterior_is_bayes_rule_by_enumeration():
    """q(x_s | x_t, x_0) = q(x_t | x_s) q(x_s | x_0) / q(x_t | x_0), each factor a uniform-mixing transition."""
    width, ab_s, ab_t = 4, 0.7, 0.3
    alpha_ts = ab_t / ab_s

    def transition(weight: float, start: torch.Tensor) -> torch.Tensor:  # Cat(weight x + (1 - weight) / K)
        return weight * start + (1 - weight) / width

    for x0 in range(width):
        for xt in range(width):
            brute = torch.stack([transition(alpha_ts, _one_hot(s, width))[xt] * transition(ab_s, _one_hot(x0, width))[s]
                                 for s in range(width)])
            brute = brute / brute.sum()
            got = categorical_posterior(_one_hot(xt, width), _one_hot(x0, width), torch.tensor(alpha_ts),
                                        torch.tensor(ab_s), width)
            assert torch.allclose(got, brute, atol=1e-6), (x0, xt)


def test_forward_draw_keeps_the_category_with_the_schedules_probability():
    """x_t ~ Cat(ab_t x_0 + (1 - ab_t) / K): the kept category's frequency is ab_t + (1 - ab_t) / K (binomial 5 sd)."""
    n, ab_t = 40_000, 0.3
    x0 = torch.zeros(n, 7)
    x0[:, 1] = 1.0  # block of 3 slots (category 1) ...
    x0[:, 5] = 1.0  # ... and block of 4 slots (category 2 of it)
    drawn = forward_categories(x0, torch.full((n,), ab_t), [(0, 3), (3, 7)], torch.Generator().manual_seed(0))
    assert torch.equal(drawn[:, :3].sum(1), torch.ones(n)) and torch.equal(drawn[:, 3:].sum(1), torch.ones(n))
    for slot, width in ((1, 3), (5, 4)):
        p = ab_t + (1 - ab_t) / width
        assert abs(drawn[:, slot].mean().item() - p) < 5 * (p * (1 - p) / n) ** 0.5


def test_scores_are_standard_normal_and_invert():
    alpha = torch.rand(20_000, generator=torch.Generator().manual_seed(1)) * 2 - 1  # a quantile code: U(-1, 1)
    z = gaussianize(alpha)
    assert scipy_stats.kstest(z.numpy(), "norm").pvalue > 1e-3
    assert torch.allclose(degaussianize(z), alpha, atol=1e-5)
    assert gaussianize(torch.tensor([1.0, -1.0])).abs().max() < 4.5  # the edges stay finite


def _layout() -> MixedLayout:
    # encoder spans: a number, a 3-slot category, a number, a 2-slot block
    return MixedLayout([(0, 1, "tanh"), (1, 4, "softmax"), (4, 5, "tanh"), (5, 7, "softmax")])


def test_layout_splits_and_joins():
    layout = _layout()
    x = torch.tensor([[0.5, 0, 1, 0, -0.2, 1, 0]])
    numbers, blocks = layout.split(x)
    assert torch.equal(numbers, torch.tensor([[0.5, -0.2]])) and torch.equal(blocks, torch.tensor([[0, 1, 0, 1, 0.]]))
    assert layout.blocks == [(0, 3), (3, 5)] and torch.equal(layout.join(numbers, blocks), x)


def test_loss_at_t1_is_the_negative_log_likelihood_and_vanishes_for_a_perfect_model():
    layout = _layout()
    z0, eps = torch.tensor([0.3, -1.0]), torch.tensor([0.5, 0.1])
    x0 = torch.tensor([0, 1, 0, 1, 0.0])
    x_t = torch.tensor([0, 0, 1, 1, 0.0])
    logits = torch.tensor([0.2, 1.0, -0.5, 0.3, 0.0])
    ab_1, one = torch.tensor(0.99), torch.tensor(1.0)

    def model_fn(x_in, t):
        return torch.cat([eps + 0.1, logits])

    got = mixed_loss(model_fn, layout, z0, eps, x0, x_t, torch.tensor(0.001), ab_1, one)
    # at t = 1: p(x_0 | x_1) is proportional to (alpha_1 x_1 + (1 - alpha_1) / K) * softmax(logits)
    nll = 0.0
    for (s, e), true in (((0, 3), 1), ((3, 5), 0)):
        p = (0.99 * x_t[s:e] + 0.01 / (e - s)) * torch.softmax(logits[s:e], 0)
        nll += -torch.log(p[true] / p.sum())
    assert got.item() == pytest.approx(0.01 + nll.item() / 2, rel=1e-5)

    def perfect(x_in, t):  # exact noise, x_0 certain
        return torch.cat([eps, 50 * (2 * x0 - 1)])

    for t, ab_t, ab_prev in ((0.5, 0.4, 0.41), (0.001, 0.99, 1.0)):
        loss = mixed_loss(perfect, layout, z0, eps, x0, x_t, torch.tensor(t), torch.tensor(ab_t), torch.tensor(ab_prev))
        assert abs(loss.item()) < 1e-5


def test_loss_per_row_under_vmap_equals_the_batch_loss():
    """The DP-SGD engine vmaps the loss over rows: the per-row values must be the batch's."""
    layout = _layout()
    torch.manual_seed(0)
    net = MixedDenoiser(layout, hidden=(16,), embed_dim=8)
    gen = torch.Generator().manual_seed(2)
    m = 6
    x0 = forward_categories(torch.zeros(m, 5), torch.zeros(m), layout.blocks, gen)
    ab_t = torch.rand(m, generator=gen) * 0.9 + 0.05
    x_t = forward_categories(x0, ab_t, layout.blocks, gen)
    args = (torch.randn(m, 2, generator=gen), torch.randn(m, 2, generator=gen), x0, x_t, torch.rand(m, generator=gen),
            ab_t, (ab_t + 0.01).clamp(max=1))
    batch = mixed_loss(net, layout, *args)
    rows = vmap(lambda *a: mixed_loss(net, layout, *a))(*args)
    assert batch.shape == (m,) and torch.allclose(rows, batch, atol=1e-6) and (batch > 0).all()


def test_sampler_returns_scores_and_block_probabilities():
    layout = _layout()
    net = MixedDenoiser(layout, hidden=(16,), embed_dim=8)
    z, probs = mixed_sample(net, 50, alpha_bar=torch.linspace(1, 0.01, 21, dtype=torch.float64), steps=5,
                            generator=torch.Generator().manual_seed(0))
    assert z.shape == (50, 2) and probs.shape == (50, 5) and (probs >= 0).all()
    assert torch.allclose(probs[:, :3].sum(1), torch.ones(50)) and torch.allclose(probs[:, 3:].sum(1), torch.ones(50))


# ---------------------------------------------------------------------------------------------- fits
def test_dp_fit_is_one_calibrated_dpsgd_phase(adult, adult_schema, tmp_path):
    train, _ = adult
    # two noise draws per row: the row's unit is the mean of its draws' losses (still one clipped term per row)
    model = DPTabDDPM(**DPTabDDPM.fast_params, noise_draws=2).fit(train.head(1000), epsilon=1.0, delta=1e-5,
                                                                  schema=adult_schema, seed=0)
    assert model_phases("dp-tabddpm") == DPTabDDPM.phases == ("metadata", "diffusion")
    assert 0.9 < model.ledger_.epsilon() <= 1.0 + 1e-9
    plan = model.budget_["phases"]["diffusion"]
    assert plan["noise_multiplier"] > 0 and plan["steps_taken"] == plan["steps"] > 0
    assert plan["sample_rate"] == pytest.approx(200 / model.metadata_.n_rows)  # q uses the DP row count
    entries = [e for e in model.ledger_.entries if e.phase == "diffusion"]
    assert sum(e.count for e in entries) == plan["steps"]
    assert all(isinstance(e.event, dp_event.PoissonSampledDpEvent) for e in entries)
    assert model.transformer_.non_private_ is False  # quantile codes from the DP histograms
    path = model.save(tmp_path / "m.dpsynth")
    again = get_model_class("dp-tabddpm").load(path)
    pd.testing.assert_frame_equal(model.sample(300, seed=3), again.sample(300, seed=3))


def test_tabddpm_is_non_private_only_and_learns_a_dependency(tmp_path):
    """A category that decides another column and a number (x = 10 * code + noise): TabDDPM's samples keep the
    pairing, which independent columns would get right half the time."""
    rng = np.random.default_rng(0)
    n = 3000
    a = rng.choice(["p", "q", "r"], n, p=[0.5, 0.3, 0.2])
    b = np.where(a == "p", "yes", "no")
    x = np.select([a == "p", a == "q"], [10.0, 20.0], 30.0) + rng.normal(0, 1, n)
    frame = pd.DataFrame({"a": a, "b": b, "x": x})
    schema = Schema([Column("a", "categorical", categories=["p", "q", "r"]),
                     Column("b", "categorical", categories=["no", "yes"]),
                     Column("x", "continuous", lower=0.0, upper=40.0)]).reviewed()
    assert not TabDDPM.supports_dp
    with pytest.raises(Exception, match="non-private"):
        TabDDPM().fit(frame, epsilon=1.0, delta=1e-5, schema=schema)
    model = TabDDPM(hidden=64, layers=2, embed_dim=32, epochs=60, batch_size=256, diffusion_steps=200,
                    sample_steps=50).fit(frame, epsilon=float("inf"), delta=0.0, schema=schema, seed=0)
    synth = model.sample(2000, seed=1)
    assert ((synth["a"] == "p") == (synth["b"] == "yes")).mean() > 0.9
    centre = synth["a"].map({"p": 10.0, "q": 20.0, "r": 30.0})
    assert (np.abs(synth["x"] - centre) < 4).mean() > 0.8
    # 60 epochs leave the marginal within 0.1 (measured 0.60; 300 epochs give 0.49), a uniform sampler gives 0.33
    assert abs((synth["a"] == "p").mean() - 0.5) < 0.13
