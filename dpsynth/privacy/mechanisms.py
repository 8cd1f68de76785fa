"""Noisy counting mechanisms for DP statistics (metadata discovery, marginals).

Neighbouring relation: add/remove one record. Each function releases counts of one query family in which a
record falls in at most one cell, so the L2 (and L1) sensitivity of the count vector is 1.

Guarantees (each has a test in tests/privacy/test_mechanisms.py):
- :func:`gaussian_counts` releases ``counts + N(0, sigma^2)`` per cell: the Gaussian mechanism with noise
  multiplier ``sigma`` (Dwork & Roth 2014, App. A; exact accounting through dp-accounting's PLD).
- :func:`gaussian_partition_selection` releases noisy counts only of observed keys whose noisy count clears
  ``threshold``. For keys observed in both neighbours it is a post-processing of the Gaussian mechanism;
  a key observed only because of the added record (true count 1) is released with probability
  ``P[N(0, sigma^2) >= threshold - 1]``, which is the extra delta it adds (Korolova et al. 2009; Gopi et
  al. 2020, "Differentially private set union"). :func:`selection_threshold` inverts that relation.
- Callers record the event *before* releasing, through :meth:`PrivacyLedger.spend`.

Under ``noise="secure"`` (:mod:`dpsynth.privacy.secure_noise`) the counts get discrete Gaussian noise drawn by
OpenDP, recorded as :class:`~dpsynth.privacy.events.DiscreteGaussianDpEvent` (:func:`count_event`) and calibrated as
such (``discrete_counts()``), and the selection threshold and its delta come from the discrete Gaussian's tail.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
from dp_accounting import dp_event
from scipy.stats import norm

from dpsynth.errors import InputError
from dpsynth.privacy.events import DiscreteGaussianDpEvent
from dpsynth.privacy.secure_noise import (
    discrete_gaussian,
    discrete_selection_delta,
    discrete_selection_threshold,
    noise_mode,
)

__all__ = [
    "gaussian_counts",
    "gaussian_partition_selection",
    "selection_threshold",
    "selection_delta",
    "gaussian_event",
    "count_event",
    "discrete_counts",
    "calibrate_gaussian_queries",
]


def gaussian_event(sigma: float) -> dp_event.DpEvent:
    """The event of one Gaussian count query of sensitivity 1 (a non-private event when sigma == 0)."""
    if sigma < 0:
        raise InputError(f"sigma must be >= 0. Found {sigma}.")
    return dp_event.NonPrivateDpEvent() if sigma == 0 else dp_event.GaussianDpEvent(sigma)


def discrete_counts() -> bool:
    """Whether :func:`gaussian_counts` adds discrete Gaussian noise now (``noise="secure"``)."""
    return noise_mode() == "secure"


def count_event(sigma: float) -> dp_event.DpEvent:
    """The event of one count query of sensitivity 1 as :func:`gaussian_counts` answers it in the current noise
    mode: ``GaussianDpEvent(sigma)``, or ``DiscreteGaussianDpEvent(sigma)`` under ``noise="secure"`` (a non-private
    event when sigma == 0)."""
    if not discrete_counts() or sigma == 0:
        return gaussian_event(sigma)
    return DiscreteGaussianDpEvent(float(sigma))


def gaussian_counts(counts: np.ndarray, *, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """``counts`` plus i.i.d. N(0, sigma^2) noise (unchanged when sigma == 0, the non-private mode); under
    ``noise="secure"``, integer ``counts`` plus discrete Gaussian noise from OpenDP (``rng`` is not used)."""
    counts = np.asarray(counts, dtype=float)
    if sigma == 0:
        return counts.copy()
    if noise_mode() == "secure":
        return discrete_gaussian(counts, sigma)
    return counts + rng.normal(0.0, sigma, size=counts.shape)


def selection_threshold(sigma: float, delta: float) -> float:
    """Threshold tau such that a key of true count 1 clears it with probability ``delta`` (without noise, 1: every
    key with a row is kept, whatever ``delta``)."""
    if sigma == 0:
        return 1.0
    if not (0 < delta < 1):
        raise InputError(f"selection delta must be in (0, 1). Found {delta}.")
    if noise_mode() == "secure":
        return discrete_selection_threshold(sigma, delta)
    return 1.0 + sigma * float(norm.isf(delta))


def selection_delta(sigma: float, threshold: float) -> float:
    """Probability that a key of true count 1 clears ``threshold`` (the delta partition selection adds)."""
    if noise_mode() == "secure":
        return discrete_selection_delta(sigma, threshold)
    return float(norm.sf((threshold - 1.0) / sigma))


def gaussian_partition_selection(
    key_counts: dict[Hashable, int], *, sigma: float, threshold: float, rng: np.random.Generator
) -> dict[Hashable, float]:
    """Noisy counts of the keys whose noisy count is >= ``threshold`` (all keys, exact, when sigma == 0)."""
    if sigma == 0:
        return {k: float(v) for k, v in key_counts.items()}
    keys = list(key_counts)
    noisy = gaussian_counts(np.array([key_counts[k] for k in keys], dtype=float), sigma=sigma, rng=rng)
    return {k: float(c) for k, c in zip(keys, noisy) if c >= threshold}


def calibrate_gaussian_queries(ledger, n_queries: int, *, rel_tol: float = 1e-3, discrete: bool = False) -> float:
    """Smallest sigma (to ``rel_tol``) such that ``n_queries`` more Gaussian counts (sensitivity 1) keep ``ledger``
    within its target (0.0 for a non-private ledger); never overshoots. dpsynth's one calibration routine
    (:func:`dpsynth.privacy.calibration.calibrate_noise`, at sampling rate 1, composed with the ledger).
    ``discrete``: the queries add discrete Gaussian noise (pass ``discrete_counts()`` for :func:`gaussian_counts`)."""
    from dpsynth.errors import BudgetExceededError, PrivacyError
    from dpsynth.privacy.calibration import calibrate_noise

    if ledger.non_private:
        return 0.0
    try:
        return calibrate_noise(target_epsilon=ledger.target_epsilon, delta=ledger.target_delta, sample_rate=1.0,
                               steps=n_queries, accountant=ledger.accountant, ledger=ledger, rtol=rel_tol,
                               discrete=discrete)
    except PrivacyError as exc:
        raise BudgetExceededError("No budget left for the requested queries.") from exc
