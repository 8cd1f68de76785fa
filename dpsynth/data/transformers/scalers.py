"""Encoders of the continuous part of a numeric column: min-max, standard and quantile scaling.

Each encoder works in the column's *model space* (the raw value, or ``log(x - lower + 1)`` for long-tail
columns) on values already clipped to the public bounds ``[lo, hi]`` of that space. It maps a value to
``(alpha, mode)``: a normalised value and the index of the mixture mode used (always 0 here; see
:mod:`~dpsynth.data.transformers.mode_specific` for several modes).

- ``minmax``: ``alpha = 2 (x - lo) / (hi - lo) - 1`` from the public bounds only (no statistics).
- ``standard``: ``alpha = (x - mean) / std`` with mean and std of the DP histogram (bin centres plus the
  within-bin variance ``width^2 / 12``); unbounded, so its span has activation ``linear``.
- ``quantile``: ``alpha = 2 F(x) - 1`` with ``F`` the piecewise-linear CDF of the DP histogram (mixed with
  1e-3 of uniform mass so that it is strictly increasing and invertible).

Guarantees: state comes only from the public bounds and a DP histogram; ``fit_values`` (exact statistics
of private values) is used only in non-private mode.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

__all__ = ["ContinuousEncoder", "MinMaxEncoder", "StandardEncoder", "QuantileEncoder", "clean_hist"]


def clean_hist(edges: np.ndarray, counts: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Clip bin edges to ``[lo, hi]``; fold the mass of bins that collapse (zero width) into a neighbour.

    Counts are made finite and non-negative (post-processing of noisy counts).
    """
    edges = np.clip(np.asarray(edges, dtype=float), lo, hi)
    counts = np.asarray(counts, dtype=float)
    counts = np.where(np.isfinite(counts), np.clip(counts, 0.0, None), 0.0)
    if hi <= lo or len(edges) < 2:
        return np.array([lo, hi]), np.array([counts.sum()])
    width = np.diff(edges)
    keep = width > 0
    if not keep.all():
        kept_idx = np.flatnonzero(keep)
        # each dropped bin goes to the nearest kept bin (its mass sits at a bound, next to that bin)
        nearest = kept_idx[np.clip(np.searchsorted(kept_idx, np.arange(len(counts))), 0, len(kept_idx) - 1)]
        folded = np.bincount(nearest, weights=counts, minlength=len(counts))
        counts = folded[keep]
        edges = np.concatenate([edges[:-1][keep], [edges[1:][keep][-1]]])
    # bins outside [lo, hi] that were clipped into it keep their mass inside the bounds
    return edges, counts


class ContinuousEncoder(ABC):
    """(alpha, mode) encoder of values in ``[lo, hi]``; see the module docstring."""

    name: ClassVar[str] = ""
    activation: ClassVar[str] = "tanh"

    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi = float(lo), float(hi)

    @property
    def n_modes(self) -> int:
        return 1

    def mode_weights(self) -> np.ndarray:
        return np.ones(1)

    def fit_hist(self, edges: np.ndarray, counts: np.ndarray, *, rng: np.random.Generator) -> None:
        """Fit from a cleaned histogram (edges inside ``[lo, hi]``)."""

    def fit_values(self, x: np.ndarray, *, rng: np.random.Generator) -> None:
        """Fit on exact values (non-private mode only)."""

    @abstractmethod
    def encode(self, x: np.ndarray, *, rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray]:
        """``(alpha, mode)`` for values ``x`` in ``[lo, hi]``."""

    @abstractmethod
    def decode(self, alpha: np.ndarray, mode: np.ndarray) -> np.ndarray:
        """Values from any real ``alpha`` and a valid ``mode`` index (the caller clips to bounds)."""

    def get_state(self) -> dict[str, Any]:
        return {}

    def set_state(self, state: dict[str, Any]) -> None:
        return None


class MinMaxEncoder(ContinuousEncoder):
    name = "minmax"

    def encode(self, x, *, rng=None):
        span = self.hi - self.lo
        alpha = 2.0 * (x - self.lo) / span - 1.0 if span > 0 else np.zeros_like(x)
        return alpha, np.zeros(len(x), dtype=np.intp)

    def decode(self, alpha, mode):
        return self.lo + (np.clip(alpha, -1.0, 1.0) + 1.0) / 2.0 * (self.hi - self.lo)


class StandardEncoder(ContinuousEncoder):
    name = "standard"
    activation = "linear"

    def __init__(self, lo: float, hi: float) -> None:
        super().__init__(lo, hi)
        self.mean, self.std = (self.lo + self.hi) / 2.0, self._floor((self.hi - self.lo) / np.sqrt(12.0))

    def _floor(self, std: float) -> float:
        floor = 1e-3 * (self.hi - self.lo) if self.hi > self.lo else 1.0
        return float(std) if np.isfinite(std) and std > floor else floor

    def fit_hist(self, edges, counts, *, rng):
        total = counts.sum()
        if total <= 0:
            return
        p, centres, width = counts / total, (edges[:-1] + edges[1:]) / 2.0, np.diff(edges)
        mean = float(p @ centres)
        var = float(p @ ((centres - mean) ** 2 + width**2 / 12.0))
        self.mean, self.std = mean, self._floor(np.sqrt(var))

    def fit_values(self, x, *, rng):
        if len(x):
            self.mean, self.std = float(np.mean(x)), self._floor(float(np.std(x)))

    def encode(self, x, *, rng=None):
        return (x - self.mean) / self.std, np.zeros(len(x), dtype=np.intp)

    def decode(self, alpha, mode):
        return alpha * self.std + self.mean

    def get_state(self):
        return {"mean": self.mean, "std": self.std}

    def set_state(self, state):
        self.mean, self.std = float(state["mean"]), float(state["std"])


class QuantileEncoder(ContinuousEncoder):
    name = "quantile"
    _UNIFORM_MIX = 1e-3
    _EXACT_BINS = 512

    def __init__(self, lo: float, hi: float) -> None:
        super().__init__(lo, hi)
        self.knots, self.cdf = np.array([self.lo, self.hi]), np.array([0.0, 1.0])

    def fit_hist(self, edges, counts, *, rng):
        if self.hi <= self.lo:
            return
        total, width = counts.sum(), np.diff(edges)
        p = counts / total if total > 0 else width / width.sum()
        p = (1.0 - self._UNIFORM_MIX) * p + self._UNIFORM_MIX * width / width.sum()
        self.knots, self.cdf = edges.astype(float), np.concatenate([[0.0], np.cumsum(p)])
        self.cdf /= self.cdf[-1]

    def fit_values(self, x, *, rng):
        edges = np.linspace(self.lo, self.hi, self._EXACT_BINS + 1)
        counts, _ = np.histogram(x, bins=edges)
        self.fit_hist(edges, counts.astype(float), rng=rng)

    def encode(self, x, *, rng=None):
        if self.hi <= self.lo:
            return np.zeros_like(x), np.zeros(len(x), dtype=np.intp)
        return 2.0 * np.interp(x, self.knots, self.cdf) - 1.0, np.zeros(len(x), dtype=np.intp)

    def decode(self, alpha, mode):
        return np.interp((np.clip(alpha, -1.0, 1.0) + 1.0) / 2.0, self.cdf, self.knots)

    def get_state(self):
        return {"knots": [float(v) for v in self.knots], "cdf": [float(v) for v in self.cdf]}

    def set_state(self, state):
        self.knots, self.cdf = np.asarray(state["knots"], dtype=float), np.asarray(state["cdf"], dtype=float)
