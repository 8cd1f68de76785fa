"""Batch selection for DP training (DESIGN.md §1 rule 3: sampling matches the accountant).

Neighbouring relation: add/remove one record (a row index of ``range(n)``).

Guarantees:
- :class:`PoissonSampler` includes every index independently with probability ``sample_rate`` at every step
  (batches have variable size and may be empty). This is the sampling under which dp-accounting's
  ``PoissonSampledDpEvent`` (subsampled-Gaussian RDP, Mironov et al. 2019; PLD, Koskela et al. 2020 /
  Zhu et al. 2022) is proven; :meth:`PoissonSampler.event` returns exactly that event.
- :class:`ShuffleSampler` (fixed-size batches from a shuffled order) is *not* Poisson sampling: the amplification
  bound of the Poisson event does not hold for it (Chua et al. 2024, "How private are DP-SGD implementations?",
  show the gap is real). Its :meth:`ShuffleSampler.event` refuses to build a Poisson event and accepts only an
  accountant proven for shuffling, of which dpsynth currently provides none, so it raises
  :class:`~dpsynth.errors.PrivacyError`. It exists for non-private runs and for explicit comparison.
- Indices come only from the ``torch.Generator`` given, so a run is reproducible from its seed. (A seeded PRNG
  is not a cryptographically secure source; as in Opacus without ``secure_mode``, the guarantee assumes the
  seed stays secret.)
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
from dp_accounting import dp_event

from dpsynth.errors import InputError, PrivacyError
from dpsynth.privacy.secure_noise import noise_mode, secure_poisson_indices

__all__ = ["PoissonSampler", "ShuffleSampler", "PROVEN_SHUFFLE_ACCOUNTANTS", "uniform_subset", "DENSE_RATE"]

# Accountants proven for shuffled fixed-size batches that dpsynth implements. Empty on purpose: see ShuffleSampler.
PROVEN_SHUFFLE_ACCOUNTANTS: frozenset[str] = frozenset()


def _check_n_steps(n: int, steps: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"n (number of rows) must be an integer >= 1. Found {n!r}.")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise InputError(f"steps must be an integer >= 0. Found {steps!r}.")


def _check_generator(generator: torch.Generator) -> None:
    if not isinstance(generator, torch.Generator):
        raise InputError(
            f"generator must be a torch.Generator (seeded by the caller). Found {type(generator).__name__}.")


#: above this sampling rate a Poisson batch is drawn with one uniform per index (a K-subset drawn by rejection would
#: repeat too many draws)
DENSE_RATE = 0.1


def uniform_subset(n: int, k: int, generator: torch.Generator) -> torch.Tensor:
    """A uniformly random k-subset of ``range(n)`` (sorted), in O(k) for k << n: the first k distinct values of a
    stream of independent uniform draws (by symmetry every k-subset is equally likely to be those)."""
    if not 0 <= k <= n:
        raise InputError(f"a subset of {k} indices of range({n}) does not exist.")
    chosen = torch.empty(0, dtype=torch.long)
    while chosen.numel() < k:
        need = k - chosen.numel()
        stream = torch.cat([chosen, torch.randint(n, (need + need // 4 + 8,), generator=generator)])
        values, inverse = torch.unique(stream, return_inverse=True)
        first = torch.full((values.numel(),), stream.numel(), dtype=torch.long)
        first.scatter_reduce_(0, inverse, torch.arange(stream.numel()), reduce="amin")  # first appearance of each
        chosen = values[torch.argsort(first)][:k]  # distinct values in order of first appearance
    return torch.sort(chosen).values


class PoissonSampler:
    """Poisson subsampling of ``range(n)``: ``steps`` batches, each index kept with probability ``sample_rate``.

    Iterating yields ``torch.LongTensor`` index batches (sorted, possibly empty). Each ``iter()`` draws a fresh
    sequence from ``generator``.
    """

    sampling = "poisson"

    def __init__(self, n: int, sample_rate: float, *, steps: int, generator: torch.Generator):
        _check_n_steps(n, steps)
        _check_generator(generator)
        q = float(sample_rate)
        if not (0.0 < q <= 1.0) or math.isnan(q):
            raise InputError(f"sample_rate must be in (0, 1]. Found {sample_rate!r}.")
        self.n = n
        self.sample_rate = q
        self.steps = steps
        self.generator = generator

    @property
    def expected_batch_size(self) -> float:
        return self.sample_rate * self.n

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[torch.Tensor]:
        for _ in range(self.steps):
            yield self.draw()

    def draw(self) -> torch.Tensor:
        """One Poisson batch: the sorted indices kept. At small rates (``sample_rate <= DENSE_RATE``) it is drawn in
        O(batch) instead of O(n) (one uniform per index: 23 ms a step at a million rows, and the number of steps
        grows with n): the batch size K ~ Binomial(n, q), then a uniform K-subset of ``range(n)``. That is the same
        distribution - under Poisson sampling the size is Binomial(n, q) and, given its size, every subset is
        equally likely - so the accountant's event is unchanged (tested: sizes, inclusion rates, pairs). Under
        ``noise="secure"`` the batch comes from the operating system's cryptographic generator instead
        (:func:`dpsynth.privacy.secure_noise.secure_poisson_indices`): amplification assumes a secret batch."""
        if noise_mode() == "secure":
            return torch.from_numpy(secure_poisson_indices(self.n, self.sample_rate))
        if self.sample_rate > DENSE_RATE:
            mask = torch.rand(self.n, generator=self.generator) < self.sample_rate
            return mask.nonzero().squeeze(1)
        k = int(torch.binomial(torch.tensor([float(self.n)], dtype=torch.float64),
                               torch.tensor([self.sample_rate], dtype=torch.float64), generator=self.generator).item())
        return uniform_subset(self.n, k, self.generator)

    def event(self, noise_multiplier: float) -> dp_event.DpEvent:
        """The event of one step: Poisson(q) o Gaussian(noise std / sensitivity)."""
        return dp_event.PoissonSampledDpEvent(self.sample_rate, dp_event.GaussianDpEvent(float(noise_multiplier)))


class ShuffleSampler:
    """Fixed-size batches of ``range(n)`` taken in order from a fresh random permutation each epoch.

    Not Poisson sampling. :meth:`event` refuses to certify it with the Poisson accountant (see module doc).
    """

    sampling = "shuffle"

    def __init__(self, n: int, batch_size: int, *, steps: int, generator: torch.Generator, drop_last: bool = True):
        _check_n_steps(n, steps)
        _check_generator(generator)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not (1 <= batch_size <= n):
            raise InputError(f"batch_size must be an integer in [1, n={n}]. Found {batch_size!r}.")
        self.n = n
        self.batch_size = batch_size
        self.steps = steps
        self.generator = generator
        self.drop_last = drop_last

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[torch.Tensor]:
        done = 0
        while done < self.steps:
            perm = torch.randperm(self.n, generator=self.generator)
            for start in range(0, self.n, self.batch_size):
                chunk = perm[start : start + self.batch_size]
                if self.drop_last and len(chunk) < self.batch_size:
                    break
                yield chunk.sort().values
                done += 1
                if done >= self.steps:
                    return

    def event(self, noise_multiplier: float, *, accountant: str | None = None) -> dp_event.DpEvent:
        """Refuse to certify shuffled batches unless an accountant proven for shuffling is available."""
        if accountant is None or accountant == "poisson":
            raise PrivacyError(
                "Shuffled fixed-size batches cannot be accounted as Poisson subsampling: the subsampled-Gaussian "
                "RDP/PLD bound is proven only for Poisson sampling and can under-report epsilon for shuffling "
                "(Chua et al. 2024). Use PoissonSampler, or an accountant proven for shuffling. "
                f"Found accountant={accountant!r}."
            )
        if accountant not in PROVEN_SHUFFLE_ACCOUNTANTS:
            raise PrivacyError(
                f"accountant must be one proven for shuffled batches (available: {sorted(PROVEN_SHUFFLE_ACCOUNTANTS)}; "
                f"e.g. 'shuffle-rdp' is not implemented in dpsynth). Found {accountant!r}."
            )
        raise PrivacyError(f"no shuffle accountant is implemented. Found {accountant!r}.")  # pragma: no cover
