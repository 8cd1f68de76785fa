"""Gaussian differential privacy (f-DP, Dong, Roth, Su 2022) and seed 004's "separation" — reported BESIDE epsilon.

Neighbouring relation: add/remove one record. mu-GDP means distinguishing neighbours is no easier than telling
N(0, 1) from N(mu, 1).

Formulas (reference/accountant_values.md):
- Poisson CLT (Bu, Dong, Long, Su 2020, Thm. 5): mu = q * sqrt(T * (exp(1/sigma^2) - 1)).
- seed 004 (DP-TLDM): mu = sqrt(q^2 T) * h(sigma), h = sqrt(2 (exp(sigma^-2) Phi(1.5/sigma) + 3 Phi(-0.5/sigma) - 2)).
- mu-GDP -> (eps, delta): delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) Phi(-eps/mu - mu/2) (Dong et al. Cor. 2.13).
- separation (seed 004) = sqrt(2) * (Phi(mu/2) - 1/2).
- composition: mu-GDP mechanisms compose to sqrt(sum mu_i^2)-GDP (exact for GDP, Dong et al. Cor. 3.3).

Guarantees and caveats:
- The CLT mu is an ASYMPTOTIC approximation, not a bound: it under-reports epsilon by up to 13% on the reference
  cases. dpsynth never reports it as the guarantee; ``ledger_gdp_report`` puts it next to the ledger's PLD/RDP
  epsilon, which remains the guarantee. For q = 1 the Gaussian mechanism is exactly sqrt(T)/sigma-GDP.
- ``gdp_epsilon`` and ``gdp_delta`` are exact conversions for a mechanism that *is* mu-GDP.
"""

from __future__ import annotations

import math

from dp_accounting import dp_event
from scipy import optimize
from scipy.stats import norm

from dpsynth.errors import InputError

__all__ = [
    "mu_poisson_clt",
    "mu_seed004",
    "gdp_delta",
    "gdp_epsilon",
    "separation",
    "mu_from_separation",
    "compose_mu",
    "ledger_gdp_report",
]


def _check(q: float, sigma: float, steps: int) -> None:
    if not (0 < q <= 1):
        raise InputError(f"sample_rate must be in (0, 1]. Found {q!r}.")
    if not (sigma > 0):
        raise InputError(f"noise_multiplier must be > 0. Found {sigma!r}.")
    if steps < 0:
        raise InputError(f"steps must be >= 0. Found {steps!r}.")


def mu_poisson_clt(*, sample_rate: float, noise_multiplier: float, steps: int) -> float:
    """mu of DP-SGD from the Poisson central limit theorem (Bu et al. 2020). An approximation, not a bound."""
    _check(sample_rate, noise_multiplier, steps)
    if noise_multiplier**-2 > 700:  # exp overflows: an epsilon this large has no meaningful mu
        return math.inf
    return sample_rate * math.sqrt(steps * math.expm1(noise_multiplier**-2))


def mu_seed004(*, sample_rate: float, noise_multiplier: float, steps: int) -> float:
    """mu as computed by seed 004 (DP-TLDM): sqrt(b E / N) h(sigma) with b E / N = q^2 T."""
    _check(sample_rate, noise_multiplier, steps)
    s = noise_multiplier
    if s**-2 > 700:  # exp overflows (epsilon in the hundreds): no finite mu to report
        return math.inf
    h = math.sqrt(2.0 * (math.exp(s**-2) * norm.cdf(1.5 / s) + 3.0 * norm.cdf(-0.5 / s) - 2.0))
    return math.sqrt(sample_rate**2 * steps) * h


def gdp_delta(epsilon: float, mu: float) -> float:
    """delta(eps) of a mu-GDP mechanism."""
    if mu <= 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    # exp(eps) * Phi(x) as exp(eps + log Phi(x)): finite for any eps (exp(eps) alone overflows above ~709)
    return float(norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon + norm.logcdf(-epsilon / mu - mu / 2)))


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest eps >= 0 with delta(eps) <= delta for a mu-GDP mechanism."""
    if not (0 < delta < 1):
        raise InputError(f"delta must be in (0, 1). Found {delta!r}.")
    if mu <= 0 or gdp_delta(0.0, mu) <= delta:
        return 0.0
    if math.isinf(mu):
        return math.inf
    hi = 1.0
    while gdp_delta(hi, mu) > delta:
        hi *= 2.0
    return float(optimize.brentq(lambda e: gdp_delta(e, mu) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12))


def separation(mu: float) -> float:
    """Seed 004's separation of a mu-GDP trade-off curve: sqrt(2) (Phi(mu/2) - 1/2)."""
    return math.sqrt(2.0) * (float(norm.cdf(mu / 2.0)) - 0.5)


def mu_from_separation(sep: float) -> float:
    if not (0 <= sep < math.sqrt(2) / 2):
        raise InputError(f"separation must be in [0, sqrt(2)/2). Found {sep!r}.")
    return 2.0 * float(norm.ppf(sep / math.sqrt(2.0) + 0.5))


def compose_mu(mus) -> float:
    return math.sqrt(sum(m * m for m in mus))


def _dpsgd_params(event: dp_event.DpEvent, count: int) -> tuple[float, float, int] | None:
    """(q, sigma, T) for a (self-composed) Poisson-Gaussian or plain Gaussian event, else None."""
    while isinstance(event, dp_event.SelfComposedDpEvent):
        count, event = count * event.count, event.event
    if isinstance(event, dp_event.PoissonSampledDpEvent) and isinstance(event.event, dp_event.GaussianDpEvent):
        return event.sampling_probability, event.event.noise_multiplier, count
    if isinstance(event, dp_event.GaussianDpEvent):
        return 1.0, event.noise_multiplier, count
    return None


def ledger_gdp_report(ledger) -> dict:
    """mu (CLT and seed-004 formula) and separation of the ledger's DP-SGD / Gaussian entries, beside its epsilon.

    ``mu_clt`` uses the Poisson CLT for subsampled entries and the exact sqrt(T)/sigma for unsampled Gaussian ones.

    Entries that are not (subsampled) Gaussian are listed under ``not_covered``; when any exists the GDP figures
    describe only part of the release. ``epsilon`` (PLD/RDP, the guarantee) is always included.
    """
    rows, uncovered = [], []
    for entry in ledger.entries:
        if entry.count == 0:
            continue
        params = _dpsgd_params(entry.event, entry.count)
        if params is None or params[1] <= 0:
            uncovered.append(f"{entry.phase}/{entry.mechanism}")
            continue
        q, s, t = params
        rows.append({
            "phase": entry.phase, "mechanism": entry.mechanism, "sample_rate": q, "noise_multiplier": s, "steps": t,
            # q = 1: the Gaussian mechanism is exactly sqrt(T)/sigma-GDP (the CLT formula would overstate it)
            "mu_clt": math.sqrt(t) / s if q == 1.0 else mu_poisson_clt(sample_rate=q, noise_multiplier=s, steps=t),
            "mu_seed004": mu_seed004(sample_rate=q, noise_multiplier=s, steps=t),
        })
    mu_clt = compose_mu(r["mu_clt"] for r in rows)
    mu_004 = compose_mu(r["mu_seed004"] for r in rows)
    return {
        "epsilon": ledger.epsilon(),
        "delta": ledger.delta,
        "mu_clt": mu_clt,
        "mu_seed004": mu_004,
        "separation_clt": separation(mu_clt),
        "separation_seed004": separation(mu_004),
        "epsilon_from_mu_clt": gdp_epsilon(mu_clt, ledger.delta) if mu_clt > 0 else 0.0,
        "entries": rows,
        "not_covered": uncovered,
        "note": "mu from the Poisson CLT is an approximation, not a bound; the guarantee is 'epsilon' (PLD/RDP).",
    }
