"""Gradient sanitizer (DP-HOOK / GS-WGAN): clipping, noise, true sensitivity and sampling rate in the event."""

from __future__ import annotations

import math

import pytest
import torch
from dp_accounting import dp_event
from scipy import stats

from dpsynth.errors import PrivacyError
from dpsynth.privacy import GradientSanitizer, PrivacyLedger
from dpsynth.privacy.sanitizer import SanitizerConfig

DELTA = 1e-5


def _san(n_shards=4, batch=64, sigma=2.0, c=0.5, steps=10, target=50.0):
    ledger = PrivacyLedger(target_epsilon=target, target_delta=DELTA, accountant="rdp")
    config = SanitizerConfig(max_grad_norm=c, noise_multiplier=sigma, batch_size=batch, n_shards=n_shards)
    san = GradientSanitizer(config, ledger=ledger, phase="g", max_steps=steps,
                            generator=torch.Generator().manual_seed(0))
    return san, ledger


def test_event_has_true_sensitivity_and_sampling_rate():
    san, ledger = _san(n_shards=4, batch=64, sigma=2.0)
    # B rows of one step are one Gaussian of L2 sensitivity 2C sqrt(B), noise std 2C sigma: multiplier sigma/sqrt(B)
    assert san.sensitivity_per_row == 1.0 and san.noise_std == 2.0
    assert san.effective_noise_multiplier == pytest.approx(2.0 / 8.0)
    assert ledger.entries[0].event == dp_event.SampledWithoutReplacementDpEvent(
        4, 1, dp_event.GaussianDpEvent(2.0 / 8.0))


def test_single_discriminator_has_no_amplification_and_warns():
    with pytest.warns(UserWarning, match="q = 1"):
        san, ledger = _san(n_shards=1)
    assert ledger.entries[0].event == dp_event.GaussianDpEvent(san.effective_noise_multiplier)


def test_shards_amplify_but_one_shard_costs_the_full_gaussian():
    one = _san(n_shards=10, batch=16, sigma=8.0)[0].event()  # effective multiplier 8 / sqrt(16) = 2
    with pytest.warns(UserWarning):
        full = _san(n_shards=1, batch=16, sigma=8.0)[0].event()
    ledger = PrivacyLedger(target_epsilon=1e9, target_delta=DELTA)
    ledger.spend(one, phase="a", mechanism="s", count=100)
    e_sharded = ledger.epsilon("rdp")
    ledger2 = PrivacyLedger(target_epsilon=1e9, target_delta=DELTA)
    ledger2.spend(full, phase="a", mechanism="s", count=100)
    assert e_sharded < ledger2.epsilon("rdp") < math.inf


def test_hook_clips_rows_and_adds_right_noise(monkeypatch):
    san, ledger = _san(batch=256, sigma=1.5, c=0.5, target=1e9)
    shard = next(san.steps())
    assert 0 <= shard < 4 and ledger.entries[0].count == 1
    x = torch.zeros(256, 8, requires_grad=True)
    san.attach(x)
    upstream = torch.randn(256, 8) * 10  # rows of norm ~28 >> C
    (x * upstream).sum().backward()
    noise = (x.grad - upstream * (0.5 / upstream.norm(dim=1, keepdim=True))).reshape(-1).numpy()
    std = 2 * 0.5 * 1.5
    assert stats.kstest(noise, "norm", args=(0, std)).pvalue > 1e-3
    assert stats.kstest(noise, "norm", args=(0, std * 2 / 3)).pvalue < 1e-6
    assert stats.kstest(noise, "norm", args=(0, std * 1.5)).pvalue < 1e-6


def test_clipping_bound_without_noise():
    san, _ = _san(batch=32, c=0.3, target=1e9)
    monkey = torch.Generator().manual_seed(0)
    next(san.steps())
    g = torch.randn(32, 5, generator=monkey) * torch.logspace(-3, 2, 32).unsqueeze(1)
    out = san.sanitize(g)
    # replay the sanitizer's generator (seed 0: one shard draw, then the noise) to isolate the clipped rows
    replay = torch.Generator().manual_seed(0)
    torch.randint(4, (1,), generator=replay)
    clipped = out - torch.normal(0.0, san.noise_std, size=g.shape, generator=replay)
    assert torch.all(clipped.norm(dim=1) <= 0.3 + 1e-4)
    small = g.norm(dim=1) <= 0.3
    torch.testing.assert_close(clipped[small], g[small], atol=1e-5, rtol=1e-4)


def test_privacy_settings_are_read_only_once_charged():
    import dataclasses

    from dpsynth.errors import InputError

    san, ledger = _san(sigma=2.0, c=0.5)
    for name, value in (("noise_multiplier", 1e-12), ("max_grad_norm", 10.0), ("batch_size", 1), ("n_shards", 100)):
        with pytest.raises(AttributeError):
            setattr(san, name, value)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(san.config, name, value)
    for bad in ({"max_grad_norm": 0.0}, {"noise_multiplier": math.inf}, {"batch_size": True}, {"n_shards": 0}):
        with pytest.raises(InputError, match=next(iter(bad))):
            SanitizerConfig(**{"max_grad_norm": 1.0, "noise_multiplier": 1.0, "batch_size": 8, **bad})
    assert san.noise_multiplier == 2.0 and san.noise_std == 2.0
    assert ledger.entries[0].params["noise_multiplier"] == 2.0


def test_hook_refuses_uncharged_step_and_oversized_batch():
    san, _ = _san(batch=8, target=1e9)
    with pytest.raises(PrivacyError, match="charged"):
        san.sanitize(torch.zeros(8, 3))
    next(san.steps())
    with pytest.raises(PrivacyError, match="batch_size"):
        san.sanitize(torch.zeros(9, 3))


def test_steps_stop_before_target():
    san, ledger = _san(n_shards=4, batch=4, sigma=4.0, steps=300, target=3.0)
    n = sum(1 for _ in san.steps())
    assert 0 < n < 300 and ledger.epsilon() <= 3.0


def test_shard_assignment_is_an_iid_partition():
    a = GradientSanitizer.shard_assignment(4000, 4, torch.Generator().manual_seed(1))
    counts = torch.bincount(a, minlength=4)
    assert counts.sum() == 4000 and a.min() >= 0 and a.max() < 4
    assert stats.chisquare(counts.numpy()).pvalue > 1e-3  # uniform


def test_non_finite_row_gradient_is_zeroed_not_nan():
    san, _ = _san(batch=4, sigma=1.0, c=1.0, target=1e9)
    next(san.steps())
    grad = torch.ones(4, 3)
    grad[2, 1] = float("nan")
    out = san.sanitize(grad)
    assert torch.isfinite(out).all()


def test_untaken_steps_are_released_when_the_loop_ends_early():
    san, ledger = _san(batch=4, sigma=8.0, steps=1000, target=50.0)
    assert sum(c for _, c in ledger.committed_pairs()) == 1000  # all reserved while the loop may still run
    for k, _ in enumerate(san.steps()):
        if k == 9:
            break  # the loop's generator is closed here: its untaken steps go back to the ledger
    assert sum(c for _, c in ledger.committed_pairs()) == ledger.entries[0].count == 10
