"""Training phases of DP-TLDM (see dpsynth/models/dp_tldm.py for the privacy argument).

Each phase is one DP-SGD run through :class:`dpsynth.privacy.dpsgd.DPSGD` (Poisson batches charged to the ledger
before use, per-example or batch clipping, Gaussian noise), or, in non-private mode, a plain minibatch loop that
records a ``NonPrivateDpEvent`` in the ledger first. Losses are written for ONE row (vmapped by the engine).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from dp_accounting import dp_event
from torch import nn
from tqdm.auto import tqdm

from dpsynth.privacy.calibration import calibrate_noise
from dpsynth.privacy.dpsgd import DPSGD, DPSGDConfig
from dpsynth.privacy.ledger import PrivacyLedger

__all__ = ["PhasePlan", "plan_phase", "run_phase"]


@dataclass(frozen=True)
class PhasePlan:
    """Data-independent settings of one phase (q and steps come from the DP row count)."""

    phase: str
    sample_rate: float
    steps: int
    noise_multiplier: float
    max_grad_norm: float
    clipping: str
    target_epsilon: float  # composed ledger epsilon this phase is calibrated to reach at most

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def plan_phase(ledger: PrivacyLedger, *, phase: str, batch_size: int, epochs: float, n_public: float,
               target_epsilon: float, max_grad_norm: float, clipping: str) -> PhasePlan:
    """q = B / n_dp, steps = ceil(epochs / q); sigma calibrated so the composed ledger stays <= target_epsilon."""
    q = min(1.0, batch_size / max(n_public, 1.0))
    steps = max(1, math.ceil(epochs / q))
    if ledger.non_private:
        sigma = 0.0
    else:
        sigma = calibrate_noise(target_epsilon=target_epsilon, delta=ledger.target_delta, sample_rate=q,
                                steps=steps, accountant=ledger.accountant, ledger=ledger)
    return PhasePlan(phase, q, steps, float(sigma), float(max_grad_norm), clipping, float(target_epsilon))


def run_phase(module: nn.Module, plan: PhasePlan, per_example_loss: Callable[..., torch.Tensor],
              make_batch: Callable[[torch.Tensor], tuple[torch.Tensor, ...]], *, ledger: PrivacyLedger,
              n_rows: int, n_public: float, lr: float, generator: torch.Generator, progress: bool,
              nonprivate_batch_size: int = 256) -> int:
    """Train ``module`` for one phase; return the number of steps taken.

    ``make_batch(idx)`` returns the per-row tensors of the rows ``idx`` (private rows are read only there, and
    only for a batch the ledger has already been charged for).
    """
    module.train()
    optimizer = torch.optim.Adam(module.parameters(), lr=lr)
    if ledger.non_private:
        return _run_non_private(module, optimizer, plan, per_example_loss, make_batch, ledger=ledger, n_rows=n_rows,
                                generator=generator, progress=progress, batch_size=nonprivate_batch_size)
    config = DPSGDConfig(noise_multiplier=plan.noise_multiplier, max_grad_norm=plan.max_grad_norm,
                         sample_rate=plan.sample_rate, clipping=plan.clipping)
    engine = DPSGD(module, optimizer, config, ledger=ledger, phase=plan.phase, max_steps=plan.steps,
                   generator=generator, n_rows=n_rows, public_n_rows=n_public)
    bar = tqdm(total=engine.steps_allowed, desc=f"dp-tldm {plan.phase}", disable=not progress, leave=False)
    for idx in engine.batches():
        engine.step(per_example_loss, make_batch(idx))
        bar.update(1)
    bar.close()
    module.eval()
    return engine.steps_taken


def _run_non_private(module, optimizer, plan, per_example_loss, make_batch, *, ledger, n_rows, generator, progress,
                     batch_size) -> int:
    """epsilon = inf: shuffled minibatches, no clipping, no noise; the ledger records a non-private event."""
    ledger.spend(dp_event.NonPrivateDpEvent(), phase=plan.phase, mechanism="non-private training")
    steps_per_epoch = max(1, math.ceil(n_rows / batch_size))
    epochs = max(1, round(plan.steps * plan.sample_rate))
    bar = tqdm(total=epochs * steps_per_epoch, desc=f"tldm {plan.phase}", disable=not progress, leave=False)
    steps = 0
    for _ in range(epochs):
        perm = torch.randperm(n_rows, generator=generator)
        for start in range(0, n_rows, batch_size):
            batch = make_batch(perm[start:start + batch_size])
            optimizer.zero_grad(set_to_none=True)
            loss = per_example_loss(module, *batch).mean()
            loss.backward()
            optimizer.step()
            steps += 1
            bar.update(1)
    bar.close()
    module.eval()
    return steps
