"""DP-SGD engine: one test per guarantee in dpsynth/privacy/dpsgd.py's docstring."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from dp_accounting import dp_event
from scipy import stats
from torch import nn

import dpsynth.privacy.dpsgd as dpsgd_mod
from dpsynth.errors import InputError, PrivacyError
from dpsynth.privacy import DPSGD, DPSGDConfig, PoissonSampler, PrivacyLedger, ShuffleSampler

DELTA = 1e-5


def _engine(module, config, *, target=10.0, steps=5, n=200, opt=None, seed=0, non_private=False):
    ledger = PrivacyLedger(target_epsilon=math.inf if non_private else target, target_delta=DELTA, accountant="rdp")
    opt = opt or torch.optim.SGD([p for p in module.parameters() if p.requires_grad], lr=1.0)
    engine = DPSGD(module, opt, config, ledger=ledger, phase="train", max_steps=steps,
                   generator=torch.Generator().manual_seed(seed), n_rows=n, non_private=non_private)
    return engine, ledger


def _cfg(sigma, clip, q, **kwargs):
    return DPSGDConfig(noise_multiplier=sigma, max_grad_norm=clip, sample_rate=q, **kwargs)


def _zero_loss(model_fn, x):
    return 0.0 * model_fn(x).sum()


def _linear(d_in=400, d_out=5):
    m = nn.Linear(d_in, d_out, bias=False)
    nn.init.zeros_(m.weight)
    return m


@pytest.fixture
def no_noise(monkeypatch):
    monkeypatch.setattr(dpsgd_mod, "gaussian_noise", lambda shape, std, gen: torch.zeros(shape))


# ------------------------------------------------------------------ config
@pytest.mark.parametrize("kwargs", [
    dict(noise_multiplier=-1.0, max_grad_norm=1.0, sample_rate=0.1),
    dict(noise_multiplier=float("nan"), max_grad_norm=1.0, sample_rate=0.1),
    dict(noise_multiplier=1.0, max_grad_norm=0.0, sample_rate=0.1),
    dict(noise_multiplier=1.0, max_grad_norm=1.0, sample_rate=1.3),
    dict(noise_multiplier=1.0, max_grad_norm=1.0, sample_rate=0.1, clipping="layer"),
    dict(noise_multiplier=1.0, max_grad_norm=1.0, sample_rate=0.1, microbatch_size=0),
])
def test_config_validates(kwargs):
    with pytest.raises(InputError, match="Found"):
        DPSGDConfig(**kwargs)


def test_sensitivity_and_event_per_mode():
    pe = _cfg(1.5, 2.0, 0.01)
    assert (pe.sensitivity, pe.noise_std) == (2.0, 3.0)
    for mode in ("batch", "microbatch"):
        agg = _cfg(1.5, 2.0, 0.01, clipping=mode)
        assert (agg.sensitivity, agg.noise_std) == (4.0, 6.0)  # aggregate clipping: 2C, noise 2 C sigma
        # noise std / sensitivity = sigma, so the event is the same subsampled Gaussian
        assert agg.event() == dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.5))


# ------------------------------------------------------------------ refusals
def test_batchnorm_refused_with_reason():
    module = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    with pytest.raises(PrivacyError, match="GroupNorm"):
        _engine(module, _cfg(1.0, 1.0, 0.1))


def test_optimizer_with_foreign_parameters_refused():
    module, other = nn.Linear(3, 1), nn.Linear(3, 1)
    opt = torch.optim.SGD(list(module.parameters()) + list(other.parameters()), lr=0.1)
    with pytest.raises(PrivacyError, match="foreign"):
        _engine(module, _cfg(1.0, 1.0, 0.1), opt=opt)


def test_zero_noise_needs_explicit_non_private_mode():
    with pytest.raises(PrivacyError):
        _engine(nn.Linear(3, 1), _cfg(0.0, 1.0, 0.1))
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=DELTA)
    module = nn.Linear(3, 1)
    with pytest.raises(PrivacyError, match="non-private ledger"):
        DPSGD(module, torch.optim.SGD(module.parameters(), lr=0.1), _cfg(0.0, 1.0, 0.1), ledger=ledger,
              phase="t", max_steps=3, generator=torch.Generator(), n_rows=10, non_private=True)


def test_step_without_charged_batch_refused():
    engine, _ = _engine(_linear(), _cfg(1.0, 1.0, 0.1))
    with pytest.raises(PrivacyError, match="charged"):
        engine.step(_zero_loss, (torch.zeros(3, 400),))
    batches = engine.batches()
    idx = next(batches)
    engine.step(_zero_loss, (torch.zeros(len(idx), 400),))
    with pytest.raises(PrivacyError):  # one charge, one step
        engine.step(_zero_loss, (torch.zeros(len(idx), 400),))


# ------------------------------------------------------------------ ledger
def test_every_batch_is_charged_before_it_is_yielded():
    engine, ledger = _engine(_linear(), _cfg(1.0, 1.0, 0.1), steps=6)
    first = ledger.entries[0]
    for k, idx in enumerate(engine.batches(), start=1):
        assert ledger.entries[0].count == k
        engine.step(_zero_loss, (torch.zeros(len(idx), 400),))
    assert engine.steps_taken == 6 and ledger.entries[0].count == 6
    assert first.count == 0  # entries are immutable: the ledger replaced it, the one handed out never changed
    assert ledger.entries[0].event == dp_event.PoissonSampledDpEvent(0.1, dp_event.GaussianDpEvent(1.0))


def test_training_stops_before_target():
    engine, ledger = _engine(_linear(), _cfg(2.0, 1.0, 0.05), target=1.0, steps=2000, n=100)
    n = sum(1 for _ in engine.batches())
    assert 0 < n == engine.steps_allowed < 2000
    assert engine.epsilon <= 1.0
    assert ledger.epsilon_if(ledger.entries[0].event, 1) > 1.0


def test_two_interleaved_engines_on_one_ledger_stop_before_the_target():
    """A DP critic and a DP classifier trained in one loop share the ledger: together they stay within it."""
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=DELTA, accountant="rdp")
    config = _cfg(2.0, 1.0, 0.05)
    engines = [DPSGD(m, torch.optim.SGD(m.parameters(), lr=0.1), config, ledger=ledger, phase=phase, max_steps=2000,
                     generator=torch.Generator().manual_seed(k), n_rows=100)
               for k, (m, phase) in enumerate([(_linear(3, 1), "critic"), (_linear(3, 1), "aux")])]
    loops = [e.batches() for e in engines]
    live = [True, True]
    while any(live):
        for k, (engine, loop) in enumerate(zip(engines, loops)):
            if live[k]:
                idx = next(loop, None)
                live[k] = idx is not None
                if live[k]:
                    engine.step(_zero_loss, (torch.zeros(len(idx), 3),))
    assert engines[0].steps_taken > 0
    assert ledger.epsilon() <= 1.0
    assert ledger.epsilon_if(config.event(), 1) > 1.0


def test_non_finite_gradient_of_one_record_does_not_poison_the_update():
    """A record whose gradient is inf/NaN contributes 0 (norm <= C), never NaN (which would reveal it)."""
    for clipping in ("per_example", "batch"):
        module = _linear(3, 1)
        config = _cfg(1.0, 1.0, 1.0, clipping=clipping)
        engine, _ = _engine(module, config, n=4)
        x = torch.ones(4, 3)
        x[1, 0] = float("inf")
        idx = next(engine.batches())
        engine.step(lambda f, xi: f(xi).sum(), (x[idx],))
        assert torch.isfinite(module.weight).all(), clipping


def test_non_private_mode_records_non_private_event_and_is_exact():
    module = _linear(3, 1)
    engine, ledger = _engine(module, _cfg(0.0, 0.1, 0.5), n=20, non_private=True)
    x = torch.full((20, 3), 10.0)  # per-example norm 17 >> C = 0.1: no clipping in non-private mode
    idx = next(engine.batches())
    engine.step(lambda f, xi: -f(xi).sum(), (x[idx],))
    expected = len(idx) * 10.0 / (0.5 * 20)
    torch.testing.assert_close(module.weight, torch.full((1, 3), expected))
    assert isinstance(ledger.entries[0].event, dp_event.NonPrivateDpEvent)
    assert math.isinf(ledger.epsilon())


# ------------------------------------------------------------------ clipping, scaling, public term
def test_update_is_clipped_sum_over_expected_batch_size(no_noise):
    module = _linear(4, 1)
    engine, _ = _engine(module, _cfg(1.0, 1.0, 0.25), n=40)
    x = torch.zeros(40, 4)
    x[:20, 0] = 0.5  # norm 0.5: untouched
    x[20:, 1] = 7.0  # norm 7: clipped to 1
    idx = next(engine.batches())
    engine.step(lambda f, xi: -f(xi).sum(), (x[idx],))
    small, big = int((idx < 20).sum()), int((idx >= 20).sum())
    expected = torch.tensor([[0.5 * small, 1.0 * big, 0.0, 0.0]]) / (0.25 * 40)  # divisor q*n, not len(idx)
    torch.testing.assert_close(module.weight, expected)


def test_public_loss_added_unclipped_and_only_to_module(no_noise):
    module = _linear(4, 1)
    other = nn.Linear(4, 1)
    engine, _ = _engine(module, _cfg(1.0, 1.0, 0.5), n=10)
    idx = next(engine.batches())
    engine.step(_zero_loss, (torch.zeros(len(idx), 4),),
                public_loss=lambda: 1000.0 * module.weight.sum() + other.weight.sum())
    torch.testing.assert_close(module.weight, torch.full((1, 4), -1000.0))
    assert other.weight.grad is None


def test_batch_clipping_clips_the_aggregate(no_noise):
    module = _linear(4, 1)
    engine, _ = _engine(module, _cfg(1.0, 0.5, 0.5, clipping="batch"), n=20)
    x = torch.zeros(20, 4)
    x[:, 2] = 3.0
    idx = next(engine.batches())
    engine.step(lambda f, xi: -f(xi).sum(), (x[idx],))
    torch.testing.assert_close(module.weight, torch.tensor([[0.0, 0.0, 0.5, 0.0]]))  # mean 3 clipped to C


def test_microbatch_aggregates_have_norm_at_most_c(no_noise):
    module = _linear(4, 1)
    config = _cfg(1.0, 1.0, 0.5, clipping="microbatch", microbatch_size=5)
    engine, _ = _engine(module, config, n=40)
    assert engine._n_groups == 4
    x = torch.zeros(40, 4)
    x[:, 3] = 9.0
    idx = next(engine.batches())
    engine.step(lambda f, xi: -f(xi).sum(), (x[idx],))
    groups_present = len(torch.unique(engine._groups[idx]))
    torch.testing.assert_close(module.weight, torch.tensor([[0.0, 0.0, 0.0, groups_present * 1.0 / 4]]))


# ------------------------------------------------------------------ noise
@pytest.mark.parametrize("clipping,factor", [("per_example", 1.0), ("batch", 2.0), ("microbatch", 2.0)])
def test_noise_is_gaussian_with_the_right_std(clipping, factor):
    sigma, c, q, n = 1.3, 0.7, 0.1, 200
    module = _linear()
    config = _cfg(sigma, c, q, clipping=clipping, microbatch_size=4)
    engine, _ = _engine(module, config, n=n)
    idx = next(engine.batches())
    engine.step(_zero_loss, (torch.zeros(len(idx), 400),))
    divisor = {"per_example": q * n, "batch": 1.0, "microbatch": engine._n_groups}[clipping]
    noise = (-module.weight.detach() * divisor).reshape(-1).double().numpy()
    std = factor * c * sigma
    assert stats.kstest(noise, "norm", args=(0, std)).pvalue > 1e-3
    assert stats.kstest(noise, "norm", args=(0, std * 2 / 3)).pvalue < 1e-6
    assert stats.kstest(noise, "norm", args=(0, std * 1.5)).pvalue < 1e-6


# ------------------------------------------------------------------ optimizers
@pytest.mark.parametrize("opt_cls,lr", [(torch.optim.SGD, 2.0), (torch.optim.Adam, 0.05), (torch.optim.RMSprop, 0.01)])
def test_trains_with_common_optimizers(opt_cls, lr):
    torch.manual_seed(0)
    x = torch.randn(300, 4)
    y = (x[:, 0] > 0).float()
    module = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    before = [p.detach().clone() for p in module.parameters()]
    opt = opt_cls(module.parameters(), lr=lr)
    engine, _ = _engine(module, _cfg(0.8, 1.0, 0.1), n=300, opt=opt, steps=60, target=20)

    def loss(f, xi, yi):
        return nn.functional.binary_cross_entropy_with_logits(f(xi).squeeze(-1), yi)

    for idx in engine.batches():
        stats_ = engine.step(loss, (x[idx], y[idx]))
    assert set(stats_) >= {"batch_size", "clipped_fraction", "grad_norm"}
    assert all(torch.isfinite(p).all() for p in module.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, module.parameters()))
    acc = ((module(x).squeeze(-1) > 0).float() == y).float().mean()
    assert acc > 0.7


def test_empty_batch_is_a_noise_only_step():
    module = _linear(3, 1)
    engine, _ = _engine(module, _cfg(1.0, 1.0, 0.001), n=10)
    idx = next(engine.batches())
    assert len(idx) == 0
    engine.step(_zero_loss, (torch.zeros(0, 3),))
    assert torch.all(module.weight != 0)


# ------------------------------------------------------------------ samplers
def test_poisson_sampler_rate_and_variable_size():
    sampler = PoissonSampler(1000, 0.05, steps=400, generator=torch.Generator().manual_seed(3))
    sizes = [len(b) for b in sampler]
    assert len(sizes) == 400 and len(set(sizes)) > 5
    mean = sum(sizes) / len(sizes)
    assert abs(mean - 50) < 4 * math.sqrt(50 * 0.95 / 400)
    assert sampler.event(1.0) == dp_event.PoissonSampledDpEvent(0.05, dp_event.GaussianDpEvent(1.0))


@pytest.mark.parametrize("rate", [0.05, 0.3])  # the O(batch) draw (size, then a uniform subset) and the mask
def test_poisson_sampler_is_poisson_sampling(rate):
    """Every index independently with probability q: batch sizes Binomial(n, q) (chi-square), each index's
    inclusion rate q and each pair's q^2 (independence), within 5 standard errors over 30,000 steps."""
    from dpsynth.privacy.sampling import DENSE_RATE

    n, steps = 40, 30_000
    assert (rate <= DENSE_RATE) == (rate == 0.05)
    sampler = PoissonSampler(n, rate, steps=steps, generator=torch.Generator().manual_seed(11))
    hits = torch.zeros(steps, n, dtype=torch.bool)
    for t, batch in enumerate(sampler):
        assert torch.equal(batch, torch.unique(batch))  # sorted, no repeats
        hits[t, batch] = True
    sizes = hits.sum(1).numpy()
    pmf = stats.binom.pmf(np.arange(n + 1), n, rate)
    keep = pmf * steps >= 5  # chi-square cells with enough expected counts; the tails pooled
    observed = np.r_[np.bincount(sizes, minlength=n + 1)[keep], (~keep[sizes]).sum()]
    expected = np.r_[pmf[keep], pmf[~keep].sum()] * steps
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    rate_se = math.sqrt(rate * (1 - rate) / steps)
    assert np.abs(hits.float().mean(0).numpy() - rate).max() < 5 * rate_se
    for a, b in [(0, 1), (0, n - 1), (17, 18), (5, 30)]:
        both = (hits[:, a] & hits[:, b]).float().mean().item()
        assert abs(both - rate ** 2) < 5 * math.sqrt(rate ** 2 * (1 - rate ** 2) / steps)


def test_uniform_subset_is_uniform_and_exact_in_size():
    from dpsynth.privacy.sampling import uniform_subset

    g = torch.Generator().manual_seed(2)
    assert uniform_subset(10, 0, g).numel() == 0 and torch.equal(uniform_subset(5, 5, g), torch.arange(5))
    counts = np.zeros(6)
    for _ in range(12_000):
        pair = uniform_subset(6, 2, g)
        assert pair.numel() == 2 and pair[0] < pair[1]
        counts[pair.numpy()] += 1
    assert np.abs(counts / 12_000 - 1 / 3).max() < 5 * math.sqrt((1 / 3) * (2 / 3) / 12_000)
    with pytest.raises(InputError):
        uniform_subset(3, 4, g)


def test_shuffle_sampler_cannot_use_poisson_accountant():
    sampler = ShuffleSampler(100, 10, steps=12, generator=torch.Generator().manual_seed(0))
    batches = list(sampler)
    assert len(batches) == 12 and all(len(b) == 10 for b in batches)
    assert torch.equal(torch.cat(batches[:10]).sort().values, torch.arange(100))  # one epoch covers each row once
    with pytest.raises(PrivacyError, match="Poisson"):
        sampler.event(1.0)
    with pytest.raises(PrivacyError, match="shuffle-rdp"):
        sampler.event(1.0, accountant="shuffle-rdp")
