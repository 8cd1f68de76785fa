"""PATE aggregation: noisy argmax of teacher votes (Papernot et al. 2017 LNMax; 2018 GNMax), for PATE-GAN.

Neighbouring relation: add/remove one record. Teachers are trained on DISJOINT partitions of the private rows
(``teacher_partition``, fixed by each row's index), so a record can change only its own teacher's vote: the vote
histogram of one query changes by -1 in one class and +1 in another, i.e. L1 sensitivity 2 and L2 sensitivity
sqrt(2).

Accounting is data-independent (we do not use PATE's data-dependent smooth-sensitivity analysis, which would need
its own privacy cost to release): each answered query is the Laplace / Gaussian mechanism on the histogram, and the
argmax is post-processing.
- Laplace noise of scale b per count: ``LaplaceDpEvent(b / 2)`` (noise scale / L1 sensitivity), i.e. 2/b-DP per query.
- Gaussian noise of std s per count: ``GaussianDpEvent(s / sqrt(2))``.
``noisy_argmax`` charges all queries to the ledger (BudgetExceededError, nothing released) before drawing noise;
a training loop passes a :class:`~dpsynth.privacy.ledger.StepAllowance` of the query's event instead of the ledger
(the composition is done once, when the allowance is granted; each query is then recorded in O(1)).

Soft votes (``noisy_vote_sum``): each teacher answers a query with a score in [0, 1] (its probability that the row
is real) and the release is the sum of the scores plus Gaussian noise of std s. One record changes one teacher, hence
one score, by at most 1: L2 sensitivity 1, ``GaussianDpEvent(s)`` per query. Scores clipped to [0, 1] before the sum
(the sensitivity holds whatever a teacher outputs).

Under ``noise="secure"`` (:mod:`dpsynth.privacy.secure_noise`) the Gaussian argmax adds OpenDP's discrete Gaussian
of parameter s to the integer vote counts, recorded as two ``DiscreteGaussianDpEvent(s)`` a query (the two counts a
record moves by one each; zCDP ``2 / (2 s^2)``, the continuous curve) and breaks ties between classes uniformly at
random; the soft vote sums add the cryptographic generator's normals. The Laplace argmax is refused there.
"""

from __future__ import annotations

import math

import torch
from dp_accounting import dp_event

from dpsynth.errors import BudgetExceededError, InputError, PrivacyError
from dpsynth.privacy.events import DiscreteGaussianDpEvent
from dpsynth.privacy.ledger import PrivacyLedger, StepAllowance
from dpsynth.privacy.secure_noise import discrete_gaussian, noise_mode, secure_normal, secure_uniform

__all__ = ["teacher_partition", "teacher_votes", "pate_event", "noisy_argmax", "noisy_vote_sum", "L1_SENSITIVITY",
           "L2_SENSITIVITY"]

L1_SENSITIVITY = 2.0
L2_SENSITIVITY = math.sqrt(2.0)


def teacher_partition(n_rows: int, n_teachers: int, generator: torch.Generator) -> torch.Tensor:
    """Row i goes to teacher ``out[i]``, drawn i.i.d. uniformly (disjoint by construction, fixed by the seed).

    Independent draws (not a balanced split) keep every other row's teacher unchanged in distribution when one row is
    added or removed, as the add/remove analysis needs."""
    if not (1 <= n_teachers <= n_rows):
        raise InputError(f"n_teachers must be in [1, n_rows={n_rows}]. Found {n_teachers!r}.")
    return torch.randint(n_teachers, (n_rows,), generator=generator)


def teacher_votes(predictions: torch.Tensor, n_classes: int) -> torch.Tensor:
    """(n_teachers, n_queries) predicted labels -> (n_queries, n_classes) vote counts."""
    if predictions.dim() != 2:
        raise InputError(f"predictions must be (n_teachers, n_queries). Found shape {tuple(predictions.shape)}.")
    labels = predictions.long()
    if labels.numel() and (labels.min() < 0 or labels.max() >= n_classes):
        raise InputError(f"teacher labels must be in [0, {n_classes}). Found range [{labels.min()}, {labels.max()}].")
    one_hot = torch.nn.functional.one_hot(labels, n_classes)  # (T, Q, K)
    return one_hot.sum(0).to(torch.float64)


def pate_event(mechanism: str, noise_scale: float) -> dp_event.DpEvent:
    """Event of one answered query: Laplace scale b -> LaplaceDpEvent(b/2); Gaussian std s ->
    GaussianDpEvent(s/sqrt 2); under ``noise="secure"`` the Gaussian's two vote counts each get a discrete Gaussian
    of parameter s and move by one: two ``DiscreteGaussianDpEvent(s)``."""
    if not (0 < noise_scale < math.inf):
        raise InputError(f"noise_scale must be a finite number > 0. Found {noise_scale!r}.")
    if mechanism == "laplace":
        return dp_event.LaplaceDpEvent(noise_scale / L1_SENSITIVITY)
    if mechanism == "gaussian" and noise_mode() == "secure":
        return dp_event.SelfComposedDpEvent(DiscreteGaussianDpEvent(float(noise_scale)), 2)
    if mechanism == "gaussian":
        return dp_event.GaussianDpEvent(noise_scale / L2_SENSITIVITY)
    raise InputError(f"mechanism must be 'laplace' or 'gaussian'. Found {mechanism!r}.")


def noisy_argmax(
    votes: torch.Tensor,
    *,
    mechanism: str,
    noise_scale: float,
    ledger: PrivacyLedger | StepAllowance,
    phase: str,
    generator: torch.Generator,
) -> torch.Tensor:
    """Noisy-argmax label of each query row of ``votes`` (n_queries, n_classes); charged before noise is drawn."""
    if votes.dim() != 2:
        raise InputError(f"votes must be (n_queries, n_classes). Found shape {tuple(votes.shape)}.")
    event = pate_event(mechanism, noise_scale)
    secure = noise_mode() == "secure"
    if secure and mechanism != "gaussian":
        raise InputError("noise='secure' answers PATE's queries with the Gaussian noisy argmax (discrete Gaussian "
                         f"votes). Found mechanism={mechanism!r}.")
    n_queries = int(votes.shape[0])
    _charge(ledger, event, n_queries, phase=phase, mechanism=f"pate-{mechanism}-argmax", noise_scale=noise_scale)
    if secure:
        noisy = discrete_gaussian(votes.detach().to(torch.float64).numpy(), noise_scale)
        # integer noisy counts can tie: a uniform offset in [0, 1/2) breaks ties at random, keeps every strict order
        return torch.from_numpy(noisy + 0.5 * secure_uniform(noisy.size).reshape(noisy.shape)).argmax(dim=1)
    if mechanism == "laplace":
        # Laplace(0, b) = b * (Exp(1) - Exp(1)), drawn from the seeded generator
        e1 = torch.empty(votes.shape, dtype=torch.float64).exponential_(1.0, generator=generator)
        e2 = torch.empty(votes.shape, dtype=torch.float64).exponential_(1.0, generator=generator)
        noise = noise_scale * (e1 - e2)
    else:
        noise = torch.normal(0.0, noise_scale, size=votes.shape, generator=generator, dtype=torch.float64)
    return (votes.to(torch.float64) + noise).argmax(dim=1)


def noisy_vote_sum(
    scores: torch.Tensor,
    *,
    noise_scale: float,
    ledger: PrivacyLedger | StepAllowance,
    phase: str,
    generator: torch.Generator,
) -> torch.Tensor:
    """Soft votes (module docstring): ``scores`` (n_teachers, n_queries), clipped to [0, 1], summed per query, plus
    Gaussian noise of std ``noise_scale``; every query charged as ``GaussianDpEvent(noise_scale)`` before the noise is
    drawn (BudgetExceededError, nothing released, if over the target)."""
    if scores.dim() != 2:
        raise InputError(f"scores must be (n_teachers, n_queries). Found shape {tuple(scores.shape)}.")
    if not (0 < noise_scale < math.inf):
        raise InputError(f"noise_scale must be a finite number > 0. Found {noise_scale!r}.")
    n_queries = int(scores.shape[1])
    _charge(ledger, dp_event.GaussianDpEvent(noise_scale), n_queries, phase=phase, mechanism="pate-gaussian-vote-sum",
            noise_scale=noise_scale)
    total = scores.detach().to(torch.float64).clamp(0.0, 1.0).sum(0)
    if noise_mode() == "secure":
        return total + torch.from_numpy(secure_normal(tuple(total.shape), noise_scale))
    return total + torch.normal(0.0, noise_scale, size=total.shape, generator=generator, dtype=torch.float64)


def _charge(ledger: PrivacyLedger | StepAllowance, event: dp_event.DpEvent, n_queries: int, *, phase: str,
            mechanism: str, **params) -> None:
    """Record ``n_queries`` runs of ``event`` before any answer is released: on a ledger (composed now), or on a
    training loop's :class:`StepAllowance` of that very event (O(1) per query: the composition was done when the
    allowance was granted). Over the budget: BudgetExceededError, nothing recorded."""
    if isinstance(ledger, StepAllowance):
        if ledger.entry.event != event:
            raise PrivacyError(f"this allowance is for {ledger.entry.event}, not for the query's {event}.")
        if ledger.remaining < n_queries:
            raise BudgetExceededError(f"{mechanism} in phase '{phase}': {n_queries} queries asked, "
                                      f"{ledger.remaining} left in the allowance.")
        for _ in range(n_queries):
            ledger.take()
        return
    ledger.spend(event, phase=phase, mechanism=mechanism, count=n_queries, **params)
