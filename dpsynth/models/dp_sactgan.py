"""DP-SACTGAN (seed 000, Li & Wang 2023): a conditional tabular WGAN-GP with self-attention over column tokens in
generator and discriminator, CTAB-GAN+ encoding, a DP auxiliary classifier, and DP-HOOK — a sanitizer on the
gradient that flows from the discriminators into the generator.

Built on DTGAN_G's training (:class:`dpsynth.models.dtgan.DTGANGenerator`: shard discriminators trained without DP,
:mod:`dpsynth.privacy.sanitizer` on the generated rows), with seed 000's networks
(:class:`~dpsynth.models.networks.ctgan.AttentionGenerator`, :class:`~dpsynth.models.networks.ctgan.AttentionCritic`:
one token per column, pre-norm Transformer layers with layer normalisation, no batch statistics) and its auxiliary
classifier (an MLP of 4 hidden layers, trained with DP-SGD in phase ``"classifier"``).

Where seed 000's privacy argument does not hold, and what is done instead:
- DP-HOOK clips each row's gradient to C / B and adds noise of std sigma C / B, and Theorem 1 (taken from GS-WGAN)
  charges (lambda, 2 B lambda / sigma^2)-RDP per generator step. One discriminator is trained on *all* rows without
  DP, so adding or removing one record may change every row's gradient of the step: the sensitivity of the step's
  (B x d) gradient matrix is 2 (C / B) sqrt(B) (each row moves anywhere in its ball), and there is no subsampling
  (q = 1: every step reads the record). The hook is one Gaussian mechanism per step of multiplier
  sigma / (2 sqrt(B)) in the seed's units, not B mechanisms — and at q = 1 it gets no amplification at all.
- Default here: ``n_shards`` = 100 disjoint-shard discriminators (each row's shard drawn i.i.d.), one drawn per step,
  so a step reads the record's shard with probability 1 / 100 (replace-one subsampled RDP), with the sanitizer's
  clip C and noise 2 C sigma (scale-free: the seed's C / B is the same mechanism with C rescaled).
- ``n_shards=1`` keeps seed 000's single discriminator, accounted at q = 1 (a warning says so). What it costs
  (calibrated for 0.7 of epsilon = 1, delta = 1e-5, B = 64): 1,000 steps need a per-step multiplier of 179
  (sigma 1,430) against 3.7 (sigma 30) with 100 shards; 2,000 steps 252 against 5.2.
- The classifier and the information flowing into the generator from it are DP through its own DP-SGD phase.

Non-private mode (``epsilon=inf``): the same networks without clipping or noise — the CTAB-GAN+-style upper
reference of the paper.
"""

from __future__ import annotations

from typing import Any

import torch

from dpsynth.models import register
from dpsynth.models.dtgan import MAX_STEPS, DTGANGenerator
from dpsynth.models.networks.ctgan import AttentionCritic, AttentionGenerator, Packed

__all__ = ["DPSACTGAN"]


@register
class DPSACTGAN(DTGANGenerator):
    """DP-SACTGAN with honest accounting (see the module docstring). Hyper-parameters as ``dtgan-g``, with the
    attention networks' ``attention_dim`` (token width), ``attention_heads`` and ``attention_layers`` (per network)
    in place of ``generator_hidden`` / ``critic_hidden``. Fewer, cheaper steps than ``dtgan-g`` by default (1,000
    generator steps, 3 discriminator steps each): an attention discriminator step with its penalty costs ~40 ms on 2
    cores against ~5 ms for the MLP."""

    name = "dp-sactgan"
    phases = ("metadata", "classifier", "generator")
    #: a 4,096-row batch of 15 column tokens of width 32 is 8 MB a tensor, out of cache: 512-row batches sample
    #: twice as fast (end to end on Adult, 2 threads, idle: 33k -> 73k rows/s; benchmarks/sampling_speed.py)
    generate_batch = 512
    fast_params = {"generator_steps": 30, "batch_size": 32, "critic_iters": 2, "n_shards": 4, "noise_dim": 16,
                   "attention_dim": 8, "attention_heads": 2, "attention_layers": 1, "classifier_hidden": (16,),
                   "classifier_epochs": 1.0, "classifier_batch_size": 32, "max_modes": 3}

    def __init__(
        self,
        *,
        numeric: str = "mode_specific",
        max_modes: int = 10,
        noise_dim: int = 64,
        attention_dim: int = 32,
        attention_heads: int = 4,
        attention_layers: int = 2,
        classifier_hidden: tuple[int, ...] | None = None,
        n_shards: int = 100,
        generator_steps: int = 1000,
        batch_size: int = 64,
        pac: int = 1,
        critic_iters: int = 3,
        critic_learning_rate: float = 0.0002,
        generator_learning_rate: float = 0.0002,
        generator_max_grad_norm: float = 1.0,
        gp_weight: float = 10.0,
        gumbel_tau: float = 0.2,
        classifier_share: float = 0.15,
        classifier_epochs: float = 8.0,
        classifier_batch_size: int | None = None,
        classifier_max_steps: int = MAX_STEPS["classifier"],
        classifier_learning_rate: float = 0.005,
        classifier_max_grad_norm: float = 1.0,
        classifier_weight: float = 1.0,
        log_frequency: bool = False,
        match_marginals: bool = True,
        backend: str = "numpy",
    ):
        self._keep(locals())

    def _check_params(self) -> None:
        super()._check_params()
        from dpsynth.errors import InputError

        if self.attention_dim % self.attention_heads:
            raise InputError(f"attention_dim must be a multiple of attention_heads. Found {self.attention_dim} and "
                             f"{self.attention_heads}.")

    def _blocks(self) -> list[tuple[int, int]]:
        return [(int(c.start), int(c.end)) for c in self.transformer_.column_info]

    def _new_generator(self, cond_dim: int, data_dim: int) -> torch.nn.Module:
        return AttentionGenerator(self.noise_dim, cond_dim, self._blocks(), self.attention_dim, self.attention_heads,
                                  self.attention_layers)

    def _new_critic(self, data_dim: int, cond_dim: int, hidden: Any, pac: int = 1) -> torch.nn.Module:
        """Tokens: each column's block and the condition; under PacGAN, those of every row of the pack (attention
        then runs across the pack's rows too)."""
        row = self._blocks() + ([(data_dim, data_dim + cond_dim)] if cond_dim else [])
        width = data_dim + cond_dim
        blocks = [(a + k * width, b + k * width) for k in range(pac) for a, b in row]
        critic = AttentionCritic(blocks, self.attention_dim, self.attention_heads, self.attention_layers)
        return critic if pac == 1 else Packed(critic, pac)
