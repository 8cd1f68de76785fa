"""Membership inference from the released synthetic data alone (no generator access).

Each attack scores target records (higher = "more likely a training member"), fits a decision threshold on
one half of the labelled targets and reports :func:`~dpsynth.attacks.base.membership_result` on the other
half (the held-out half), so the threshold never sees the rows it is judged on. Members are rows of the
training data, non-members rows of a control set from the same population (seed 004 §3.5).

- :class:`ClosestDistanceHamming`, :class:`ClosestDistanceL2` (seed 004 §3.4, TAPAS "closest distance"):
  score = -(distance to the nearest synthetic record); Hamming counts differing attributes, L2 works on
  :class:`~dpsynth.attacks._encoding.TableEncoder` numbers.
- :class:`DensityMIA` (seed 004's kernel estimator; DOMIAS, van Breugel et al. 2023): score =
  log p_syn(x) - log p_ref(x), Gaussian KDEs in a PCA space fitted on the synthetic data; without reference
  data the score is log p_syn(x) alone (the plain kernel-estimator attack).
- :class:`GanLeaksMIA` (Chen et al. 2020, full black-box, with their calibration): score = -(d_syn(x) -
  d_ref(x)), d the L2 distance to the nearest synthetic record and d_ref to the nearest record of a
  reference sample (a reference generator's output, or reference data when no generator is given).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.stats import gaussian_kde

from dpsynth.attacks._encoding import TableEncoder, check_same_columns
from dpsynth.attacks.base import Attack, Result, fit_threshold, membership_result
from dpsynth.errors import InputError

__all__ = [
    "ClosestDistanceHamming",
    "ClosestDistanceL2",
    "DensityMIA",
    "GanLeaksMIA",
    "ScoreMembershipAttack",
    "density_scores",
    "log_density_ratio",
    "nearest_hamming",
    "nearest_l2",
]


def nearest_l2(queries: np.ndarray, pool: np.ndarray, *, chunk: int = 128) -> np.ndarray:
    """Euclidean distance from each query row to its nearest row of ``pool`` (exact, chunked)."""
    pool = np.ascontiguousarray(pool, dtype=np.float64)
    sq_pool = np.einsum("ij,ij->i", pool, pool)
    out = np.empty(len(queries))
    for start in range(0, len(queries), chunk):
        q = np.asarray(queries[start:start + chunk], dtype=np.float64)
        d2 = np.einsum("ij,ij->i", q, q)[:, None] + sq_pool[None, :] - 2.0 * q @ pool.T
        out[start:start + chunk] = np.sqrt(np.maximum(d2.min(axis=1), 0.0))
    return out


def nearest_hamming(queries: np.ndarray, pool: np.ndarray, *, chunk: int = 64) -> np.ndarray:
    """Number of differing attributes between each query row and its nearest row of ``pool``."""
    out = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), chunk):
        q = queries[start:start + chunk]
        diff = (q[:, None, :] != pool[None, :, :]).sum(axis=2)
        out[start:start + chunk] = diff.min(axis=1)
    return out


class ScoreMembershipAttack(Attack):
    """Shared machinery: targets, held-out threshold, standard metrics. Subclasses implement ``_scores``."""

    kind: ClassVar[str] = "membership"
    needs_reference: ClassVar[bool] = False

    def __init__(
        self,
        members: pd.DataFrame,
        non_members: pd.DataFrame,
        synthetic: pd.DataFrame,
        *,
        reference: pd.DataFrame | None = None,
        fit_fraction: float = 0.5,
        confidence: float = 0.95,
        seed: int | None = None,
    ) -> None:
        check_same_columns(synthetic, members, non_members, names=("members", "non_members"))
        if reference is not None:
            check_same_columns(synthetic, reference, names=("reference",))
        if len(members) < 2 or len(non_members) < 2:
            raise InputError(f"Need at least 2 members and 2 non-members. Found {len(members)} and {len(non_members)}.")
        if not 0.0 < fit_fraction < 1.0:
            raise InputError(f"fit_fraction must be in (0, 1). Found {fit_fraction}.")
        cols = list(synthetic.columns)
        self.members, self.non_members = members[cols], non_members[cols]
        self.synthetic = synthetic
        self.reference = None if reference is None else reference[cols]
        self.fit_fraction, self.confidence, self.seed = fit_fraction, confidence, seed

    def scores(self) -> tuple[np.ndarray, np.ndarray]:
        """(labels, scores) for all targets: members first (label 1), then non-members (label 0)."""
        targets = pd.concat([self.members, self.non_members], ignore_index=True)
        labels = np.r_[np.ones(len(self.members), bool), np.zeros(len(self.non_members), bool)]
        return labels, np.asarray(self._scores(TableEncoder(self.synthetic), targets), dtype=float)

    def evaluate(self) -> Result:
        labels, scores = self.scores()
        rng = np.random.default_rng(self.seed)
        fit = np.zeros(len(labels), dtype=bool)
        for cls in (True, False):  # stratified split
            idx = np.flatnonzero(labels == cls)
            fit[rng.choice(idx, size=max(1, round(self.fit_fraction * len(idx))), replace=False)] = True
        if fit.all() or not (labels[~fit].any() and (~labels[~fit]).any()):
            raise InputError("Too few targets to hold out members and non-members; give more targets.")
        threshold = fit_threshold(scores[fit], labels[fit])
        held = ~fit
        decisions = scores[held] >= threshold
        return membership_result(
            self.name, labels[held], decisions, scores[held], confidence=self.confidence,
            notes=f"threshold fitted on {int(fit.sum())} held-out targets, evaluated on {int(held.sum())}",
            details={"threshold": threshold},
        )

    def _scores(self, encoder: TableEncoder, targets: pd.DataFrame) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


class ClosestDistanceHamming(ScoreMembershipAttack):
    """Closest distance, Hamming: members tend to have a synthetic record that agrees on more attributes."""

    name: ClassVar[str] = "closest_distance_hamming"

    def _scores(self, encoder: TableEncoder, targets: pd.DataFrame) -> np.ndarray:
        syn_codes, tgt_codes = encoder.codes(self.synthetic, targets)
        return -nearest_hamming(tgt_codes, syn_codes).astype(float)


class ClosestDistanceL2(ScoreMembershipAttack):
    """Closest distance, L2 on the encoded table (numbers scaled to [0, 1], categories one-hot)."""

    name: ClassVar[str] = "closest_distance_l2"

    def _scores(self, encoder: TableEncoder, targets: pd.DataFrame) -> np.ndarray:
        return -nearest_l2(encoder.numeric_matrix(targets), encoder.numeric_matrix(self.synthetic))


class DensityMIA(ScoreMembershipAttack):
    """DOMIAS-style density ratio p_syn / p_ref (kernel estimator when no reference is given)."""

    name: ClassVar[str] = "density"

    def __init__(self, *args, n_components: int = 8, max_kde_rows: int = 50_000, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.n_components, self.max_kde_rows = n_components, max_kde_rows

    def _scores(self, encoder: TableEncoder, targets: pd.DataFrame) -> np.ndarray:
        return density_scores(encoder, self.synthetic, targets, reference=self.reference,
                              n_components=self.n_components, max_rows=self.max_kde_rows,
                              seed=None if self.seed is None else self.seed + 1)


class GanLeaksMIA(ScoreMembershipAttack):
    """GAN-Leaks full black-box (nearest generated sample), calibrated by a reference sample when given."""

    name: ClassVar[str] = "gan_leaks"

    def _scores(self, encoder: TableEncoder, targets: pd.DataFrame) -> np.ndarray:
        x = encoder.numeric_matrix(targets)
        score = -nearest_l2(x, encoder.numeric_matrix(self.synthetic))
        if self.reference is not None and len(self.reference) > 0:
            score = score + nearest_l2(x, encoder.numeric_matrix(self.reference))
        return score


def density_scores(encoder: TableEncoder, synthetic: pd.DataFrame, targets: pd.DataFrame, *,
                   reference: pd.DataFrame | None = None, n_components: int = 8, max_rows: int = 50_000,
                   seed: int | None = None) -> np.ndarray:
    """log p_syn(x) - log p_ref(x) (log p_syn(x) without reference): Gaussian KDEs in a PCA space of the synthetic
    data (at most ``n_components`` axes, ``max_rows`` rows per density)."""
    rng = np.random.default_rng(seed)
    syn = encoder.numeric_matrix(_subsample(synthetic, max_rows, rng))
    ref = None
    if reference is not None:
        ref = encoder.numeric_matrix(_subsample(reference, max_rows, rng))
    return log_density_ratio(syn, encoder.numeric_matrix(targets), ref, n_components=n_components)


def log_density_ratio(syn: np.ndarray, targets: np.ndarray, ref: np.ndarray | None = None, *,
                      n_components: int = 8, select_bandwidth: bool = True) -> np.ndarray:
    """:func:`density_scores` on encoded matrices (the PCA basis is the synthetic data's). Without
    ``select_bandwidth`` the KDEs use Scott's rule (one fit instead of seven: the audit scores hundreds of fits)."""
    mean = syn.mean(axis=0)
    _, sv, vt = np.linalg.svd(syn - mean, full_matrices=False)
    keep = min(n_components, int((sv > 1e-6 * max(sv.max(initial=0.0), 1e-12)).sum()))
    if keep == 0:
        raise InputError("The synthetic data has no variation: a density attack is not possible.")
    basis = vt[:keep].T
    def project(m):
        return ((m - mean) @ basis).T
    kde = _kde if select_bandwidth else _scott_kde
    log_p = kde(project(syn)).logpdf(project(targets))
    if ref is not None and len(ref) > keep + 1:
        log_p = log_p - kde(project(ref)).logpdf(project(targets))
    return log_p


def _subsample(df: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    if len(df) <= n:
        return df
    return df.iloc[np.sort(rng.choice(len(df), size=n, replace=False))]


def _kde(points: np.ndarray, *, seed: int = 0) -> gaussian_kde:
    """Gaussian KDE whose bandwidth factor maximises the held-out likelihood (20% of <= 5,000 points)."""
    rng = np.random.default_rng(seed)
    points = points + rng.normal(scale=1e-4, size=points.shape)  # keeps the covariance invertible
    sub = points[:, rng.permutation(points.shape[1])[:5000]]  # the bandwidth is chosen on <= 5,000 points
    n_held = max(1, sub.shape[1] // 5)
    best, best_ll = None, -np.inf
    for factor in _BANDWIDTHS:
        ll = float(np.mean(gaussian_kde(sub[:, n_held:], bw_method=factor).logpdf(sub[:, :n_held])))
        if ll > best_ll:
            best, best_ll = factor, ll
    return gaussian_kde(points, bw_method=best)


def _scott_kde(points: np.ndarray, *, seed: int = 0) -> gaussian_kde:
    rng = np.random.default_rng(seed)
    return gaussian_kde(points + rng.normal(scale=1e-4, size=points.shape))  # jitter: invertible covariance


_BANDWIDTHS = (0.02, 0.05, 0.1, 0.2, 0.4, 0.8)
