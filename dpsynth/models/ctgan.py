"""CTGAN (Xu et al. 2019), non-private (``epsilon=inf`` only): the reference of seeds 000, 002 and 004, and the
model SDV's ``CTGANSynthesizer`` runs. CTGAN's algorithm and defaults, on dpsynth's shared pieces:

- **Encoding**: mode-specific normalisation of numbers (a Gaussian mixture of up to ``max_modes`` components per
  column; the row's mode one-hot plus its scaled offset) and one-hot categories, fitted on the rows
  (:class:`~dpsynth.data.transformers.TableTransformer`).
- **Conditional generator** (:class:`~dpsynth.models.networks.ctgan.ConditionalGenerator`, residual blocks of
  ``generator_hidden``, noise of ``noise_dim``): a condition is one categorical column and one of its categories,
  the column uniform, the category by log-frequency (``log_frequency``), its logits trained towards the condition by
  cross-entropy (the condition loss).
- **Training-by-sampling**: the real rows a discriminator step sees are drawn *given* the conditions (for each
  condition, a uniform row holding that category), so rare categories are seen as often as their conditions.
- **Discriminator** (:class:`~dpsynth.models.networks.ctgan.DropoutDiscriminator`): PacGAN packs of ``pac`` rows
  with their conditions, LeakyReLU and dropout 0.5, WGAN-GP with the penalty (weight ``gp_weight``) on the pack's
  gradient at straight-line interpolates (one mixing weight per pack).
- **Optimisers**: Adam (0.5, 0.9), learning rate 2e-4, weight decay 1e-6, for both networks; ``critic_iters``
  discriminator steps per generator step; ``epochs`` passes of ``len(rows) / batch_size`` steps.
- **Sampling**: conditions by the plain frequencies, numbers through tanh, each category drawn from the softmax of
  its logits (CTGAN's Gumbel-softmax then argmax is such a draw).

What differs from the ``ctgan`` package: nothing in the training algorithm. The encoder is dpsynth's (the same
variational mixture, fitted on an exact 512-bin histogram of each column, as the DP models fit it on a noisy one:
seconds instead of the package's minutes on Adult), and numbers are clipped to the schema's bounds on decoding.

Privacy: none. Every step reads the rows exactly (one ``NonPrivateDpEvent`` in the ``"gan"`` phase) and the model
file's generator can memorise them: a non-private reference for comparisons, never a release. ``dp-ctgan`` is the
DP version.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import torch
from dp_accounting import dp_event

from dpsynth.errors import InputError
from dpsynth.models import register
from dpsynth.models._conditional_gan import Conditions
from dpsynth.models.dtgan import ConditionalGANModel
from dpsynth.models.networks.autoencoder import activate
from dpsynth.models.networks.ctgan import DropoutDiscriminator
from dpsynth.models.phase import budget_summary, json_number

__all__ = ["CTGAN", "RowsByCategory"]


class RowsByCategory:
    """Training-by-sampling's index: for every slot of a categorical span of the encoded rows ``x`` (an encoded
    column), the rows holding it; :meth:`draw` picks, for each requested encoded column, a uniform row holding it
    (a uniform row of all when none does)."""

    def __init__(self, x: torch.Tensor, spans):
        width = x.shape[1]
        self.start = torch.zeros(width, dtype=torch.long)
        self.count = torch.zeros(width, dtype=torch.long)
        rows, offset = [], 0
        for span in spans:
            slot = x[:, span.start:span.end].argmax(dim=1)
            counts = torch.bincount(slot, minlength=span.width)
            self.start[span.start:span.end] = offset + torch.cumsum(counts, 0) - counts
            self.count[span.start:span.end] = counts
            rows.append(torch.argsort(slot, stable=True))
            offset += len(x)
        self.rows = torch.cat(rows) if rows else torch.zeros(0, dtype=torch.long)
        self.n = len(x)

    def draw(self, columns: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        count = self.count[columns]
        u = torch.rand(len(columns), generator=generator)
        anywhere = (u * self.n).long().clamp(max=self.n - 1)
        if not len(self.rows):
            return anywhere
        position = self.start[columns] + torch.minimum((u * count).long(), (count - 1).clamp(min=0))
        return torch.where(count > 0, self.rows[position.clamp(max=len(self.rows) - 1)], anywhere)

    def real_batch(self, x: torch.Tensor, cond: torch.Tensor, cond_batch,
                   generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Training-by-sampling's real half of a discriminator batch: the conditions ``cond`` (drawn for the fake
        half) shuffled, and for each a row of ``x`` that holds it; ``(rows, their conditions)``. A table with no
        categorical column (``cond_batch`` is None) gets uniform rows under the unshuffled (empty) conditions."""
        if cond_batch is None:
            return x[torch.randint(len(x), (len(cond),), generator=generator)], cond
        perm = torch.randperm(len(cond), generator=generator)
        return x[self.draw(torch.from_numpy(cond_batch.output_index)[perm], generator)], cond[perm]


@register
class CTGAN(ConditionalGANModel):
    """Non-private CTGAN (module docstring) with the ``ctgan`` package's defaults: ``noise_dim`` 128,
    ``generator_hidden`` / ``critic_hidden`` (256, 256), ``batch_size`` 500 (a multiple of ``pac`` 10),
    ``epochs`` 300, learning rates 2e-4, weight decay 1e-6, ``critic_iters`` 1, ``gp_weight`` 10, Gumbel-softmax
    temperature ``gumbel_tau`` 0.2, ``log_frequency`` conditions, ``max_modes`` 10."""

    name = "ctgan"
    supports_dp = False
    phases = ("metadata", "gan")
    fast_params: dict[str, Any] = {"epochs": 2, "batch_size": 40, "noise_dim": 16, "generator_hidden": (32,),
                                   "critic_hidden": (32,), "max_modes": 3}

    def __init__(
        self,
        *,
        numeric: str = "mode_specific",
        max_modes: int = 10,
        noise_dim: int = 128,
        generator_hidden: tuple[int, ...] = (256, 256),
        critic_hidden: tuple[int, ...] = (256, 256),
        epochs: int = 300,
        batch_size: int = 500,
        pac: int = 10,
        critic_iters: int = 1,
        generator_learning_rate: float = 2e-4,
        critic_learning_rate: float = 2e-4,
        weight_decay: float = 1e-6,
        gp_weight: float = 10.0,
        gumbel_tau: float = 0.2,
        log_frequency: bool = True,
        match_marginals: bool = False,
    ):
        self._keep(locals())
        self.classifier_hidden, self.classifier_share = None, 0.0  # no auxiliary classifier in CTGAN

    def _check_params(self) -> None:
        super()._check_params()
        if self.pac < 1 or self.batch_size % self.pac:
            raise InputError(f"batch_size must be a multiple of pac. Found batch_size={self.batch_size}, "
                             f"pac={self.pac}.")

    # ------------------------------------------------------------------ fit
    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        from tqdm.auto import tqdm

        t0 = time.perf_counter()
        self.ledger_.spend(dp_event.NonPrivateDpEvent(), phase="gan", mechanism="exact ctgan training")
        x = self._encode(frame, rng)
        spans, data_dim = self._spans(), x.shape[1]
        conditions = Conditions(self.transformer_)
        by_category = RowsByCategory(x, conditions.spans)
        seed = int(rng.integers(2**62))
        gen = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng(devices=[]):  # reproducible init and dropout masks, no global side effect
            torch.manual_seed(seed + 1)
            self.generator_ = self._new_generator(conditions.dim, data_dim)
            critic = DropoutDiscriminator(data_dim + conditions.dim, self.critic_hidden, self.pac)
            self._train(x, critic, conditions, by_category, spans, gen, progress, tqdm)
        self.generator_.eval()
        steps = max(1, len(x) // self.batch_size) * self.epochs
        self.budget_ = budget_summary(self.ledger_, n_dp=float(self.metadata_.n_rows),
                                      metadata_epsilon=self.ledger_.phases().get("metadata", 0.0),
                                      phases=[("gan", {"mechanism": "exact (non-private)", "steps": steps,
                                                       "epsilon_after": json_number(self.ledger_.epsilon())})])
        self.fit_seconds_ = time.perf_counter() - t0
        self._fit_category_weights(gen)

    def _train(self, x: torch.Tensor, critic: torch.nn.Module, conditions: Conditions, by_category: RowsByCategory,
               spans, gen: torch.Generator, progress: bool, tqdm) -> None:
        batch, pac = self.batch_size, self.pac
        adam = {"betas": (0.5, 0.9), "weight_decay": self.weight_decay}
        gen_opt = torch.optim.Adam(self.generator_.parameters(), lr=self.generator_learning_rate, **adam)
        critic_opt = torch.optim.Adam(critic.parameters(), lr=self.critic_learning_rate, **adam)
        plain = not self.log_frequency

        def fake_rows():
            cond, cond_batch = conditions.public(batch, gen, plain=plain)
            raw = self.generator_(torch.randn(batch, self.noise_dim, generator=gen), cond)
            return activate(raw, spans, gumbel_tau=self.gumbel_tau, generator=gen), raw, cond, cond_batch

        self.generator_.train()
        critic.train()
        steps_per_epoch = max(1, len(x) // batch)
        for _ in tqdm(range(self.epochs), desc="ctgan", disable=not progress, leave=False):
            for _ in range(steps_per_epoch):
                for _ in range(self.critic_iters):
                    with torch.no_grad():
                        fake, _, cond, cond_batch = fake_rows()
                    real, real_cond = by_category.real_batch(x, cond, cond_batch, gen)  # training-by-sampling
                    real_in, fake_in = torch.cat([real, real_cond], 1), torch.cat([fake, cond], 1)
                    loss = (critic(fake_in).mean() - critic(real_in).mean()
                            + self.gp_weight * _pack_penalty(critic, real_in, fake_in, pac, gen))
                    critic_opt.zero_grad(set_to_none=True)
                    loss.backward()
                    critic_opt.step()
                fake, raw, cond, cond_batch = fake_rows()
                loss = -critic(torch.cat([fake, cond], 1)).mean() + conditions.loss(raw, cond_batch)
                gen_opt.zero_grad(set_to_none=True)
                loss.backward()
                gen_opt.step()


def _pack_penalty(critic: torch.nn.Module, real: torch.Tensor, fake: torch.Tensor, pac: int,
                  gen: torch.Generator) -> torch.Tensor:
    """WGAN-GP's penalty under PacGAN: one mixing weight per pack, the gradient norm over the whole pack."""
    t = torch.rand(len(real) // pac, 1, generator=gen).repeat_interleave(pac, dim=0)
    mixed = (t * real + (1 - t) * fake).requires_grad_(True)
    slope = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)[0]
    return ((slope.reshape(-1, pac * real.shape[1]).norm(dim=1) - 1.0) ** 2).mean()
