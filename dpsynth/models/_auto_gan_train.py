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
- Noise multipliers are calibrated with the ledger (composition with what is already spent), so the
  composed epsilon after the phase is at most the phase's target; the engine stops before the target.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from tqdm.auto import tqdm

from dpsynth.models.networks.autoencoder import activate, reconstruction_loss
from dpsynth.privacy.per_example import input_gradient

__all__ = ["train_autoencoder", "train_gan"]


class _AutoEncoder(nn.Module):
    def __init__(self, encoder: nn.Module, decoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


def _calibrate(ledger, target: float, sample_rate: float, steps: int, accountant: str) -> float:
    """Noise multiplier so that the ledger's composed epsilon after ``steps`` more steps is <= ``target``."""
    from dpsynth.privacy.calibration import calibrate_noise

    if ledger.non_private:
        return 0.0
    # PLD evaluations dominate fit time on small data; a 1% tolerance on sigma costs ~1% of the budget's use
    # and never overshoots (the returned sigma was evaluated to fit).
    return float(
        calibrate_noise(
            target_epsilon=target, delta=ledger.target_delta, sample_rate=sample_rate, steps=steps, ledger=ledger,
            accountant=accountant, rtol=0.01,
        )
    )


def _engine(module, optimizer, *, sigma, clip, q, ledger, phase, steps, generator, n_rows, public_n_rows):
    # n_rows: rows to draw from (private, never recorded); public_n_rows: the DP row count that sets the
    # sampling rate, the divisor of the noisy sum and the ledger entry.
    from dpsynth.privacy.dpsgd import DPSGD, DPSGDConfig

    config = DPSGDConfig(noise_multiplier=sigma, max_grad_norm=clip, sample_rate=q, clipping="per_example")
    return DPSGD(
        module, optimizer, config, ledger=ledger, phase=phase, max_steps=steps, generator=generator,
        n_rows=n_rows, public_n_rows=public_n_rows, non_private=ledger.non_private,
    )


def train_autoencoder(
    encoder: nn.Module,
    decoder: nn.Module,
    x: torch.Tensor,
    spans: list[tuple[int, int, str]],
    *,
    params: dict[str, Any],
    ledger,
    n_rows: float,
    generator: torch.Generator,
    progress: bool,
) -> dict[str, Any]:
    """Phase 1: DP-SGD on the reconstruction loss; returns a summary (noise, rate, steps run)."""
    steps = int(params["ae_steps"])
    q = min(1.0, params["ae_batch_size"] / n_rows)
    spent = ledger.epsilon() if not ledger.non_private else 0.0
    target = spent + params["ae_budget_share"] * (ledger.target_epsilon - spent)
    sigma = _calibrate(ledger, target, q, steps, params["calibration_accountant"])
    if params["encoder"] == "frozen":
        encoder.requires_grad_(False)
        module: nn.Module = decoder
        with torch.no_grad():
            inputs: tuple[torch.Tensor, ...] = (encoder(x), x)

        def loss(model_fn, z, target_row):
            return reconstruction_loss(model_fn(z), target_row, spans)
    else:
        module = _AutoEncoder(encoder, decoder)
        inputs = (x,)

        def loss(model_fn, row):
            return reconstruction_loss(model_fn(row), row, spans)

    optimizer = torch.optim.Adam([p for p in module.parameters() if p.requires_grad], lr=params["ae_lr"])
    engine = _engine(
        module, optimizer, sigma=sigma, clip=params["ae_max_grad_norm"], q=q, ledger=ledger,
        phase="autoencoder", steps=steps, generator=generator, n_rows=len(x), public_n_rows=n_rows,
    )
    run = 0
    with tqdm(total=steps, desc="dp-auto-gan autoencoder", disable=not progress, leave=False) as bar:
        for idx in engine.batches():
            engine.step(loss, tuple(t[idx] for t in inputs))
            run += 1
            bar.update(1)
    encoder.requires_grad_(False)
    decoder.requires_grad_(False)
    return {"noise_multiplier": sigma, "sample_rate": q, "steps": run}


def train_gan(
    gen_net: nn.Module,
    decoder: nn.Module,
    critic: nn.Module,
    x: torch.Tensor,
    spans: list[tuple[int, int, str]],
    *,
    params: dict[str, Any],
    ledger,
    n_rows: float,
    generator: torch.Generator,
    progress: bool,
) -> dict[str, Any]:
    """Phase 2: DP-SGD critic, post-processing generator; returns a summary."""
    steps = int(params["critic_steps"])
    batch = int(params["gan_batch_size"])
    q = min(1.0, batch / n_rows)
    sigma = _calibrate(ledger, ledger.target_epsilon, q, steps, params["calibration_accountant"])
    kind, gp_weight, tau = params["critic_loss"], float(params["gp_weight"]), float(params["gumbel_tau"])
    noise_dim = int(params["noise_dim"])
    decoder.eval()
    decoder.requires_grad_(False)

    def fake_rows(m: int) -> torch.Tensor:
        z = torch.randn(m, noise_dim, generator=generator)
        return activate(decoder(gen_net(z)), spans, gumbel_tau=tau, generator=generator)

    def real_term(model_fn, row):
        score = model_fn(row)
        return F.softplus(-score) if kind == "bce" else -score

    def real_term_gp(model_fn, row, fake, alpha):
        mixed = alpha * row + (1 - alpha) * fake
        slope = input_gradient(model_fn, mixed)  # d critic / d input of this record's interpolate
        penalty = (torch.sqrt((slope**2).sum() + 1e-12) - 1.0) ** 2
        return -model_fn(row) + gp_weight * penalty

    critic_opt = torch.optim.Adam(critic.parameters(), lr=params["critic_lr"], betas=(0.5, 0.9))
    gen_opt = torch.optim.Adam(gen_net.parameters(), lr=params["generator_lr"], betas=(0.5, 0.9))
    engine = _engine(
        critic, critic_opt, sigma=sigma, clip=params["critic_max_grad_norm"], q=q, ledger=ledger,
        phase="gan", steps=steps, generator=generator, n_rows=len(x), public_n_rows=n_rows,
    )
    run, g_steps = 0, 0
    with tqdm(total=steps, desc="dp-auto-gan GAN", disable=not progress, leave=False) as bar:
        for idx in engine.batches():
            gen_net.eval()  # BatchNorm in eval: generated rows do not depend on batch statistics here
            with torch.no_grad():
                fake = fake_rows(batch)
                fake_term = _fake_term(critic, fake, kind)
                if kind == "wgan-gp":
                    pair = fake_rows(len(idx))
                    alpha = torch.rand(len(idx), 1, generator=generator)
            if kind == "wgan-gp":
                engine.step(real_term_gp, (x[idx], pair, alpha), public_loss=fake_term)
            else:
                engine.step(real_term, (x[idx],), public_loss=fake_term)
            if kind == "wgan":
                with torch.no_grad():  # Lipschitz by weight clipping: post-processing of DP weights
                    for p in critic.parameters():
                        p.clamp_(-0.05, 0.05)
            run += 1
            bar.update(1)
            if run % int(params["critic_iters"]) == 0:
                _generator_step(gen_net, critic, fake_rows, gen_opt, batch, kind)
                g_steps += 1
    gen_net.eval()
    return {"noise_multiplier": sigma, "sample_rate": q, "critic_steps": run, "generator_steps": g_steps,
            }


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
