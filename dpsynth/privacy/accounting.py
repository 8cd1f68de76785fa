"""Composition of privacy events into one (epsilon, delta), through dp-accounting.

Pure math, no torch. The neighbouring relation is **add/remove one record** throughout dpsynth (the one
under which dp-accounting's Poisson-subsampled Gaussian results hold). A mechanism whose sensitivity is
stated for replace-one neighbours may still be recorded here: replace-one sensitivity bounds add/remove
sensitivity, so the event is conservative.

Guarantees:
- ``epsilon_of`` returns an upper bound on the epsilon of the composition of all events at ``delta``:
  the minimum of the PLD accountant (pessimistic discretisation, Koskela et al. / Doroshenko et al. 2022)
  and the RDP accountant (Mironov 2017, Mironov et al. 2019). Both are sound upper bounds, so their
  minimum is one too.
- ``extra_delta`` (from thresholding mechanisms, e.g. partition selection) is subtracted from ``delta``
  before the accountants are asked: a mechanism that is, with probability 1 - c, a post-processing of an
  accounted mechanism adds at most c to delta under any composition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

__all__ = ["Accountant", "epsilon_of", "compose"]

Accountant = Literal["best", "pld", "rdp"]

# Orders used by the RDP accountant: dense at small orders (where DP-SGD optima usually lie), then sparse.
_RDP_ORDERS = (
    [1 + x / 20.0 for x in range(1, 100)] + [6 + x / 4.0 for x in range(0, 57)] + [21.0 + x for x in range(0, 44)]
    + [64.0, 80.0, 96.0, 128.0, 192.0, 256.0, 512.0, 1024.0]
)


def compose(events: Sequence[tuple[dp_event.DpEvent, int]]) -> dp_event.DpEvent:
    """One event for the composition of ``(event, count)`` pairs."""
    parts = [e if c == 1 else dp_event.SelfComposedDpEvent(e, c) for e, c in events if c > 0]
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


def _pld_epsilon(event: dp_event.DpEvent, delta: float) -> float:
    accountant = pld_privacy_accountant.PLDAccountant()
    if not accountant.supports(event):
        return math.inf
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def _rdp_epsilon(event: dp_event.DpEvent, delta: float) -> float:
    accountant = rdp_privacy_accountant.RdpAccountant(_RDP_ORDERS)
    if not accountant.supports(event):
        return math.inf
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def epsilon_of(
    events: Sequence[tuple[dp_event.DpEvent, int]],
    delta: float,
    *,
    extra_delta: float = 0.0,
    accountant: Accountant = "best",
) -> float:
    """Epsilon (upper bound) of composing ``events`` at total ``delta``.

    ``extra_delta`` is the delta already consumed by thresholding mechanisms; returns ``inf`` if it is not
    below ``delta`` or if any event is non-private.
    """
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
    return min(_pld_epsilon(event, remaining), _rdp_epsilon(event, remaining))
