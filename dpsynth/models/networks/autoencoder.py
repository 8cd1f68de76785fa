"""Autoencoder networks for tabular rows (plain ``nn.Module`` s; no privacy code here).

The encoder maps an encoded row (one-hot categories, scaled numbers) to a small latent vector; the decoder
maps a latent vector back to *raw* outputs (pre-activation values), one block per output span. Output
activations are applied by :func:`activate` from the spans of the table transformer:

- ``"tanh"`` spans (scaled numbers in [-1, 1]): tanh;
- ``"linear"`` spans (unbounded standardised numbers): identity;
- ``"softmax"`` spans (one-hot categories, modes): softmax, or Gumbel-softmax with temperature ``tau``
  when a differentiable *sample* is wanted (GAN training, as in CTGAN).

Architecture as in seed 003 App. E.1 (Linear + LeakyReLU(0.2) layers), with the widths as parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["Span", "mlp", "Encoder", "Decoder", "activate", "reconstruction_loss"]

#: (start, end, activation) of one output block; activation is "tanh", "linear" or "softmax"
Span = tuple[int, int, str]


def mlp(in_dim: int, hidden: Sequence[int], out_dim: int, *, final_act: bool = False) -> nn.Sequential:
    """Linear + LeakyReLU(0.2) stack ``in_dim -> hidden... -> out_dim``."""
    layers: list[nn.Module] = []
    dim = in_dim
    for width in hidden:
        layers += [nn.Linear(dim, int(width)), nn.LeakyReLU(0.2)]
        dim = int(width)
    layers.append(nn.Linear(dim, out_dim))
    if final_act:
        layers.append(nn.LeakyReLU(0.2))
    return nn.Sequential(*layers)


class Encoder(nn.Module):
    """``x`` (n, data_dim) -> latent (n, latent_dim); tanh keeps latents in a bounded box."""

    def __init__(self, data_dim: int, hidden: Sequence[int], latent_dim: int):
        super().__init__()
        self.net = mlp(data_dim, hidden, latent_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(x))


class Decoder(nn.Module):
    """latent (n, latent_dim) -> raw outputs (n, data_dim); apply :func:`activate` to get a row."""

    def __init__(self, latent_dim: int, hidden: Sequence[int], data_dim: int):
        super().__init__()
        self.net = mlp(latent_dim, tuple(reversed(tuple(hidden))), data_dim)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


def activate(
    raw: torch.Tensor,
    spans: Sequence[Span],
    *,
    gumbel_tau: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Apply each span's activation to ``raw`` (..., data_dim).

    With ``gumbel_tau`` the softmax spans become Gumbel-softmax samples (differentiable); the Gumbel noise is
    drawn from ``generator`` so results are reproducible.
    """
    parts = []
    for start, end, act in spans:
        block = raw[..., start:end]
        if act == "tanh":
            parts.append(torch.tanh(block))
        elif act == "linear":
            parts.append(block)
        elif gumbel_tau is None:
            parts.append(torch.softmax(block, dim=-1))
        else:
            u = torch.rand(block.shape, generator=generator, dtype=block.dtype, device=block.device)
            u = u.clamp(1e-10, 1.0 - 1e-7)
            gumbel = -torch.log(-torch.log(u))
            parts.append(torch.softmax((block + gumbel) / gumbel_tau, dim=-1))
    return torch.cat(parts, dim=-1)


def reconstruction_loss(raw: torch.Tensor, target: torch.Tensor, spans: Sequence[Span]) -> torch.Tensor:
    """Sum over spans of cross-entropy (softmax spans) and squared error (tanh, linear spans), per row.

    Works on a single row (1-D) as well as a batch (returns shape ``raw.shape[:-1]``).
    """
    total = raw.new_zeros(raw.shape[:-1])
    for start, end, act in spans:
        block, want = raw[..., start:end], target[..., start:end]
        if act == "tanh":
            total = total + ((torch.tanh(block) - want) ** 2).sum(-1)
        elif act == "linear":
            total = total + ((block - want) ** 2).sum(-1)
        else:
            total = total - (want * F.log_softmax(block, dim=-1)).sum(-1)
    return total
