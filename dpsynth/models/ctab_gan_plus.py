"""CTAB-GAN+ (Zhao, Kunar, Birke, Chen 2022), non-private (``epsilon=inf`` only): the reference of seeds 000 and 002,
whose DP models (DP-SACTGAN, DTGAN) are built on it. Its algorithm and defaults, on dpsynth's shared pieces:

- **Encoding** (:class:`~dpsynth.data.transformers.TableTransformer`, fitted on the rows): mode-specific
  normalisation of numbers with CTAB-GAN+'s **mixed** columns (each special value, e.g. Adult's capital-gain 0, a
  slot of its own beside the modes) and **long-tail** columns (``log(x - lower + 1)`` first), from the schema's
  column kinds; one-hot categories.
- **Networks** (:mod:`dpsynth.models.networks.ctab_gan`): the row as a square image, a convolutional generator and a
  convolutional discriminator with layer normalisation; random dimension ``noise_dim`` 100, ``channels`` 64.
- **Conditional training**: CTGAN's condition vector (a categorical column, one of its categories by
  log-frequency), the condition loss on the generator, training-by-sampling of the real rows
  (:class:`~dpsynth.models.ctgan.RowsByCategory`).
- **Losses**: WGAN with gradient penalty (weight ``gp_weight``) at **spherical** interpolates of real and fake rows;
  the generator adds the **information loss** (L1 distance of the mean and of the standard deviation of the
  discriminator's features between the fake and the real batch) and, when the schema has a target, the
  **auxiliary classifier** loss: an MLP (``classifier_hidden``, LeakyReLU, dropout 0.5) learns the target from
  the other columns on real rows (cross-entropy; smooth L1 for a numeric target), and the generator is trained to
  make its rows' targets predictable by it.
- **Optimisers**: Adam (0.5, 0.9), eps 1e-3, learning rate 2e-4, weight decay 1e-5 for all three networks; one
  discriminator step per generator step; ``epochs`` passes of ``len(rows) / batch_size`` steps (150 of 500 rows).
- **Sampling**: conditions by the plain frequencies, numbers through tanh, each category drawn from its softmax.

What differs from the authors' code: the encoder is dpsynth's (a variational mixture per column fitted on an exact
histogram, as every dpsynth model's); CTAB-GAN+'s optional *general* transform (min-max for chosen columns) is not
offered; rows are never rejected and re-drawn (numbers are clipped to the schema's bounds instead).

Privacy: none (one ``NonPrivateDpEvent``): a reference for comparisons, never a release.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from dp_accounting import dp_event
from torch import nn

from dpsynth.errors import InputError
from dpsynth.models import register
from dpsynth.models._conditional_gan import Conditions, slerp
from dpsynth.models.ctgan import RowsByCategory
from dpsynth.models.dtgan import ConditionalGANModel
from dpsynth.models.networks.autoencoder import activate
from dpsynth.models.networks.ctab_gan import ConvDiscriminator, ConvGenerator
from dpsynth.models.phase import budget_summary, json_number

__all__ = ["CTABGANPlus", "AuxiliaryClassifier"]


class AuxiliaryClassifier(nn.Module):
    """CTAB-GAN+'s classifier: predicts the target block ``[start, end)`` of an encoded row from the rest of it.

    ``forward(rows) -> (prediction, label)``: for a categorical target (width > 1) logits and the row's category,
    for a numeric one (width 1) a value and the row's value."""

    def __init__(self, data_dim: int, target: tuple[int, int], hidden: tuple[int, ...]):
        super().__init__()
        self.start, self.end = target
        width = self.end - self.start
        layers: list[nn.Module] = []
        dim = data_dim - width
        for size in hidden:
            layers += [nn.Linear(dim, int(size)), nn.LeakyReLU(0.2), nn.Dropout(0.5)]
            dim = int(size)
        self.net = nn.Sequential(*layers, nn.Linear(dim, width))

    def forward(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rest = torch.cat([rows[:, :self.start], rows[:, self.end:]], dim=1)
        target = rows[:, self.start:self.end]
        label = target[:, 0] if target.shape[1] == 1 else target.argmax(dim=1)
        return self.net(rest).squeeze(-1) if target.shape[1] == 1 else self.net(rest), label

    def loss(self, rows: torch.Tensor) -> torch.Tensor:
        prediction, label = self(rows)
        if prediction.dim() == 1:
            return F.smooth_l1_loss(prediction, label)
        return F.cross_entropy(prediction, label)


def target_block(transformer, target: str | None) -> tuple[int, int] | None:
    """The encoded block the classifier predicts: a categorical target's one-hot span, a numeric target's value."""
    if not target:
        return None
    for span in transformer.output_info:
        if span.column == target and span.role in ("category", "value") and (span.role == "value" or span.width > 1):
            return int(span.start), int(span.end)
    return None


def information_loss(fake_features: torch.Tensor, real_features: torch.Tensor) -> torch.Tensor:
    """``||mean(f_fake) - mean(f_real)||_1 + ||std(f_fake) - std(f_real)||_1`` over the batch."""
    return ((fake_features.mean(0) - real_features.mean(0)).abs().sum()
            + (fake_features.std(0) - real_features.std(0)).abs().sum())


def spherical_penalty(critic: ConvDiscriminator, real: torch.Tensor, fake: torch.Tensor,
                      gen: torch.Generator) -> torch.Tensor:
    """``mean((||grad D(slerp(real, fake, t))|| - 1)^2)`` with one ``t ~ U(0, 1)`` per row."""
    t = torch.rand(len(real), 1, generator=gen)
    mixed = slerp(real, fake, t).requires_grad_(True)
    slope = torch.autograd.grad(critic(mixed)[0].sum(), mixed, create_graph=True)[0]
    return ((slope.norm(dim=1) - 1.0) ** 2).mean()


@register
class CTABGANPlus(ConditionalGANModel):
    """Non-private CTAB-GAN+ (module docstring) with the authors' defaults: ``noise_dim`` 100, ``channels`` 64,
    ``classifier_hidden`` (256, 256, 256, 256), ``batch_size`` 500, ``epochs`` 150, ``learning_rate`` 2e-4,
    ``weight_decay`` 1e-5, ``gp_weight`` 10, Gumbel-softmax temperature ``gumbel_tau`` 0.2, ``max_modes`` 10;
    ``classifier=False`` drops the auxiliary classifier (as for a table without a target)."""

    name = "ctab-gan-plus"
    supports_dp = False
    phases = ("metadata", "gan")
    fast_params: dict[str, Any] = {"epochs": 2, "batch_size": 50, "noise_dim": 16, "channels": 8,
                                   "classifier_hidden": (16,), "max_modes": 3}

    def __init__(
        self,
        *,
        numeric: str = "mode_specific",
        max_modes: int = 10,
        noise_dim: int = 100,
        channels: int = 64,
        classifier: bool = True,
        classifier_hidden: tuple[int, ...] = (256, 256, 256, 256),
        epochs: int = 150,
        batch_size: int = 500,
        learning_rate: float = 2e-4,
        weight_decay: float = 1e-5,
        gp_weight: float = 10.0,
        gumbel_tau: float = 0.2,
        match_marginals: bool = False,
    ):
        self._keep(locals())
        self.classifier_share = 0.0  # the shared checks read it; the classifier here is trained without DP

    def _check_params(self) -> None:
        super()._check_params()
        if self.batch_size < 2:
            raise InputError(f"batch_size must be at least 2 (the information loss needs a batch std). Found "
                             f"{self.batch_size}.")

    def _new_generator(self, cond_dim: int, data_dim: int) -> torch.nn.Module:
        return ConvGenerator(self.noise_dim, cond_dim, data_dim, self.channels)

    # ------------------------------------------------------------------ fit
    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        t0 = time.perf_counter()
        self.ledger_.spend(dp_event.NonPrivateDpEvent(), phase="gan", mechanism="exact ctab-gan+ training")
        x = self._encode(frame, rng)
        conditions = Conditions(self.transformer_)
        by_category = RowsByCategory(x, conditions.spans)
        block = target_block(self.transformer_, self.schema_.target) if self.classifier else None
        seed = int(rng.integers(2**62))
        gen = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng(devices=[]):  # reproducible init and dropout masks, no global side effect
            torch.manual_seed(seed + 1)
            self.generator_ = self._new_generator(conditions.dim, x.shape[1])
            critic = ConvDiscriminator(x.shape[1] + conditions.dim, self.channels)
            classifier = None if block is None else AuxiliaryClassifier(x.shape[1], block, self.classifier_hidden)
            self._train(x, critic, classifier, conditions, by_category, gen, progress)
        self.generator_.eval()
        steps = max(1, len(x) // self.batch_size) * self.epochs
        self.budget_ = budget_summary(self.ledger_, n_dp=float(self.metadata_.n_rows),
                                      metadata_epsilon=self.ledger_.phases().get("metadata", 0.0),
                                      phases=[("gan", {"mechanism": "exact (non-private)", "steps": steps,
                                                       "classifier": block is not None,
                                                       "epsilon_after": json_number(self.ledger_.epsilon())})])
        self.fit_seconds_ = time.perf_counter() - t0
        self._fit_category_weights(gen)

    def _train(self, x: torch.Tensor, critic: ConvDiscriminator, classifier: AuxiliaryClassifier | None,
               conditions: Conditions, by_category: RowsByCategory, gen: torch.Generator, progress: bool) -> None:
        from tqdm.auto import tqdm

        batch, spans = self.batch_size, self._spans()
        adam = {"lr": self.learning_rate, "betas": (0.5, 0.9), "eps": 1e-3, "weight_decay": self.weight_decay}
        gen_opt = torch.optim.Adam(self.generator_.parameters(), **adam)
        critic_opt = torch.optim.Adam(critic.parameters(), **adam)
        cls_opt = None if classifier is None else torch.optim.Adam(classifier.parameters(), **adam)

        def fake_rows(cond: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            raw = self.generator_(torch.randn(len(cond), self.noise_dim, generator=gen), cond)
            return activate(raw, spans, gumbel_tau=self.gumbel_tau, generator=gen), raw

        for module in (self.generator_, critic, classifier):
            if module is not None:
                module.train()
        steps_per_epoch = max(1, len(x) // batch)
        for _ in tqdm(range(self.epochs), desc="ctab-gan-plus", disable=not progress, leave=False):
            for _ in range(steps_per_epoch):
                # discriminator: real rows drawn given shuffled conditions (training-by-sampling)
                cond, cond_batch = conditions.public(batch, gen, plain=False)
                real, real_cond = by_category.real_batch(x, cond, cond_batch, gen)
                with torch.no_grad():
                    fake, _ = fake_rows(cond)
                real_in, fake_in = torch.cat([real, real_cond], 1), torch.cat([fake, cond], 1)
                loss = (critic(fake_in)[0].mean() - critic(real_in)[0].mean()
                        + self.gp_weight * spherical_penalty(critic, real_in, fake_in, gen))
                critic_opt.zero_grad(set_to_none=True)
                loss.backward()
                critic_opt.step()
                # generator: Wasserstein + condition + information losses
                cond, cond_batch = conditions.public(batch, gen, plain=False)
                fake, raw = fake_rows(cond)
                score, fake_features = critic(torch.cat([fake, cond], 1))
                with torch.no_grad():
                    real_features = critic(real_in)[1]
                loss = (-score.mean() + conditions.loss(raw, cond_batch)
                        + information_loss(fake_features, real_features))
                gen_opt.zero_grad(set_to_none=True)
                loss.backward()
                gen_opt.step()
                if classifier is None:
                    continue
                # auxiliary classifier: the generator makes its rows' targets predictable, the classifier learns
                # them from real rows
                fake, _ = fake_rows(cond)
                gen_opt.zero_grad(set_to_none=True)
                classifier.requires_grad_(False)
                classifier.loss(fake).backward()
                classifier.requires_grad_(True)
                gen_opt.step()
                cls_opt.zero_grad(set_to_none=True)
                classifier.loss(real).backward()
                cls_opt.step()
