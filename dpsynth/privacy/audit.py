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
- ``audit_dpsgd``: white-box DP-SGD audit with Dirac gradient canaries (Nasr et al. 2023 "Tight auditing of
  differentially private machine learning"; one-run as Steinke et al.): each canary's clipped gradient is C along its
  own parameter coordinate, the auditor sees every iterate and scores each canary by the likelihood ratio of its
  coordinate's updates. With 100,000 canaries spread over independent runs it catches a claim of epsilon = 1 whose
  noise is half what the ledger assumes (a sensitivity halved by mistake) or whose q is half the real one.

What an audit can and cannot show: ``eps_LB > claimed epsilon`` (with probability >= 1 - p) proves the claim false.
``eps_LB <= claimed`` ("consistent") proves nothing about the claim: it says this attack, at this number of canaries,
did not refute it. ``max_eps_lower_bound`` says how far the audit could have reached at all.
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
    "audit_sanitizer",
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
    """An audit's epsilon lower bound, its raw counts, and the largest bound it could have reached.

    ``max_eps_lower_bound`` is the bound every guess right would give (same m, guesses, p, delta): an audit can only
    refute a claim below it, so an audit whose maximum is below the claim has no power. ``claimed_epsilon`` is the
    ledger's epsilon per canary when the audit ran the mechanism itself (``audit_dpsgd``), else NaN."""

    eps_lower_bound: float
    m: int
    guesses: int
    correct: int
    p: float
    delta: float
    max_eps_lower_bound: float = math.nan
    claimed_epsilon: float = math.nan

    @property
    def exceeds(self) -> bool:
        """The audit refutes the claim (only meaningful when ``claimed_epsilon`` is known)."""
        return self.eps_lower_bound > self.claimed_epsilon


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
        return AuditResult(eps, self.m, r, correct, p, delta,
                           max_eps_lower_bound=eps_lower_bound_one_run(self.m, r, r, p=p, delta=delta))


def audit_dpsgd(
    config,
    *,
    ledger,
    m: int = 1000,
    steps: int = 100,
    runs: int = 1,
    k: int | None = None,
    p: float = 0.05,
    seed: int = 0,
    k_minus: int | None = None,
) -> AuditResult:
    """White-box one-run audit of :class:`~dpsynth.privacy.dpsgd.DPSGD` with Dirac gradient canaries.

    Each of ``runs`` independent runs trains a linear parameter ``w`` of size ``m`` by DP-SGD (lr 1) on the
    canaries of that run that are included (each w.p. 1/2): canary j's loss is ``-2C * w[j]``, so its per-example
    gradient is 2C along coordinate j, clipped by DP-SGD to C, and nothing else. The auditor sees every iterate
    (the threat model the accountant assumes) and scores canary j by the log-likelihood ratio of its T
    observations x_t = (w_t[j] - w_{t-1}[j]) * divisor / (sigma C) under "in" (a mixture: shifted by 1/sigma with
    probability q) against "out" (N(0, 1)), with the claimed q and sigma. Guesses: "in" for the top ``k`` and
    "out" for the bottom ``k_minus`` (default ``k``) of all ``runs * m`` scores (default ``k``: M / 300, at least
    10); the bound is ``eps_lower_bound_one_run`` over M = runs * m canaries, valid because each canary touches only
    its own run. An included canary that Poisson sampling never drew scores exactly as an excluded one, so with few
    steps "out" guesses are partly coin flips among ties; ``k_minus=0`` guesses "in" only.

    Power: the score is the optimal test for one canary, so with M = 100,000 canaries (e.g. 50 runs of 2,000) the
    bound reaches about 0.5 for a correct claim of epsilon = 1 (delta = 1e-5) and about 1.2-1.3 when the noise is
    half what the ledger assumes or q twice what it records (true epsilon 2-2.5); see tests/privacy/test_audit.py.
    The construction targets per-example clipping: under batch or microbatch clipping the canaries share one
    clipped aggregate, so each is scaled down and the bound (still valid) has little power.

    The first run is charged to ``ledger`` (phase "audit"); each further run to a fresh ledger with the same
    targets. ``claimed_epsilon`` in the result is the largest of their epsilons.
    """
    from dpsynth.privacy.dpsgd import DPSGD  # local: audit must not make dpsgd import-cyclic

    _check_counts(m=(m, 2), steps=(steps, 1), runs=(runs, 1))
    gen = torch.Generator().manual_seed(seed)
    audit = CanaryAudit(m * runs, generator=gen)
    c, sigma, q = float(config.max_grad_norm), float(config.noise_multiplier), float(config.sample_rate)
    scores = torch.zeros(m * runs, dtype=torch.float64)
    claimed = 0.0
    for run in range(runs):
        run_ledger = _run_ledger(ledger, run)
        included = audit.included[run * m:(run + 1) * m]
        members = torch.nonzero(included).squeeze(1)
        if len(members) == 0:
            raise InputError(f"no canary was included in run {run}; use a larger m. Found m={m}.")
        model = nn.Linear(m, 1, bias=False)
        nn.init.zeros_(model.weight)
        rows = torch.eye(m)[members] * (2.0 * c)  # private row i is canary members[i]: clipped from 2C to C

        def loss(model_fn, x):
            return -model_fn(x).sum()

        opt = torch.optim.SGD(model.parameters(), lr=1.0)
        engine = DPSGD(model, opt, config, ledger=run_ledger, phase="audit", max_steps=steps, generator=gen,
                       n_rows=len(members))
        scale = engine.expected_batch_size / (sigma * c)
        before = torch.zeros(m, dtype=torch.float64)
        run_scores = torch.zeros(m, dtype=torch.float64)
        for idx in engine.batches():
            engine.step(loss, (rows[idx],))
            now = model.weight.detach().reshape(-1).double()
            x = (now - before) * scale
            before = now
            run_scores += _log_likelihood_ratio(x, q, 1.0 / sigma)
        scores[run * m:(run + 1) * m] = run_scores
        claimed = max(claimed, run_ledger.epsilon())
    return _white_box_result(audit, scores, k=k, p=p, delta=ledger.delta, claimed=claimed, k_minus=k_minus)


def audit_sanitizer(
    config,
    *,
    ledger,
    steps: int = 100,
    runs: int = 1,
    k: int | None = None,
    p: float = 0.05,
    seed: int = 0,
) -> AuditResult:
    """White-box one-run audit of :class:`~dpsynth.privacy.sanitizer.GradientSanitizer` with Dirac canaries.

    A run has ``B * N_d`` canaries, one per (shard, row) slot of the :class:`SanitizerConfig` ``config``: canary
    ``j = shard * B + row`` lives in that shard and, when included (w.p. 1/2), puts the gradient ``2C e_j`` into
    that row whenever its shard's discriminator is drawn (clipped by the sanitizer to ``C e_j``). The auditor sees
    every sanitized (B x B N_d) matrix but not which shard was drawn (the event's amplification assumes it secret),
    and scores canary j by the log-likelihood ratio of its observations ``x_t = out_t[row_j, j] / (2 C sigma)``:
    shifted by 1 / (2 sigma) with probability 1 / N_d under "in", N(0, 1) under "out". Guesses and bound as in
    :func:`audit_dpsgd`. A canary moves its row by C (from nothing), half the replace-one sensitivity the ledger
    charges for, so the bound is valid and conservative; with the noise off it separates perfectly.

    The first run is charged to ``ledger`` (phase "audit"); each further run to a fresh ledger with the same
    targets; ``claimed_epsilon`` is the largest of their epsilons."""
    from dpsynth.privacy.sanitizer import GradientSanitizer

    _check_counts(steps=(steps, 1), runs=(runs, 1))
    b, shards = int(config.batch_size), int(config.n_shards)
    m = b * shards
    gen = torch.Generator().manual_seed(seed)
    audit = CanaryAudit(m * runs, generator=gen)
    c, sigma = float(config.max_grad_norm), float(config.noise_multiplier)
    scores = torch.zeros(m * runs, dtype=torch.float64)
    claimed = 0.0
    rows = torch.arange(b)
    for run in range(runs):
        run_ledger = _run_ledger(ledger, run)
        included = audit.included[run * m:(run + 1) * m].reshape(shards, b)
        sanitizer = GradientSanitizer(config, ledger=run_ledger, phase="audit", max_steps=steps, generator=gen)
        run_scores = torch.zeros(m, dtype=torch.float64)
        slot_row = torch.arange(m) % b  # canary j's row
        for shard in sanitizer.steps():
            grad = torch.zeros(b, m)
            grad[rows, shard * b + rows] = 2.0 * c * included[shard].float()
            out = sanitizer.sanitize(grad)
            x = out[slot_row, torch.arange(m)].double() / (2.0 * c * sigma)
            run_scores += _log_likelihood_ratio(x, 1.0 / shards, 1.0 / (2.0 * sigma))
        scores[run * m:(run + 1) * m] = run_scores
        claimed = max(claimed, run_ledger.epsilon())
    return _white_box_result(audit, scores, k=k, p=p, delta=ledger.delta, claimed=claimed)


def _check_counts(**lows: tuple[int, int]) -> None:
    for name, (value, low) in lows.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InputError(f"{name} must be an integer >= {low}. Found {value!r}.")


def _run_ledger(ledger, run: int):
    """The ledger of white-box audit run ``run``: the caller's for the first, a fresh one with its targets after."""
    from dpsynth.privacy.ledger import PrivacyLedger

    if run == 0:
        return ledger
    return PrivacyLedger(target_epsilon=ledger.target_epsilon, target_delta=ledger.target_delta,
                         accountant=ledger.accountant)


def _white_box_result(audit: CanaryAudit, scores: torch.Tensor, *, k: int | None, p: float, delta: float,
                      claimed: float, k_minus: int | None = None) -> AuditResult:
    """Guess "in" for the top k and "out" for the bottom k_minus (default k) scores (default k: M / 300, at least
    10)."""
    k = max(10, audit.m // 300) if k is None else k
    res = audit.lower_bound(scores, k_plus=k, k_minus=k if k_minus is None else k_minus, p=p, delta=delta)
    return AuditResult(res.eps_lower_bound, res.m, res.guesses, res.correct, p, res.delta,
                       max_eps_lower_bound=res.max_eps_lower_bound, claimed_epsilon=claimed)


def _log_likelihood_ratio(x: torch.Tensor, q: float, shift: float) -> torch.Tensor:
    """log[(1 - q) N(x; 0, 1) + q N(x; shift, 1)] - log N(x; 0, 1), computed stably (q = 1: shift*x - shift^2/2)."""
    tilt = shift * x - 0.5 * shift * shift
    if q >= 1.0:
        return tilt
    return torch.logaddexp(torch.full_like(x, math.log1p(-q)), math.log(q) + tilt)
