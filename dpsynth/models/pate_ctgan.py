"""PATE-CTGAN (Rosenblatt et al. 2020; smartnoise-synth's ``PATECTGAN``, a baseline of seed 000): PATE-GAN's
teachers, student and noisy votes (:mod:`dpsynth.models.pate_gan`, whose docstring holds the privacy argument)
with CTGAN's conditional generator.

What changes from ``pate-gan``:

- the generator is CTGAN's :class:`~dpsynth.models.networks.ctgan.ConditionalGenerator`; its conditions (one
  categorical column, one of its categories) come from the DP category counts of the metadata phase
  (:class:`~dpsynth.data.transformers.ConditionSampler`; CTGAN's log-frequency law while training when
  ``log_frequency``, the plain one when sampling), and it is trained with CTGAN's condition loss besides the
  student's verdict;
- every discriminator (teachers and student) sees a row with a condition: a generated row with the condition it
  was generated under; a teacher's real row with a condition *read off the row* (a uniformly chosen categorical
  column and the row's own category in it), so a teacher's input is still a function of its own partition and
  public randomness, and one row still moves one teacher's answers only (sensitivity as in ``pate-gan``).
  CTGAN's training-by-sampling (choose a condition, then look up rows holding it) is a data-dependent selection
  across partitions and is not done; smartnoise's PATECTGAN also accounts its votes with PATE's data-dependent
  moments accountant, which is not used here (every query costs its worst case).

The model file holds the generator and the encoder state (which includes the DP counts the conditions use).
"""

from __future__ import annotations

import numpy as np
import torch

from dpsynth.models import register
from dpsynth.models._conditional_gan import Conditions
from dpsynth.models.networks.autoencoder import activate
from dpsynth.models.networks.ctgan import ConditionalGenerator
from dpsynth.models.pate_gan import PATEGAN

__all__ = ["PATECTGAN"]


@register
class PATECTGAN(PATEGAN):
    """PATE-CTGAN with honest accounting (module docstring). Hyper-parameters as :class:`PATEGAN`'s, with the
    mode-specific encoding of numbers by default (CTGAN's) and ``log_frequency`` (the generator trains on CTGAN's
    log-frequency conditions)."""

    name = "pate-ctgan"
    fast_params = {**PATEGAN.fast_params, "numeric": "quantile"}

    def __init__(
        self,
        *,
        numeric: str = "mode_specific",
        noise_dim: int = 64,
        generator_hidden: tuple[int, ...] = (128, 128),
        teacher_hidden: tuple[int, ...] | None = None,
        student_hidden: tuple[int, ...] = (128, 128),
        n_teachers: int | None = None,
        votes: str = "soft",
        rows_per_teacher: int = 50,
        iterations: int = 500,
        teacher_iters: int = 1,
        student_iters: int = 3,
        batch_size: int = 64,
        teacher_batch_size: int = 32,
        teacher_learning_rate: float = 1e-3,
        student_learning_rate: float = 1e-3,
        generator_learning_rate: float = 1e-4,
        gumbel_tau: float = 0.2,
        log_frequency: bool = True,
        match_marginals: bool = False,
        backend: str = "numpy",
    ):
        super().__init__(numeric=numeric, noise_dim=noise_dim, generator_hidden=generator_hidden,
                         teacher_hidden=teacher_hidden, student_hidden=student_hidden, n_teachers=n_teachers,
                         votes=votes, rows_per_teacher=rows_per_teacher, iterations=iterations,
                         teacher_iters=teacher_iters, student_iters=student_iters, batch_size=batch_size,
                         teacher_batch_size=teacher_batch_size, teacher_learning_rate=teacher_learning_rate,
                         student_learning_rate=student_learning_rate,
                         generator_learning_rate=generator_learning_rate, gumbel_tau=gumbel_tau,
                         match_marginals=match_marginals, backend=backend)
        self.log_frequency = log_frequency

    # ------------------------------------------------------------------ the conditional generator
    def _build_generator(self, data_dim: int) -> None:
        self.conditions_ = Conditions(self.transformer_)  # over the DP (or public) category counts
        self.generator_ = ConditionalGenerator(self.noise_dim, self.conditions_.dim, self.generator_hidden, data_dim)

    def _condition_dim(self) -> int:
        return self.conditions_.dim

    def _generated(self, m: int, spans, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        cond, batch = self.conditions_.public(m, gen, plain=not self.log_frequency)
        raw = self.generator_(torch.randn(m, self.noise_dim, generator=gen), cond)
        rows = activate(raw, spans, gumbel_tau=self.gumbel_tau, generator=gen)
        return torch.cat([rows, cond], dim=1), self.conditions_.loss(raw, batch)

    def _with_conditions(self, real: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        k, mb, d = real.shape
        cond = self.conditions_.from_rows(real.reshape(k * mb, d), gen).reshape(k, mb, -1)
        return torch.cat([real, cond], dim=2)

    # ------------------------------------------------------------------ sample
    @torch.no_grad()
    def _rows(self, n: int, gen: torch.Generator) -> np.ndarray:
        cond, _ = self.conditions_.public(n, gen)  # the plain DP frequencies, as CTGAN samples
        raw = self.generator_(torch.randn(n, self.noise_dim, generator=gen), cond)
        return activate(raw, self._spans()).numpy()
