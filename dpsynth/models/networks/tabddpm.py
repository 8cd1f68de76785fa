"""TabDDPM's network and its two diffusion processes (Kotelnikov et al. 2023). Plain modules: no DP code.

A row is split into numbers and categorical blocks (:class:`MixedLayout`):

- **numbers**: Gaussian diffusion (DDPM, Ho et al. 2020) on standard-normal scores. TabDDPM's quantile transform
  to a normal is here the transformer's quantile code ``alpha = 2 F(x) - 1`` (``F`` a DP or exact CDF) mapped by
  ``z = Phi^-1((alpha + 1) / 2)`` (:func:`gaussianize`), a fixed function of one value.
- **each categorical block** (a category column, or a numeric column's special / missing slots) with K slots:
  multinomial diffusion (Hoogeboom et al. 2021), ``q(x_t | x_0) = Cat(ab_t x_0 + (1 - ab_t) / K)``, which ends at
  the uniform distribution. The network predicts ``x_0``'s probabilities; the reverse step is the true posterior
  ``q(x_s | x_t, x_0)`` with the prediction in place of ``x_0`` (:func:`categorical_posterior`).

:class:`MixedDenoiser` is TabDDPM's ``MLPDiffusion``: the noisy row ``[z_t, onehot(x_t)]`` projected to
``embed_dim``, plus an MLP embedding of the step, then an MLP to ``[eps for the numbers, x_0 logits per block]``.
:func:`mixed_loss` is the training loss of one row (mean squared noise error of the numbers plus the mean over
blocks of ``KL(q(x_{t-1} | x_t, x_0) || p(x_{t-1} | x_t))``, which at ``t = 1`` is ``-log p(x_0 | x_1)``): written
for one row or a batch, so that it runs under ``torch.func.vmap``. :func:`mixed_sample` runs the reverse process
on a strided subset of the steps (both processes compose over a stride: ``alpha_{t|s} = ab_t / ab_s``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from dpsynth.models.networks.diffusion import ddim_step
from dpsynth.models.networks.vae import mlp

__all__ = ["MixedLayout", "MixedDenoiser", "gaussianize", "degaussianize", "categorical_posterior",
           "forward_categories", "mixed_loss", "mixed_sample"]

#: alpha is clipped to +-(1 - ALPHA_EDGE) before Phi^-1: scores stay within about +-4.4 standard deviations
ALPHA_EDGE = 1e-5


class MixedLayout:
    """Where the numbers and the categorical blocks of an encoded row are.

    ``spans``: ``(start, end, activation)`` of the encoder's blocks in order; ``"softmax"`` blocks are categorical,
    every other block is one number per column. ``numeric`` indexes the numbers, ``categorical`` the concatenated
    blocks, and ``blocks`` gives each block's ``(start, end)`` inside that concatenation.
    """

    def __init__(self, spans: Sequence[tuple[int, int, str]]):
        numeric, categorical, blocks = [], [], []
        for start, end, activation in spans:
            if activation == "softmax":
                blocks.append((len(categorical), len(categorical) + end - start))
                categorical.extend(range(start, end))
            else:
                numeric.extend(range(start, end))
        self.width = max((end for _, end, _ in spans), default=0)
        self.numeric = torch.tensor(numeric, dtype=torch.long)
        self.categorical = torch.tensor(categorical, dtype=torch.long)
        self.blocks = blocks
        self.n_numeric, self.n_categorical = len(numeric), len(categorical)

    def split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Encoded rows -> (alpha of the numbers, one-hot blocks)."""
        return x[:, self.numeric], x[:, self.categorical]

    def join(self, numbers: torch.Tensor, categories: torch.Tensor) -> torch.Tensor:
        """The inverse of :meth:`split` (numbers as alpha; blocks as one-hot rows or probabilities)."""
        out = torch.zeros((len(numbers), self.width), dtype=numbers.dtype)
        out[:, self.numeric] = numbers
        out[:, self.categorical] = categories.to(numbers.dtype)
        return out


def gaussianize(alpha: torch.Tensor) -> torch.Tensor:
    """``Phi^-1((alpha + 1) / 2)``: the quantile code in [-1, 1] as a standard-normal score."""
    return math.sqrt(2.0) * torch.erfinv(alpha.clamp(-1 + ALPHA_EDGE, 1 - ALPHA_EDGE))


def degaussianize(z: torch.Tensor) -> torch.Tensor:
    """The inverse of :func:`gaussianize`: ``2 Phi(z) - 1``."""
    return torch.erf(z / math.sqrt(2.0))


class MixedDenoiser(nn.Module):
    """TabDDPM's MLP: ``[z_t, x_t] -> Linear(embed_dim) + time MLP(sinusoid(t))`` then ``hidden`` layers (ReLU) to
    ``[eps, logits]``; ``t`` is the step index scaled to [0, 1]."""

    def __init__(self, layout: MixedLayout, *, hidden: Sequence[int] = (256, 256, 256), embed_dim: int = 128):
        super().__init__()
        self.layout = layout
        d = layout.n_numeric + layout.n_categorical
        half = embed_dim // 2
        freqs = torch.exp(-math.log(10_000.0) * torch.arange(half, dtype=torch.float32) / half)
        self.register_buffer("freqs", freqs, persistent=False)
        self.project = nn.Linear(d, embed_dim)
        self.time = mlp([2 * half, embed_dim, embed_dim])
        self.net = mlp([embed_dim, *hidden, d], activation=nn.ReLU)

    def forward(self, x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        arg = (t * 1000.0).unsqueeze(-1) * self.freqs
        return self.net(self.project(x_t) + self.time(torch.cat([torch.cos(arg), torch.sin(arg)], dim=-1)))


def categorical_posterior(x_t: torch.Tensor, x0: torch.Tensor, alpha_ts: torch.Tensor, ab_s: torch.Tensor,
                          width: int) -> torch.Tensor:
    """``q(x_s | x_t, x_0)`` of one block of ``width`` slots, normalised: proportional to
    ``(alpha_ts x_t + (1 - alpha_ts) / K) * (ab_s x_0 + (1 - ab_s) / K)`` (``x_0`` may be probabilities)."""
    a, b = alpha_ts.unsqueeze(-1), ab_s.unsqueeze(-1)
    unnorm = (a * x_t + (1 - a) / width) * (b * x0 + (1 - b) / width)
    return unnorm / unnorm.sum(-1, keepdim=True)


def forward_categories(x0: torch.Tensor, ab_t: torch.Tensor, blocks: Sequence[tuple[int, int]],
                       generator: torch.Generator | None) -> torch.Tensor:
    """Draw one-hot ``x_t ~ q(x_t | x_0) = Cat(ab_t x_0 + (1 - ab_t) / K)`` for every block of a batch."""
    return _draw(x0, ab_t.unsqueeze(-1), blocks, generator)


def _draw(x0: torch.Tensor, weight: torch.Tensor, blocks, generator) -> torch.Tensor:
    out = torch.zeros_like(x0)
    rows = torch.arange(len(x0))
    for start, end in blocks:
        probs = weight * x0[:, start:end] + (1 - weight) / (end - start)
        out[rows, start + _categorical(probs, generator)] = 1.0
    return out


def _categorical(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One slot per row, drawn in proportion to ``probs`` (rows need not sum to one)."""
    cdf = probs.cumsum(-1)
    u = torch.rand((len(probs), 1), generator=generator, dtype=cdf.dtype) * cdf[:, -1:]
    return (cdf < u).sum(-1).clamp(max=probs.shape[-1] - 1)


def mixed_loss(model_fn, layout: MixedLayout, z0: torch.Tensor, eps: torch.Tensor, x0: torch.Tensor,
               x_t: torch.Tensor, t: torch.Tensor, ab_t: torch.Tensor, ab_prev: torch.Tensor) -> torch.Tensor:
    """TabDDPM's loss of one row (or per row of a batch): the numbers' mean squared noise error plus the mean over
    categorical blocks of ``KL(q(x_{t-1} | x_t, x_0) || q(x_{t-1} | x_t, softmax(logits)))``.

    ``z0``/``eps``: scores and their Gaussian noise; ``x0``/``x_t``: one-hot blocks and their forward draw;
    ``t``: step / T; ``ab_t``/``ab_prev``: alpha-bar at t and t - 1 (1 at t = 1, where the KL is -log p(x_0))."""
    n_num = layout.n_numeric
    a = ab_t.unsqueeze(-1)
    z_t = a.sqrt() * z0 + (1 - a).sqrt() * eps
    out = model_fn(torch.cat([z_t, x_t], dim=-1), t)
    loss = ((out[..., :n_num] - eps) ** 2).mean(-1) if n_num else torch.zeros_like(ab_t)
    if layout.blocks:
        alpha_t = ab_t / ab_prev
        logits = out[..., n_num:]
        kl = torch.zeros_like(ab_t)
        for start, end in layout.blocks:
            width = end - start
            x0_hat = torch.softmax(logits[..., start:end], dim=-1)
            q = categorical_posterior(x_t[..., start:end], x0[..., start:end], alpha_t, ab_prev, width)
            p = categorical_posterior(x_t[..., start:end], x0_hat, alpha_t, ab_prev, width)
            kl = kl + (torch.xlogy(q, q) - q * torch.log(p.clamp_min(1e-30))).sum(-1)
        loss = loss + kl / len(layout.blocks)
    return loss


@torch.no_grad()
def mixed_sample(model: MixedDenoiser, n: int, *, alpha_bar: torch.Tensor, steps: int, eta: float = 1.0,
                 generator: torch.Generator | None = None, clip: float = 5.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` rows by the reverse process on ``steps`` evenly spaced steps: (scores of the numbers, probabilities
    of each block's slots at the last step, ``q(x_0 | x_1, x_0_hat)``, for the decoder to draw from)."""
    layout = model.layout
    total = len(alpha_bar) - 1
    ts = torch.linspace(total, 0, steps + 1).round().long().unique_consecutive().tolist()
    ab = alpha_bar.float()
    z = torch.randn((n, layout.n_numeric), generator=generator)
    x = _draw(torch.zeros((n, layout.n_categorical)), torch.zeros(()), layout.blocks, generator)
    probs = x
    n_num = layout.n_numeric
    for t, s in zip(ts[:-1], ts[1:]):
        out = model(torch.cat([z, x], dim=1), torch.full((n,), t / total))
        z = ddim_step(z, out[:, :n_num], ab[t], ab[s], eta=eta, clip=clip, generator=generator)
        alpha_ts, ab_s = ab[t] / ab[s], ab[s]
        probs = torch.zeros_like(x)
        for start, end in layout.blocks:
            x0_hat = torch.softmax(out[:, n_num + start:n_num + end], dim=1)
            probs[:, start:end] = categorical_posterior(x[:, start:end], x0_hat, alpha_ts, ab_s, end - start)
        if s > 0:
            x = _draw(probs, torch.ones(()), layout.blocks, generator)
    return z, probs
