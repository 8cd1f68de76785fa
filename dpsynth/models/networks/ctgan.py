"""Conditional tabular GAN networks (CTGAN / CTAB-GAN+ shape; plain ``nn.Module`` s, no privacy code here).

- :class:`ConditionalGenerator`: ``[z, condition]`` -> raw outputs, one block per output span of the table
  transformer (apply :func:`~dpsynth.models.networks.autoencoder.activate` for rows). Hidden layers are CTGAN's
  residual blocks: ``h -> [ReLU(BatchNorm(Linear(h))), h]`` (the block's input is concatenated to its output).
- The discriminator is :class:`~dpsynth.models.networks.gan.Critic` on ``[row, condition]`` (no batch-dependent
  layer, so it can be evaluated one example at a time for per-example clipping); the auxiliary classifier is an
  :func:`~dpsynth.models.networks.autoencoder.mlp`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["ConditionalGenerator"]


class _Residual(nn.Module):
    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)
        self.norm = nn.BatchNorm1d(out_dim)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.act(self.norm(self.linear(x))), x], dim=1)


class ConditionalGenerator(nn.Module):
    """``(z, cond)`` of shapes (n, noise_dim), (n, cond_dim) -> raw outputs (n, data_dim)."""

    def __init__(self, noise_dim: int, cond_dim: int, hidden: Sequence[int], data_dim: int):
        super().__init__()
        dim = int(noise_dim) + int(cond_dim)
        blocks = []
        for width in hidden:
            blocks.append(_Residual(dim, int(width)))
            dim += int(width)
        self.blocks = nn.Sequential(*blocks)
        self.out = nn.Linear(dim, int(data_dim))

    def forward(self, z: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        return self.out(self.blocks(torch.cat([z, cond], dim=1)))
