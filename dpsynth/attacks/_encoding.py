"""Encodings the distance and density attacks share (fitted on the synthetic data only: the attacker's view).

- ``numeric(df)``: numbers min-max scaled to [0, 1] by the synthetic range (missing -> 0.5 plus a missing
  indicator), categories one-hot scaled by 1/sqrt(2) so that any single mismatch adds 1 to the squared L2
  distance, like a full-range numeric difference.
- ``codes(frames)``: every column factorised jointly over the given frames (missing is its own code), for
  Hamming distances: the number of attributes that differ exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpsynth.errors import InputError

__all__ = ["TableEncoder", "as_strings", "check_same_columns"]


def check_same_columns(reference: pd.DataFrame, *others: pd.DataFrame, names: tuple[str, ...] = ()) -> None:
    cols = list(reference.columns)
    for i, df in enumerate(others):
        if not isinstance(df, pd.DataFrame):
            raise InputError(f"Expected a pandas DataFrame. Found {type(df).__name__}.")
        if sorted(map(str, df.columns)) != sorted(map(str, cols)):
            label = names[i] if i < len(names) else f"frame {i}"
            missing = sorted(set(map(str, cols)) - set(map(str, df.columns)))
            extra = sorted(set(map(str, df.columns)) - set(map(str, cols)))
            raise InputError(f"{label} must have the same columns as the synthetic data. "
                             f"Missing {missing}, extra {extra}.")


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def as_strings(s: pd.Series) -> np.ndarray:
    """``s.astype(str)`` with missing values as "\\0nan", as a numpy object array (pandas string ops cost ~10x
    more, and the audit encodes every fit's output)."""
    values = s.to_numpy(dtype=object)
    out = values.astype(str).astype(object)
    out[pd.isna(values)] = "\0nan"
    return out


class TableEncoder:
    """Encoder fitted on one (synthetic) frame; see the module docstring."""

    def __init__(self, synthetic: pd.DataFrame) -> None:
        if len(synthetic) == 0:
            raise InputError("The synthetic data is empty.")
        self.columns = list(synthetic.columns)
        self.numeric = [c for c in self.columns if _is_numeric(synthetic[c])]
        self.categorical = [c for c in self.columns if c not in self.numeric]
        self.lo, self.span, self.has_missing = {}, {}, {}
        for c in self.numeric:
            v = pd.to_numeric(synthetic[c], errors="coerce").astype(float)
            lo, hi = np.nanmin(v) if v.notna().any() else 0.0, np.nanmax(v) if v.notna().any() else 1.0
            self.lo[c], self.span[c] = float(lo), float(hi - lo) if hi > lo else 1.0
        self.categories = {c: pd.Index(pd.unique(synthetic[c].dropna().astype(str))) for c in self.categorical}

    def numeric_matrix(self, df: pd.DataFrame) -> np.ndarray:
        parts = []
        for c in self.numeric:
            v = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float)
            miss = np.isnan(v)
            parts.append(np.where(miss, 0.5, (v - self.lo[c]) / self.span[c]))
            parts.append(miss.astype(float))
        for c in self.categorical:
            cats = self.categories[c]
            idx = cats.get_indexer(as_strings(df[c]))
            onehot = np.zeros((len(df), len(cats) + 1))
            onehot[np.arange(len(df)), np.where(idx < 0, len(cats), idx)] = 1.0
            parts.append(onehot / np.sqrt(2.0))
        if not parts:
            return np.zeros((len(df), 0))
        return np.column_stack(parts)

    def codes(self, *frames: pd.DataFrame) -> list[np.ndarray]:
        """Integer codes per column, consistent across ``frames`` (for Hamming distance)."""
        sizes = [len(f) for f in frames]
        out = np.empty((sum(sizes), len(self.columns)), dtype=np.int64)
        for j, c in enumerate(self.columns):
            if c in self.numeric:
                joined = np.concatenate([pd.to_numeric(f[c], errors="coerce").to_numpy(dtype=float) for f in frames])
                joined = joined.round(9)
            else:
                joined = np.concatenate([as_strings(f[c]) for f in frames])
            codes, _ = pd.factorize(joined, use_na_sentinel=False)
            out[:, j] = codes
        bounds = np.cumsum([0, *sizes])
        return [out[bounds[i]:bounds[i + 1]] for i in range(len(frames))]
