"""Training phases of DP-auto-GAN (seed 003 Alg. 3-5); used by :mod:`dpsynth.models.dp_auto_gan`.

Guarantees (each phase; see the model's docstring for the whole):
- ``train_autoencoder``: every step is a Poisson-subsampled Gaussian mechanism (DP-SGD, per-example clipping
  of the gradient of *all* trained parameters: encoder and decoder, or decoder alone when the encoder is
  frozen at its random initialisation), recorded in the ledger under phase ``"autoencoder"``.
- ``train_gan``: every critic step is one DP-SGD step recorded under phase ``"gan"``. The per-example loss
  holds every term that touches a private row (the real score and, for WGAN-GP, the penalty at the
  interpolate of that row with a generated row); the generated-row term is data-independent given the
  current (DP) weights and goes in unclipped as ``public_loss``. The generator update differentiates the
  critic's score of generated rows only: post-processing.
- Each phase is a :class:`~dpsynth.models.phase.DPPhase`: its noise multiplier is calibrated with the ledger
  (composition with what is already spent), so the composed epsilon after the phase is at most the phase's target;
  the engine stops before the target.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from dpsynth.models.networks.autoencoder import activate, reconstruction_loss
from dpsynth.models.phase import DPPhase
from dpsynth.privacy.ghost import rowwise
from dpsynth.privacy.per_example import input_gradient

__all__ = ["train_autoencoder", "train_gan"]


class _AutoEncoder(nn.Module):
    def __init__(self, encoder: nn.Module, decoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


def train_autoencoder(encoder: nn.Module, decoder: nn.Module, x: torch.Tensor, spans: list[tuple[int, int, str]], *,
                      phase: DPPhase, frozen_encoder: bool, learning_rate: float, generator: torch.Generator,
                      progress: bool) -> None:
    """Phase 1: DP-SGD on the reconstruction loss of encoder and decoder together (or the decoder alone). ``x`` is
    read only as ``x[positions]`` and ``len(x)`` (a tensor, or rows on disk: :mod:`dpsynth.data.row_store`)."""
    if frozen_encoder:
        encoder.requires_grad_(False)
        module: nn.Module = decoder

        def make_batch(idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
            rows = x[idx]
            with torch.no_grad():  # the frozen (data-independent) encoder's codes of this step's sample
                return encoder(rows), rows

        @rowwise  # reconstruction_loss reduces over the last axis only
        def loss(model_fn, z, target_row):
            return reconstruction_loss(model_fn(z), target_row, spans)
    else:
        module = _AutoEncoder(encoder, decoder)

        def make_batch(idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return (x[idx],)

        @rowwise
        def loss(model_fn, row):
            return reconstruction_loss(model_fn(row), row, spans)

    optimizer = torch.optim.Adam([p for p in module.parameters() if p.requires_grad], lr=learning_rate)
    phase.run(module, optimizer, loss, make_batch, n_rows=len(x), generator=generator, progress=progress,
              label="dp-auto-gan")
    encoder.requires_grad_(False)
    decoder.requires_grad_(False)


def train_gan(gen_net: nn.Module, decoder: nn.Module, critic: nn.Module, x: torch.Tensor,
              spans: list[tuple[int, int, str]], *, phase: DPPhase, params: dict[str, Any],
              generator: torch.Generator, progress: bool) -> None:
    """Phase 2: DP-SGD critic (the phase), post-processing generator every ``critic_iters`` critic steps."""
    batch = phase.plan.batch_size
    kind, gp_weight, tau = params["critic_loss"], float(params["gp_weight"]), float(params["gumbel_tau"])
    noise_dim = int(params["noise_dim"])
    decoder.eval()
    decoder.requires_grad_(False)

    def fake_rows(m: int) -> torch.Tensor:
        z = torch.randn(m, noise_dim, generator=generator)
        return activate(decoder(gen_net(z)), spans, gumbel_tau=tau, generator=generator)

    @rowwise
    def real_term(model_fn, row):
        score = model_fn(row)
        return F.softplus(-score) if kind == "bce" else -score

    def real_term_gp(model_fn, row, fake, alpha):
        mixed = alpha * row + (1 - alpha) * fake
        slope = input_gradient(model_fn, mixed)  # d critic / d input of this record's interpolate
        penalty = (torch.sqrt((slope**2).sum() + 1e-12) - 1.0) ** 2
        return -model_fn(row) + gp_weight * penalty

    def public_loss():  # generated rows of this step, from the current (DP) weights: no private row
        gen_net.eval()  # BatchNorm in eval: generated rows do not depend on batch statistics here
        with torch.no_grad():
            fake = fake_rows(batch)
        return _fake_term(critic, fake, kind)

    def make_batch(idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
        rows = x[idx]  # one read of this step's sample (rows on disk are read by position)
        if kind != "wgan-gp":
            return (rows,)
        with torch.no_grad():
            pair = fake_rows(len(idx))
        return rows, pair, torch.rand(len(idx), 1, generator=generator)

    critic_opt = torch.optim.Adam(critic.parameters(), lr=params["critic_learning_rate"], betas=(0.5, 0.9))
    gen_opt = torch.optim.Adam(gen_net.parameters(), lr=params["generator_learning_rate"], betas=(0.5, 0.9))
    phase.extra["generator_steps"] = 0

    def after_step(step: int) -> None:
        if kind == "wgan":
            with torch.no_grad():  # Lipschitz by weight clipping: post-processing of DP weights
                for p in critic.parameters():
                    p.clamp_(-0.05, 0.05)
        if step % int(params["critic_iters"]) == 0:
            _generator_step(gen_net, critic, fake_rows, gen_opt, batch, kind)
            phase.extra["generator_steps"] += 1

    phase.run(critic, critic_opt, real_term_gp if kind == "wgan-gp" else real_term, make_batch, n_rows=len(x),
              generator=generator, progress=progress, label="dp-auto-gan", public_loss=public_loss,
              after_step=after_step)
    gen_net.eval()


def _fake_term(critic: nn.Module, fake: torch.Tensor, kind: str):
    """The critic's loss on generated rows: no private row involved (given the DP weights), so unclipped."""
    if kind == "bce":
        return lambda: F.softplus(critic(fake)).mean()
    return lambda: critic(fake).mean()


def _generator_step(gen_net, critic, fake_rows, gen_opt, batch: int, kind: str) -> None:
    """One generator update from the critic's score of generated rows only (post-processing)."""
    gen_net.train()
    score = critic(fake_rows(batch))
    loss = F.softplus(-score).mean() if kind == "bce" else -score.mean()
    grads = torch.autograd.grad(loss, list(gen_net.parameters()))
    for p, g in zip(gen_net.parameters(), grads):
        p.grad = g
    gen_opt.step()
    gen_opt.zero_grad(set_to_none=True)
