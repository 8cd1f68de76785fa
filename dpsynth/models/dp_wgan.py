"""DP-WGAN and DP-GAN: a GAN on the encoded rows whose critic is trained with DP-SGD (baselines of seeds 000, 002, 003).

- ``dp-wgan`` (Xie et al. 2018, "Differentially private generative adversarial network"; the DP-WGAN that seeds 000,
  002 and 003 compare with): a Wasserstein critic kept Lipschitz by weight clipping (to [-0.05, 0.05] after every
  step), several critic steps per generator step;
- ``dp-gan`` (the seeds' "DP-GAN"): the same with the standard logistic GAN loss (``critic_loss="bce"``).

Both are DP-auto-GAN's GAN phase (:func:`dpsynth.models._auto_gan_train.train_gan`) without its autoencoder: the
generator (CTGAN's residual one, no conditions) writes encoded rows directly, through Gumbel-softmax on categories,
one output block per column (Frigerio et al. 2019's mixed-type DP-WGAN).

Privacy guarantees (neighbouring relation: add/remove one row):
- every critic step is a Poisson-sampled DP-SGD step (``q = batch / n_dp``, ``n_dp`` the DP row count) with
  per-example clipping of the whole term that touches the row (the real score and, for ``"wgan-gp"``, the penalty at
  its interpolate), recorded in ``ledger_`` (phase ``"gan"``); the generated-row term is a function of the DP weights
  only and goes in unclipped; the noise is calibrated so the composed ledger (metadata + GAN) stays within the
  target. Xie et al. derive a gradient bound from the weight clipping instead of clipping per example; that bound
  assumes bounded activations and inputs and is not what DP-SGD's accounting needs: here clipping is per example
  and weight clipping only keeps the critic Lipschitz (post-processing of DP weights);
- the generator sees only the critic's scores of generated rows: post-processing;
- the encoding is fitted on the public schema or the DP metadata (never min/max of the rows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn

from dpsynth.errors import InputError
from dpsynth.models import register
from dpsynth.models._auto_gan_train import train_gan
from dpsynth.models._row_generator import RowGeneratorModel, as_layers
from dpsynth.models.networks.gan import Critic
from dpsynth.models.phase import DPPhase, budget_summary, choose_width

__all__ = ["DPWGAN", "DPGAN"]

#: sizing rule of the DP phase (dpsynth.models.phase): batches up to 512 rows, at least 1000 critic steps
LARGEST_BATCH, MIN_STEPS = 512, 1000
#: the widest critic layer the width rule gives (DP-auto-GAN's, tuned on Adult)
CRITIC_WIDTH = 128
CALIBRATION_RTOL = 0.01


@register
class DPWGAN(RowGeneratorModel):
    """DP-WGAN (module docstring). Hyper-parameters: ``numeric`` (encoding of numbers), ``noise_dim`` /
    ``generator_hidden``, ``critic_hidden`` (``None``: the width rule, two layers of at most 128 and 64),
    ``gan_epochs`` / ``gan_batch_size`` (``None``: up to 512 rows and at least 1000 critic steps), ``critic_iters``
    critic steps per generator step, learning rates, ``gan_max_grad_norm`` (C), ``critic_loss`` (``"wgan"``,
    DP-WGAN's default; ``"wgan-gp"``; ``"bce"``, DP-GAN's default), ``gp_weight``, ``gumbel_tau``,
    ``calibration_accountant``, ``match_marginals`` (map samples onto the DP metadata histograms; post-processing),
    ``backend`` (``"numpy"``: a pandas frame in memory; ``"duckdb"`` / ``"spark"``: a Parquet / CSV path or a
    Spark DataFrame, its rows encoded onto disk and read by position; :mod:`dpsynth.data.row_store`)."""

    name = "dp-wgan"
    phases = ("metadata", "gan")
    zero_allowed = ("gp_weight",)
    fast_params = {"gan_epochs": 1.0, "gan_batch_size": 32, "noise_dim": 16, "generator_hidden": (32,),
                   "critic_hidden": (32,), "calibration_accountant": "rdp"}

    def __init__(
        self,
        *,
        numeric: str = "minmax",
        noise_dim: int = 64,
        generator_hidden: tuple[int, ...] = (128, 128),
        critic_hidden: tuple[int, ...] | None = None,
        gan_epochs: float = 24.0,
        gan_batch_size: int | None = None,
        critic_iters: int = 5,
        critic_learning_rate: float = 0.002,
        generator_learning_rate: float = 0.002,
        gan_max_grad_norm: float = 1.0,
        critic_loss: str = "wgan",
        gp_weight: float = 10.0,
        gumbel_tau: float = 0.2,
        calibration_accountant: str = "pld",
        match_marginals: bool = False,
        backend: str = "numpy",
    ):
        self.numeric = numeric
        self.noise_dim = noise_dim
        self.generator_hidden = as_layers(generator_hidden)
        self.critic_hidden = as_layers(critic_hidden)
        self.gan_epochs = gan_epochs
        self.gan_batch_size = gan_batch_size
        self.critic_iters = critic_iters
        self.critic_learning_rate = critic_learning_rate
        self.generator_learning_rate = generator_learning_rate
        self.gan_max_grad_norm = gan_max_grad_norm
        self.critic_loss = critic_loss
        self.gp_weight = gp_weight
        self.gumbel_tau = gumbel_tau
        self.calibration_accountant = calibration_accountant
        self.match_marginals = match_marginals
        self.backend = backend

    def _check_params(self) -> None:
        if self.critic_loss not in ("wgan", "wgan-gp", "bce"):
            raise InputError(f"critic_loss must be 'wgan', 'wgan-gp' or 'bce'. Found {self.critic_loss!r}.")
        if self.numeric not in ("minmax", "quantile", "mode_specific"):
            raise InputError(f"numeric must be 'minmax', 'quantile' or 'mode_specific'. Found {self.numeric!r}.")
        if self.calibration_accountant not in ("pld", "rdp"):
            raise InputError(f"calibration_accountant must be 'pld' or 'rdp'. Found {self.calibration_accountant!r}.")

    # ------------------------------------------------------------------ fit
    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        ledger = self.ledger_
        x = self._encode(frame, rng)
        data_dim = x.shape[1]
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        with torch.random.fork_rng(devices=[]):  # data-independent init, reproducible, no global side effect
            torch.manual_seed(int(rng.integers(2**62)))
            self._build_generator(data_dim)
            wide = choose_width(data_dim, tuned=CRITIC_WIDTH)
            critic = Critic(data_dim, self.critic_hidden or (wide, wide // 2))
        n_dp, spent = float(self.metadata_.n_rows), ledger.epsilon()
        phase = DPPhase("gan", ledger=ledger, n_dp=n_dp, epochs=self.gan_epochs, batch_size=self.gan_batch_size,
                        largest_batch=LARGEST_BATCH, min_steps=MIN_STEPS, target_epsilon=ledger.target_epsilon,
                        max_grad_norm=self.gan_max_grad_norm, accountant=self.calibration_accountant,
                        rtol=CALIBRATION_RTOL)
        train_gan(self.generator_, nn.Identity(), critic, x, self._spans(), phase=phase, params=self.get_params(),
                  generator=gen, progress=progress)
        del x, critic  # the critic is DP too, but sampling does not need it: not kept, not saved
        self.budget_ = budget_summary(ledger, n_dp=n_dp, metadata_epsilon=spent, phases=[phase], shares={"gan": 1.0})
        self._fit_category_weights(gen)  # post-processing: the trained generator + the DP slot counts


@register
class DPGAN(DPWGAN):
    """DP-GAN: :class:`DPWGAN` with the logistic GAN loss (``critic_loss="bce"``) by default."""

    name = "dp-gan"

    # the whole signature again: hyper-parameters (get_params, clone, the model file) are read off __init__'s
    # signature, and only critic_loss's default differs
    def __init__(
        self,
        *,
        numeric: str = "minmax",
        noise_dim: int = 64,
        generator_hidden: tuple[int, ...] = (128, 128),
        critic_hidden: tuple[int, ...] | None = None,
        gan_epochs: float = 24.0,
        gan_batch_size: int | None = None,
        critic_iters: int = 5,
        critic_learning_rate: float = 0.002,
        generator_learning_rate: float = 0.002,
        gan_max_grad_norm: float = 1.0,
        critic_loss: str = "bce",
        gp_weight: float = 10.0,
        gumbel_tau: float = 0.2,
        calibration_accountant: str = "pld",
        match_marginals: bool = False,
        backend: str = "numpy",
    ):
        super().__init__(**{k: v for k, v in locals().items() if k not in ("self", "__class__")})
