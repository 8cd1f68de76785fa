"""Generator-side DP: sanitize the gradient that flows from private discriminators into a generator.

Seed 000's DP-HOOK and GS-WGAN (Chen, Orekondy, Fritz 2020). A hook on a tensor ``x`` of shape (B, ...) (e.g. the
generator output) replaces d loss / d x by ``clip_C(row) + N(0, (2 C sigma)^2)`` row by row. The generator's
parameters then see private data only through this noisy tensor, so they are a post-processing of it — provided
the generator receives no other private-data-dependent gradient (no real-batch feature statistics, no
non-private classifier; DESIGN.md §1 rule 5).

Accounting (neighbouring relation: add/remove one record, which here replaces one item of the shard population):
- The discriminators are trained WITHOUT DP on disjoint shards; a record lives in exactly one shard (fixed by its
  index), so adding/removing it can change that shard's discriminator — hence each row's gradient — arbitrarily.
  A clipped row then moves by at most 2C (GS-WGAN's factor 2; seed 000's C/B is not a sensitivity).
- All B rows of a step come from the same discriminator, so they change together: the step releases a B x d matrix
  of L2 sensitivity 2C sqrt(B) with noise std 2 C sigma per coordinate, i.e. ONE Gaussian mechanism with
  noise multiplier sigma / sqrt(B) (not B mechanisms of multiplier sigma each).
- With N_d > 1 shard discriminators, one drawn uniformly per step, the step reads the record's shard with
  probability 1/N_d: recorded as ``SampledWithoutReplacementDpEvent(N_d, 1, Gaussian(sigma/sqrt(B)))``, accounted
  by replace-one subsampled RDP (Wang, Balle, Kasiviswanathan 2019) as in GS-WGAN (see accounting._rdp_epsilon).
- With N_d = 1 (one discriminator trained on all rows, seed 000's setting) there is NO amplification: q = 1 and
  the event is ``GaussianDpEvent(sigma/sqrt(B))``; a warning says so.

Guarantees (tests in tests/privacy/test_sanitizer.py): each sanitized row is clip(row) + noise with
||clip(row)|| <= C; the noise is N(0, (2C sigma)^2); every sanitized step is charged to the ledger before the
hook releases anything, and the hook refuses to run without a charged step; the privacy settings (C, sigma,
B, N_d) are a frozen :class:`SanitizerConfig`, fixed before the allowance is charged.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from dp_accounting import dp_event

from dpsynth.errors import InputError, PrivacyError
from dpsynth.privacy.dpsgd import gaussian_noise  # the one noise draw of DP-SGD and the sanitizer (tests swap it)
from dpsynth.privacy.ledger import PrivacyLedger
from dpsynth.privacy.per_example import clip_factors, zero_rows
from dpsynth.privacy.secure_noise import noise_mode, secure_integers

__all__ = ["GradientSanitizer", "SanitizerConfig"]


@dataclass(frozen=True, kw_only=True)
class SanitizerConfig:
    """Privacy settings of a sanitized generator phase (frozen: the ledger is charged for exactly these).

    ``max_grad_norm`` C (each row's gradient is clipped to it), ``noise_multiplier`` sigma (noise std 2 C sigma per
    coordinate), ``batch_size`` B (the most rows one step may sanitize), ``n_shards`` N_d (disjoint-shard
    discriminators, one drawn per step)."""

    max_grad_norm: float
    noise_multiplier: float
    batch_size: int
    n_shards: int = 1

    def __post_init__(self) -> None:
        c, sigma, b, n = self.max_grad_norm, self.noise_multiplier, self.batch_size, self.n_shards
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not (0 < c < math.inf):
            raise InputError(f"max_grad_norm must be a finite number > 0. Found {c!r}.")
        if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not (0 < sigma < math.inf):
            raise InputError(f"noise_multiplier must be a finite number > 0. Found {sigma!r}.")
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise InputError(f"batch_size must be an integer >= 1. Found {b!r}.")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"n_shards must be an integer >= 1. Found {n!r}.")

    @property
    def sensitivity_per_row(self) -> float:
        """2C: a row's clipped gradient may move anywhere in the C-ball when its shard changes."""
        return 2.0 * self.max_grad_norm

    @property
    def noise_std(self) -> float:
        return self.noise_multiplier * self.sensitivity_per_row

    @property
    def effective_noise_multiplier(self) -> float:
        """Noise std / L2 sensitivity of the whole (B, d) step: sigma / sqrt(B)."""
        return self.noise_multiplier / math.sqrt(self.batch_size)

    def event(self) -> dp_event.DpEvent:
        """One step: Gaussian(sigma / sqrt(B)), subsampled without replacement 1 of N_d when N_d > 1."""
        gaussian = dp_event.GaussianDpEvent(self.effective_noise_multiplier)
        if self.n_shards == 1:
            return gaussian
        return dp_event.SampledWithoutReplacementDpEvent(self.n_shards, 1, gaussian)


class GradientSanitizer:
    """Clip + noise the per-row gradient into a generator; one ledger allowance of ``max_steps`` steps.

    Usage::

        config = SanitizerConfig(max_grad_norm=1.0, noise_multiplier=1.0, batch_size=64, n_shards=10)
        san = GradientSanitizer(config, ledger=ledger, phase="generator", max_steps=1000, generator=g)
        for shard in san.steps():            # charged to the ledger before each step
            fake = generator(z)
            san.attach(fake)                 # registers the sanitizing hook for this step
            loss = -discriminators[shard](fake).mean()
            loss.backward(); opt_g.step()
    """

    def __init__(self, config: SanitizerConfig, *, ledger: PrivacyLedger, phase: str, max_steps: int,
                 generator: torch.Generator):
        if not isinstance(config, SanitizerConfig):
            raise InputError(f"config must be a SanitizerConfig. Found {type(config).__name__}.")
        self.config = config  # frozen: the settings the ledger is charged for below cannot change afterwards
        self.generator = generator
        self.max_steps = max_steps
        self.ledger = ledger
        if config.n_shards == 1:
            warnings.warn(
                "GradientSanitizer with one discriminator trained on all rows: no subsampling amplification "
                "(q = 1); every step costs a full Gaussian mechanism of multiplier sigma/sqrt(B). "
                "Use n_shards > 1 disjoint-shard discriminators for q = 1/n_shards.",
                stacklevel=2,
            )
        self._allowance = ledger.allowance(
            config.event(), phase=phase, mechanism="gradient-sanitizer", max_steps=max_steps,
            max_grad_norm=config.max_grad_norm, noise_multiplier=config.noise_multiplier,
            batch_size=config.batch_size, n_shards=config.n_shards, sensitivity_per_row=config.sensitivity_per_row,
        )
        self._pending = False
        self._steps = 0

    # read-only views of the frozen config
    max_grad_norm = property(lambda self: self.config.max_grad_norm)
    noise_multiplier = property(lambda self: self.config.noise_multiplier)
    batch_size = property(lambda self: self.config.batch_size)
    n_shards = property(lambda self: self.config.n_shards)
    sensitivity_per_row = property(lambda self: self.config.sensitivity_per_row)
    noise_std = property(lambda self: self.config.noise_std)
    effective_noise_multiplier = property(lambda self: self.config.effective_noise_multiplier)

    def event(self) -> dp_event.DpEvent:
        return self.config.event()

    @staticmethod
    def shard_assignment(n_rows: int, n_shards: int, generator: torch.Generator) -> torch.Tensor:
        """Disjoint shards: row i belongs to shard ``out[i]``, drawn i.i.d. uniformly (fixed by the seed; under
        ``noise="secure"`` by the cryptographic generator, as the shard of each step: the amplification by sampling
        assumes both secret).

        Independent draws (not a balanced split) keep every other row's shard distribution unchanged when one row
        is added or removed, which the add/remove analysis needs."""
        return _uniform_integers(n_shards, n_rows, generator)

    @property
    def steps_taken(self) -> int:
        return self._steps

    def steps(self) -> Iterator[int]:
        """Yield the shard (discriminator) index of each step, charging the ledger before yielding."""
        try:
            for _ in range(self.max_steps):
                if not self._allowance.take():
                    return
                self._pending = True
                self._steps += 1
                yield int(_uniform_integers(self.n_shards, 1, self.generator)[0])
        finally:
            self._allowance.release()  # untaken steps go back to the ledger

    def sanitize(self, grad: torch.Tensor) -> torch.Tensor:
        """Clip each row of ``grad`` to C and add N(0, (2 C sigma)^2); consumes the charged step."""
        if not self._pending:
            raise PrivacyError("sanitize() needs a step charged by steps(); none is pending. Found None.")
        if grad.shape[0] > self.batch_size:
            raise PrivacyError(
                f"the sanitized tensor may have at most batch_size={self.batch_size} rows (the event assumes it). "
                f"Found {grad.shape[0]}."
            )
        self._pending = False
        rows = grad.reshape(grad.shape[0], -1)
        norms = rows.norm(dim=1)
        finite = torch.isfinite(norms)  # a non-finite row contributes 0 (norm <= C), never NaN (see per_example.py)
        factors = torch.where(finite, clip_factors(norms, self.max_grad_norm), torch.zeros_like(norms))
        clipped = zero_rows(rows, ~finite) * factors.unsqueeze(1)
        noise = gaussian_noise(clipped.shape, self.noise_std, self.generator)
        return (clipped + noise).reshape(grad.shape).to(grad.dtype)

    def attach(self, tensor: torch.Tensor) -> torch.utils.hooks.RemovableHandle:
        """Register the sanitizing hook on ``tensor`` (call once per charged step, before backward)."""
        if not tensor.requires_grad:
            raise InputError("the tensor to sanitize must require grad (e.g. the generator output). Found False.")
        return tensor.register_hook(self.sanitize)


def _uniform_integers(high: int, count: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` uniform draws of ``range(high)``: from ``generator``, or the cryptographic one under secure noise."""
    if noise_mode() == "secure":
        return torch.from_numpy(secure_integers(high, count))
    return torch.randint(high, (count,), generator=generator)
