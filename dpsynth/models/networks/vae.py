"""A tabular VAE with one output head per encoded span (seed 004 §5.2.1). Plain ``nn.Module``: no DP code.

The input is a row encoded by a table transformer as a float vector whose ``spans`` are either
``"tanh"`` (a scaled number, modelled by a Gaussian head: mean ``tanh(out)``, one learned log-sigma per
dimension), ``"linear"`` (a standardised number: Gaussian head with mean ``out``) or ``"softmax"`` (a one-hot block,
modelled by a categorical head: logits). ``forward(x, noise)`` returns the per-row negative ELBO

    -E_q[log p(x | z)] + beta * KL(q(z | x) || N(0, I)),

reducing over the last dimension only, so the same code runs on a batch ``(B, D)`` or, under ``torch.func.vmap``,
on one row ``(D,)`` (per-example gradients). The reparameterisation noise is an input (not drawn inside) so that
per-example gradients are reproducible and vmap needs no random state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["mlp", "TabularVAE"]

_LOG_2PI = math.log(2.0 * math.pi)


def mlp(sizes: Sequence[int], *, activation: type[nn.Module] = nn.SiLU,
        final_activation: bool = False) -> nn.Sequential:
    """Fully connected layers ``sizes[0] -> ... -> sizes[-1]`` (no normalisation layers: they mix rows)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2 or final_activation:
            layers.append(activation())
    return nn.Sequential(*layers)


class TabularVAE(nn.Module):
    """Encoder ``x -> (mu, logvar)``, decoder ``z -> per-span head outputs``.

    Args:
        spans: ``(start, end, activation)`` of each encoded block, covering ``[0, data_dim)`` in order;
            activation ``"tanh"`` or ``"softmax"``.
        latent_dim: size of z.
        hidden: widths of the hidden layers of encoder and decoder (mirrored).
        beta: weight of the KL term.
    """

    def __init__(self, spans: Sequence[tuple[int, int, str]], *, latent_dim: int = 16,
                 hidden: Sequence[int] = (256, 256), beta: float = 1.0):
        super().__init__()
        spans = [(int(s), int(e), str(a)) for s, e, a in spans]
        self.data_dim = max(e for _, e, _ in spans)
        self.latent_dim = int(latent_dim)
        self.beta = float(beta)
        self.spans = spans
        gauss = [(i, a == "tanh") for s, e, a in spans if a in ("tanh", "linear") for i in range(s, e)]
        self.register_buffer("gauss_idx", torch.tensor([i for i, _ in gauss], dtype=torch.long), persistent=False)
        self.register_buffer("gauss_tanh", torch.tensor([t for _, t in gauss], dtype=torch.bool), persistent=False)
        soft = [(s, e) for s, e, a in spans if a == "softmax"]
        # Softmax blocks grouped by width, so the decoder computes all blocks of one width in one op.
        widths = sorted({e - s for s, e in soft})
        self._soft_groups: list[tuple[int, str]] = []
        for w in widths:
            idx = torch.tensor([list(range(s, e)) for s, e in soft if e - s == w], dtype=torch.long)
            name = f"soft_idx_{w}"
            self.register_buffer(name, idx, persistent=False)
            self._soft_groups.append((w, name))
        self.encoder = mlp([self.data_dim, *hidden], final_activation=True)
        self.to_mu = nn.Linear(hidden[-1], self.latent_dim)
        self.to_logvar = nn.Linear(hidden[-1], self.latent_dim)
        self.decoder = mlp([self.latent_dim, *reversed(list(hidden)), self.data_dim])
        self.log_sigma = nn.Parameter(torch.full((len(gauss),), -1.0))

    # ------------------------------------------------------------------ parts
    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.encoder(x)
        return self.to_mu(h), self.to_logvar(h).clamp(-12.0, 8.0)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Raw head outputs: pre-tanh means on tanh spans, logits on softmax spans."""
        return self.decoder(z)

    def _mean(self, out: torch.Tensor) -> torch.Tensor:
        raw = out[..., self.gauss_idx]
        return torch.where(self.gauss_tanh, torch.tanh(raw), raw)

    def reconstruction_nll(self, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """-log p(x | z) summed over the last dimension (Gaussian + categorical heads)."""
        nll = x.new_zeros(x.shape[:-1])
        if self.gauss_idx.numel():
            xs, mean = x[..., self.gauss_idx], self._mean(out)
            log_sigma = self.log_sigma.clamp(-5.0, 2.0)
            nll = nll + (0.5 * ((xs - mean) / log_sigma.exp()) ** 2 + log_sigma + 0.5 * _LOG_2PI).sum(-1)
        for _, name in self._soft_groups:
            idx = getattr(self, name)  # (k, w)
            logits, target = out[..., idx], x[..., idx]  # (..., k, w)
            nll = nll - (target * torch.log_softmax(logits, dim=-1)).sum((-1, -2))
        return nll

    def forward(self, x: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Negative ELBO of each row of ``x`` with reparameterisation ``noise`` ~ N(0, I) of shape (..., latent)."""
        mu, logvar = self.encode(x)
        z = mu + torch.exp(0.5 * logvar) * noise
        kl = 0.5 * (mu**2 + logvar.exp() - 1.0 - logvar).sum(-1)
        return self.reconstruction_nll(x, self.decode(z)) + self.beta * kl

    @torch.no_grad()
    def generate(self, z: torch.Tensor, *, generator: torch.Generator | None = None,
                 sample_continuous: bool = True) -> torch.Tensor:
        """Decode latents to the encoded space: Gaussian draws (clamped to [-1, 1]) on tanh spans, softmax
        probabilities on softmax spans (the table transformer draws the categories)."""
        out = self.decode(z)
        res = torch.empty_like(out)
        if self.gauss_idx.numel():
            mean = self._mean(out)
            if sample_continuous:
                sigma = self.log_sigma.clamp(-5.0, 2.0).exp()
                mean = mean + sigma * torch.randn(mean.shape, generator=generator, dtype=mean.dtype)
                mean = torch.where(self.gauss_tanh, mean.clamp(-1.0, 1.0), mean)
            res[:, self.gauss_idx] = mean
        for _, name in self._soft_groups:
            idx = getattr(self, name)
            res[:, idx] = torch.softmax(out[:, idx], dim=-1)
        return res
