"""GAN networks: a residual latent generator and an MLP critic (plain ``nn.Module`` s; no privacy code here).

- :class:`LatentGenerator` (seed 003 App. E.1): noise ``z`` -> latent code, residual blocks of
  Linear + BatchNorm + LeakyReLU(0.2), where each block's output is added to the next block's output; a
  final linear layer and tanh map into the encoder's latent box [-1, 1]^d.
- :class:`Critic`: Linear + LeakyReLU(0.2) stack with one output (a WGAN critic or a GAN logit). It has no
  batch-dependent layers, so it can be evaluated one example at a time (per-example gradients).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from dpsynth.models.networks.autoencoder import mlp

__all__ = ["LatentGenerator", "Critic"]


class _Block(nn.Module):
    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim, bias=False)
        self.norm = nn.BatchNorm1d(out_dim)
        self.act = nn.LeakyReLU(0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.norm(self.linear(x)))


class LatentGenerator(nn.Module):
    """``z`` (n, noise_dim) -> latent (n, latent_dim) in [-1, 1]."""

    def __init__(self, noise_dim: int, hidden: Sequence[int], latent_dim: int):
        super().__init__()
        dims = [int(noise_dim), *(int(h) for h in hidden)]
        self.blocks = nn.ModuleList(_Block(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.out = nn.Linear(dims[-1], latent_dim)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = z
        for block in self.blocks:
            new = block(h)
            h = new + h if new.shape == h.shape else new  # residual where widths agree
        return torch.tanh(self.out(h))


class Critic(nn.Module):
    """row (…, data_dim) -> score (…,)."""

    def __init__(self, data_dim: int, hidden: Sequence[int]):
        super().__init__()
        self.net = mlp(data_dim, hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)
