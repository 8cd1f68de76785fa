"""DP-SGD: Poisson batches -> per-example gradients -> clip -> sum -> Gaussian noise -> scale -> optimizer step.

Neighbouring relation: add/remove one record (a row of ``range(n_rows)``). Abadi et al. 2016 (Alg. 1); accounting
by dp-accounting (Mironov et al. 2019 RDP; PLD) through the model's :class:`~dpsynth.privacy.ledger.PrivacyLedger`.

Clipping modes and sensitivities (``config.clipping``):
- ``"per_example"``: each record's full gradient (every loss term that touches it, e.g. its WGAN-GP penalty) is
  clipped to C; adding/removing a record changes the sum by at most C. Noise std = sigma * C.
- ``"batch"`` (seed 004): the mean gradient of the realised batch is clipped to C as a whole. With and without a
  record both aggregates have norm <= C, so the sensitivity is 2C (not C/B). Noise std = 2 * C * sigma.
- ``"microbatch"``: each row is assigned once, independently and uniformly at random, to one of G = round(q*n/m) groups
  (expected realised size ``microbatch_size`` = m); each group's mean gradient is clipped to C. A record touches only
  its own group's aggregate, which moves by at most 2C. Noise std = 2 * C * sigma. (Forming microbatches by
  position in the realised batch would let one record shift every later microbatch; hence the fixed assignment.)
Per-example clipping is computed exactly either way ``config.per_example_method`` says: ``torch.func`` per-example
gradients, or ghost norms with book-keeping for linear layers (:mod:`dpsynth.privacy.ghost`; several times faster,
the same clipped sum to float tolerance); ``"auto"`` picks ghost where it applies.
In every mode the recorded event is ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))``: noise std / sensitivity
is sigma. The noisy sum is divided by a constant (q * n, or G), never the realised batch size. Pass
``public_n_rows`` (a public or DP row count, e.g. from the model's DP metadata) so that this constant, and the ledger
entry, do not depend on the exact private row count; without it the divisor uses ``n_rows`` (as Opacus does) and
the ledger records no row count.

Guarantees (tests in tests/privacy/test_dpsgd.py):
- Every yielded batch is charged to the ledger before it is yielded; ``batches()`` stops before the ledger target
  would be exceeded; ``step()`` refuses to run without a charged batch.
- Only trainable parameters of ``module`` receive gradients, and the optimizer may hold no other parameter.
- Clipped per-example gradients have norm <= C; the noise is N(0, (sensitivity * sigma)^2) per coordinate.
- ``non_private=True`` (explicit; needs a ledger with target_epsilon=inf) records ``NonPrivateDpEvent`` and
  neither clips nor adds noise.
- Layers that mix examples (BatchNorm) or store statistics of private rows are refused (see ``validate_module``).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from dp_accounting import dp_event
from torch import nn
from torch.func import grad, vmap

from dpsynth.errors import InputError, PrivacyError
from dpsynth.privacy.ghost import GhostClipper, GhostUnsupported, ghost_applicable
from dpsynth.privacy.ledger import PrivacyLedger
from dpsynth.privacy.per_example import clip_and_sum, clip_factors, clipped_sum, functional_loss, per_example_grads
from dpsynth.privacy.sampling import PoissonSampler
from dpsynth.privacy.secure_noise import noise_mode, secure_normal

__all__ = ["DPSGDConfig", "DPSGD", "validate_module", "CLIPPING_MODES", "PER_EXAMPLE_METHODS",
           "per_example_method"]

CLIPPING_MODES = ("per_example", "batch", "microbatch")
PER_EXAMPLE_METHODS = ("auto", "exact", "ghost")


@dataclass(frozen=True, kw_only=True)
class DPSGDConfig:
    """Privacy settings of one DP-SGD phase (performance knobs live elsewhere and never change the guarantee)."""

    noise_multiplier: float
    max_grad_norm: float
    sample_rate: float
    clipping: str = "per_example"
    microbatch_size: int = 1
    #: how per-example clipping is computed (performance only: both are exact, the guarantee is the same):
    #: "exact" (torch.func per-example gradients), "ghost" (ghost norms and book-keeping for nn.Linear,
    #: :mod:`dpsynth.privacy.ghost`), "auto" (ghost where linear layers hold most parameters and the loss has no
    #: gradient penalty, else exact)
    per_example_method: str = "auto"

    def __post_init__(self) -> None:
        sigma, c, q = self.noise_multiplier, self.max_grad_norm, self.sample_rate
        if not isinstance(sigma, (int, float)) or isinstance(sigma, bool) or not (0 <= sigma < math.inf):
            raise InputError(f"noise_multiplier must be a finite number >= 0. Found {sigma!r}.")
        if not isinstance(c, (int, float)) or isinstance(c, bool) or not (0 < c < math.inf):
            raise InputError(f"max_grad_norm must be a finite number > 0. Found {c!r}.")
        if not isinstance(q, (int, float)) or isinstance(q, bool) or not (0 < q <= 1):
            raise InputError(f"sample_rate must be in (0, 1]. Found {q!r}.")
        if self.clipping not in CLIPPING_MODES:
            raise InputError(f"clipping must be one of {CLIPPING_MODES}. Found {self.clipping!r}.")
        if self.per_example_method not in PER_EXAMPLE_METHODS:
            raise InputError(f"per_example_method must be one of {PER_EXAMPLE_METHODS}. "
                             f"Found {self.per_example_method!r}.")
        m = self.microbatch_size
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InputError(f"microbatch_size must be an integer >= 1. Found {m!r}.")

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of the clipped sum under add/remove: C per example, 2C for a clipped aggregate."""
        return self.max_grad_norm * (1.0 if self.clipping == "per_example" else 2.0)

    @property
    def noise_std(self) -> float:
        return self.sensitivity * self.noise_multiplier

    def event(self) -> dp_event.DpEvent:
        """One step: Poisson(q) o Gaussian(noise std / sensitivity = sigma)."""
        return dp_event.PoissonSampledDpEvent(self.sample_rate, dp_event.GaussianDpEvent(float(self.noise_multiplier)))


_METHOD_OVERRIDE: contextvars.ContextVar[str | None] = contextvars.ContextVar("dpsynth_per_example", default=None)


@contextlib.contextmanager
def per_example_method(method: str) -> Iterator[None]:
    """Inside the block, every DP-SGD engine whose config says ``"auto"`` uses ``method`` ("exact" or "ghost"):
    how a whole model fit is timed or checked with one strategy (``benchmarks/ghost_fits.py``). Performance only."""
    if method not in PER_EXAMPLE_METHODS:
        raise InputError(f"per_example_method must be one of {PER_EXAMPLE_METHODS}. Found {method!r}.")
    token = _METHOD_OVERRIDE.set(method)
    try:
        yield
    finally:
        _METHOD_OVERRIDE.reset(token)


_MIXING = (nn.modules.batchnorm._BatchNorm,)


def validate_module(module: nn.Module) -> None:
    """Refuse layers that break per-record sensitivity or leak private statistics; say why and how to fix."""
    bad = [f"{name or '<root>'} ({type(m).__name__})" for name, m in module.named_modules() if isinstance(m, _MIXING)]
    if bad:
        raise PrivacyError(
            "BatchNorm normalises each example with statistics of the whole batch, so one record changes every "
            "other example's gradient (per-example sensitivity is no longer C), and its running mean/var are "
            "non-private statistics of the rows saved with the model. Replace it with LayerNorm or GroupNorm "
            f"(as opacus.validators does). Found: {', '.join(bad)}."
        )
    stats = [
        name for name, m in module.named_modules()
        if isinstance(m, nn.modules.instancenorm._InstanceNorm) and m.track_running_stats
    ]
    if stats:
        raise PrivacyError(
            "InstanceNorm with track_running_stats=True stores non-private statistics of the private rows; "
            f"set track_running_stats=False. Found: {', '.join(stats)}."
        )


def gaussian_noise(shape: torch.Size, std: float, generator: torch.Generator) -> torch.Tensor:
    """N(0, std^2) per coordinate in torch's default dtype: from ``generator``, or under ``noise="secure"`` from the
    operating system's cryptographic generator (:func:`dpsynth.privacy.secure_noise.secure_normal`)."""
    if noise_mode() == "secure":
        return torch.from_numpy(secure_normal(tuple(shape), std)).to(torch.get_default_dtype())
    return torch.normal(0.0, std, size=shape, generator=generator)


class DPSGD:
    """Wire DP-SGD onto one module and its optimizer; takes one ledger allowance for ``max_steps`` steps."""

    def __init__(
        self,
        module: nn.Module,
        optimizer: torch.optim.Optimizer,
        config: DPSGDConfig,
        *,
        ledger: PrivacyLedger,
        phase: str,
        max_steps: int,
        generator: torch.Generator,
        n_rows: int,
        non_private: bool = False,
        chunk_size: int | None = 64,
        public_n_rows: float | None = None,
    ):
        if not isinstance(config, DPSGDConfig):
            raise InputError(f"config must be a DPSGDConfig. Found {type(config).__name__}.")
        if non_private and not ledger.non_private:
            raise PrivacyError(
                "non_private=True records a NonPrivateDpEvent, which only a non-private ledger "
                f"(target_epsilon=inf) can hold. Found target_epsilon={ledger.target_epsilon}."
            )
        if not non_private and config.noise_multiplier == 0:
            raise PrivacyError("noise_multiplier = 0 is allowed only with non_private=True. Found 0.")
        validate_module(module)
        self._check_optimizer(module, optimizer)
        self.module, self.optimizer, self.config = module, optimizer, config
        self.ledger, self.phase, self.generator = ledger, phase, generator
        self.n_rows, self.max_steps, self.non_private = n_rows, max_steps, non_private
        # performance only (same result): examples are processed in blocks of chunk_size per-example gradients
        self.chunk_size = chunk_size
        self.sampler = PoissonSampler(n_rows, config.sample_rate, steps=max_steps, generator=generator)
        # The divisor of the noisy sum and the row count written to the ledger must not be the private row count:
        # pass ``public_n_rows`` (a DP or public count; the sampler still draws from range(n_rows)).
        recorded_rows = n_rows if public_n_rows is None else float(public_n_rows)
        self.expected_batch_size = config.sample_rate * recorded_rows
        self._groups, self._n_groups = self._microbatch_groups()
        event = dp_event.NonPrivateDpEvent() if non_private else config.event()
        self._allowance = ledger.allowance(
            event, phase=phase, mechanism="dp-sgd", max_steps=max_steps,
            sample_rate=config.sample_rate, noise_multiplier=float(config.noise_multiplier),
            max_grad_norm=float(config.max_grad_norm), clipping=config.clipping,
            sensitivity=float(config.sensitivity),
            **({} if public_n_rows is None else {"n_rows": recorded_rows}),  # never write the private count
        )
        self._pending: torch.Tensor | None = None
        self._steps = 0
        method = config.per_example_method
        if method == "auto" and _METHOD_OVERRIDE.get() is not None:
            method = _METHOD_OVERRIDE.get()
        #: the per-example method in use; "auto" starts on ghost clipping where it pays and falls back to the
        #: exact path for good at the first loss it does not cover (a gradient penalty)
        self.per_example_method = ("ghost" if ghost_applicable(module) else "exact") if method == "auto" else method
        self._ghost: GhostClipper | None = None
        self._forced_ghost = method == "ghost" and config.per_example_method == "ghost"

    @staticmethod
    def _check_optimizer(module: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        own = {id(p) for p in module.parameters() if p.requires_grad}
        foreign = sum(1 for g in optimizer.param_groups for p in g["params"] if id(p) not in own)
        if foreign:
            raise PrivacyError(
                "the optimizer must hold only trainable parameters of the DP module (any other parameter would be "
                f"updated by a non-private gradient). Found {foreign} foreign parameter(s)."
            )

    def _microbatch_groups(self) -> tuple[torch.Tensor | None, int]:
        if self.config.clipping != "microbatch":
            return None, 1
        n_groups = max(1, round(self.expected_batch_size / self.config.microbatch_size))
        # i.i.d. uniform groups: adding/removing a record leaves every other record's group distribution unchanged
        return torch.randint(n_groups, (self.n_rows,), generator=self.generator), n_groups

    # ------------------------------------------------------------------ loop
    @property
    def steps_allowed(self) -> int:
        """Steps the ledger allows for this phase (<= max_steps)."""
        return min(self._allowance.allowed, self.max_steps)

    @property
    def steps_taken(self) -> int:
        return self._steps

    @property
    def epsilon(self) -> float:
        return self.ledger.epsilon()

    def batches(self) -> Iterator[torch.Tensor]:
        """Poisson index batches, each charged to the ledger before it is yielded.

        When the loop ends (or the caller stops iterating), the steps not taken are released to the ledger."""
        try:
            for idx in self.sampler:
                if self._steps >= self.max_steps or not self._allowance.take():
                    return
                self._pending = idx
                yield idx
        finally:
            self._allowance.release()

    def release(self) -> None:
        """Hand the untaken steps of this phase back to the ledger (no more steps can be taken)."""
        self._allowance.release()

    def step(
        self,
        per_example_loss: Callable[..., torch.Tensor],
        batch: tuple[torch.Tensor, ...],
        *,
        public_loss: Callable[[], torch.Tensor] | None = None,
    ) -> dict:
        """One private update from the rows of the last charged batch; returns monitoring stats.

        ``public_loss()`` is a data-independent term (e.g. a critic's loss on generated samples): it reads no
        private row, so its gradient needs neither clipping nor noise and composes as post-processing. It must be
        computed from the module's live parameters (not ``model_fn``). The returned stats (clipped fraction,
        gradient norm, batch size, loss) are NOT differentially private: use them for monitoring, never release them.
        """
        idx = self._pending
        if idx is None:
            raise PrivacyError("step() needs a batch charged to the ledger by batches(); none is pending. Found None.")
        self._pending = None
        batch = tuple(batch)
        sizes = {int(t.shape[0]) for t in batch}
        if not batch or sizes != {len(idx)}:
            raise InputError(
                f"every batch tensor must have {len(idx)} rows (the charged batch). Found {sorted(sizes)}.")
        params = dict(self.module.named_parameters())
        names = [n for n, p in params.items() if p.requires_grad]
        total, stats = self._private_sum(per_example_loss, batch, idx)
        public = self._public_grads(public_loss, [params[n] for n in names])
        self.optimizer.zero_grad(set_to_none=True)
        for name, g_pub in zip(names, public):
            g = total[name]
            params[name].grad = g if g_pub is None else g + g_pub
        self.optimizer.step()
        self._steps += 1
        return stats

    # ------------------------------------------------------------------ internals
    def _private_sum(self, per_example_loss, batch, idx) -> tuple[dict[str, torch.Tensor], dict]:
        """Abadi et al. Alg. 1, lines 3-5: aggregate the batch's gradients as the clipping mode says (each
        aggregation returns the clipped sum and the public divisor), then add the noise and divide."""
        aggregate = self._plain_sum if self.non_private else {
            "per_example": self._sum_of_clipped_examples,
            "batch": self._clipped_batch_mean,
            "microbatch": self._sum_of_clipped_groups,
        }[self.config.clipping]
        stats = {"batch_size": len(idx), "clipped_fraction": 0.0, "grad_norm": 0.0, "loss": float("nan")}
        total, divisor = aggregate(per_example_loss, batch, idx, stats)
        return self._noised(total, divisor), stats

    def _zeros(self) -> dict[str, torch.Tensor]:
        return {n: torch.zeros_like(p) for n, p in self.module.named_parameters() if p.requires_grad}

    def _sum_of_clipped_examples(self, per_example_loss, batch, idx, stats) -> tuple[dict[str, torch.Tensor], float]:
        """Each record's gradient clipped to C, summed (sensitivity C); divided by the expected batch size."""
        if not len(idx):
            return self._zeros(), self.expected_batch_size
        c = self.config.max_grad_norm
        total = None
        if self.per_example_method == "ghost":
            try:
                if self._ghost is None:
                    self._ghost = GhostClipper(self.module)  # set up once: layers, names, probe shapes
                total, norms, losses = self._ghost(per_example_loss, batch, c)
            except GhostUnsupported as exc:
                if self._forced_ghost:
                    raise InputError(f"per_example_method='ghost' cannot clip this model: {exc}; use 'exact' or "
                                     f"'auto'.") from None
                self.per_example_method = "exact"
        if total is None:
            total, norms, losses = clipped_sum(self.module, per_example_loss, batch, c, block=self.chunk_size)
        stats.update(loss=float(losses.mean()), grad_norm=float(norms.mean()),
                     clipped_fraction=float((norms > c).float().mean()))
        return total, self.expected_batch_size

    def _clipped_batch_mean(self, per_example_loss, batch, idx, stats) -> tuple[dict[str, torch.Tensor], float]:
        """Seed 004: the realised batch's mean gradient clipped to C as a whole (sensitivity 2C); divisor 1."""
        if not len(idx):
            return self._zeros(), 1.0
        agg, loss = self._batch_mean_grad(per_example_loss, batch)
        norm = _joint_norm(agg)
        if not bool(torch.isfinite(norm)):  # a non-finite aggregate is replaced by 0 (norm <= C still holds)
            agg, norm = {n: torch.zeros_like(g) for n, g in agg.items()}, torch.zeros(())
        factor = float(clip_factors(norm, self.config.max_grad_norm))
        stats.update(clipped_fraction=float(factor < 1.0), grad_norm=float(norm), loss=loss)
        return {n: g * factor for n, g in agg.items()}, 1.0

    def _sum_of_clipped_groups(self, per_example_loss, batch, idx, stats) -> tuple[dict[str, torch.Tensor], float]:
        """Each fixed random group's mean gradient clipped to C, summed (sensitivity 2C); divided by G."""
        if not len(idx):
            return self._zeros(), float(self._n_groups)
        grads, losses = per_example_grads(self.module, per_example_loss, batch)
        total, clipped = self._microbatch_sum(grads, idx)
        stats.update(loss=float(losses.mean()), clipped_fraction=clipped)
        return total, float(self._n_groups)

    def _plain_sum(self, per_example_loss, batch, idx, stats) -> tuple[dict[str, torch.Tensor], float]:
        """Non-private mode: the gradient of the summed loss (no clipping; no noise is added after it)."""
        if not len(idx):
            return self._zeros(), self.expected_batch_size
        mean, loss = self._batch_mean_grad(per_example_loss, batch)
        stats["loss"] = loss
        return {n: g * len(idx) for n, g in mean.items()}, self.expected_batch_size

    def _noised(self, total: dict[str, torch.Tensor], divisor: float) -> dict[str, torch.Tensor]:
        """(sum + N(0, noise_std^2)) / divisor per coordinate; no noise in the explicit non-private mode."""
        out = {}
        for n, g in total.items():
            if not self.non_private:
                noise = gaussian_noise(g.shape, self.config.noise_std, self.generator)
                # a fresh noise tensor of the sum's dtype takes the sum in place (one buffer less per step)
                g = noise.add_(g) if noise.dtype == g.dtype else g + noise
            out[n] = g.div_(divisor)
        return out

    def _batch_mean_grad(self, per_example_loss, batch) -> tuple[dict[str, torch.Tensor], float]:
        loss = functional_loss(self.module, per_example_loss)
        buffers = {n: b.detach() for n, b in self.module.named_buffers()}
        in_dims = (None, None) + (0,) * len(batch)
        # one vmapped forward over the whole batch (no chunks): the gradient of a mean needs no per-example
        # gradients, so memory is that of an ordinary batch step
        batched = vmap(loss, in_dims=in_dims, randomness="different")

        def mean_loss(params):
            values, _ = batched(params, buffers, *batch)
            return values.mean(), values.detach().mean()

        params = {n: p.detach() for n, p in self.module.named_parameters() if p.requires_grad}
        grads, value = grad(mean_loss, has_aux=True)(params)
        return grads, float(value)

    def _microbatch_sum(self, grads, idx) -> tuple[dict[str, torch.Tensor], float]:
        groups = self._groups[idx]
        present, inverse, counts = torch.unique(groups, return_inverse=True, return_counts=True)
        means = {}
        for n, g in grads.items():
            acc = torch.zeros((len(present), *g.shape[1:]))
            acc.index_add_(0, inverse, g)
            means[n] = acc / counts.reshape(-1, *([1] * (g.dim() - 1)))
        total, norms = clip_and_sum(means, self.config.max_grad_norm)
        clipped = float((norms > self.config.max_grad_norm).float().mean()) if len(present) else 0.0
        if not len(present):
            total = {n: torch.zeros(g.shape[1:]) for n, g in grads.items()}
        return total, clipped

    @staticmethod
    def _public_grads(public_loss, params) -> list[torch.Tensor | None]:
        if public_loss is None:
            return [None] * len(params)
        value = public_loss()
        return list(torch.autograd.grad(value, params, allow_unused=True))


def _joint_norm(grads: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.sqrt(sum(g.pow(2).sum() for g in grads.values()))

