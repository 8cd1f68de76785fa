"""DP statistics released during metadata discovery, reusable at no further privacy cost.

When ``fit`` resolves the schema it also releases, through mechanisms charged to the ledger, a noisy row
count and one noisy histogram per column. These are DP outputs, so any later use (fitting a Gaussian
mixture for mode-specific normalisation, drawing CTGAN condition vectors, choosing a batch sampling rate
from the row count) is post-processing. In non-private mode (``epsilon=inf``) they are exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["NumericHistogram", "CategoricalHistogram", "DPMetadata"]


@dataclass(frozen=True)
class NumericHistogram:
    """Noisy counts of a numeric column over data-independent (or public) bin ``edges``.

    ``counts[i]`` counts values in ``[edges[i], edges[i+1])`` (last bin closed) *excluding* special values,
    ``special_counts[v]`` counts the special value ``v`` exactly, ``missing`` counts NaN. Counts are noisy
    and clipped at 0 (post-processing).
    """

    edges: np.ndarray
    counts: np.ndarray
    special_counts: dict[float, float] = field(default_factory=dict)
    missing: float = 0.0

    def total(self) -> float:
        return float(self.counts.sum() + sum(self.special_counts.values()) + self.missing)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "numeric",
            "edges": [float(x) for x in self.edges],
            "counts": [float(x) for x in self.counts],
            "special_counts": [[float(k), float(v)] for k, v in self.special_counts.items()],
            "missing": float(self.missing),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NumericHistogram:
        return cls(
            edges=np.asarray(d["edges"], dtype=float),
            counts=np.asarray(d["counts"], dtype=float),
            special_counts={float(k): float(v) for k, v in d.get("special_counts", [])},
            missing=float(d.get("missing", 0.0)),
        )


@dataclass(frozen=True)
class CategoricalHistogram:
    """Noisy counts per category (in the schema's category order) and of missing values."""

    categories: tuple[Any, ...]
    counts: np.ndarray
    missing: float = 0.0

    def total(self) -> float:
        return float(self.counts.sum() + self.missing)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "categorical",
            "categories": list(self.categories),
            "counts": [float(x) for x in self.counts],
            "missing": float(self.missing),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CategoricalHistogram:
        return cls(tuple(d["categories"]), np.asarray(d["counts"], dtype=float), float(d.get("missing", 0.0)))


@dataclass(frozen=True)
class DPMetadata:
    """The DP (or, in non-private mode, exact) statistics released while resolving the schema."""

    n_rows: float
    histograms: dict[str, NumericHistogram | CategoricalHistogram]
    non_private: bool = False
    sigma: float = 0.0  # std of the Gaussian noise on every released count (0 in non-private mode)

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
