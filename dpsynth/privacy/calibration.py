"""Epsilon of DP-SGD and calibration of its noise multiplier or number of steps, through dp-accounting.

Neighbouring relation: add/remove one record. The mechanism is ``steps`` compositions of the Poisson-subsampled
Gaussian mechanism ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))`` (sigma = noise std / L2 sensitivity).

Guarantees (tests in tests/privacy/test_calibration.py):
- ``epsilon`` equals the dp-accounting RDP / PLD value (pinned to reference/accountant_values.md).
- ``calibrate_noise`` returns a sigma whose composed epsilon — with everything already in ``ledger`` when given —
  was *evaluated* to be <= ``target_epsilon`` by the chosen accountant (a bisection keeps a feasible upper end and
  returns it), so it never overshoots; it is within ``rtol`` of the smallest such sigma.
- ``weights`` calibrates one scale for Gaussian queries of different precisions (the metadata phase's allocation:
  a query of weight w gets sigma / sqrt(w), so it uses w times the GDP budget mu^2 of a weight-1 query), and
  ``prior`` composes events that are not (or not yet) in a ledger (the queries a phase has already answered).
- ``calibrate_steps`` returns the largest step count whose evaluated epsilon is <= the target (0 if none).
This is dpsynth's one calibration routine: every noise multiplier (DP-SGD phases, the metadata phase's counts, a
model's own Gaussian histograms) comes from :func:`calibrate_noise`, every step or query count from
:func:`dpsynth.privacy.accounting.largest_count`. The continuous search is dp-accounting's own
``mechanism_calibration.calibrate_dp_mechanism`` (Brent's method, with its guarantee that the returned parameter
meets the target) run on an accountant that composes the ledger's other entries and its thresholding delta exactly
as the ledger itself will compose them (:class:`LedgerComposition`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from dp_accounting import dp_event, mechanism_calibration, privacy_accountant

from dpsynth.errors import InputError, PrivacyError
from dpsynth.privacy.accounting import Accountant, epsilon_of, largest_count
from dpsynth.privacy.events import DiscreteGaussianDpEvent
from dpsynth.privacy.ledger import PrivacyLedger

__all__ = ["epsilon", "calibrate_noise", "calibrate_steps", "dpsgd_event", "LedgerComposition"]

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


class LedgerComposition(privacy_accountant.PrivacyAccountant):
    """dp-accounting's accountant interface over dpsynth's composition: what ``ledger`` has committed (recorded
    runs and steps reserved by live allowances; nothing without a ledger) plus the events composed here, evaluated
    by :func:`~dpsynth.privacy.accounting.epsilon_of` with the ledger's thresholding delta and the chosen accountant
    (``"pld"``, ``"rdp"`` or ``"best"``). So a calibration answers exactly the question the ledger will ask."""

    def __init__(self, ledger: PrivacyLedger | None, accountant: Accountant,
                 prior: Sequence[tuple[dp_event.DpEvent, int]] = ()):
        super().__init__(privacy_accountant.NeighboringRelation.ADD_OR_REMOVE_ONE)
        self._pairs = (ledger.committed_pairs() if ledger is not None else []) + list(prior)
        self._extra_delta = sum(e.extra_delta * e.count for e in ledger.entries) if ledger is not None else 0.0
        self._accountant = accountant

    def _maybe_compose(self, event, count, do_compose):
        if do_compose:
            if isinstance(event, dp_event.ComposedDpEvent):
                for part in event.events:
                    self._maybe_compose(part, count, True)
                return None
            if isinstance(event, dp_event.SelfComposedDpEvent):  # as the ledger stores runs: (step, count)
                event, count = event.event, event.count * count
            self._pairs.append((event, count))
        return None  # epsilon_of handles every event dpsynth records

    def get_epsilon(self, target_delta: float) -> float:
        return epsilon_of(self._pairs, target_delta, extra_delta=self._extra_delta, accountant=self._accountant)


def _ledger_accountant(ledger: PrivacyLedger | None, accountant: Accountant) -> Accountant:
    """The accountant a calibration against ``ledger`` uses: RDP where the ledger composes by RDP only (made with
    ``accountant="rdp"``)."""
    return "rdp" if ledger is not None and ledger.accountant == "rdp" else accountant


def calibrate_noise(
    *,
    target_epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int = 0,
    accountant: Accountant = "pld",
    ledger: PrivacyLedger | None = None,
    rtol: float = 1e-4,
    weights: Sequence[tuple[float, int]] | None = None,
    prior: Sequence[tuple[dp_event.DpEvent, int]] = (),
    mechanism: Callable[[float], dp_event.DpEvent] | None = None,
    discrete: bool = False,
) -> float:
    """Smallest sigma (within ``rtol``) such that ``steps`` more Poisson(q)-subsampled Gaussian mechanisms (q = 1:
    plain Gaussian queries of sensitivity 1), composed with everything in ``ledger`` and ``prior``, stay within
    ``target_epsilon``; the sigma returned was evaluated to meet it (never above the target).

    ``weights``: ``(w, count)`` pairs replacing ``steps`` — ``count`` mechanisms at sigma / sqrt(w) each (q = 1
    only); the returned sigma is that of a weight-1 query.

    ``mechanism``: the event of one step as a function of sigma, replacing the Poisson-subsampled Gaussian (e.g.
    :meth:`dpsynth.privacy.sanitizer.SanitizerConfig.event` of a sanitized generator step); ``sample_rate`` is then
    only checked, and ``weights`` is not allowed.

    ``discrete``: the queries add discrete Gaussian noise to integer counts (``noise="secure"``), each recorded as
    ``DiscreteGaussianDpEvent(sigma / sqrt(w))``; ``sample_rate`` must be 1.

    A ``ledger`` that composes by RDP only is calibrated against by RDP whatever ``accountant`` says: a sigma that
    met the target only under PLD would be refused by that ledger."""
    accountant = _ledger_accountant(ledger, accountant)
    if mechanism is not None and weights is not None:
        raise InputError("calibrate_noise takes weights or mechanism, not both.")
    if discrete and (mechanism is not None or sample_rate != 1.0):
        raise InputError(f"discrete Gaussian counts are not subsampled and take no mechanism. Found sample_rate="
                         f"{sample_rate!r}.")
    if weights is not None:
        if sample_rate != 1.0 or any(not (w > 0 and math.isfinite(w)) or c < 0 for w, c in weights):
            raise InputError(f"weights need sample_rate 1, weights > 0 and counts >= 0. Found {list(weights)!r}.")
        weights = [(float(w), int(c)) for w, c in weights if c > 0]
        steps = sum(c for _, c in weights)
    else:
        weights = [(1.0, steps)]
    _check(sample_rate, delta, steps, target_epsilon)
    if steps == 0:
        return 0.0

    def accountant_now() -> LedgerComposition:
        return LedgerComposition(ledger, accountant, prior)

    def event(sigma: float) -> dp_event.DpEvent:
        if mechanism is not None:
            return dp_event.SelfComposedDpEvent(mechanism(sigma), steps)
        one = (lambda s: DiscreteGaussianDpEvent(s)) if discrete else (lambda s: dpsgd_event(sample_rate, s))
        parts = [dp_event.SelfComposedDpEvent(one(sigma / math.sqrt(w)), c) for w, c in weights]
        return parts[0] if len(parts) == 1 else dp_event.ComposedDpEvent(parts)

    def fits(sigma: float) -> bool:
        return accountant_now().compose(event(sigma)).get_epsilon(delta) <= target_epsilon

    # bracket [lo, hi]: hi meets the target, lo does not (doubling up from 1, or halving down for large targets)
    hi = 1.0
    if fits(hi):
        lo = hi / 2.0
        while fits(lo):
            if lo < 1e-3:  # an enormous target: any sigma this small meets it
                return lo
            hi, lo = lo, lo / 2.0
    else:
        while not fits(hi):
            if hi > _MAX_SIGMA:
                raise PrivacyError(
                    f"no noise multiplier <= {_MAX_SIGMA:g} meets target_epsilon (the ledger may already be "
                    f"spent). Found target_epsilon={target_epsilon}."
                )
            hi *= 2.0
        lo = hi / 2.0
    sigma = mechanism_calibration.calibrate_dp_mechanism(
        accountant_now, event, target_epsilon, delta,
        bracket_interval=mechanism_calibration.ExplicitBracketInterval(lo, hi), tol=rtol * lo)
    return float(sigma) if fits(sigma) else hi  # dp-accounting guarantees the first; the check costs one call


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
    """Largest number of steps (<= ``max_steps``) whose composed epsilon is <= ``target_epsilon`` (0 if none; an
    RDP-only ``ledger`` is met by RDP, as in :func:`calibrate_noise`)."""
    accountant = _ledger_accountant(ledger, accountant)
    _check(sample_rate, delta, None, target_epsilon)
    if noise_multiplier <= 0:
        raise InputError(f"noise_multiplier must be > 0. Found {noise_multiplier!r}.")
    event = dpsgd_event(sample_rate, noise_multiplier)

    def fits(t: int) -> bool:
        return _composed(event, t, delta, accountant, ledger) <= target_epsilon

    return largest_count(fits, max_steps)
