"""Summaries of a synthetic dataset for the shadow-model attack (Stadler et al. 2022; seed 002 §4.2.2).

The attacker fixes a :class:`FeatureDomain` from its reference data (column kinds, category lists, histogram
bins) so that every synthetic set maps to a vector of the same length:

- ``naive``: per numeric column mean, median, variance (and missing fraction); per categorical column the
  number of distinct categories, the most and the least frequent category (as indices into the domain).
- ``histogram``: per column the relative frequency of each bin (numeric: 10 quantile bins of the reference
  plus a missing bin) or category (plus an "other / missing" cell).
- ``correlation``: the pairwise Pearson correlations of all columns, categoricals dummy-encoded (upper
  triangle; a constant column correlates 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dpsynth.errors import InputError

__all__ = ["FEATURE_SETS", "FeatureDomain", "correlation_features", "extract", "histogram_features", "naive_features"]


class FeatureDomain:
    """Columns, categories and bins fixed from the attacker's reference data (picklable)."""

    def __init__(self, reference: pd.DataFrame, *, n_bins: int = 10, max_categories: int = 50) -> None:
        if len(reference) == 0:
            raise InputError("The reference data for feature extraction is empty.")
        self.columns = list(reference.columns)
        self.numeric = [
            c for c in self.columns
            if pd.api.types.is_numeric_dtype(reference[c]) and not pd.api.types.is_bool_dtype(reference[c])
        ]
        self.categorical = [c for c in self.columns if c not in self.numeric]
        self.categories: dict[str, list[str]] = {}
        for c in self.categorical:
            counts = reference[c].dropna().astype(str).value_counts()
            self.categories[c] = list(counts.index[:max_categories])
        self.edges: dict[str, np.ndarray] = {}
        for c in self.numeric:
            v = pd.to_numeric(reference[c], errors="coerce").dropna().to_numpy(float)
            edges = np.unique(np.quantile(v, np.linspace(0, 1, n_bins + 1))) if len(v) else np.array([0.0, 1.0])
            self.edges[c] = edges[1:-1]  # interior edges; np.digitize puts the tails in the outer bins

    def numbers(self, df: pd.DataFrame, c: str) -> np.ndarray:
        return pd.to_numeric(df[c], errors="coerce").to_numpy(float)

    def cat_index(self, df: pd.DataFrame, c: str) -> np.ndarray:
        """Index of each value in the domain's categories; len(categories) for other / missing."""
        cats = pd.Index(self.categories[c])
        idx = cats.get_indexer(df[c].astype(str).where(df[c].notna(), "\0nan"))
        return np.where(idx < 0, len(cats), idx)


def naive_features(df: pd.DataFrame, domain: FeatureDomain) -> np.ndarray:
    out: list[float] = []
    for c in domain.numeric:
        v = domain.numbers(df, c)
        ok = v[~np.isnan(v)]
        if len(ok):
            out += [float(ok.mean()), float(np.median(ok)), float(ok.var()), 1.0 - len(ok) / max(len(v), 1)]
        else:
            out += [0.0, 0.0, 0.0, 1.0]
    for c in domain.categorical:
        counts = np.bincount(domain.cat_index(df, c), minlength=len(domain.categories[c]) + 1)
        present = np.flatnonzero(counts)
        if len(present) == 0:
            out += [0.0, -1.0, -1.0]
            continue
        out += [float(len(present)), float(present[np.argmax(counts[present])]),
                float(present[np.argmin(counts[present])])]
    return np.asarray(out, dtype=float)


def histogram_features(df: pd.DataFrame, domain: FeatureDomain) -> np.ndarray:
    n = max(len(df), 1)
    parts = []
    for c in domain.numeric:
        v = domain.numbers(df, c)
        bins = np.where(np.isnan(v), len(domain.edges[c]) + 1, np.digitize(np.nan_to_num(v), domain.edges[c]))
        parts.append(np.bincount(bins, minlength=len(domain.edges[c]) + 2) / n)
    for c in domain.categorical:
        parts.append(np.bincount(domain.cat_index(df, c), minlength=len(domain.categories[c]) + 1) / n)
    return np.concatenate(parts) if parts else np.zeros(0)


def correlation_features(df: pd.DataFrame, domain: FeatureDomain) -> np.ndarray:
    cols = []
    for c in domain.numeric:
        v = domain.numbers(df, c)
        med = np.nanmedian(v) if np.isfinite(v).any() else 0.0
        cols.append(np.where(np.isnan(v), med, v))
    for c in domain.categorical:
        idx = domain.cat_index(df, c)
        k = len(domain.categories[c]) + 1
        cols.extend((idx == j).astype(float) for j in range(k))
    m = np.column_stack(cols) if cols else np.zeros((len(df), 0))
    m = m - m.mean(axis=0)
    sd = np.sqrt((m * m).sum(axis=0))
    ok = sd > 0
    m[:, ok] /= sd[ok]
    corr = m.T @ m
    iu = np.triu_indices(m.shape[1], k=1)
    return corr[iu]


FEATURE_SETS = {"naive": naive_features, "histogram": histogram_features, "correlation": correlation_features}


def extract(df: pd.DataFrame, domain: FeatureDomain, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Feature vectors of one synthetic set for each named feature set."""
    unknown = [n for n in names if n not in FEATURE_SETS]
    if unknown:
        raise InputError(f"Feature sets must be among {sorted(FEATURE_SETS)}. Found {unknown}.")
    return {n: FEATURE_SETS[n](df, domain) for n in names}
