"""Composition of privacy events into one (epsilon, delta), through dp-accounting.

Pure math, no torch. The neighbouring relation is **add/remove one record** throughout dpsynth (the one
under which dp-accounting's Poisson-subsampled Gaussian results hold). An event records a noise multiplier, i.e.
noise std divided by the mechanism's **add/remove** sensitivity: whoever records an event must derive that
sensitivity under add/remove (a replace-one bound is not enough in general: a count has replace-one sensitivity 0
and add/remove sensitivity 1). Aggregate clipping, for instance, has add/remove sensitivity 2C (dpsgd.py). The
one exception is explicit: events sampled *without replacement* from a fixed number of disjoint shards
(``SampledWithoutReplacementDpEvent``) are accounted with dp-accounting's replace-one neighbouring relation, which
is what adding or removing a record does to the shard it lands in (sanitizer.py).

Guarantees:
- ``epsilon_of`` returns an upper bound on the epsilon of the composition of all events at ``delta``:
  the minimum of the PLD accountant (pessimistic discretisation, Koskela et al. / Doroshenko et al. 2022)
  and the RDP accountant (Mironov 2017, Mironov et al. 2019). Both are sound upper bounds, so their
  minimum is one too.
- Large epsilons take a bounded, fast path: when the RDP bound already exceeds twice ``PLD_MAX_EPSILON`` (10),
  ``"best"`` returns it without asking PLD (whose support, hence time and memory, grows with the privacy loss: 51 s
  and 1.1 GB at epsilon 100, 11 minutes and 6 GB at 1000). Both are sound upper bounds; above 10 the PLD's tighter value
  buys nothing a user could notice. ``check_privacy_params`` refuses targets above ``EPSILON_MAX``.
- dpsynth's one event of its own, :class:`~dpsynth.privacy.events.DiscreteGaussianDpEvent` (secure noise's count
  queries), is composed by PLD through dp-accounting's PLD of the discrete Gaussian and by RDP through its zCDP
  bound (the continuous Gaussian's curve); inside a sampling event, which dpsynth never records, both refuse it.
- ``extra_delta`` (from thresholding mechanisms, e.g. partition selection) is subtracted from ``delta``
  before the accountants are asked: a mechanism that is, with probability 1 - c, a post-processing of an
  accounted mechanism adds at most c to delta under any composition.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

import numpy as np
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution
from dp_accounting.rdp import rdp_privacy_accountant

from dpsynth.errors import InputError
from dpsynth.privacy.events import DiscreteGaussianDpEvent

__all__ = ["Accountant", "epsilon_of", "compose", "fits", "check_accountant"]

Accountant = Literal["best", "pld", "rdp"]

# Orders used by the RDP accountant: dense at small orders (where DP-SGD optima usually lie), then sparse.
_RDP_ORDERS = (
    [1 + x / 20.0 for x in range(1, 100)] + [6 + x / 4.0 for x in range(0, 57)] + [21.0 + x for x in range(0, 44)]
    + [64.0, 80.0, 96.0, 128.0, 192.0, 256.0, 512.0, 1024.0]
)
# Issue 3: also include Opacus' default orders, so the RDP bound is never looser than Opacus' (reference table case D
# was 1.3e-3 above it with the grid above alone; more orders can only tighten a min over orders).
_RDP_ORDERS = sorted(set(_RDP_ORDERS) | {1 + x / 10.0 for x in range(1, 100)} | {float(x) for x in range(12, 64)})

_SWOR_ORDERS = [float(x) for x in range(2, 65)] + [80.0, 96.0, 128.0, 256.0]

# PLD discretisation (issue 3): the pessimistic error grows with the number of compositions; reference case C
# (225,000 steps) is 3e-3 above the exact value at 1e-4 and within 5e-4 at 3e-5.
_PLD_INTERVAL, _PLD_FINE_INTERVAL, _PLD_FINE_ABOVE = 1e-4, 3e-5, 50_000
#: above this epsilon the "best" accountant answers with RDP alone (see the module docstring)
PLD_MAX_EPSILON = 10.0
#: the largest finite target epsilon dpsynth accepts (no privacy is left to account for; use inf)
EPSILON_MAX = 1000.0


def _n_compositions(event: dp_event.DpEvent) -> int:
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return event.count * _n_compositions(event.event)
    if isinstance(event, dp_event.ComposedDpEvent):
        return sum(_n_compositions(e) for e in event.events)
    return 1


def compose(events: Sequence[tuple[dp_event.DpEvent, int]]) -> dp_event.DpEvent:
    """One event for the composition of ``(event, count)`` pairs; equal events are merged into one
    self-composition first (same guarantee, far fewer PLD convolutions)."""
    merged: dict[dp_event.DpEvent, int] = {}
    for e, c in events:
        if c > 0:
            merged[e] = merged.get(e, 0) + int(c)
    parts = [e if c == 1 else dp_event.SelfComposedDpEvent(e, c) for e, c in merged.items()]
    if not parts:
        return dp_event.NoOpDpEvent()
    return parts[0] if len(parts) == 1 else dp_event.ComposedDpEvent(parts)


def _is_non_private(event: dp_event.DpEvent) -> bool:
    if isinstance(event, dp_event.NonPrivateDpEvent):
        return True
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return _is_non_private(event.event)
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        return _is_non_private(event.event)
    if isinstance(event, dp_event.ComposedDpEvent):
        return any(_is_non_private(e) for e in event.events)
    return False


class _PLDAccountant(pld_privacy_accountant.PLDAccountant):
    """dp-accounting's PLD accountant, also taking dpsynth's one event of its own, the discrete Gaussian, through
    dp-accounting's PLD of that mechanism: pessimistic, at the accountant's discretisation interval, by the
    connect-the-dots construction (Doroshenko et al. 2022), as dp-accounting builds the continuous Gaussian's. The
    privacy-buckets construction rounds each loss up to the grid, and over many compositions that bias adds up (4,000
    discrete Gaussians at sigma 256: epsilon 1.114 against connect-the-dots' 0.914 and the continuous 0.914). A
    discrete Gaussian inside a sampling event is not supported (dpsynth records none): such a composition is
    refused, hence accounted by RDP alone."""

    def _maybe_compose(self, event, count, do_compose):
        if not isinstance(event, DiscreteGaussianDpEvent):
            return super()._maybe_compose(event, count, do_compose)
        if do_compose:
            self._pld = self._pld.compose(_discrete_gaussian_pld(float(event.sigma), int(event.sensitivity), int(count),
                                                                 self._value_discretization_interval))
        return None


@functools.lru_cache(maxsize=256)
def _discrete_gaussian_pld(sigma: float, sensitivity: int, count: int, interval: float):
    """``count`` discrete Gaussians' PLD, memoised: a calibration against a ledger asks for the same metadata events
    at every step of its search (PLD objects are not changed by composing them)."""
    pld = privacy_loss_distribution.from_discrete_gaussian_mechanism(
        sigma, sensitivity=sensitivity, value_discretization_interval=interval, use_connect_dots=True)
    return pld.self_compose(count) if count > 1 else pld


def _pld_epsilon(event: dp_event.DpEvent, delta: float) -> float:
    fine = _n_compositions(event) > _PLD_FINE_ABOVE
    accountant = _PLDAccountant(value_discretization_interval=_PLD_FINE_INTERVAL if fine else _PLD_INTERVAL)
    if not accountant.supports(event):
        return math.inf
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def _has_swor(event: dp_event.DpEvent) -> bool:
    if isinstance(event, dp_event.SampledWithoutReplacementDpEvent):
        return True
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return _has_swor(event.event)
    if isinstance(event, dp_event.ComposedDpEvent):
        return any(_has_swor(e) for e in event.events)
    return False


@contextlib.contextmanager
def _quiet_absl() -> Iterator[None]:
    """Silence dp-accounting's per-order warnings. At large sampling rates its series for fractional orders may not
    converge; it then drops that order (an inf RDP value), which can only loosen the bound: sound, and not news to
    a user, who would otherwise see dozens of log lines per calibration."""
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _rdp_epsilon(event: dp_event.DpEvent, delta: float) -> float:
    """RDP epsilon; ``SampledWithoutReplacementDpEvent`` parts are composed under REPLACE_ONE (added by issue 3).

    dpsynth records a without-replacement event only where adding/removing one record *replaces one item* of a
    population of disjoint shards (the gradient sanitizer's N_d shard discriminators: the record changes its own
    shard's discriminator arbitrarily, one shard is drawn per step). The replace-one RDP curve of that event (Wang,
    Balle, Kasiviswanathan 2019, as in GS-WGAN) therefore bounds its RDP under add/remove of a record, and RDP
    curves of mechanisms on the same data add up under adaptive composition (Mironov 2017, Prop. 1).
    """
    total = 0.0
    for base, count in _flatten(event):
        curve = _rdp_curve(base)
        if curve is None:
            return math.inf
        total = total + count * np.asarray(curve)
    eps, _ = rdp_privacy_accountant.compute_epsilon(_RDP_ORDERS, total, delta)
    return float(eps)


def _flatten(event: dp_event.DpEvent, count: int = 1) -> list[tuple[dp_event.DpEvent, int]]:
    """``event`` as (base event, count) pairs: RDP adds up over compositions (the count multiplies a curve)."""
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return _flatten(event.event, count * event.count)
    if isinstance(event, dp_event.ComposedDpEvent):
        return [pair for e in event.events for pair in _flatten(e, count)]
    return [(event, count)]


@functools.lru_cache(maxsize=256)
def _rdp_curve(event: dp_event.DpEvent) -> tuple[float, ...] | None:
    """RDP of one run of ``event`` at ``_RDP_ORDERS`` (None if dp-accounting cannot account for it), memoised: a
    ledger's binary search for the steps that fit asks for the same event at many counts, and the subsampled
    Gaussian's fractional orders cost most of a second each time (dp-accounting multiplies by the count too)."""
    if isinstance(event, DiscreteGaussianDpEvent):
        # zCDP sensitivity^2 / (2 sigma^2) (Canonne, Kamath and Steinke 2020): the continuous Gaussian's RDP curve
        event = dp_event.GaussianDpEvent(float(event.sigma) / float(event.sensitivity))
    swor = _has_swor(event)
    if not swor:
        accountant = rdp_privacy_accountant.RdpAccountant(_RDP_ORDERS)
    else:
        # integer orders only: dp-accounting's without-replacement bound costs O(order) per order and
        # interpolates fractional ones (fewer orders can only loosen the bound, never break it)
        accountant = rdp_privacy_accountant.RdpAccountant(
            _SWOR_ORDERS, neighboring_relation=privacy_accountant.NeighboringRelation.REPLACE_ONE
        )
    if not accountant.supports(event):
        return None
    with _quiet_absl():
        accountant.compose(event)
    rdp = accountant.rdp
    if swor:  # RDP at the other orders, bounded by monotonicity in the order (Mironov 2017)
        rdp = _at_orders(_SWOR_ORDERS, rdp, _RDP_ORDERS)
    return tuple(float(v) for v in rdp)


def check_accountant(accountant: str) -> None:
    if accountant not in ("best", "pld", "rdp"):
        raise InputError(f"accountant must be 'best', 'pld' or 'rdp'. Found {accountant!r}.")


def _at_orders(orders, rdp, targets):
    """RDP at each target order, upper-bounded by the value at the next computed order >= it (RDP grows with the
    order); inf beyond the largest computed order."""
    orders, rdp = np.asarray(orders, dtype=float), np.asarray(rdp, dtype=float)
    idx = np.searchsorted(orders, np.asarray(targets, dtype=float), side="left")
    out = np.full(len(targets), np.inf)
    ok = idx < len(orders)
    out[ok] = rdp[idx[ok]]
    return out


def epsilon_of(
    events: Sequence[tuple[dp_event.DpEvent, int]],
    delta: float,
    *,
    extra_delta: float = 0.0,
    accountant: Accountant = "best",
) -> float:
    """Epsilon (upper bound) of composing ``events`` at total ``delta``.

    ``extra_delta`` is the delta already consumed by thresholding mechanisms; returns ``inf`` if it is not
    below ``delta`` or if any event is non-private. Results are memoised (events are immutable and hashable): a
    ledger asks the same question many times (JSON, text, GDP view, per-phase breakdown).
    """
    check_accountant(accountant)
    try:
        key = (tuple((e, int(c)) for e, c in events), float(delta), float(extra_delta), accountant)
        hash(key)
    except TypeError:  # an event holding an unhashable field: compute without the memo
        return _epsilon_of(events, delta, extra_delta, accountant)
    return _epsilon_memo(key)


@functools.lru_cache(maxsize=512)
def _epsilon_memo(key) -> float:
    events, delta, extra_delta, accountant = key
    return _epsilon_of(events, delta, extra_delta, accountant)


def _epsilon_of(events, delta: float, extra_delta: float, accountant: str) -> float:
    event = compose(events)
    if isinstance(event, dp_event.NoOpDpEvent):
        return 0.0
    if _is_non_private(event):
        return math.inf
    remaining = delta - extra_delta
    if remaining <= 0:
        return math.inf
    if accountant == "pld":
        return _pld_epsilon(event, remaining)
    if accountant == "rdp":
        return _rdp_epsilon(event, remaining)
    rdp = _rdp_epsilon(event, remaining)
    if rdp > 2 * PLD_MAX_EPSILON:
        return rdp  # the fast path: PLD at this privacy loss costs minutes and gigabytes for no useful gain
    return min(_pld_epsilon(event, remaining), rdp)


def fits(
    events: Sequence[tuple[dp_event.DpEvent, int]],
    delta: float,
    target_epsilon: float,
    *,
    extra_delta: float = 0.0,
    accountant: Accountant = "best",
) -> bool:
    """``epsilon_of(...) <= target_epsilon``, answered with the cheap RDP bound first when it suffices."""
    check_accountant(accountant)
    if accountant in ("best", "rdp"):
        event = compose(events)
        if _is_non_private(event):
            return False
        if isinstance(event, dp_event.NoOpDpEvent):
            return True
        if delta - extra_delta <= 0:
            return False
        rdp = _rdp_epsilon(event, delta - extra_delta)
        if rdp <= target_epsilon:
            return True
        if accountant == "rdp" or rdp > 2 * PLD_MAX_EPSILON:  # "best" skips PLD where epsilon_of does
            return False
    return epsilon_of(events, delta, extra_delta=extra_delta, accountant="pld") <= target_epsilon


def largest_count(fits: Callable[[int], bool], upper: int) -> int:
    """Largest ``k <= upper`` with ``fits(k)``, for a ``fits`` that holds up to some k* and fails beyond it (a
    count of steps or queries under a budget); 0 when even one does not fit. The discrete half of dpsynth's one
    calibration routine (the continuous half is :func:`dpsynth.privacy.calibration.calibrate_noise`)."""
    if fits(upper):
        return upper
    lo, hi = 0, 1  # invariant once bracketed: lo fits (or is 0), hi does not
    while fits(hi):
        lo, hi = hi, min(hi * 2, upper)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo if lo == 0 or fits(lo) else 0
