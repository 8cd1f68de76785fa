"""PATE-GAN (Jordon, Yoon & van der Schaar 2019; the baseline of seeds 000 and 002) with data-independent accounting.

Algorithm, per iteration (``iterations`` of them):

1. **Teachers** (``n_teachers`` discriminators, each on its own disjoint partition of the private rows; logistic
   regressions by default, as in the authors' code) take ``teacher_iters`` non-private steps telling their
   partition's rows from generated ones (logistic loss). They are never released and never read by anything but
   the votes below.
2. **Student** (a discriminator that never sees a private row) takes ``student_iters`` steps on ``batch_size``
   generated rows each, with targets from the teachers' noisy votes on those rows: ``votes="soft"`` (default) -
   the sum of the teachers' probabilities plus Gaussian noise (:func:`dpsynth.privacy.pate.noisy_vote_sum`),
   divided by the teacher count, fitted by squared error (unbiased under the zero-mean noise); ``"argmax"`` -
   PATE-GAN's noisy-argmax label (:func:`dpsynth.privacy.pate.noisy_argmax`), fitted by logistic loss.
3. **Generator** (CTGAN's residual generator, without conditions) takes one step to make the student call its
   rows real (non-saturating loss).

Privacy (neighbouring relation: add/remove one row). Each row belongs to one teacher (an independent uniform draw
per row, so adding a row leaves every other row's teacher distributed as before), so it changes at most that
teacher's answer to each query: its probability, in [0, 1], moves the soft-vote sum by at most 1 (L2 sensitivity 1,
``GaussianDpEvent(s)`` per query); its vote moves the argmax's two counts by one each (L2 sensitivity sqrt 2,
``GaussianDpEvent(s / sqrt 2)``). The teachers' training is inside the mechanism (they are functions of their
partitions and of earlier released answers: adaptive composition). The student and the generator see generated
rows and noisy answers only: post-processing. ``s`` is calibrated, before training, so that all ``iterations *
student_iters * batch_size`` queries composed with the metadata phase stay within the target; the queries are
granted as one ledger allowance (phase ``"pate"``) and each is recorded before its noise is drawn. What published
PATE-GANs get wrong (Ganev et al. 2024: all six audited implementations leak) and is done here instead:

- PATE's *data-dependent* moments accountant (whose epsilon is itself a function of the votes, released without
  DP, and whose log-term several implementations drop) is not used: every query costs its worst case;
- no min/max or category list read off the rows: the encoding is fitted on the public schema or the DP metadata;
- the number of teachers follows the DP row count (``n_dp / rows_per_teacher``), never the exact one;
- teachers are trained on their own partition only (implementations that let a teacher see other rows, or the
  student see real rows, break the sensitivity argument).

The honest price: the noise ``s`` of one answer grows with the square root of the number of queries, and what
the student can learn is about ``rho * n_teachers^2`` whatever the number of queries, so at epsilon <= 1 each answer
is mostly noise (Adult, epsilon 1: 651 teachers, s = 1,164). PATE-GAN is here as the seeds' baseline, measured
honestly; it is not a model to release with. The model file keeps the generator (and the encoder state) only.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from dp_accounting import dp_event
from torch import nn

from dpsynth.errors import InputError
from dpsynth.models import register
from dpsynth.models._row_generator import RowGeneratorModel, as_layers
from dpsynth.models.networks.autoencoder import activate, mlp
from dpsynth.models.phase import budget_summary, json_number
from dpsynth.privacy.mechanisms import calibrate_gaussian_queries, discrete_counts
from dpsynth.privacy.pate import L2_SENSITIVITY, noisy_argmax, noisy_vote_sum, pate_event, teacher_votes

__all__ = ["PATEGAN", "TeacherEnsemble"]

#: bounds of the teacher-count rule (fewer teachers: votes drown in the noise; more: each sees too few rows)
FEWEST_TEACHERS, MOST_TEACHERS = 10, 1000


class TeacherEnsemble(nn.Module):
    """``k`` independent MLP discriminators evaluated in one batched matrix product: input (k, m, d) - each
    teacher its own rows - or (m, d) - the same rows for all - gives logits (k, m). Teacher ``t``'s output depends
    on its own parameters only (no parameter is shared), which the sensitivity argument needs."""

    def __init__(self, k: int, data_dim: int, hidden: tuple[int, ...]):
        super().__init__()
        dims = [int(data_dim), *(int(h) for h in hidden), 1]
        self.k = int(k)
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for a, b in zip(dims[:-1], dims[1:]):
            bound = 1.0 / math.sqrt(a)  # nn.Linear's initialisation, per teacher
            self.weights.append(nn.Parameter(torch.empty(self.k, a, b).uniform_(-bound, bound)))
            self.biases.append(nn.Parameter(torch.empty(self.k, 1, b).uniform_(-bound, bound)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.expand(self.k, *x.shape) if x.dim() == 2 else x
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = torch.baddbmm(b, h, w)
            if i < last:
                h = torch.nn.functional.leaky_relu(h, 0.2)
        return h.squeeze(-1)


@register
class PATEGAN(RowGeneratorModel):
    """PATE-GAN with honest accounting (module docstring). Hyper-parameters: ``numeric`` (encoding of numbers:
    ``"minmax"``, PATE-GAN's, or ``"quantile"`` / ``"mode_specific"``), ``noise_dim`` / ``generator_hidden``,
    ``teacher_hidden`` / ``student_hidden`` (discriminator layers), ``n_teachers`` (``None``: ``n_dp /
    rows_per_teacher`` within [10, 1000]; Adult: 651), ``iterations``, ``teacher_iters``, ``student_iters``,
    ``batch_size`` (generated rows per step; every student step asks ``batch_size`` queries), ``teacher_batch_size``
    (rows of its partition per teacher step), learning rates, ``gumbel_tau`` (Gumbel-softmax temperature of
    generated categories), ``match_marginals`` (map samples onto the DP metadata histograms; post-processing),
    ``backend`` (``"numpy"``: a pandas frame in memory; ``"duckdb"`` / ``"spark"``: a Parquet / CSV path or a
    Spark DataFrame, its rows encoded onto disk and read by position; :mod:`dpsynth.data.row_store`). Each teacher
    step reads ``teacher_batch_size`` rows of every teacher's partition: from disk, one positioned read per row."""

    name = "pate-gan"
    phases = ("metadata", "pate")
    fast_params = {"iterations": 20, "batch_size": 32, "noise_dim": 16, "generator_hidden": (32,),
                   "teacher_hidden": (16,), "student_hidden": (16,), "n_teachers": 10}

    def __init__(
        self,
        *,
        numeric: str = "minmax",
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
        match_marginals: bool = False,
        backend: str = "numpy",
    ):
        self.numeric = numeric
        self.noise_dim = noise_dim
        self.generator_hidden = as_layers(generator_hidden)
        self.teacher_hidden = as_layers(teacher_hidden)
        self.student_hidden = as_layers(student_hidden)
        self.n_teachers = n_teachers
        self.votes = votes
        self.rows_per_teacher = rows_per_teacher
        self.iterations = iterations
        self.teacher_iters = teacher_iters
        self.student_iters = student_iters
        self.batch_size = batch_size
        self.teacher_batch_size = teacher_batch_size
        self.teacher_learning_rate = teacher_learning_rate
        self.student_learning_rate = student_learning_rate
        self.generator_learning_rate = generator_learning_rate
        self.gumbel_tau = gumbel_tau
        self.match_marginals = match_marginals
        self.backend = backend

    def _check_params(self) -> None:
        if self.votes not in ("soft", "argmax"):
            raise InputError(f"votes must be 'soft' or 'argmax'. Found {self.votes!r}.")
        if self.numeric not in ("minmax", "quantile", "mode_specific"):
            raise InputError(f"numeric must be 'minmax', 'quantile' or 'mode_specific'. Found {self.numeric!r}.")

    def teachers_for(self, n_dp: float) -> int:
        """The teacher count: as given, or ``clip(round(n_dp / rows_per_teacher), 10, 1000)`` from the DP row count."""
        if self.n_teachers is not None:
            return int(self.n_teachers)
        return int(min(MOST_TEACHERS, max(FEWEST_TEACHERS, round(n_dp / self.rows_per_teacher))))

    # ------------------------------------------------------------------ fit
    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        from tqdm.auto import tqdm

        ledger = self.ledger_
        x = self._encode(frame, rng)
        spans, data_dim = self._spans(), x.shape[1]
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        n_dp, spent = float(self.metadata_.n_rows), ledger.epsilon()
        k = self.teachers_for(n_dp)
        with torch.random.fork_rng(devices=[]):  # data-independent init, reproducible, no global side effect
            torch.manual_seed(int(rng.integers(2**62)))
            self._build_generator(data_dim)
            in_dim = data_dim + self._condition_dim()
            teachers = TeacherEnsemble(k, in_dim, self.teacher_hidden or ())
            student = mlp(in_dim, self.student_hidden, 1)
        queries = self.iterations * self.student_iters * self.batch_size
        # the noise of one answer: the sensitivity-1 sigma of all queries (soft votes: a sum of scores in [0, 1]),
        # times sqrt 2 for the argmax's two vote counts (L2 sensitivity of the histogram); under secure noise the
        # argmax's counts get discrete Gaussians, two sensitivity-1 queries an answer
        if self.votes == "argmax" and discrete_counts():
            scale = calibrate_gaussian_queries(ledger, 2 * queries, discrete=True)
        else:
            scale = calibrate_gaussian_queries(ledger, queries) * (L2_SENSITIVITY if self.votes == "argmax" else 1.0)
        # the queries are granted once (one composition) and recorded one by one as they are answered
        self._queries = None if ledger.non_private else ledger.allowance(
            pate_event("gaussian", scale) if self.votes == "argmax" else dp_event.GaussianDpEvent(scale),
            phase="pate", mechanism=f"pate-gaussian-{'argmax' if self.votes == 'argmax' else 'vote-sum'}",
            max_steps=queries, noise_scale=scale)

        # partitions: row i -> teacher owner[i], one independent uniform draw per row (module docstring)
        owner = torch.randint(k, (len(x),), generator=gen)
        order = torch.argsort(owner, stable=True)
        sizes = torch.bincount(owner, minlength=k)
        starts = torch.cumsum(sizes, 0) - sizes
        has_rows = (sizes > 0).float()[:, None]

        opt_t = torch.optim.Adam(teachers.parameters(), lr=self.teacher_learning_rate, betas=(0.5, 0.9))
        opt_s = torch.optim.Adam(student.parameters(), lr=self.student_learning_rate, betas=(0.5, 0.9))
        opt_g = torch.optim.Adam(self.generator_.parameters(), lr=self.generator_learning_rate, betas=(0.5, 0.9))
        bce = nn.functional.binary_cross_entropy_with_logits

        def generated(m: int) -> torch.Tensor:
            return self._generated(m, spans, gen)[0]

        mb = self.teacher_batch_size
        for _ in tqdm(range(self.iterations), desc=self.name, disable=not progress, leave=False):
            if self._queries is not None and self._queries.remaining < self.student_iters * self.batch_size:
                break  # never happens with the calibrated plan; stops before the target would be exceeded
            for _ in range(self.teacher_iters):  # inside the mechanism: each teacher on its own partition
                pick = (torch.rand(k, mb, generator=gen) * sizes[:, None]).long()
                real = x[order[(starts[:, None] + pick).clamp(max=max(len(x) - 1, 0))]] if len(x) else \
                    torch.zeros(k, mb, data_dim)
                real = self._with_conditions(real, gen)
                with torch.no_grad():
                    fake = generated(mb)
                real_loss = (bce(teachers(real), torch.ones(k, mb), reduction="none") * has_rows).mean()
                loss = real_loss + bce(teachers(fake), torch.zeros(k, mb))
                opt_t.zero_grad(set_to_none=True)
                loss.backward()
                opt_t.step()
            for _ in range(self.student_iters):  # post-processing of the noisy votes
                with torch.no_grad():
                    fake = generated(self.batch_size)
                    target = self._answers(teachers(fake), has_rows, scale, gen)
                if self.votes == "soft":  # squared error: unbiased under the zero-mean noise of the target
                    loss = ((torch.sigmoid(student(fake).squeeze(-1)) - target) ** 2).mean()
                else:
                    loss = bce(student(fake).squeeze(-1), target)
                opt_s.zero_grad(set_to_none=True)
                loss.backward()
                opt_s.step()
            fake, condition_loss = self._generated(self.batch_size, spans, gen)
            loss = bce(student(fake).squeeze(-1), torch.ones(self.batch_size)) + condition_loss
            opt_g.zero_grad(set_to_none=True)
            loss.backward()
            opt_g.step()
        if self._queries is not None:
            self._queries.release()
        self._queries = None
        del x, teachers, owner, order  # the teachers saw private rows without noise: never kept
        mechanism = "gaussian noisy argmax" if self.votes == "argmax" else "gaussian soft vote sum"
        settings = {"mechanism": mechanism, "n_teachers": k, "queries": queries,
                    "vote_noise_std": float(scale), "iterations": self.iterations,
                    "epsilon_after": json_number(ledger.epsilon())}
        self.budget_ = budget_summary(ledger, n_dp=n_dp, metadata_epsilon=spent, phases=[("pate", settings)],
                                      shares={"pate": 1.0})
        self._fit_category_weights(gen)  # post-processing: the trained generator + the DP slot counts

    # ------------------------------------------------------------------ what pate-ctgan changes
    def _condition_dim(self) -> int:
        """Width of the condition the discriminators see beside a row (none here)."""
        return 0

    def _generated(self, m: int, spans, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``m`` generated rows as the discriminators see them, and the generator's extra loss (none here)."""
        raw = self.generator_(torch.randn(m, self.noise_dim, generator=gen))
        return activate(raw, spans, gumbel_tau=self.gumbel_tau, generator=gen), raw.new_zeros(())

    def _with_conditions(self, real: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """Teachers' real rows (k, mb, d) as the discriminators see them (unchanged here)."""
        return real

    def _answers(self, logits: torch.Tensor, has_rows: torch.Tensor, scale: float,
                 gen: torch.Generator) -> torch.Tensor:
        """The released answer to each query (a generated row; teachers' ``logits`` (k, m)), as the student's
        target: soft votes - the noisy mean of the teachers' probabilities; argmax - the noisy majority label. A
        teacher with an empty partition answers "fake" (0). Charged to the ledger (phase ``"pate"``) by the
        mechanism before its noise is drawn; the exact answer in the non-private mode."""
        ledger, k = self.ledger_, logits.shape[0]
        if self.votes == "soft":
            scores = torch.sigmoid(logits) * has_rows
            if ledger.non_private:
                ledger.spend(dp_event.NonPrivateDpEvent(), phase="pate", mechanism="teacher votes",
                             count=scores.shape[1])
                return (scores.sum(0) / k).float()
            return (noisy_vote_sum(scores, noise_scale=scale, ledger=self._queries, phase="pate", generator=gen)
                    / k).float()
        votes = teacher_votes((logits > 0).long() * has_rows.long(), 2)
        if ledger.non_private:
            ledger.spend(dp_event.NonPrivateDpEvent(), phase="pate", mechanism="teacher votes", count=votes.shape[0])
            return votes.argmax(1).float()
        return noisy_argmax(votes, mechanism="gaussian", noise_scale=scale, ledger=self._queries, phase="pate",
                            generator=gen).float()
