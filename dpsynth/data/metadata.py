"""DP statistics released during metadata discovery, reusable at no further privacy cost.

When ``fit`` resolves the schema it also releases, through mechanisms charged to the ledger, a noisy row
count and one noisy histogram per column. These are DP outputs, so any later use (fitting a Gaussian
mixture for mode-specific normalisation, drawing CTGAN condition vectors, choosing a batch sampling rate
from the row count) is post-processing. In non-private mode (``epsilon=inf``) they are exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dpsynth.errors import InputError

__all__ = ["NumericHistogram", "CategoricalHistogram", "DPMetadata", "pooled_count", "with_row_total"]


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

    ``row_total`` is the sum of the release's Gaussian counts over all its cells (bins, special values, missing, out
    of range: every row in exactly one), an unbiased noisy count of the rows with noise sd ``row_total_sd``; None
    where the histogram is exact, or came from an older file (:func:`pooled_count` pools it with the row count).
    """

    edges: np.ndarray
    counts: np.ndarray
    special_counts: dict[float, float] = field(default_factory=dict)
    missing: float = 0.0
    noisy: np.ndarray | None = None
    bin_sd: np.ndarray | None = None
    row_total: float | None = None
    row_total_sd: float | None = None

    def __post_init__(self) -> None:
        _check_row_total(self.row_total, self.row_total_sd)
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
        return {**out, **_row_total_dict(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NumericHistogram:
        return cls(
            edges=np.asarray(d["edges"], dtype=float),
            counts=np.asarray(d["counts"], dtype=float),
            special_counts={float(k): float(v) for k, v in d.get("special_counts", [])},
            missing=float(d.get("missing", 0.0)),
            noisy=_optional_array(d.get("noisy")),
            bin_sd=_optional_array(d.get("bin_sd")),
            **_row_total_fields(d),
        )


@dataclass(frozen=True)
class CategoricalHistogram:
    """Noisy counts per category (in the schema's category order) and of missing values, clipped at 0;
    ``noisy``: the categories' Gaussian counts before clipping (None: exact, selected by partition selection, or
    an older file; see :class:`NumericHistogram`); ``sigma``: this histogram's noise sd where it differs from the
    phase's (:attr:`DPMetadata.sigma`; a declared target's, released apart from the other columns), else None;
    ``row_total`` / ``row_total_sd`` as in :class:`NumericHistogram` (None for a partition selection: the values it
    did not release are counted nowhere)."""

    categories: tuple[Any, ...]
    counts: np.ndarray
    missing: float = 0.0
    noisy: np.ndarray | None = None
    sigma: float | None = None
    row_total: float | None = None
    row_total_sd: float | None = None

    def __post_init__(self) -> None:
        _check_row_total(self.row_total, self.row_total_sd)
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
        return {**out, **_row_total_dict(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CategoricalHistogram:
        sigma = d.get("sigma")
        return cls(tuple(d["categories"]), np.asarray(d["counts"], dtype=float), float(d.get("missing", 0.0)),
                   _optional_array(d.get("noisy")), None if sigma is None else float(sigma), **_row_total_fields(d))


@dataclass(frozen=True)
class DPMetadata:
    """The DP (or, in non-private mode, exact) statistics released while resolving the schema. ``n_rows``: the DP
    row count, ``n_rows_sd`` its noise sd (None: an older file, where it is the row-count query's, recorded in the
    ledger)."""

    n_rows: float
    histograms: dict[str, NumericHistogram | CategoricalHistogram]
    non_private: bool = False
    sigma: float = 0.0  # std of the Gaussian noise on the released counts (0 in non-private mode; see sigma_of)
    n_rows_sd: float | None = None

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
            **({} if self.n_rows_sd is None else {"n_rows_sd": float(self.n_rows_sd)}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DPMetadata:
        hists: dict[str, NumericHistogram | CategoricalHistogram] = {}
        for k, v in d.get("histograms", {}).items():
            hists[k] = NumericHistogram.from_dict(v) if v["type"] == "numeric" else CategoricalHistogram.from_dict(v)
        sd = d.get("n_rows_sd")
        return cls(float(d["n_rows"]), hists, bool(d.get("non_private", False)), float(d.get("sigma", 0.0)),
                   None if sd is None else float(sd))


def pooled_count(estimates: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """The inverse-variance weighted mean of independent, unbiased noisy counts of one number (``(value, noise sd)``
    pairs) and its noise sd: post-processing of DP outputs. An exact count (sd 0) is returned as it is.

    Why: the metadata phase's row count is one Gaussian query, but every full histogram it releases counts each row
    once as well; their sums are further estimates of the same number, noisier by the square root of their cell
    count. Pooled, Adult's DP row count (15 histograms, public schema) has about 0.65x the noise of the query alone."""
    estimates = [(float(v), float(sd)) for v, sd in estimates]
    if not estimates:
        raise ValueError("pooled_count needs at least one estimate")
    exact = [v for v, sd in estimates if sd == 0]
    if exact:
        return exact[0], 0.0
    weights = np.array([1.0 / sd**2 for _, sd in estimates])
    values = np.array([v for v, _ in estimates])
    return float(weights @ values / weights.sum()), float(1.0 / math.sqrt(weights.sum()))


def with_row_total(hist, noisy_cells: np.ndarray, sigma: float):
    """``hist`` with the row total of a release whose Gaussian counts ``noisy_cells`` (noise sd ``sigma`` each) cover
    every row once (unchanged when ``sigma`` is 0: an exact histogram needs none)."""
    if not sigma > 0:
        return hist
    return replace(hist, row_total=float(np.sum(noisy_cells)),
                   row_total_sd=float(sigma) * math.sqrt(np.size(noisy_cells)))


def _check_row_total(total, sd) -> None:
    if (total is None) != (sd is None) or (sd is not None and not (math.isfinite(total) and math.isfinite(sd)
                                                                     and sd > 0)):
        raise InputError(f"a histogram's row total needs a finite value and a noise sd > 0. Found {total!r}, {sd!r}.")


def _row_total_dict(hist) -> dict[str, float]:
    if hist.row_total is None:
        return {}
    return {"row_total": float(hist.row_total), "row_total_sd": float(hist.row_total_sd)}


def _row_total_fields(d: dict[str, Any]) -> dict[str, float | None]:
    total, sd = d.get("row_total"), d.get("row_total_sd")
    return {"row_total": None if total is None else float(total), "row_total_sd": None if sd is None else float(sd)}


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
