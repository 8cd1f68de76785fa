"""Mode-specific normalisation (CTGAN; CTAB-GAN+ as used by seed 000 §4.2, eqs. 6-7), fitted on DP statistics.

A variational (Dirichlet-process) Gaussian mixture ``sum_k w_k N(mu_k, sigma_k)`` with at most ``max_modes``
components models the continuous part of a column. A value ``x`` is encoded as the one-hot of a mode ``k``
and ``alpha = (x - mu_k) / (4 sigma_k)`` clipped to [-1, 1] (eq. 7); decoding is
``x = mu_k + 4 sigma_k alpha``.

Choosing the mode: with an ``rng``, ``k`` is drawn from the posterior ``p(k | x)`` as CTGAN does; without
one, the mode of highest posterior density is used (seed 000 §4.2). Both choose only among modes with
``|x - mu_k| <= 4 sigma_k``, so ``alpha`` is never clipped; when the fitted modes leave part of the public
range uncovered, a broad background mode (mean at the centre of the range, sigma = range / 8, weight 0.005)
is added at fit time, so encoding is invertible (up to float32 precision) for every in-bound value.

Fitting (DESIGN.md §1 rules 2 and 5): ``fit_hist`` fits the variational mixture (:func:`weighted_vgm`, the
updates of scikit-learn's ``BayesianGaussianMixture`` with a Dirichlet-process prior, concentration 1e-3)
directly on the bins of a DP histogram: each bin is a point at its centre, weighted by its noisy count and
carrying the within-bin variance ``width^2 / 12``. Counts are rescaled to an effective sample size of 1,000
(the prior's strength relative to the data, which keeps the number of modes small, as a subsample would).
Components that describe the same mode (means within a quarter sigma, sigmas within a factor 1.5) are then
merged by moment matching (:func:`merge_redundant`). All of this is a function of the DP histogram only,
i.e. post-processing; no private row is read. ``fit_values`` (non-private mode only) runs the same fit on an
exact 512-bin histogram of the values, so the non-private reference differs from the DP fit only by the
noise. Bins are rescaled to [0, 1] by the public bounds before fitting so covariance regularisation is
relative to the column's range. Components with weight below 0.005 are dropped (as CTGAN does); ``sigma_k``
is floored at 1e-3 of the range.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpsynth.data.transformers.scalers import ContinuousEncoder
from dpsynth.errors import InputError

__all__ = ["ModeSpecificEncoder", "weighted_vgm", "merge_redundant"]


class ModeSpecificEncoder(ContinuousEncoder):
    """Variational-GMM mode-specific normalisation; see the module docstring."""

    name = "mode_specific"
    weight_threshold = 0.005
    effective_size = 1000.0
    exact_bins = 512

    def __init__(self, lo: float, hi: float, *, max_modes: int = 10) -> None:
        super().__init__(lo, hi)
        self.max_modes = int(max_modes)
        self.means = np.array([(self.lo + self.hi) / 2.0])
        self.stds = np.array([max((self.hi - self.lo) / 4.0, self._sigma_floor())])
        self.weights = np.ones(1)

    def _sigma_floor(self) -> float:
        return 1e-3 * (self.hi - self.lo) if self.hi > self.lo else 1.0

    # ------------------------------------------------------------------ fit
    @property
    def n_modes(self) -> int:
        return len(self.means)

    def mode_weights(self) -> np.ndarray:
        return self.weights.copy()

    def fit_hist(self, edges, counts, *, rng):
        span = self.hi - self.lo
        if counts.sum() <= 0:  # no surviving mass: uniform proxy over the bounds
            counts = np.diff(edges) if span > 0 else np.ones(len(counts))
        z = (edges - self.lo) / span if span > 0 else np.zeros_like(edges)  # [0, 1]: regularise relative to range
        centres, var = (z[:-1] + z[1:]) / 2.0, np.diff(z) ** 2 / 12.0
        counts = counts * (self.effective_size / counts.sum())
        if span <= 0 or self.max_modes == 1:
            mean = float(counts @ centres / counts.sum())
            weights, means = np.ones(1), np.array([mean])
            variances = np.array([float(counts @ ((centres - mean) ** 2 + var) / counts.sum())])
        else:
            weights, means, variances = weighted_vgm(centres, counts, var, n_components=self.max_modes)
            keep = weights > self.weight_threshold
            weights, means, variances = merge_redundant(weights[keep], means[keep], variances[keep])
        self._set_modes(weights, means * span + self.lo, np.sqrt(variances) * span)

    def fit_values(self, x, *, rng):
        if self.hi <= self.lo:
            self.fit_hist(np.array([self.lo, self.hi]), np.array([float(len(x))]), rng=rng)
            return
        edges = np.linspace(self.lo, self.hi, self.exact_bins + 1)
        counts, _ = np.histogram(np.asarray(x, dtype=float), bins=edges)
        self.fit_hist(edges, counts.astype(float), rng=rng)

    def _set_modes(self, weights: np.ndarray, means: np.ndarray, stds: np.ndarray) -> None:
        """Keep components above the weight threshold, sorted by mean, with floored sigmas."""
        keep = weights > self.weight_threshold
        if not keep.any():
            keep = weights == weights.max()
        order = np.argsort(means[keep])
        self.means = means[keep][order]
        self.stds = np.maximum(stds[keep][order], self._sigma_floor())
        w = weights[keep][order]
        self.weights = w / w.sum()
        if self.hi > self.lo and not self._covers_range():
            # a broad background mode so that every in-bound value has a mode within 4 sigma (invertibility)
            self.means = np.append(self.means, (self.lo + self.hi) / 2.0)
            self.stds = np.append(self.stds, (self.hi - self.lo) / 8.0)
            self.weights = np.append(self.weights, self.weight_threshold)
            self.weights /= self.weights.sum()

    def _covers_range(self) -> bool:
        """True when the union of ``[mu_k - 4 sigma_k, mu_k + 4 sigma_k]`` contains ``[lo, hi]``."""
        starts, ends = self.means - 4.0 * self.stds, self.means + 4.0 * self.stds
        order = np.argsort(starts)
        reach = self.lo
        for start, end in zip(starts[order], ends[order]):
            if start > reach:
                return False
            reach = max(reach, end)
        return reach >= self.hi

    # ------------------------------------------------------------------ encode / decode
    def log_posterior(self, x: np.ndarray) -> np.ndarray:
        """Unnormalised ``log p(k | x)`` restricted to covering modes (``|x - mu_k| <= 4 sigma_k``) when any."""
        z = (x[:, None] - self.means[None, :]) / self.stds[None, :]
        logp = np.log(np.maximum(self.weights, 1e-300))[None, :] - np.log(self.stds)[None, :] - 0.5 * z * z
        covered = np.abs(z) <= 4.0
        any_cover = covered.any(axis=1, keepdims=True)
        return np.where(covered | ~any_cover, logp, -np.inf)

    def encode(self, x, *, rng=None):
        if self.n_modes == 1:
            mode = np.zeros(len(x), dtype=np.intp)
        else:
            logp = self.log_posterior(x)
            if rng is not None:  # Gumbel-max: a draw from the posterior, vectorised
                logp = logp + rng.gumbel(size=logp.shape)
            mode = np.argmax(logp, axis=1)
        alpha = (x - self.means[mode]) / (4.0 * self.stds[mode])
        return np.clip(alpha, -1.0, 1.0), mode

    def decode(self, alpha, mode):
        return self.means[mode] + 4.0 * self.stds[mode] * np.clip(alpha, -1.0, 1.0)

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict[str, Any]:
        return {
            "max_modes": self.max_modes,
            "means": [float(v) for v in self.means],
            "stds": [float(v) for v in self.stds],
            "weights": [float(v) for v in self.weights],
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.max_modes = int(state.get("max_modes", self.max_modes))
        self.means = np.asarray(state["means"], dtype=float)
        self.stds = np.asarray(state["stds"], dtype=float)
        self.weights = np.asarray(state["weights"], dtype=float)
        sizes = {len(self.means), len(self.stds), len(self.weights)}
        if len(sizes) != 1 or not len(self.means) or not np.all(np.isfinite(self.means)) or not np.all(self.stds > 0):
            raise InputError(
                "Mode-specific state needs equal-length, non-empty means / stds / weights with finite means "
                f"and positive stds. Found {len(self.means)} / {len(self.stds)} / {len(self.weights)}."
            )


def weighted_vgm(
    x: np.ndarray,
    counts: np.ndarray,
    within_var: np.ndarray,
    *,
    n_components: int,
    concentration: float = 1e-3,
    reg_covar: float = 1e-6,
    max_iter: int = 200,
    tol: float = 1e-8,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Variational Bayesian 1-D Gaussian mixture with a Dirichlet-process (stick-breaking) prior, fitted on
    weighted points: ``counts[i]`` observations spread over a bin with centre ``x[i]`` and variance
    ``within_var[i]`` (``width^2 / 12`` for a uniform bin). Returns ``(weights, means, variances)``.

    The updates are those of scikit-learn's ``BayesianGaussianMixture`` (Bishop 2006 §10.2; Blei & Jordan
    2006 for the stick-breaking weights) with its default priors (mean prior = data mean, mean precision 1,
    one degree of freedom, covariance prior = data variance), each point's sufficient statistics weighted by
    its count and its second moment including the within-bin variance. Deterministic: components start from
    equal-mass quantile groups of the histogram.
    """
    from scipy.special import digamma

    w = np.clip(np.asarray(counts, dtype=float), 0.0, None)
    total = w.sum()
    k = max(1, min(int(n_components), int(np.count_nonzero(w))))
    m0 = float(w @ x / total)
    c0 = float(w @ ((x - m0) ** 2 + within_var) / total) + reg_covar
    cdf = (np.cumsum(w) - w / 2.0) / total
    resp = np.zeros((len(x), k))
    resp[np.arange(len(x)), np.minimum((cdf * k).astype(np.intp), k - 1)] = 1.0
    previous = None
    for _ in range(max_iter):
        wr = w[:, None] * resp
        nk = wr.sum(axis=0) + 10 * np.finfo(float).eps
        xk = (wr * x[:, None]).sum(axis=0) / nk
        sk = (wr * ((x[:, None] - xk) ** 2 + within_var[:, None])).sum(axis=0) / nk + reg_covar
        a = 1.0 + nk
        b = concentration + np.concatenate([np.cumsum(nk[::-1])[-2::-1], [0.0]])
        beta = 1.0 + nk
        m = (m0 + nk * xk) / beta
        nu = 1.0 + nk
        c = c0 + nk * sk + nk / beta * (xk - m0) ** 2
        state = np.concatenate([nk / total, m])
        if previous is not None and np.max(np.abs(state - previous)) < tol:
            break
        previous = state
        dab = digamma(a + b)
        e_log_pi = digamma(a) - dab + np.concatenate([[0.0], np.cumsum(digamma(b) - dab)[:-1]])
        e_log_lambda = digamma(nu / 2.0) + np.log(2.0) - np.log(c)
        quad = 1.0 / beta + nu * ((x[:, None] - m) ** 2 + within_var[:, None]) / c
        log_rho = e_log_pi + 0.5 * e_log_lambda - 0.5 * np.log(2.0 * np.pi) - 0.5 * quad
        log_rho -= log_rho.max(axis=1, keepdims=True)
        resp = np.exp(log_rho)
        resp /= resp.sum(axis=1, keepdims=True)
    stick = a / (a + b)
    weights = stick * np.concatenate([[1.0], np.cumprod(1.0 - stick)[:-1]])
    return weights / weights.sum(), m, c / nu


def merge_redundant(
    weights: np.ndarray, means: np.ndarray, variances: np.ndarray, *, max_shift: float = 0.25, max_ratio: float = 1.5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge neighbouring components that describe the same mode (variational fits split a mode slowly).

    Two components (adjacent by mean) are merged by moment matching when their means differ by less than
    ``max_shift`` times the smaller sigma and their sigmas differ by less than a factor ``max_ratio``.
    """
    order = np.argsort(means)
    w, m, v = list(weights[order]), list(means[order]), list(variances[order])
    i = 0
    while i < len(w) - 1:
        s_lo, s_hi = sorted((np.sqrt(v[i]), np.sqrt(v[i + 1])))
        if abs(m[i + 1] - m[i]) < max_shift * s_lo and s_hi < max_ratio * s_lo:
            total = w[i] + w[i + 1]
            mean = (w[i] * m[i] + w[i + 1] * m[i + 1]) / total
            second = (w[i] * (v[i] + m[i] ** 2) + w[i + 1] * (v[i + 1] + m[i + 1] ** 2)) / total
            w[i], m[i], v[i] = total, mean, max(second - mean**2, 0.0)
            del w[i + 1], m[i + 1], v[i + 1]
            i = max(i - 1, 0)
        else:
            i += 1
    return np.array(w), np.array(m), np.array(v)
