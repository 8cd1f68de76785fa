"""DP-VAE and TVAE: a tabular VAE sampled from its prior, the baselines of seeds 003 and 004.

- ``dp-vae`` (DP-auto-GAN's paper, seed 003, compares with it; so does seed 004's ablation): the VAE of DP-TLDM
  (:mod:`dpsynth.models.dp_tldm`: per-column Gaussian / categorical heads) trained with DP-SGD on the negative ELBO,
  then sampled with ``z ~ N(0, I)`` through the decoder. It is DP-TLDM without the latent diffusion phase, so all
  of the budget left after the metadata goes to the VAE; with its own defaults rather than an ablation switch.
- ``tvae`` (Xu et al. 2019, the non-private reference of seeds 000, 002, 004): the same network with CTGAN's
  mode-specific normalisation, trained without clipping or noise; ``epsilon=inf`` only (``supports_dp = False``).

Privacy guarantees (``dp-vae``; the engine and accounting are DP-TLDM's): neighbouring relation add/remove one row.
The encoding is fitted on the public schema and the DP metadata only. The VAE phase is Poisson-sampled DP-SGD
(``q = batch / n_dp``, ``n_dp`` the DP row count) with per-example clipping of the whole ELBO gradient (sensitivity
C) and Gaussian noise calibrated so the composed ledger (metadata + VAE) stays at most the target; every step is
recorded in ``ledger_`` (phase ``"vae"``). The model file keeps the decoder only (sampling never uses the
encoder).
"""

from __future__ import annotations

from dpsynth.models import register
from dpsynth.models.dp_tldm import DPTLDM

__all__ = ["DPVAE", "TVAE"]


@register
class DPVAE(DPTLDM):
    """DP-VAE: DP-TLDM's VAE sampled from the prior (module docstring). Hyper-parameters as :class:`DPTLDM`'s VAE
    ones: ``numeric`` / ``categorical`` encodings, ``latent_dim``, ``vae_hidden`` (``None``: the width rule, 128 on
    Adult), ``vae_layers``, ``beta`` (KL weight), ``vae_batch_size`` (``None``: the sizing rule, up to 8192 rows and
    at least 64 steps), ``vae_epochs``, ``max_grad_norm``, ``clipping``, ``learning_rate``; ``nonprivate_*`` at
    ``epsilon=inf``; ``match_marginals`` maps sampled numbers and category probabilities onto the DP metadata
    histograms (post-processing)."""

    name = "dp-vae"
    phases = ("metadata", "vae")
    fast_params = {"latent_dim": 4, "vae_hidden": 32, "vae_layers": 1, "vae_batch_size": 200, "vae_epochs": 2,
                   "nonprivate_epochs": 2}

    def __init__(
        self,
        *,
        numeric: str = "quantile",
        categorical: str = "onehot",
        latent_dim: int = 16,
        vae_hidden: int | None = None,
        vae_layers: int = 2,
        beta: float = 1.0,
        vae_batch_size: int | None = None,
        vae_epochs: float = 20.0,
        max_grad_norm: float = 1.0,
        clipping: str = "per_example",
        learning_rate: float = 2e-2,
        nonprivate_epochs: int = 60,
        nonprivate_batch_size: int = 512,
        nonprivate_learning_rate: float = 2e-3,
        match_marginals: bool = True,
        backend: str = "numpy",
    ):
        self.numeric, self.categorical = numeric, categorical
        self.latent_dim, self.vae_hidden, self.vae_layers, self.beta = latent_dim, vae_hidden, vae_layers, beta
        self.vae_batch_size, self.vae_epochs = vae_batch_size, vae_epochs
        self.max_grad_norm, self.clipping, self.learning_rate = max_grad_norm, clipping, learning_rate
        self.nonprivate_epochs = nonprivate_epochs
        self.nonprivate_batch_size = nonprivate_batch_size
        self.nonprivate_learning_rate = nonprivate_learning_rate
        self.match_marginals = match_marginals
        self.backend = backend
        # DP-TLDM's diffusion settings: fixed, not hyper-parameters (a tiny unused denoiser is built, never saved)
        self.latent_sampler, self.vae_share = "prior", 1.0
        self.denoiser_hidden, self.denoiser_layers, self.diffusion_steps, self.schedule = 8, 1, 2, "linear"
        self.diffusion_batch_size, self.diffusion_epochs, self.sample_steps, self.sample_eta = None, 1.0, 1, 1.0


@register
class TVAE(DPVAE):
    """TVAE, non-private (``epsilon=inf`` only): the VAE with CTGAN's mode-specific normalisation and TVAE's sizes
    (latent 128, two hidden layers of 128, ``epochs`` = 300 passes of ``batch_size`` = 500 rows, Adam
    ``learning_rate`` = 1e-3), no marginal map. Only the settings of a non-private fit are hyper-parameters."""

    name = "tvae"
    supports_dp = False
    reads_tables = False  # the non-private reference fits a frame (its encoding is fitted on the exact rows)
    phases = ("metadata", "vae")
    fast_params = {"latent_dim": 4, "vae_hidden": 32, "vae_layers": 1, "epochs": 2, "batch_size": 200}

    def __init__(
        self,
        *,
        numeric: str = "mode_specific",
        categorical: str = "onehot",
        latent_dim: int = 128,
        vae_hidden: int = 128,
        vae_layers: int = 2,
        beta: float = 1.0,
        epochs: int = 300,
        batch_size: int = 500,
        learning_rate: float = 1e-3,
    ):
        self.numeric, self.categorical = numeric, categorical
        self.latent_dim, self.vae_hidden, self.vae_layers, self.beta = latent_dim, vae_hidden, vae_layers, beta
        self.epochs, self.batch_size, self.learning_rate = epochs, batch_size, learning_rate
        # what DP-TLDM's training reads in its non-private branch, fixed (DP-SGD settings are never used)
        self.match_marginals, self.clipping, self.max_grad_norm = False, "per_example", 1.0
        self.latent_sampler, self.vae_share = "prior", 1.0
        self.denoiser_hidden, self.denoiser_layers, self.diffusion_steps, self.schedule = 8, 1, 2, "linear"
        self.diffusion_batch_size, self.diffusion_epochs, self.sample_steps, self.sample_eta = None, 1.0, 1, 1.0

    # DP-TLDM's non-private branch reads these names
    nonprivate_epochs = property(lambda self: self.epochs)
    nonprivate_batch_size = property(lambda self: self.batch_size)
    nonprivate_learning_rate = property(lambda self: self.learning_rate)
    vae_epochs = property(lambda self: self.epochs)
    vae_batch_size = property(lambda self: self.batch_size)
