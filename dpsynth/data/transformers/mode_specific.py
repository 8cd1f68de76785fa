"""Mode-specific normalisation (CTGAN; CTAB-GAN+ as used by seed 000 §4.2, eqs. 6-7), fitted on DP statistics.

A variational (Dirichlet-process) Gaussian mixture ``sum_k w_k N(mu_k, sigma_k)`` with at most ``max_modes``
components models the continuous part of a column. A value ``x`` is encoded as the one-hot of a mode ``k``
and ``alpha = (x - mu_k) / (4 sigma_k)`` clipped to [-1, 1] (eq. 7); decoding is
``x = mu_k + 4 sigma_k alpha``.

Choosing the mode: with an ``rng``, ``k`` is drawn from the posterior ``p(k | x)`` as CTGAN does; without
one, the mode of highest posterior density is used (seed 000 §4.2). Both choose only among modes with
``|x - mu_k| <= 4 sigma_k`` when there is one, so ``alpha`` is not clipped and encoding is invertible for
every in-bound value a mode covers.

Fitting (DESIGN.md §1 rule 2 and 5): ``fit_hist`` draws points uniformly within the bins of a DP histogram
in proportion to its noisy counts and fits scikit-learn's ``BayesianGaussianMixture`` on them — a function of
the DP histogram only, i.e. post-processing; no private row is read. ``fit_values`` fits on (a subsample of)
exact private values, as CTGAN does, and is used only in non-private mode. Points are rescaled to [0, 1]
before fitting so the mixture's covariance regularisation is relative to the column's public range.
Components with weight below 0.005 are dropped (as CTGAN does); ``sigma_k`` is floored at 1e-3 of the range.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dpsynth.data.transformers.scalers import ContinuousEncoder, draw_from_hist

__all__ = ["ModeSpecificEncoder"]


class ModeSpecificEncoder(ContinuousEncoder):
    """Variational-GMM mode-specific normalisation; see the module docstring."""

    name = "mode_specific"
    weight_threshold = 0.005
    hist_points = 5000
    max_exact_points = 20000

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
        if counts.sum() <= 0:
            counts = np.diff(edges)  # no surviving mass: uniform proxy over the bounds
        self._fit_points(draw_from_hist(edges, counts, self.hist_points, rng), rng)

    def fit_values(self, x, *, rng):
        x = np.asarray(x, dtype=float)
        if len(x) > self.max_exact_points:
            x = rng.choice(x, self.max_exact_points, replace=False)
        self._fit_points(x, rng)

    def _fit_points(self, x: np.ndarray, rng: np.random.Generator) -> None:
        span = self.hi - self.lo
        if span <= 0 or len(x) < 2 or self.max_modes == 1 or np.ptp(x) <= 0:
            centre = float(np.mean(x)) if len(x) else (self.lo + self.hi) / 2.0
            self.means = np.array([centre])
            self.stds = np.array([max(float(np.std(x)) if len(x) else 0.0, self._sigma_floor())])
            self.weights = np.ones(1)
            return
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.mixture import BayesianGaussianMixture

        z = ((x - self.lo) / span).reshape(-1, 1)
        gmm = BayesianGaussianMixture(
            n_components=min(self.max_modes, len(np.unique(z))),
            weight_concentration_prior_type="dirichlet_process",
            weight_concentration_prior=0.001,
            max_iter=100,
            n_init=1,
            random_state=int(rng.integers(2**31 - 1)),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gmm.fit(z)
        keep = gmm.weights_ > self.weight_threshold
        if not keep.any():
            keep = gmm.weights_ == gmm.weights_.max()
        means = gmm.means_[keep, 0] * span + self.lo
        stds = np.sqrt(gmm.covariances_.reshape(-1)[keep]) * span
        order = np.argsort(means)
        self.means = means[order]
        self.stds = np.maximum(stds[order], self._sigma_floor())
        w = gmm.weights_[keep][order]
        self.weights = w / w.sum()

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
