"""Conditional tabular GAN networks (CTGAN / CTAB-GAN+ shape; plain ``nn.Module`` s, no privacy code here).

- :class:`ConditionalGenerator`: ``[z, condition]`` -> raw outputs, one block per output span of the table
  transformer (apply :func:`~dpsynth.models.networks.autoencoder.activate` for rows). Hidden layers are CTGAN's
  residual blocks: ``h -> [ReLU(BatchNorm(Linear(h))), h]`` (the block's input is concatenated to its output).
- :class:`UnconditionalGenerator`: the same residual generator without conditions, ``z`` -> raw outputs (PATE-GAN,
  DP-WGAN).
- :class:`DropoutDiscriminator`: CTGAN's own discriminator (Linear, LeakyReLU(0.2), Dropout(0.5) per hidden layer,
  PacGAN packs), for the non-private ``ctgan`` only (the DP models keep
  :class:`~dpsynth.models.networks.gan.Critic`, whose per-example gradients the audits cover).
- :class:`Packed` turns a critic of ``pac`` concatenated rows into PacGAN's discriminator (Lin et al. 2018).
- The discriminator is :class:`~dpsynth.models.networks.gan.Critic` on ``[row, condition]`` (no batch-dependent
  layer, so it can be evaluated one example at a time for per-example clipping); the auxiliary classifier is an
  :func:`~dpsynth.models.networks.autoencoder.mlp`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["ConditionalGenerator", "UnconditionalGenerator", "AttentionGenerator", "AttentionCritic", "Packed",
           "DropoutDiscriminator"]


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


class UnconditionalGenerator(nn.Module):
    """``z`` (n, noise_dim) -> raw outputs (n, data_dim): :class:`ConditionalGenerator` with no condition."""

    def __init__(self, noise_dim: int, hidden: Sequence[int], data_dim: int):
        super().__init__()
        self.net = ConditionalGenerator(noise_dim, 0, hidden, data_dim)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z, z[:, :0])


class _AttentionLayer(nn.Module):
    """One pre-norm Transformer layer: ``x + MHA(LN(x))``, then ``x + FFN(LN(x))``. Attention is written out
    (softmax(q k^T / sqrt(d)) v) rather than taken from ``scaled_dot_product_attention``, whose fused CPU kernels
    have no double backward, which the gradient penalty needs."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads, self.head_dim = int(heads), int(dim) // int(heads)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ffn = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(n, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        weights = _softmax_last(q @ k.transpose(-2, -1) / self.head_dim**0.5)
        x = x + self.proj((weights @ v).transpose(1, 2).reshape(n, t, d))
        return x + self.ffn(self.norm2(x))


def _softmax_last(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis, written out: torch 2.13's CPU softmax kernel takes 5x longer than these three
    operations when that axis is short and not a multiple of the vector width (15 column tokens: half of
    DP-SACTGAN's sampling time). Shifting by the detached row maximum changes neither the value nor the gradient."""
    weights = (scores - scores.amax(dim=-1, keepdim=True).detach()).exp()
    return weights / weights.sum(dim=-1, keepdim=True)


class _ColumnAttention(nn.Module):
    """Self-attention over column tokens (seed 000's figure 6): pre-norm layers with layer normalisation (tabular
    rows are independent: no batch statistics), no dropout."""

    def __init__(self, dim: int, heads: int, layers: int):
        super().__init__()
        self.layers = nn.ModuleList(_AttentionLayer(dim, heads) for _ in range(int(layers)))
        self.norm = nn.LayerNorm(dim)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            tokens = layer(tokens)
        return self.norm(tokens)


class AttentionGenerator(nn.Module):
    """DP-SACTGAN's generator: ``(z, cond)`` -> one token per column (a linear map of the input, plus a learned
    column embedding) -> self-attention layers -> per column, a linear head writing that column's block of the
    encoded row (raw outputs, as :class:`ConditionalGenerator`)."""

    def __init__(self, noise_dim: int, cond_dim: int, blocks: Sequence[tuple[int, int]], dim: int, heads: int,
                 layers: int):
        super().__init__()
        self.blocks = [(int(a), int(b)) for a, b in blocks]
        self.dim = int(dim)
        self.embed = nn.Linear(int(noise_dim) + int(cond_dim), len(self.blocks) * self.dim)
        self.position = nn.Parameter(torch.zeros(len(self.blocks), self.dim))
        self.attention = _ColumnAttention(self.dim, heads, layers)
        self.heads = nn.ModuleList(nn.Linear(self.dim, b - a) for a, b in self.blocks)
        self.data_dim = self.blocks[-1][1] if self.blocks else 0

    def forward(self, z: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(torch.cat([z, cond], dim=1)).view(len(z), len(self.blocks), self.dim) + self.position
        hidden = self.attention(tokens)
        return torch.cat([head(hidden[:, j]) for j, head in enumerate(self.heads)], dim=1)


class AttentionCritic(nn.Module):
    """DP-SACTGAN's discriminator: each column's block of ``[row, cond]`` (the condition is one more block) embedded
    as a token by its own linear map, self-attention layers, mean over tokens, a linear score. ``(…, width) ->
    (…,)``; no batch statistics."""

    def __init__(self, blocks: Sequence[tuple[int, int]], dim: int, heads: int, layers: int):
        super().__init__()
        self.blocks = [(int(a), int(b)) for a, b in blocks]
        self.embed = nn.ModuleList(nn.Linear(b - a, int(dim)) for a, b in self.blocks)
        self.position = nn.Parameter(torch.zeros(len(self.blocks), int(dim)))
        self.attention = _ColumnAttention(int(dim), heads, layers)
        self.out = nn.Sequential(nn.Linear(int(dim), int(dim)), nn.LeakyReLU(0.2), nn.Linear(int(dim), 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        tokens = torch.stack([emb(flat[:, a:b]) for emb, (a, b) in zip(self.embed, self.blocks)], dim=1)
        hidden = self.attention(tokens + self.position)
        return self.out(hidden.mean(dim=1)).reshape(x.shape[:-1])


class Packed(nn.Module):
    """PacGAN (Lin et al. 2018): ``critic`` scores packs of ``pac`` consecutive rows, ``(B, w) -> (B / pac,)``;
    ``critic`` takes inputs of width ``pac * w``. Packs are cut in row order, so B must be a multiple of ``pac``."""

    def __init__(self, critic: nn.Module, pac: int):
        super().__init__()
        self.critic, self.pac = critic, int(pac)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x.reshape(x.shape[0] // self.pac, self.pac * x.shape[1]))


class DropoutDiscriminator(nn.Module):
    """CTGAN's discriminator: packs of ``pac`` rows of width ``input_dim``, ``(B, input_dim) -> (B / pac,)``; each
    hidden layer is Linear, LeakyReLU(0.2), Dropout(``dropout``)."""

    def __init__(self, input_dim: int, hidden: Sequence[int], pac: int, dropout: float = 0.5):
        super().__init__()
        self.pac = int(pac)
        dim, layers = self.pac * int(input_dim), []
        for width in hidden:
            layers += [nn.Linear(dim, int(width)), nn.LeakyReLU(0.2), nn.Dropout(float(dropout))]
            dim = int(width)
        self.net = nn.Sequential(*layers, nn.Linear(dim, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.reshape(x.shape[0] // self.pac, self.pac * x.shape[1])).squeeze(-1)
