"""DP statistics released during metadata discovery, reusable at no further privacy cost.

When ``fit`` resolves the schema it also releases, through mechanisms charged to the ledger, a noisy row
count and one noisy histogram per column. These are DP outputs, so any later use (fitting a Gaussian
mixture for mode-specific normalisation, drawing CTGAN condition vectors, choosing a batch sampling rate
from the row count) is post-processing. In non-private mode (``epsilon=inf``) they are exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpsynth.errors import InputError

__all__ = ["NumericHistogram", "CategoricalHistogram", "DPMetadata"]


@dataclass(frozen=True)
class NumericHistogram:
    """Noisy counts of a numeric column over data-independent (or public) bin ``edges``.

    ``counts[i]`` counts values in ``[edges[i], edges[i+1])`` (last bin closed) *excluding* special values,
    ``special_counts[v]`` counts the special value ``v`` exactly, ``missing`` counts NaN. Counts are noisy
    and clipped at 0 (post-processing).

    ``noisy`` holds the bins' Gaussian counts before that clipping and ``bin_sd`` each bin's noise sd (a zoom's
    sub-bins are noisier than the grid's bins); both are DP outputs, None when the histogram is exact or came from
    an older file. Clipped counts are biased upwards where bins are (nearly) empty: summed over the many fine bins of
    one cell they over-count it by several noise sds, so a model that reuses them as a measurement reads ``noisy``.
    """

    edges: np.ndarray
    counts: np.ndarray
    special_counts: dict[float, float] = field(default_factory=dict)
    missing: float = 0.0
    noisy: np.ndarray | None = None
    bin_sd: np.ndarray | None = None

    def __post_init__(self) -> None:
        edges, counts = np.asarray(self.edges, dtype=float), np.asarray(self.counts, dtype=float)
        if edges.ndim != 1 or len(edges) < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) < 0):
            raise InputError(f"histogram edges must be >= 2 finite, increasing numbers. Found {_short(edges)}.")
        if counts.shape != (len(edges) - 1,):
            raise InputError(f"a histogram needs one count per bin ({len(edges) - 1}). Found {counts.shape[0]} counts.")
        _check_counts(np.r_[counts, list(self.special_counts.values()), [self.missing]])
        _check_per_bin(self.noisy, len(counts), "noisy counts")
        _check_per_bin(self.bin_sd, len(counts), "noise sds", nonnegative=True)

    def total(self) -> float:
        return float(self.counts.sum() + sum(self.special_counts.values()) + self.missing)

    def bin_noise(self, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        """(the bins' unclipped noisy counts, each bin's noise sd), ``sigma`` in every bin where no sd is recorded
        (older files: the clipped counts)."""
        noisy = np.asarray(self.counts if self.noisy is None else self.noisy, dtype=float)
        sd = np.full(len(noisy), float(sigma)) if self.bin_sd is None else np.asarray(self.bin_sd, dtype=float)
        return noisy, sd

    def to_dict(self) -> dict[str, Any]:
        out = {
            "type": "numeric",
            "edges": [float(x) for x in self.edges],
            "counts": [float(x) for x in self.counts],
            "special_counts": [[float(k), float(v)] for k, v in self.special_counts.items()],
            "missing": float(self.missing),
        }
        if self.noisy is not None:
            out["noisy"] = [float(x) for x in self.noisy]
        if self.bin_sd is not None:
            out["bin_sd"] = [float(x) for x in self.bin_sd]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NumericHistogram:
        return cls(
            edges=np.asarray(d["edges"], dtype=float),
            counts=np.asarray(d["counts"], dtype=float),
            special_counts={float(k): float(v) for k, v in d.get("special_counts", [])},
            missing=float(d.get("missing", 0.0)),
            noisy=_optional_array(d.get("noisy")),
            bin_sd=_optional_array(d.get("bin_sd")),
        )


@dataclass(frozen=True)
class CategoricalHistogram:
    """Noisy counts per category (in the schema's category order) and of missing values, clipped at 0;
    ``noisy``: the categories' Gaussian counts before clipping (None: exact, selected by partition selection, or
    an older file; see :class:`NumericHistogram`); ``sigma``: this histogram's noise sd where it differs from the
    phase's (:attr:`DPMetadata.sigma`; a declared target's, released apart from the other columns), else None."""

    categories: tuple[Any, ...]
    counts: np.ndarray
    missing: float = 0.0
    noisy: np.ndarray | None = None
    sigma: float | None = None

    def __post_init__(self) -> None:
        counts = np.asarray(self.counts, dtype=float)
        if counts.shape != (len(self.categories),):
            raise InputError(f"a categorical histogram needs one count per category ({len(self.categories)}). "
                             f"Found {counts.size}.")
        _check_counts(np.r_[counts, [self.missing]])
        _check_per_bin(self.noisy, len(counts), "noisy counts")

    def total(self) -> float:
        return float(self.counts.sum() + self.missing)

    def unclipped(self) -> np.ndarray:
        """The categories' unclipped noisy counts (the clipped ones where none are recorded)."""
        return np.asarray(self.counts if self.noisy is None else self.noisy, dtype=float)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "type": "categorical",
            "categories": list(self.categories),
            "counts": [float(x) for x in self.counts],
            "missing": float(self.missing),
        }
        if self.noisy is not None:
            out["noisy"] = [float(x) for x in self.noisy]
        if self.sigma is not None:
            out["sigma"] = float(self.sigma)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CategoricalHistogram:
        sigma = d.get("sigma")
        return cls(tuple(d["categories"]), np.asarray(d["counts"], dtype=float), float(d.get("missing", 0.0)),
                   _optional_array(d.get("noisy")), None if sigma is None else float(sigma))


@dataclass(frozen=True)
class DPMetadata:
    """The DP (or, in non-private mode, exact) statistics released while resolving the schema."""

    n_rows: float
    histograms: dict[str, NumericHistogram | CategoricalHistogram]
    non_private: bool = False
    sigma: float = 0.0  # std of the Gaussian noise on the released counts (0 in non-private mode; see sigma_of)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.n_rows) and self.n_rows > 0) or not (math.isfinite(self.sigma) and self.sigma >= 0):
            raise InputError(
                f"n_rows must be a finite number > 0 and sigma >= 0. Found {self.n_rows!r}, {self.sigma!r}.")

    def sigma_of(self, name: str) -> float:
        """The noise sd of column ``name``'s histogram: its own where it records one, else the phase's."""
        own = getattr(self.histograms.get(name), "sigma", None)
        return float(self.sigma if own is None else own)

    def sigmas(self) -> dict[str, float]:
        """Every histogram's noise sd (:meth:`sigma_of`), by column name."""
        return {name: self.sigma_of(name) for name in self.histograms}

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_rows": float(self.n_rows),
            "non_private": self.non_private,
            "sigma": float(self.sigma),
            "histograms": {k: v.to_dict() for k, v in self.histograms.items()},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DPMetadata:
        hists: dict[str, NumericHistogram | CategoricalHistogram] = {}
        for k, v in d.get("histograms", {}).items():
            hists[k] = NumericHistogram.from_dict(v) if v["type"] == "numeric" else CategoricalHistogram.from_dict(v)
        return cls(float(d["n_rows"]), hists, bool(d.get("non_private", False)), float(d.get("sigma", 0.0)))


def _check_counts(values: np.ndarray) -> None:
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise InputError(f"histogram counts must be finite and >= 0 (noisy counts are clipped at 0). "
                         f"Found {_short(values)}.")


def _check_per_bin(values, n: int, what: str, *, nonnegative: bool = False) -> None:
    if values is None:
        return
    values = np.asarray(values, dtype=float)
    if values.shape != (n,) or not np.all(np.isfinite(values)) or (nonnegative and np.any(values < 0)):
        raise InputError(f"a histogram's {what} must be {n} finite numbers{' >= 0' if nonnegative else ''}. "
                         f"Found {_short(values.ravel())}.")


def _optional_array(values) -> np.ndarray | None:
    return None if values is None else np.asarray(values, dtype=float)


def _short(values: np.ndarray) -> str:
    head = np.array2string(np.asarray(values)[:6], precision=4, separator=", ")
    return head + (" ..." if np.size(values) > 6 else "")
