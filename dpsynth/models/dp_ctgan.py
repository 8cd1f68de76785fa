"""DP-CTGAN (Fang, Dhami & Kersting 2022; the baseline of seed 004 and of smartnoise-synth's ``DPCTGAN``): CTGAN's
conditional generator and WGAN-GP critic, the critic trained with DP-SGD. In dpsynth it is DTGAN_D's DP-SGD
discriminator phase (:mod:`dpsynth.models.dtgan`) with CTGAN's own choices and nothing of seed 002's additions:

- no auxiliary classifier (all the budget after the metadata goes to the critic);
- WGAN-GP's straight-line interpolates for the gradient penalty (seed 002 uses spherical ones);
- CTGAN's log-frequency conditions for the generator's training steps (``log_frequency=True``), one critic step
  per generator step (``critic_iters=1``), Adam (0.5, 0.9);
- no marginal map by default (``match_marginals=False``: a dpsynth post-processing step, not DP-CTGAN's).

What published DP-CTGANs get wrong, and what is done instead (the accounting is the shared core's,
:mod:`dpsynth.models._conditional_gan`):

- *Training-by-sampling* picks a condition, then real rows holding it: a data-dependent selection that the
  usual accounting (q = B / N) does not cover. Here real rows come from the accounted Poisson sampler only and the
  condition is read off each sampled row.
- *Per-example unit*: the fake term and the gradient penalty depend on the real row (its condition, its
  interpolate), so they are clipped and noised with it; one row changes one unit (sensitivity C).
- *PacGAN*: CTGAN packs 10 rows per critic input; a pack of Poisson-sampled rows is not a per-record unit, so
  there is no packing (``pac`` is not a parameter), as in smartnoise-synth's DP-CTGAN.
- *Preprocessing*: the encoding (mode-specific normalisation, one-hot categories) is fitted on the DP metadata, never
  on the rows (smartnoise #485: preprocessing that silently spends or leaks budget).

Neighbouring relation: add/remove one row. Every access to private rows is a Poisson-sampled DP-SGD step recorded
in ``ledger_`` (phase ``"gan"``) after the metadata phase; the ledger composes them (PLD) and the phase is
calibrated so the total stays at most the target. ``epsilon=inf``: no clipping, no noise (a non-private CTGAN
without packing or training-by-sampling).
"""

from __future__ import annotations

from dpsynth.models import register
from dpsynth.models.dtgan import MAX_STEPS, DTGANDiscriminator

__all__ = ["DPCTGAN"]


@register
class DPCTGAN(DTGANDiscriminator):
    """DP-CTGAN with honest accounting (module docstring). Hyper-parameters as :class:`DTGANDiscriminator`'s,
    without the classifier's; defaults are CTGAN's where DP allows them (generator (256, 256), noise 128, Gumbel
    temperature 0.2, penalty weight 10, one critic step per generator step, log-frequency conditions) and, for the
    critic's width, the number of passes, batch size and learning rates, the DP-SGD sizing of ``dtgan-d``: at
    epsilon <= 1 the budget affords a few thousand noisy steps, not CTGAN's 300 epochs at 2e-4, and per-example
    gradients of CTGAN's (256, 256) critic cost 4 times those of the (128, 128) one the width rule gives Adult
    (measured: more than 30 minutes a fit on 2 shared cores)."""

    name = "dp-ctgan"
    phases = ("metadata", "gan")
    interpolation = "linear"  # CTGAN's (WGAN-GP's) penalty interpolates
    zero_allowed = ("gp_weight",)
    fast_params = {"gan_epochs": 1.0, "gan_batch_size": 32, "noise_dim": 16, "generator_hidden": (32,),
                   "critic_hidden": (32,), "calibration_accountant": "rdp", "max_modes": 3}

    def __init__(
        self,
        *,
        numeric: str = "mode_specific",
        max_modes: int = 10,
        noise_dim: int = 128,
        generator_hidden: tuple[int, ...] = (256, 256),
        critic_hidden: tuple[int, ...] | None = None,
        gan_epochs: float = 24.0,
        gan_batch_size: int | None = None,
        gan_max_steps: int = MAX_STEPS["gan"],
        critic_iters: int = 1,
        critic_learning_rate: float = 0.002,
        generator_learning_rate: float = 0.002,
        gan_max_grad_norm: float = 1.0,
        gp_weight: float = 10.0,
        gumbel_tau: float = 0.2,
        calibration_accountant: str = "pld",
        log_frequency: bool = True,
        match_marginals: bool = False,
        backend: str = "numpy",
    ):
        self._keep(locals())
        # DTGAN_D's classifier is off: not a hyper-parameter of DP-CTGAN
        self.classifier_share, self.classifier_hidden, self.classifier_weight = 0.0, None, 0.0
