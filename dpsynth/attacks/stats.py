"""Statistics shared by the attacks: binomial confidence intervals, privacy gain, relative risk, AUC.

Definitions (with the paper each comes from):

- **Wilson score interval** (Wilson 1927) for a success rate k/n: centre (k + z^2/2)/(n + z^2), half-width
  z/(n + z^2) * sqrt(k(n-k)/n + z^2/4), z the two-sided normal quantile. Anonymeter reports risks with it.
- **Clopper-Pearson interval** (exact, 1934): [Beta(a/2; k, n-k+1), Beta(1-a/2; k+1, n-k)] quantiles,
  with 0 and 1 at the ends. Never narrower than the nominal coverage; the auditors use its one-sided form.
- **Privacy gain** (seed 002 §4.2.2 after Stadler et al. 2022): PG = (P_real - P_fake)/2, where P_real is the
  attacker's success given the raw training data (1 for membership: the raw data settles membership) and
  P_fake its average success given the synthetic data. For membership PG = 0.25 at chance (P_fake = 0.5) and
  0 for a perfect attack: *higher is more private*.
- **Relative risk** (seed 004 §3.5 "Metrics", after Giomi et al. 2023): R = (tau_train - tau_control) /
  (1 - tau_control), the attack's success on training targets over its success on control targets, scaled
  by the room left above the control. For membership seed 004 fixes tau_control = 0.5, so R = 2 acc - 1
  (the advantage TPR - FPR at balanced priors). 0 = no risk beyond population patterns, 1 = maximal.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as _st

from dpsynth.errors import InputError

__all__ = [
    "auc_interval",
    "auc_score",
    "clopper_pearson_interval",
    "privacy_gain",
    "relative_risk",
    "relative_risk_interval",
    "wilson_interval",
]


def _check_counts(k: int, n: int) -> None:
    if isinstance(k, bool) or isinstance(n, bool) or int(k) != k or int(n) != n:
        raise InputError(f"Counts must be integers. Found k={k!r}, n={n!r}.")
    if n <= 0 or k < 0 or k > n:
        raise InputError(f"Counts must satisfy 0 <= k <= n and n > 0. Found k={k}, n={n}.")


def _check_level(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence must be in (0, 1). Found {confidence}.")
    return float(_st.norm.ppf(0.5 + confidence / 2.0))


def wilson_interval(k: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Wilson score interval for a binomial proportion k/n (clipped to [0, 1])."""
    _check_counts(k, n)
    z = _check_level(confidence)
    z2 = z * z
    centre = (k + z2 / 2.0) / (n + z2)
    half = z / (n + z2) * math.sqrt(k * (n - k) / n + z2 / 4.0)
    return max(0.0, centre - half), min(1.0, centre + half)


def clopper_pearson_interval(k: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided exact (Clopper-Pearson) interval for a binomial proportion k/n."""
    _check_counts(k, n)
    _check_level(confidence)
    a = 1.0 - confidence
    lo = 0.0 if k == 0 else float(_st.beta.ppf(a / 2.0, k, n - k + 1))
    hi = 1.0 if k == n else float(_st.beta.ppf(1.0 - a / 2.0, k + 1, n - k))
    return lo, hi


def privacy_gain(p_fake: float, *, p_real: float = 1.0) -> float:
    """Seed 002 §4.2.2: PG = (P_real - P_fake) / 2 (P_real = 1 for membership inference)."""
    for name, p in (("p_fake", p_fake), ("p_real", p_real)):
        if not (0.0 <= p <= 1.0):
            raise InputError(f"{name} must be a probability in [0, 1]. Found {p}.")
    return (p_real - p_fake) / 2.0


def relative_risk(tau_train: float, tau_control: float) -> float:
    """Seed 004 eq. (1): R = (tau_train - tau_control) / (1 - tau_control); undefined if tau_control = 1."""
    if not (0.0 <= tau_train <= 1.0 and 0.0 <= tau_control <= 1.0):
        raise InputError(f"Success rates must be in [0, 1]. Found train={tau_train}, control={tau_control}.")
    if tau_control >= 1.0:
        raise InputError("Relative risk is undefined when the control success rate is 1 (no room above it).")
    return (tau_train - tau_control) / (1.0 - tau_control)


def relative_risk_interval(
    k_train: int, n_train: int, k_control: int | None, n_control: int | None, *, confidence: float = 0.95,
    tau_control: float | None = None,
) -> tuple[float, tuple[float, float]]:
    """Point estimate and interval of the relative risk from counts.

    The interval is conservative: the Wilson bounds of both rates are combined at their extremes
    ((train_lo - control_hi)/(1 - control_hi), (train_hi - control_lo)/(1 - control_lo)), each rate at the
    per-rate level sqrt(confidence) so that the joint coverage is at least ``confidence`` (independent
    samples). With ``tau_control`` given (seed 004's 0.5 for membership) the control rate is fixed.
    Values are clipped to [-1, 1]; the point estimate uses the raw rates.
    """
    if tau_control is not None:
        t_lo, t_hi = wilson_interval(k_train, n_train, confidence=confidence)
        c, c_lo, c_hi = tau_control, tau_control, tau_control
    else:
        if k_control is None or n_control is None:
            raise InputError("relative_risk_interval needs control counts or a fixed tau_control.")
        level = math.sqrt(confidence)
        t_lo, t_hi = wilson_interval(k_train, n_train, confidence=level)
        c_lo, c_hi = wilson_interval(k_control, n_control, confidence=level)
        c = k_control / n_control
    c_cap = min(c, 1.0 - 1e-12)
    value = (k_train / n_train - c_cap) / (1.0 - c_cap)
    lo = (t_lo - min(c_hi, 1.0 - 1e-12)) / (1.0 - min(c_hi, 1.0 - 1e-12))
    hi = (t_hi - c_lo) / (1.0 - c_lo) if c_lo < 1.0 else 1.0
    def clip(v):
        return float(min(1.0, max(-1.0, v)))
    return clip(value), (clip(lo), clip(hi))


def auc_score(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U / (n1 n0), ties count one half)."""
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, dtype=float)
    n1, n0 = int(labels.sum()), int((~labels).sum())
    if n1 == 0 or n0 == 0:
        raise InputError(f"AUC needs both classes. Found {n1} positives and {n0} negatives.")
    ranks = _st.rankdata(scores)
    return float((ranks[labels].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def auc_interval(auc: float, n_pos: int, n_neg: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Hanley & McNeil (1982) normal interval for an AUC, clipped to [0, 1]."""
    z = _check_level(confidence)
    q1, q2 = auc / (2.0 - auc), 2.0 * auc * auc / (1.0 + auc)
    var = (auc * (1 - auc) + (n_pos - 1) * (q1 - auc * auc) + (n_neg - 1) * (q2 - auc * auc)) / (n_pos * n_neg)
    half = z * math.sqrt(max(var, 0.0))
    return max(0.0, auc - half), min(1.0, auc + half)
