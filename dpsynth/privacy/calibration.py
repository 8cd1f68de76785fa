"""Epsilon of DP-SGD and calibration of its noise multiplier or number of steps, through dp-accounting.

Neighbouring relation: add/remove one record. The mechanism is ``steps`` compositions of the Poisson-subsampled
Gaussian mechanism ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))`` (sigma = noise std / L2 sensitivity).

Guarantees (tests in tests/privacy/test_calibration.py):
- ``epsilon`` equals the dp-accounting RDP / PLD value (pinned to reference/accountant_values.md).
- ``calibrate_noise`` returns a sigma whose composed epsilon — with everything already in ``ledger`` when given —
  was *evaluated* to be <= ``target_epsilon`` by the chosen accountant (a bisection keeps a feasible upper end and
  returns it), so it never overshoots; it is within ``rtol`` of the smallest such sigma.
- ``calibrate_steps`` returns the largest step count whose evaluated epsilon is <= the target (0 if none).
We bisect on :func:`dpsynth.privacy.accounting.epsilon_of` rather than dp_accounting.mechanism_calibration so that
the ledger's other entries and its thresholding delta are composed exactly as the ledger itself will compose them.
"""

from __future__ import annotations

import math

from dp_accounting import dp_event

from dpsynth.errors import InputError, PrivacyError
from dpsynth.privacy.accounting import Accountant, epsilon_of
from dpsynth.privacy.ledger import PrivacyLedger

__all__ = ["epsilon", "calibrate_noise", "calibrate_steps", "dpsgd_event"]

_MAX_SIGMA = 1e6


def dpsgd_event(sample_rate: float, noise_multiplier: float) -> dp_event.DpEvent:
    """One DP-SGD step: Poisson(q) o Gaussian(sigma); q = 1 is the plain Gaussian mechanism."""
    if sample_rate == 1.0:
        return dp_event.GaussianDpEvent(float(noise_multiplier))
    return dp_event.PoissonSampledDpEvent(float(sample_rate), dp_event.GaussianDpEvent(float(noise_multiplier)))


def _check(sample_rate: float, delta: float, steps: int | None = None, target: float | None = None) -> None:
    if not (0 < sample_rate <= 1):
        raise InputError(f"sample_rate must be in (0, 1]. Found {sample_rate!r}.")
    if not (0 < delta < 1):
        raise InputError(f"delta must be in (0, 1). Found {delta!r}.")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 0):
        raise InputError(f"steps must be an integer >= 0. Found {steps!r}.")
    if target is not None and not (0 < target < math.inf):
        raise InputError(f"target_epsilon must be a finite number > 0. Found {target!r}.")


def _composed(event, count, delta, accountant, ledger: PrivacyLedger | None) -> float:
    # committed_pairs: recorded runs plus steps that live allowances of other loops have reserved
    pairs = ledger.committed_pairs() if ledger is not None else []
    extra = sum(e.extra_delta * e.count for e in ledger.entries) if ledger is not None else 0.0
    return epsilon_of(pairs + [(event, count)], delta, extra_delta=extra, accountant=accountant)


def epsilon(
    *, sample_rate: float, noise_multiplier: float, steps: int, delta: float, accountant: Accountant = "pld"
) -> float:
    """Epsilon (upper bound) of ``steps`` DP-SGD steps at ``delta`` (add/remove neighbours)."""
    _check(sample_rate, delta, steps)
    if noise_multiplier < 0:
        raise InputError(f"noise_multiplier must be >= 0. Found {noise_multiplier!r}.")
    if steps == 0:
        return 0.0
    if noise_multiplier == 0:
        return math.inf
    return epsilon_of([(dpsgd_event(sample_rate, noise_multiplier), steps)], delta, accountant=accountant)


def calibrate_noise(
    *,
    target_epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    accountant: Accountant = "pld",
    ledger: PrivacyLedger | None = None,
    rtol: float = 1e-4,
) -> float:
    """Smallest sigma (within ``rtol``) such that the composed epsilon is <= ``target_epsilon``; never above it."""
    _check(sample_rate, delta, steps, target_epsilon)

    def fits(sigma: float) -> bool:
        return _composed(dpsgd_event(sample_rate, sigma), steps, delta, accountant, ledger) <= target_epsilon

    hi = 1.0
    while not fits(hi):
        hi *= 2.0
        if hi > _MAX_SIGMA:
            raise PrivacyError(
                f"no noise multiplier <= {_MAX_SIGMA:g} meets target_epsilon (the ledger may already be spent). "
                f"Found target_epsilon={target_epsilon}."
            )
    lo = hi / 2.0 if hi > 1.0 else 0.0
    while lo == 0.0 and hi > 1e-3:  # walk down to bracket small sigmas (large epsilon targets)
        if fits(hi / 2.0):
            hi /= 2.0
        else:
            lo = hi / 2.0
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if fits(mid):
            hi = mid
        else:
            lo = mid
    return hi


def calibrate_steps(
    *,
    target_epsilon: float,
    delta: float,
    sample_rate: float,
    noise_multiplier: float,
    accountant: Accountant = "pld",
    ledger: PrivacyLedger | None = None,
    max_steps: int = 10**7,
) -> int:
    """Largest number of steps (<= ``max_steps``) whose composed epsilon is <= ``target_epsilon`` (0 if none)."""
    _check(sample_rate, delta, None, target_epsilon)
    if noise_multiplier <= 0:
        raise InputError(f"noise_multiplier must be > 0. Found {noise_multiplier!r}.")
    event = dpsgd_event(sample_rate, noise_multiplier)

    def fits(t: int) -> bool:
        return _composed(event, t, delta, accountant, ledger) <= target_epsilon

    if fits(max_steps):
        return max_steps
    lo, hi = 0, 1  # invariant once bracketed: lo fits (or is 0), hi does not
    while fits(hi):
        lo, hi = hi, min(hi * 2, max_steps)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo if lo == 0 or fits(lo) else 0
