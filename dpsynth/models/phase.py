"""One DP training phase, the way every dpsynth model trains a network on private rows.

A model's fit is a sequence of phases (``metadata``, then e.g. ``vae`` and ``diffusion``), all recorded in the one
ledger. :class:`DPPhase` is a DP-SGD phase: it is *planned* from public facts only — the DP row count, the phase's
epochs and batch size, the composed epsilon the ledger may reach when the phase ends — and then *run* on a module:

    phase = DPPhase("vae", ledger=ledger, n_dp=metadata.n_rows, epochs=20, batch_size=None,
                    largest_batch=8192, min_steps=64, target_epsilon=target, max_grad_norm=1.0)
    steps = phase.run(vae, torch.optim.Adam(vae.parameters(), lr), loss, make_batch, n_rows=len(x), generator=g)
    model.budget_["phases"]["vae"] = phase.summary()

Plan (data-independent: neither the exact row count nor any row is read):
- **Batch size**, the documented rule that makes training follow the table (issue 16): an explicit ``batch_size``
  is used as given; ``None`` picks the largest expected batch ``<= largest_batch`` for which ``epochs`` passes over
  ``n_dp`` rows still take at least ``min_steps`` steps, and never below ``smallest_batch`` (16)::

      B = clip(floor(n_dp * epochs / min_steps), smallest_batch, largest_batch)

  Large batches are what DP-SGD wants (the noise on the mean gradient is sigma * C / B), but a network needs
  enough updates to learn: on Adult (32,561 rows) the rule keeps each model's tuned batch, on a 500-row table it
  shrinks the batch so the phase still takes ``min_steps`` steps instead of a handful of full-batch ones, and on a
  million rows it keeps the largest batch and more steps. Each model states its ``largest_batch`` and
  ``min_steps`` per phase.
- **Network width**, the companion rule (:func:`choose_width`): a layer that reads or writes the encoded row gets
  the smallest power of two at least as wide as the encoded width, within ``[32, tuned]`` (``tuned``: the width
  the model was tuned with on Adult, whose encoded rows are wider than it, so Adult keeps its networks)::

      width = clip(2 ** ceil(log2(encoded_width)), 32, tuned)

  Why: DP-SGD adds noise of the same size to every parameter's gradient, so parameters the data cannot use cost
  signal-to-noise; a 6-column table encoded in 20 numbers gets 32-unit layers instead of 128. Measured on seven
  tables of 142-5,093 rows (``benchmarks/generality.py``, DP-TLDM, widths 32 and 128): AUC/R2 and 2-way TVD
  moved within one-seed noise either way, fits were up to 1.5x faster. An explicit width is used as given.
- **Sampling**: Poisson with ``q = min(1, B / n_dp)``; ``steps = ceil(epochs / q)`` up to :data:`WORK_ROWS` =
  250,000 DP rows and ``ceil(epochs * WORK_ROWS / B)`` above (an *epoch* is a pass over the table, or 250,000 rows'
  worth of batches on a larger one), and at most ``max_steps`` when the model states a cap (``None``:
  no cap). Why: at a fixed batch the steps, and so the work, grow with the rows (``epochs x n_dp`` per-example
  gradients); a large table needs fewer passes, not more steps — its smaller ``q`` already buys each step less
  noise. Measured on Census KDD (199,523 rows): ``dtgan-d`` and ``dp-ctgan`` at 24 passes (about 9,400 critic
  steps) did not finish in 50 minutes; the conditional GAN family caps its critic at 2,000 steps and its classifier
  at 600, above what Adult's 32,561 rows need (1,527 and 509), so Adult is unchanged. The row cap does the same for
  every DP-SGD model and leaves every table up to Census KDD's size as it was; beyond it a fit's training time stops
  growing with the rows (raise ``epochs`` for more passes on a large table).
- **Noise**: sigma from :func:`dpsynth.privacy.calibration.calibrate_noise` with the ledger, so that the composed
  epsilon after the phase is at most ``target_epsilon`` (the one calibration routine; everything the ledger holds
  is composed exactly as the ledger composes it). In the non-private mode (ledger target inf) sigma is 0 and the
  phase trains without clipping or noise, its ``NonPrivateDpEvent`` recorded by the engine.

Run: the :class:`~dpsynth.privacy.dpsgd.DPSGD` engine charges each Poisson batch to the ledger before the model
sees it and stops before the target would be exceeded; ``make_batch(idx)`` is the only place private rows are read.
``after_step(step)`` lets a model interleave post-processing updates (a generator step from the DP critic).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from dpsynth.errors import InputError
from dpsynth.privacy.ledger import PrivacyLedger

__all__ = ["DPPhase", "PhasePlan", "budget_summary", "choose_batch_size", "choose_width", "json_number",
           "SMALLEST_BATCH", "SMALLEST_WIDTH", "WORK_ROWS"]

#: the smallest expected batch the sizing rule picks (below it per-step noise swamps any gradient)
SMALLEST_BATCH = 16
#: the narrowest layer the width rule picks
SMALLEST_WIDTH = 32
#: the DP row count above which an epoch is this many rows' worth of batches (the work of a phase stops growing)
WORK_ROWS = 250_000


def choose_batch_size(n_dp: float, *, epochs: float, largest: int, min_steps: int,
                      smallest: int = SMALLEST_BATCH) -> int:
    """The sizing rule of the module docstring: ``clip(floor(n_dp * epochs / min_steps), smallest, largest)``."""
    if not (n_dp > 0 and epochs > 0 and largest >= 1 and min_steps >= 1):
        raise InputError(f"sizing needs n_dp, epochs, largest and min_steps > 0. Found {n_dp}, {epochs}, {largest}, "
                         f"{min_steps}.")
    return int(max(min(smallest, largest), min(largest, math.floor(n_dp * epochs / min_steps))))


def choose_width(encoded_width: int, *, tuned: int, smallest: int = SMALLEST_WIDTH) -> int:
    """The width rule of the module docstring: ``clip(2 ** ceil(log2(encoded_width)), smallest, tuned)``."""
    if not (encoded_width >= 1 and tuned >= 1):
        raise InputError(f"width rule needs encoded_width and tuned >= 1. Found {encoded_width}, {tuned}.")
    return int(min(tuned, max(smallest, 2 ** math.ceil(math.log2(encoded_width)))))


@dataclass(frozen=True)
class PhasePlan:
    """The data-independent settings of one phase (what ``budget_["phases"][name]`` records, with steps taken)."""

    phase: str
    batch_size: int  # expected (Poisson) batch size
    sample_rate: float
    steps: int
    noise_multiplier: float
    max_grad_norm: float
    clipping: str
    target_epsilon: float  # composed ledger epsilon this phase is calibrated to reach at most

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["target_epsilon"] = json_number(self.target_epsilon)
        return out


class DPPhase:
    """Plan (in the constructor) and run one DP-SGD phase; see the module docstring."""

    def __init__(self, name: str, *, ledger: PrivacyLedger, n_dp: float, epochs: float, batch_size: int | None,
                 largest_batch: int, min_steps: int, target_epsilon: float, max_grad_norm: float,
                 clipping: str = "per_example", accountant: str | None = None, rtol: float = 1e-4,
                 max_steps: int | None = None):
        from dpsynth.privacy.calibration import calibrate_noise

        self.name, self.ledger, self.n_dp = name, ledger, max(float(n_dp), 1.0)
        batch = (choose_batch_size(self.n_dp, epochs=epochs, largest=largest_batch, min_steps=min_steps)
                 if batch_size is None else int(batch_size))
        q = min(1.0, batch / self.n_dp)
        # epochs over at most WORK_ROWS rows (module docstring): on a larger table a pass is WORK_ROWS / B steps
        steps = max(1, math.ceil(epochs / q) if self.n_dp <= WORK_ROWS else math.ceil(epochs * WORK_ROWS / batch))
        if max_steps is not None:
            if max_steps < 1:
                raise InputError(f"max_steps of phase {name!r} must be >= 1 or None. Found {max_steps}.")
            steps = min(steps, int(max_steps))
        if ledger.non_private:
            sigma = 0.0
        else:
            sigma = calibrate_noise(target_epsilon=target_epsilon, delta=ledger.target_delta, sample_rate=q,
                                    steps=steps, accountant=accountant or ledger.accountant, ledger=ledger, rtol=rtol)
        self.plan = PhasePlan(name, batch, q, steps, float(sigma), float(max_grad_norm), clipping,
                              float(target_epsilon))
        self.steps_taken = 0
        self.extra: dict[str, Any] = {}

    def engine(self, module: nn.Module, optimizer: torch.optim.Optimizer, *, n_rows: int,
               generator: torch.Generator):
        """The DP-SGD engine of this phase on ``module`` (``n_rows``: rows to draw indices from; private, never
        recorded — the sampling rate, the divisor of the noisy sum and the ledger entry use ``n_dp``)."""
        from dpsynth.privacy.dpsgd import DPSGD, DPSGDConfig

        p = self.plan
        config = DPSGDConfig(noise_multiplier=p.noise_multiplier, max_grad_norm=p.max_grad_norm,
                             sample_rate=p.sample_rate, clipping=p.clipping)
        return DPSGD(module, optimizer, config, ledger=self.ledger, phase=self.name, max_steps=p.steps,
                     generator=generator, n_rows=n_rows, public_n_rows=self.n_dp,
                     non_private=self.ledger.non_private)

    def run(self, module: nn.Module, optimizer: torch.optim.Optimizer,
            per_example_loss: Callable[..., torch.Tensor],
            make_batch: Callable[[torch.Tensor], tuple[torch.Tensor, ...]], *, n_rows: int,
            generator: torch.Generator, progress: bool = False, label: str = "",
            public_loss: Callable[[], Callable[[], torch.Tensor] | None] | None = None,
            after_step: Callable[[int], None] | None = None) -> int:
        """Train ``module`` for the planned steps (fewer if the ledger says stop); return the steps taken.

        ``make_batch(idx)`` returns the per-row tensors of the charged batch ``idx``; ``public_loss()`` (called once
        per step) returns the step's data-independent loss term or None; ``after_step(k)`` runs after step k."""
        from tqdm.auto import tqdm

        module.train()
        engine = self.engine(module, optimizer, n_rows=n_rows, generator=generator)
        with tqdm(total=engine.steps_allowed, desc=f"{label or 'dpsynth'} {self.name}", disable=not progress,
                  leave=False) as bar:
            for idx in engine.batches():
                public = None if public_loss is None else public_loss()
                engine.step(per_example_loss, make_batch(idx), public_loss=public)
                self.steps_taken += 1
                bar.update(1)
                if after_step is not None:
                    after_step(self.steps_taken)
        module.eval()
        self.extra["epsilon_after"] = json_number(self.ledger.epsilon())
        return self.steps_taken

    def summary(self) -> dict[str, Any]:
        """The phase's entry of ``budget_["phases"]``: the plan, the steps taken and any model-specific counts."""
        return {**self.plan.to_dict(), "steps_taken": self.steps_taken, **self.extra}


def budget_summary(ledger: PrivacyLedger, *, n_dp: float, metadata_epsilon: float,
                   phases: list[DPPhase | tuple[str, dict[str, Any]]],
                   shares: dict[str, float] | None = None) -> dict[str, Any]:
    """``budget_``, one shape for every model: the targets, the DP row count, the metadata phase's epsilon, the
    composed total, and per phase after the metadata its settings (a :class:`DPPhase`'s plan and steps taken, or
    a ``(name, settings)`` pair for a phase of other mechanisms, e.g. Gaussian histograms), the composed epsilon
    after it and the budget share it was given (``shares[name]``: the fraction of what was left before it)."""
    shares = shares or {}
    entries = {}
    for p in phases:
        name, settings = (p.name, p.summary()) if isinstance(p, DPPhase) else p
        entries[name] = {**settings, "share": shares.get(name)}
    return {
        "target_epsilon": json_number(ledger.target_epsilon), "delta": float(ledger.target_delta),
        "n_rows_dp": float(n_dp), "metadata_epsilon": json_number(metadata_epsilon),
        "epsilon_total": json_number(ledger.epsilon()), "phases": entries,
    }


def json_number(x: float) -> float | str:
    """JSON has no infinity: the non-private mode's epsilons are written as "inf"."""
    return "inf" if math.isinf(x) else float(x)
