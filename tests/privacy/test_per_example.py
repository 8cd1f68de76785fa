"""Per-example gradients equal batch-of-one gradients (incl. a WGAN-GP penalty); the clipping bound holds."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dpsynth.privacy.per_example import clip_and_sum, input_gradient, per_example_grads, per_example_norms

torch.manual_seed(0)


def _critic() -> nn.Module:
    return nn.Sequential(nn.Linear(6, 16), nn.LeakyReLU(0.2), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1))


def gp_loss(model_fn, real, fake, alpha):
    """WGAN-GP critic real term + that record's penalty on its own interpolate."""
    mixed = alpha * real + (1 - alpha) * fake
    slope = input_gradient(model_fn, mixed)
    penalty = (torch.sqrt((slope**2).sum() + 1e-12) - 1.0) ** 2
    return -model_fn(real).sum() + 10.0 * penalty


def _batch_of_one_gp(module, real, fake, alpha):
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = module(mixed.unsqueeze(0)).sum()
    (slope,) = torch.autograd.grad(out, mixed, create_graph=True)
    penalty = (torch.sqrt((slope**2).sum() + 1e-12) - 1.0) ** 2
    loss = -module(real.unsqueeze(0)).sum() + 10.0 * penalty
    return torch.autograd.grad(loss, list(module.parameters()))


def test_per_example_equals_batch_of_one_with_gradient_penalty():
    module = _critic()
    b = 7
    real, fake, alpha = torch.randn(b, 6), torch.randn(b, 6), torch.rand(b, 1)
    grads, losses = per_example_grads(module, gp_loss, (real, fake, alpha))
    names = [n for n, _ in module.named_parameters()]
    for i in range(b):
        expected = _batch_of_one_gp(module, real[i], fake[i], alpha[i])
        for name, g in zip(names, expected):
            torch.testing.assert_close(grads[name][i], g, rtol=1e-4, atol=1e-5)
    assert losses.shape == (b,)


def test_penalty_is_part_of_the_per_example_gradient():
    """Dropping the penalty changes the per-example gradient, so clipping covers it (DESIGN §1 rule 4)."""
    module = _critic()
    real, fake, alpha = torch.randn(4, 6), torch.randn(4, 6), torch.rand(4, 1)
    with_gp, _ = per_example_grads(module, gp_loss, (real, fake, alpha))
    without, _ = per_example_grads(module, lambda f, r, *_: -f(r).sum(), (real, fake, alpha))
    assert not torch.allclose(per_example_norms(with_gp), per_example_norms(without))


def test_per_example_equals_batch_of_one_plain_loss_and_frozen_params():
    module = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
    module[0].weight.requires_grad_(False)  # frozen: not privatised, not returned
    x, y = torch.randn(9, 5), torch.randint(3, (9,))

    def loss(model_fn, xi, yi):
        return nn.functional.cross_entropy(model_fn(xi).unsqueeze(0), yi.unsqueeze(0))

    grads, _ = per_example_grads(module, loss, (x, y))
    assert "0.weight" not in grads
    params = [p for p in module.parameters() if p.requires_grad]
    names = [n for n, p in module.named_parameters() if p.requires_grad]
    for i in range(9):
        expected = torch.autograd.grad(nn.functional.cross_entropy(module(x[i : i + 1]), y[i : i + 1]), params)
        for name, g in zip(names, expected):
            torch.testing.assert_close(grads[name][i], g, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("max_norm", [0.01, 0.5, 3.0])
def test_clipping_bound_holds(max_norm):
    module = _critic()
    real, fake, alpha = torch.randn(32, 6) * 5, torch.randn(32, 6), torch.rand(32, 1)
    grads, _ = per_example_grads(module, gp_loss, (real, fake, alpha))
    norms = per_example_norms(grads)
    factors = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    clipped = {n: g * factors.reshape(-1, *[1] * (g.dim() - 1)) for n, g in grads.items()}
    clipped_norms = per_example_norms(clipped)
    assert torch.all(clipped_norms <= max_norm * (1 + 1e-5))
    small = norms <= max_norm
    torch.testing.assert_close(clipped_norms[small], norms[small])  # unclipped rows untouched
    summed, _ = clip_and_sum(grads, max_norm)
    for n in grads:
        torch.testing.assert_close(summed[n], clipped[n].sum(0), rtol=1e-5, atol=1e-6)
    total = torch.sqrt(sum(s.pow(2).sum() for s in summed.values()))
    assert total <= 32 * max_norm * (1 + 1e-5)


def test_blocked_clipped_sum_equals_unblocked():
    from dpsynth.privacy.per_example import clipped_sum

    module = _critic()
    real, fake, alpha = torch.randn(50, 6) * 3, torch.randn(50, 6), torch.rand(50, 1)
    full, norms_full, _ = clipped_sum(module, gp_loss, (real, fake, alpha), 0.5, block=None)
    blocked, norms_blocked, _ = clipped_sum(module, gp_loss, (real, fake, alpha), 0.5, block=16)
    torch.testing.assert_close(norms_full, norms_blocked)
    for n in full:
        torch.testing.assert_close(full[n], blocked[n], rtol=1e-5, atol=1e-6)
