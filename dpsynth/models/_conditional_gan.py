"""The conditional tabular WGAN-GP core shared by seeds 000 and 002 (DTGAN, DP-SACTGAN): conditions, spherical
interpolates, the DP auxiliary classifier and the DP-SGD discriminator phase. Used by :mod:`dpsynth.models.dtgan`.

Conditions (CTGAN's conditional vector: one categorical column and one of its categories, as a one-hot over all
categorical spans of the table transformer):

- **Real rows** are drawn by the phase's Poisson sampler only; each sampled row gets a span chosen uniformly (public
  randomness) and its condition is *read off the row* (its own category in that span). CTGAN's training-by-sampling
  instead picks a condition first and then looks up private rows holding it: a data-dependent selection outside
  the accounted sampler (seed 002's code accounts it as q = B / N, which it is not), so it is not done here.
- **The generator's own conditions** (its training steps and sampling) come from
  :class:`~dpsynth.data.transformers.ConditionSampler`: span uniform, slot in proportion to the DP category counts
  of the metadata phase — the same law as the real rows' conditions up to DP noise. ``log_frequency=True`` trains
  the generator with CTGAN's law instead (slot in proportion to log(1 + count)): rare categories are practised
  more often, at the price of conditions the discriminator has seen less; sampling always uses the plain law.
  Either way post-processing (a function of the DP counts and public randomness).

Discriminator phase (DP-SGD, :class:`~dpsynth.models.phase.DPPhase`): the per-example unit of real row i is its
whole contribution to the WGAN-GP loss,

    l_i = D(fake_i | c_i) - D(real_i | c_i) + gp_weight * (||grad_m D(m_i | c_i)|| - 1)^2,
    m_i = slerp(real_i, fake_i, t_i)  (seed 002's spherical interpolate),

where ``c_i`` is the condition read off row i and ``fake_i`` a generated row *with that condition*. The fake term
depends on row i through ``c_i``, and the penalty through ``m_i``, so both are inside the clipped unit (seed 002
and the related CTAB-GAN+-DP code leave them unclipped and un-noised, which leaks ``c_i`` and the interpolate). One
row changes one unit: sensitivity C under add/remove, Poisson rate q = B / n_dp, one ``PoissonSampledDpEvent``
per step (recorded by the engine). The generator is updated every ``critic_iters`` discriminator steps from the
discriminator's score of generated rows with public conditions only: post-processing.

Auxiliary classifier (seed 000's and DTGAN's classification loss, for a categorical target): an MLP that predicts
the target's category from the other columns, trained on private rows by its own DP-SGD phase (``"classifier"``,
per-example clipping, its own budget share). The generator's classification loss — the classifier's cross-entropy
on generated rows against their generated target — reads only the DP classifier and generated rows:
post-processing. Seed 002's *information loss* (moments of the discriminator's features on real rows) would read
private rows outside any mechanism; it is not used.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from dpsynth.data.transformers import ConditionSampler, TableTransformer
from dpsynth.models.networks.autoencoder import activate
from dpsynth.models.phase import DPPhase
from dpsynth.privacy.per_example import input_gradient

__all__ = ["Conditions", "slerp", "train_classifier", "train_conditional_wgan", "target_span", "discriminator_units",
           "unit_loss"]


class Conditions:
    """Condition vectors over the transformer's categorical spans: read off real rows, or drawn from DP counts."""

    def __init__(self, transformer: TableTransformer):
        self.sampler = ConditionSampler(transformer, log_frequency=False)
        self.spans = self.sampler.spans
        self.offsets = [int(o) for o in self.sampler.offsets]
        self.dim = self.sampler.cond_dim

    def from_rows(self, rows: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """(B, cond_dim): for each encoded real row, a uniformly chosen span holding the row's own one-hot."""
        cond = torch.zeros(len(rows), self.dim)
        if not self.spans or not len(rows):
            return cond
        pick = torch.randint(len(self.spans), (len(rows),), generator=generator)
        for j, span in enumerate(self.spans):
            chosen = pick == j
            cond[chosen, self.offsets[j]:self.offsets[j + 1]] = rows[chosen, span.start:span.end]
        return cond

    def public(self, n: int, generator: torch.Generator, *, plain: bool = True):
        """``(cond (n, cond_dim), batch)`` drawn from the DP counts (``batch``: the ConditionBatch, or None)."""
        if not self.spans:
            return torch.zeros(n, 0), None
        seed = int(torch.randint(2**62, (1,), generator=generator))
        batch = self.sampler.sample(n, rng=seed, log_frequency=not plain)
        return torch.from_numpy(batch.vectors), batch

    def loss(self, raw: torch.Tensor, batch) -> torch.Tensor:
        """CTGAN's generator condition loss: cross-entropy of the conditioned span's logits with the condition."""
        if batch is None:
            return raw.new_zeros(())
        total = raw.new_zeros(())
        span_idx = torch.from_numpy(batch.span)
        slot = torch.from_numpy(batch.slot)
        for j, span in enumerate(self.spans):
            rows = span_idx == j
            if rows.any():
                total = total + F.cross_entropy(raw[rows, span.start:span.end], slot[rows], reduction="sum")
        return total / len(raw)


def slerp(a: torch.Tensor, b: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Row-wise spherical interpolation (Shoemake 1985), seed 002's interpolate; linear where a and b are parallel."""
    an = a / a.norm(dim=1, keepdim=True).clamp_min(1e-12)
    bn = b / b.norm(dim=1, keepdim=True).clamp_min(1e-12)
    omega = torch.acos((an * bn).sum(dim=1, keepdim=True).clamp(-1 + 1e-7, 1 - 1e-7))
    so = torch.sin(omega)
    parallel = so < 1e-4
    safe = torch.where(parallel, torch.ones_like(so), so)
    wa = torch.where(parallel, 1 - t, torch.sin((1 - t) * omega) / safe)
    wb = torch.where(parallel, t, torch.sin(t * omega) / safe)
    return wa * a + wb * b


def target_span(transformer: TableTransformer, target: str | None):
    """The softmax span of a categorical target column (the classifier's output), or None."""
    if not target:
        return None
    for span in transformer.output_info:
        if span.column == target and span.role == "category" and span.width > 1:
            return span
    return None


def discriminator_units(real: torch.Tensor, gen_net: nn.Module, conditions: Conditions, spans, *, noise_dim: int,
                        gumbel_tau: float, generator: torch.Generator, interpolation: str = "spherical"
                        ) -> tuple[torch.Tensor, ...]:
    """The per-example units of a charged batch of encoded real rows: ``(real, fake, cond, mixed)``, row i's
    condition read off row i, its fake partner generated with that condition, and their interpolate (seed 002's
    spherical one, or WGAN-GP's and CTGAN's straight line: ``interpolation="linear"``). Row i's unit depends on no
    other row (the generator runs with BatchNorm in eval mode; tested)."""
    cond = conditions.from_rows(real, generator)
    was_training = gen_net.training
    gen_net.eval()
    with torch.no_grad():
        if len(real):
            raw = gen_net(torch.randn(len(real), noise_dim, generator=generator), cond)
            fake = activate(raw, spans, gumbel_tau=gumbel_tau, generator=generator)
        else:
            fake = torch.zeros_like(real)
    gen_net.train(was_training)
    t = torch.rand(len(real), 1, generator=generator)
    mixed = t * real + (1 - t) * fake if interpolation == "linear" else slerp(real, fake, t)
    return real, fake, cond, mixed


def unit_loss(gp_weight: float):
    """Row i's WGAN-GP loss ``D(fake_i|c_i) - D(real_i|c_i) + gp_weight * (||grad D(m_i|c_i)|| - 1)^2``, as a
    per-example loss for the DP-SGD engine (clipped as one unit)."""

    def loss(model_fn, real, fake, cond, mixed):
        slope = input_gradient(lambda m: model_fn(torch.cat([m, cond])), mixed)
        penalty = (torch.sqrt((slope**2).sum() + 1e-12) - 1.0) ** 2
        return model_fn(torch.cat([fake, cond])) - model_fn(torch.cat([real, cond])) + gp_weight * penalty

    return loss


def _masked(rows: torch.Tensor, span) -> torch.Tensor:
    """Rows with the target's block zeroed (the classifier's input: every column but the target)."""
    mask = torch.ones(rows.shape[-1])
    mask[span.start:span.end] = 0.0
    return rows * mask


def train_classifier(classifier: nn.Module, x: torch.Tensor, span, *, phase: DPPhase, learning_rate: float,
                     generator: torch.Generator, progress: bool, label: str) -> None:
    """DP-SGD on the classifier's per-row cross-entropy (the row's category in ``span`` from its other columns)."""

    def loss(model_fn, row):
        logits = model_fn(_masked(row, span))
        return F.cross_entropy(logits.unsqueeze(0), row[span.start:span.end].argmax().unsqueeze(0))

    optimizer = torch.optim.Adam(classifier.parameters(), lr=learning_rate)
    phase.run(classifier, optimizer, loss, lambda idx: (x[idx],), n_rows=len(x), generator=generator,
              progress=progress, label=label)
    classifier.requires_grad_(False)


def train_conditional_wgan(gen_net: nn.Module, critic: nn.Module, x: torch.Tensor, *, conditions: Conditions,
                           spans, phase: DPPhase, params: dict, generator: torch.Generator, progress: bool,
                           label: str, classifier: nn.Module | None = None, class_span=None) -> None:
    """The DP-SGD discriminator phase with post-processing generator steps (see the module docstring)."""
    batch = phase.plan.batch_size
    noise_dim, tau = int(params["noise_dim"]), float(params["gumbel_tau"])
    gp_weight, class_weight = float(params["gp_weight"]), float(params.get("classifier_weight", 1.0))

    def fake_rows(cond: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raw = gen_net(torch.randn(len(cond), noise_dim, generator=generator), cond)
        return activate(raw, spans, gumbel_tau=tau, generator=generator), raw

    def make_batch(idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return discriminator_units(x[idx], gen_net, conditions, spans, noise_dim=noise_dim, gumbel_tau=tau,
                                   generator=generator, interpolation=params.get("interpolation", "spherical"))

    critic_opt = torch.optim.Adam(critic.parameters(), lr=params["critic_learning_rate"], betas=(0.5, 0.9))
    gen_opt = torch.optim.Adam(gen_net.parameters(), lr=params["generator_learning_rate"], betas=(0.5, 0.9))
    gen_params = list(gen_net.parameters())
    phase.extra["generator_steps"] = 0

    def generator_step() -> None:  # post-processing: public conditions, DP critic and classifier
        gen_net.train()
        cond, cond_batch = conditions.public(batch, generator, plain=not params.get("log_frequency", False))
        fake, raw = fake_rows(cond)
        loss = -critic(torch.cat([fake, cond], dim=1)).mean() + conditions.loss(raw, cond_batch)
        if classifier is not None and class_weight > 0:
            logits = classifier(_masked(fake, class_span))
            labels = fake[:, class_span.start:class_span.end].argmax(dim=1).detach()
            loss = loss + class_weight * F.cross_entropy(logits, labels)
        grads = torch.autograd.grad(loss, gen_params)
        for p, g in zip(gen_params, grads):
            p.grad = g
        gen_opt.step()
        gen_opt.zero_grad(set_to_none=True)
        phase.extra["generator_steps"] += 1

    def after_step(step: int) -> None:
        if step % int(params["critic_iters"]) == 0:
            generator_step()

    phase.run(critic, critic_opt, unit_loss(gp_weight), make_batch, n_rows=len(x), generator=generator,
              progress=progress, label=label, after_step=after_step)
    gen_net.eval()


def batched_wgan_gp_loss(critic: nn.Module, units: tuple[torch.Tensor, ...], gp_weight: float) -> torch.Tensor:
    """The mean of :func:`unit_loss` over a batch of units, computed batched (for discriminators trained without
    DP: DTGAN_G's shard discriminators)."""
    real, fake, cond, mixed = units
    mixed = mixed.detach().requires_grad_(True)
    score = critic(torch.cat([mixed, cond], dim=1))
    # one score per pack under PacGAN (:class:`~dpsynth.models.networks.ctgan.Packed`): the penalty is on the norm of
    # the gradient with respect to the whole pack, as in PacGAN / CTGAN
    slope = torch.autograd.grad(score.sum(), mixed, create_graph=True)[0].reshape(len(score), -1)
    penalty = (torch.sqrt((slope**2).sum(dim=1) + 1e-12) - 1.0) ** 2
    return (critic(torch.cat([fake, cond], dim=1)) - critic(torch.cat([real, cond], dim=1))
            + gp_weight * penalty).mean()


def train_sanitized_generator(gen_net: nn.Module, critics: list[nn.Module], x: torch.Tensor, shard: torch.Tensor, *,
                              conditions: Conditions, spans, sanitizer, params: dict, generator: torch.Generator,
                              progress: bool, label: str, classifier: nn.Module | None = None,
                              class_span=None) -> dict:
    """DTGAN_G / GS-WGAN: ``critics[k]`` is trained WITHOUT DP on the rows of shard k only; each generator step draws
    one k (the sanitizer's charged step), trains that discriminator ``critic_iters`` times on its shard, and updates
    the generator through the sanitizer's hook on the generated rows (each row's gradient from the discriminator
    clipped to C, Gaussian noise added; see :mod:`dpsynth.privacy.sanitizer` for the sensitivity and the event).

    Only the discriminator's gradient passes the hook: the condition loss (public conditions) and the classifier's
    loss (a DP-SGD-trained classifier) reach the generator on their own paths, as post-processing."""
    from tqdm.auto import tqdm

    batch, noise_dim, tau = sanitizer.batch_size, int(params["noise_dim"]), float(params["gumbel_tau"])
    gp_weight, class_weight = float(params["gp_weight"]), float(params.get("classifier_weight", 1.0))
    rows_of = [torch.nonzero(shard == k).squeeze(1) for k in range(len(critics))]
    critic_opts = [torch.optim.Adam(c.parameters(), lr=params["critic_learning_rate"], betas=(0.5, 0.9))
                   for c in critics]
    gen_opt = torch.optim.Adam(gen_net.parameters(), lr=params["generator_learning_rate"], betas=(0.5, 0.9))
    gen_params = list(gen_net.parameters())
    steps = 0
    with tqdm(total=sanitizer.max_steps, desc=f"{label} generator", disable=not progress, leave=False) as bar:
        for k in sanitizer.steps():
            critic, opt, rows = critics[k], critic_opts[k], rows_of[k]
            critic.requires_grad_(True)
            for _ in range(int(params["critic_iters"])):
                if not len(rows):
                    break  # an empty shard: its discriminator stays at its initialisation
                pick = rows[torch.randint(len(rows), (batch,), generator=generator)]  # within the shard: no DP
                units = discriminator_units(x[pick], gen_net, conditions, spans, noise_dim=noise_dim,
                                            gumbel_tau=tau, generator=generator)
                loss = batched_wgan_gp_loss(critic, units, gp_weight)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            critic.requires_grad_(False)
            gen_net.train()
            cond, cond_batch = conditions.public(batch, generator, plain=not params.get("log_frequency", False))
            raw = gen_net(torch.randn(batch, noise_dim, generator=generator), cond)
            fake = activate(raw, spans, gumbel_tau=tau, generator=generator)
            seen = fake * 1.0  # the discriminator's path only: its gradient is sanitized row by row
            sanitizer.attach(seen)
            # summed, not averaged: each row's gradient is the discriminator's slope (~1 under the penalty), what C
            # clips; Adam is invariant to the overall scale
            loss = -critic(torch.cat([seen, cond], dim=1)).sum() + batch * conditions.loss(raw, cond_batch)
            if classifier is not None and class_weight > 0:
                labels = fake[:, class_span.start:class_span.end].argmax(dim=1).detach()
                loss = loss + batch * class_weight * F.cross_entropy(classifier(_masked(fake, class_span)), labels)
            grads = torch.autograd.grad(loss, gen_params)
            for p, g in zip(gen_params, grads):
                p.grad = g
            gen_opt.step()
            gen_opt.zero_grad(set_to_none=True)
            steps += 1
            bar.update(1)
    gen_net.eval()
    return {"steps_taken": steps}
