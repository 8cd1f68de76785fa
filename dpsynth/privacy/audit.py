"""Empirical privacy auditing: turn membership guesses into epsilon LOWER bounds (DESIGN.md §1 rule 7).

A correct (eps, delta)-DP mechanism makes every membership test satisfy TPR <= e^eps FPR + delta (and the same with
the roles of TPR/FPR complements swapped). Observed attack success therefore certifies, with confidence, a lower bound
eps_LB; if eps_LB exceeds what the ledger claims, the implementation (or its accounting) is broken.

- ``eps_lower_bound_cp`` (Jagielski et al. 2020; Nasr et al. 2021): one-sided Clopper-Pearson bounds at alpha/2 on
  TPR (lower) and FPR (upper) over independent trials; eps_LB = max(ln((1 - delta - FPR_ub) / FNR_ub),
  ln((1 - delta - FNR_ub) / FPR_ub)). The second term equals JAX-Privacy's form ln(TPR_lb - delta) - ln(FPR_ub).
- ``eps_lower_bound_one_run`` (Steinke, Nasr, Jagielski 2023, arXiv 2305.08846, App. D): m canaries each included
  independently w.p. 1/2 in ONE training run; the auditor guesses r of them, v correctly. Valid with probability
  >= 1 - p.
- ``CanaryAudit`` (one-run, any model): draws the inclusion of m canaries and turns membership scores into a bound.
- ``audit_dpsgd``: white-box DP-SGD audit with Dirac gradient canaries (each canary's gradient is C along its own
  parameter coordinate; the score is the trained parameter along that coordinate). This is the strongest
  membership test for a given (q, sigma, T), so a missing noise term makes eps_LB jump far above the claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats
from torch import nn

from dpsynth.errors import InputError

__all__ = [
    "eps_lower_bound_cp",
    "eps_lower_bound_one_run",
    "one_run_p_value",
    "CanaryAudit",
    "AuditResult",
    "audit_dpsgd",
]


def _cp_lower(k: int, n: int, a: float) -> float:
    return 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))


def _cp_upper(k: int, n: int, a: float) -> float:
    return 1.0 if k == n else float(stats.beta.ppf(1 - a, k + 1, n - k))


def eps_lower_bound_cp(tp: int, fn: int, fp: int, tn: int, *, alpha: float = 0.05, delta: float = 0.0) -> float:
    """Clopper-Pearson epsilon lower bound from a confusion matrix (confidence 1 - alpha)."""
    if min(tp, fn, fp, tn) < 0 or tp + fn == 0 or fp + tn == 0:
        raise InputError(f"counts must be >= 0 with positives and negatives present. Found {(tp, fn, fp, tn)}.")
    if not (0 < alpha < 1):
        raise InputError(f"alpha must be in (0, 1). Found {alpha!r}.")
    tpr_lb = _cp_lower(tp, tp + fn, alpha / 2)
    fpr_ub = _cp_upper(fp, fp + tn, alpha / 2)
    fnr_ub = 1.0 - tpr_lb
    candidates = [0.0]
    for num, den in ((1 - delta - fpr_ub, fnr_ub), (1 - delta - fnr_ub, fpr_ub)):
        if num > 0 and den > 0:
            candidates.append(math.log(num / den))
    return max(candidates)


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P-value of v correct guesses out of r under (eps, delta)-DP with m canaries (Steinke et al. 2023, App. D)."""
    q = 1.0 / (1.0 + math.exp(-epsilon))
    beta = float(stats.binom.sf(v - 1, r, q))
    alpha = 0.0
    if v > 0:  # the paper's loop: alpha = max_i P[v > Binomial(r, q) >= v - i] / i, vectorised
        i = np.arange(1, v + 1)
        alpha = float(np.max(np.cumsum(stats.binom.pmf(v - i, r, q)) / i))
    return min(beta + alpha * delta * 2 * m, 1.0)


def eps_lower_bound_one_run(m: int, r: int, v: int, *, p: float = 0.05, delta: float = 0.0) -> float:
    """Largest eps rejected at level p by ``one_run_p_value`` (bisection, as in the paper's App. D code)."""
    if not (0 <= v <= r <= m):
        raise InputError(f"need 0 <= v <= r <= m. Found m={m}, r={r}, v={v}.")
    if not (0 < p < 1) or not (0 <= delta <= 1):
        raise InputError(f"p must be in (0, 1) and delta in [0, 1]. Found p={p}, delta={delta}.")
    lo, hi = 0.0, 1.0
    if one_run_p_value(m, r, v, lo, delta) >= p:
        return 0.0
    while one_run_p_value(m, r, v, hi, delta) < p:
        hi += 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if one_run_p_value(m, r, v, mid, delta) < p:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True)
class AuditResult:
    eps_lower_bound: float
    m: int
    guesses: int
    correct: int
    p: float
    delta: float


class CanaryAudit:
    """One-run audit for any model: m canaries, each included w.p. 1/2; scores -> eps lower bound.

    ``included`` is the secret membership vector. After training on the data with the included canaries, compute a
    membership score per canary (higher = more likely included: e.g. minus the loss, gradient alignment) and call
    :meth:`lower_bound`, which guesses "in" for the top k_plus and "out" for the bottom k_minus scores.
    """

    def __init__(self, m: int, *, generator: torch.Generator):
        if m < 2:
            raise InputError(f"m (number of canaries) must be >= 2. Found {m!r}.")
        self.m = m
        self.included = torch.rand(m, generator=generator) < 0.5

    def lower_bound(
        self, scores, *, k_plus: int, k_minus: int | None = None, p: float = 0.05, delta: float = 0.0
    ) -> AuditResult:
        s = torch.as_tensor(np.asarray(scores, dtype=np.float64))
        if s.shape != (self.m,):
            raise InputError(f"scores must have one value per canary ({self.m}). Found shape {tuple(s.shape)}.")
        k_minus = k_plus if k_minus is None else k_minus
        if k_plus + k_minus > self.m:
            raise InputError(f"k_plus + k_minus must be <= m={self.m}. Found {k_plus + k_minus}.")
        order = torch.argsort(s, descending=True)
        guess_in, guess_out = order[:k_plus], order[self.m - k_minus :] if k_minus else order[:0]
        correct = int(self.included[guess_in].sum()) + int((~self.included[guess_out]).sum())
        r = k_plus + k_minus
        eps = eps_lower_bound_one_run(self.m, r, correct, p=p, delta=delta)
        return AuditResult(eps, self.m, r, correct, p, delta)


def audit_dpsgd(
    config,
    *,
    ledger,
    m: int = 1000,
    steps: int = 100,
    k: int | None = None,
    p: float = 0.05,
    seed: int = 0,
) -> AuditResult:
    """White-box one-run audit of :class:`~dpsynth.privacy.dpsgd.DPSGD` with Dirac gradient canaries.

    The dataset is the included canaries; canary j's loss is ``-C * w[j]`` for a linear parameter ``w`` of size m,
    so its per-example gradient is exactly C along coordinate j and nothing else. After ``steps`` SGD steps the score
    of canary j is ``w[j]`` = (C x times sampled + noise) / (q n). Guesses: top k and bottom k scores (default m/10 each).
    The DP-SGD phase is charged to ``ledger`` (phase "audit"); compare the result with ``ledger.epsilon()``.
    """
    from dpsynth.privacy.dpsgd import DPSGD  # local: audit must not make dpsgd import-cyclic

    gen = torch.Generator().manual_seed(seed)
    audit = CanaryAudit(m, generator=gen)
    members = torch.nonzero(audit.included).squeeze(1)
    if len(members) == 0:
        raise InputError("no canary was included; use a larger m. Found 0.")
    model = nn.Linear(m, 1, bias=False)
    nn.init.zeros_(model.weight)
    c = float(config.max_grad_norm)
    rows = torch.eye(m)[members] * c  # private row i is canary members[i]: C times a unit vector

    def loss(model_fn, x):
        return -model_fn(x).sum()

    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    engine = DPSGD(model, opt, config, ledger=ledger, phase="audit", max_steps=steps, generator=gen,
                   n_rows=len(members))
    for idx in engine.batches():
        engine.step(loss, (rows[idx],))
    scores = model.weight.detach().reshape(-1).double()
    k = max(1, m // 10) if k is None else k
    return audit.lower_bound(scores, k_plus=k, k_minus=k, p=p, delta=ledger.delta)
