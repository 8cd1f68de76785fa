"""The two DP mechanisms of select-measure-generate, each recorded in the ledger before its noise is drawn.

Neighbouring relation: add/remove one row (the ledger's). Costs in zero-concentrated DP (rho-zCDP; Bun & Steinke
2016), which the ledger composes with the rest of the fit through its RDP accountant (rho-zCDP is RDP of order a
at rho * a):

- :func:`measure`: a marginal count table plus i.i.d. N(0, sigma^2) per cell. One row is in exactly one cell, so
  the L2 sensitivity is 1 and the cost 1 / (2 sigma^2) (recorded as ``GaussianDpEvent(sigma)``; under
  ``noise="secure"`` the noise is discrete Gaussian, recorded as ``DiscreteGaussianDpEvent(sigma)``, same zCDP cost).
- :func:`select`: the exponential mechanism over candidate scores of sensitivity ``sensitivity``, with
  ``P(r) ~ exp(epsilon * score_r / (2 * sensitivity))`` (drawn with the Gumbel-max trick). It is epsilon-bounded-range,
  hence epsilon^2 / 8-zCDP (Cesar & Rogers 2021, Lemma 3.2), recorded as ``ZCDpEvent(epsilon^2 / 8)``.
- :func:`zcdp_budget`: the largest rho that the ledger can still compose within its target (bisection on the
  ledger's own accountant), so a model plans its rounds in rho and the ledger reports the (epsilon, delta) of
  everything.

Under ``noise="secure"`` (:mod:`dpsynth.privacy.secure_noise`) both draw their noise with OpenDP: discrete Gaussian
counts, and the exact Gumbel noisy max.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event

from dpsynth.errors import InputError
from dpsynth.marginals.graphical_model import Measurement
from dpsynth.privacy.mechanisms import count_event, gaussian_counts
from dpsynth.privacy.secure_noise import gumbel_max, noise_mode

__all__ = ["measure", "select", "zcdp_budget", "gaussian_rho", "exponential_rho"]


def gaussian_rho(sigma: float) -> float:
    return 1.0 / (2.0 * sigma ** 2)


def exponential_rho(epsilon: float) -> float:
    return epsilon ** 2 / 8.0


def zcdp_budget(ledger, *, rel_tol: float = 1e-4) -> float:
    """Largest rho (to ``rel_tol``, from below) such that a rho-zCDP mechanism more keeps ``ledger`` within its
    target; ``inf`` for a non-private ledger."""
    if ledger.non_private:
        return math.inf

    def fits(rho: float) -> bool:
        return not ledger.would_exceed(dp_event.ZCDpEvent(rho), 1, 0.0)

    if not fits(1e-12):
        return 0.0
    lo, hi = 1e-12, 1.0
    while fits(hi):
        lo, hi = hi, hi * 4
        if hi > 1e8:
            return lo
    while hi - lo > rel_tol * lo:
        mid = math.sqrt(lo * hi) if hi / lo > 4 else (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def measure(backend, clique: tuple[int, ...], sigma: float, *, ledger, phase: str, names, rng) -> Measurement:
    """A Gaussian measurement of the marginal of ``clique`` (``names`` label it in the ledger)."""
    label = " x ".join(names[a] for a in clique)
    if ledger.non_private:
        ledger.spend(dp_event.NonPrivateDpEvent(), phase=phase, mechanism=f"measure {label}")
        return Measurement(clique, backend.counts(clique).copy(), 1.0)
    if not (sigma > 0 and math.isfinite(sigma)):
        raise InputError(f"sigma must be a finite number > 0. Found {sigma!r}.")
    ledger.spend(count_event(sigma), phase=phase, mechanism=f"measure {label}", sensitivity=1.0,
                 sigma=float(sigma), cells=int(backend.counts(clique).size))
    return Measurement(clique, gaussian_counts(backend.counts(clique), sigma=sigma, rng=rng), float(sigma))


def select(scores: np.ndarray, epsilon: float, sensitivity: float, *, ledger, phase: str, label: str, rng) -> int:
    """Index of the candidate picked by the exponential mechanism (argmax without noise in the non-private mode)."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1 or len(scores) == 0 or not np.all(np.isfinite(scores)):
        raise InputError("select needs a non-empty vector of finite scores.")
    if ledger.non_private:
        ledger.spend(dp_event.NonPrivateDpEvent(), phase=phase, mechanism=f"select {label}")
        return int(np.argmax(scores))
    if not (epsilon > 0 and sensitivity > 0):
        raise InputError(f"epsilon and sensitivity must be > 0. Found {epsilon!r}, {sensitivity!r}.")
    ledger.spend(dp_event.ZCDpEvent(exponential_rho(epsilon)), phase=phase, mechanism=f"select {label}",
                 epsilon=float(epsilon), sensitivity=float(sensitivity))
    if noise_mode() == "secure":
        return gumbel_max(scores, epsilon, sensitivity)
    logits = epsilon * scores / (2.0 * sensitivity)
    return int(np.argmax(logits + rng.gumbel(size=len(scores))))
