"""Feature preparation shared by every metric: column kinds, alignment, encoding, binning.

Column kinds (the rule every metric uses):

* with a :class:`~dpsynth.data.schema.Schema`: ``categorical`` and ``binary`` columns are *categorical*;
  ``continuous``, ``integer``, ``mixed`` and ``long_tail`` are *continuous*;
* without one: object / string / category / bool dtypes are categorical; a numeric column with at most
  :data:`MAX_DISCRETE_LEVELS` distinct values in the real data is categorical too (its values are treated as
  labels); every other numeric column is continuous.

All statistics that need a reference (category lists, min / max bounds, scaling) are taken from the **real
training data** only, so two synthetic tables are always scored on the same scale. Missing values are a
category of their own (:data:`MISSING`) for categorical columns and are imputed with the real median (plus a
missing indicator when the real data has any) for model inputs.

Categorical values become labels by value, not by dtype: ``5``, ``5.0`` and ``"5"`` are one label, and so are
``True``, ``1`` and ``1.0`` (booleans are written ``"1"`` / ``"0"``), so a table read back from a file with
another dtype is not scored as different data.

Row caps (:func:`capped_order`) pick rows by a seeded hash of their *content* (:func:`row_keys`), not of their
position: a table and any reordering of it yield the same capped rows in the same order, so "identical data
gives the perfect score" holds whatever the row order and the cap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpsynth.errors import InputError

__all__ = [
    "MAX_DISCRETE_LEVELS",
    "MISSING",
    "infer_kinds",
    "check_frames",
    "as_labels",
    "Encoder",
    "hist_pair",
    "row_keys",
    "capped_order",
]

MAX_DISCRETE_LEVELS = 10
MISSING = "<missing>"
_CATEGORICAL_SCHEMA_KINDS = ("categorical", "binary")


def infer_kinds(real: pd.DataFrame, schema=None) -> dict[str, str]:
    """Map each column of ``real`` to ``"categorical"`` or ``"continuous"`` (rule in the module docstring)."""
    kinds: dict[str, str] = {}
    for name in real.columns:
        if schema is not None and name in schema:
            kinds[name] = "categorical" if schema[name].kind in _CATEGORICAL_SCHEMA_KINDS else "continuous"
            continue
        col = real[name]
        if not (pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)):
            kinds[name] = "categorical"
        elif col.nunique(dropna=True) <= MAX_DISCRETE_LEVELS:
            kinds[name] = "categorical"
        else:
            kinds[name] = "continuous"
    return kinds


def check_frames(real: pd.DataFrame, synthetic: pd.DataFrame, real_test: pd.DataFrame | None = None) -> list[str]:
    """Check the frames share the real columns; return the column list (real order)."""
    for label, frame in (("real_train", real), ("synthetic", synthetic), ("real_test", real_test)):
        if frame is None:
            continue
        if not isinstance(frame, pd.DataFrame):
            raise InputError(f"{label} must be a pandas DataFrame. Found {type(frame).__name__}.")
        if len(frame) == 0:
            raise InputError(f"{label} must have at least one row. Found 0 rows.")
    columns = [str(c) for c in real.columns]
    for label, frame in (("synthetic", synthetic), ("real_test", real_test)):
        if frame is None:
            continue
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise InputError(f"{label} must have every real column. Missing: {missing}.")
    return columns


def as_labels(col: pd.Series) -> np.ndarray:
    """Categorical values as strings (``MISSING`` for NaN), so 1 and "1" and 1.0 compare consistently."""
    values = col.to_numpy(dtype=object, na_value=None)
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            out[i] = MISSING
        elif isinstance(v, (bool, np.bool_)):  # before the number test: True is also the integer 1
            out[i] = "1" if v else "0"
        elif isinstance(v, (float, np.floating)) and float(v).is_integer():
            out[i] = str(int(v))
        else:
            out[i] = str(v)
    return out


def labels_fast(col: pd.Series) -> np.ndarray:
    """Vectorised :func:`as_labels` (the loop version handles the rare mixed-type object columns)."""
    if pd.api.types.is_float_dtype(col):
        vals = col.to_numpy(dtype=float)
        if np.all(np.isnan(vals) | (vals == np.round(vals))):
            out = pd.Series(vals).map(lambda v: MISSING if np.isnan(v) else str(int(v)))
            return out.to_numpy(dtype=object)
    if pd.api.types.is_bool_dtype(col):
        missing = col.isna().to_numpy()
        flags = col.fillna(False).to_numpy(dtype=bool)
        return np.where(missing, MISSING, np.where(flags, "1", "0")).astype(object)
    if pd.api.types.is_integer_dtype(col):
        return col.astype(object).where(col.notna(), MISSING).astype(str).to_numpy(dtype=object)
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    mapped = np.array(as_labels(pd.Series(uniques, dtype=object)).tolist() + [MISSING], dtype=object)
    return mapped[codes]


def numeric(col: pd.Series) -> np.ndarray:
    """A column as float64 (NaN where missing or not a number)."""
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


@dataclass
class _Block:
    name: str
    kind: str
    start: int
    stop: int
    categories: tuple[str, ...] = ()
    lower: float = 0.0
    scale: float = 1.0
    fill: float = 0.0
    indicator: bool = False


class Encoder:
    """One-hot categorical columns and min-max scale continuous ones, with references from real data.

    Categories are the real ones, most frequent first, capped at ``max_categories`` per column (rarer ones
    share one "other" slot); unseen synthetic categories encode as that slot. Continuous columns are scaled
    to [0, 1] with the real min / max (seed 002 §4.2.1 "Min-Max normalisation"); values outside stay outside.
    ``transform`` returns float32 and a per-column block map so a predictor can drop the target's block.
    """

    def __init__(self, real: pd.DataFrame, kinds: dict[str, str], *, max_categories: int = 50):
        self.kinds = dict(kinds)
        self.blocks: dict[str, _Block] = {}
        pos = 0
        for name, kind in kinds.items():
            if kind == "categorical":
                counts = pd.Series(labels_fast(real[name])).value_counts()
                cats = tuple(counts.index[:max_categories])
                width = len(cats) + (1 if len(counts) > max_categories else 0)
                width = max(width, 1)
                self.blocks[name] = _Block(name, kind, pos, pos + width, categories=cats)
            else:
                x = numeric(real[name])
                finite = x[np.isfinite(x)]
                lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
                indicator = bool(np.isnan(x).any())
                fill = float(np.median(finite)) if finite.size else 0.0
                width = 2 if indicator else 1
                self.blocks[name] = _Block(name, kind, pos, pos + width, lower=lo, scale=(hi - lo) or 1.0,
                                           fill=fill, indicator=indicator)
            pos = self.blocks[name].stop
        self.width = pos

    def transform(self, df: pd.DataFrame, *, columns: Sequence[str] | None = None) -> np.ndarray:
        """Encode ``columns`` (default: all) of ``df`` into one float32 matrix."""
        columns = list(self.blocks) if columns is None else list(columns)
        width = sum(self.blocks[c].stop - self.blocks[c].start for c in columns)
        out = np.zeros((len(df), width), dtype=np.float32)
        pos = 0
        for name in columns:
            b = self.blocks[name]
            if b.kind == "categorical":
                index = {c: i for i, c in enumerate(b.categories)}
                other = b.stop - b.start - 1 if (b.stop - b.start) > len(b.categories) else -1
                codes = pd.Series(labels_fast(df[name])).map(index).fillna(other).to_numpy(dtype=int)
                rows = np.nonzero(codes >= 0)[0]
                out[rows, pos + codes[rows]] = 1.0
            else:
                x = numeric(df[name])
                miss = np.isnan(x)
                out[:, pos] = (np.where(miss, b.fill, x) - b.lower) / b.scale
                if b.indicator:
                    out[:, pos + 1] = miss
            pos += b.stop - b.start
        return out

    def columns_except(self, target: str) -> list[str]:
        return [c for c in self.blocks if c != target]


def hist_pair(real: pd.Series, synthetic: pd.Series, kind: str, *,
              bins: int = 20) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Probability histograms of one column in real and synthetic data, on common bins.

    Categorical: one bin per category seen in either table (real categories first). Continuous: ``bins``
    equal-width bins between the real min and max, plus one overflow bin on each side (empty in the real
    data, so synthetic mass outside the real range counts as a mismatch) and a missing-value bin when
    either table has missing values. Returns (bin labels, p_real, p_synthetic), each summing to 1.
    """
    if kind == "categorical":
        r, s = pd.Series(labels_fast(real)), pd.Series(labels_fast(synthetic))
        rc, sc = r.value_counts(), s.value_counts()
        labels = list(rc.index) + [c for c in sc.index if c not in rc.index]
        pr = rc.reindex(labels, fill_value=0).to_numpy(dtype=float)
        ps = sc.reindex(labels, fill_value=0).to_numpy(dtype=float)
        return [str(x) for x in labels], pr / pr.sum(), ps / ps.sum()
    x, y = numeric(real), numeric(synthetic)
    fx = x[np.isfinite(x)]
    lo, hi = (float(fx.min()), float(fx.max())) if fx.size else (0.0, 1.0)
    if hi <= lo:
        hi = lo + 1.0
    edges = np.linspace(lo, hi, bins + 1)

    def counts(v: np.ndarray) -> np.ndarray:
        ok = ~np.isnan(v)
        idx = np.searchsorted(edges, v[ok], side="right")  # 0 below, 1..bins inside, bins+1 above
        idx = np.where(v[ok] == hi, bins, idx)  # the real max belongs to the last inside bin
        return np.concatenate([np.bincount(idx, minlength=bins + 2), [np.sum(~ok)]]).astype(float)

    cr, cs = counts(x), counts(y)
    labels = [f"< {lo:.4g}"] + [f"{edges[i]:.4g}" for i in range(bins)] + [f"> {hi:.4g}", MISSING]
    keep = np.ones(len(labels), dtype=bool)
    keep[-1] = cr[-1] + cs[-1] > 0
    labels = [lab for lab, k in zip(labels, keep) if k]
    cr, cs = cr[keep], cs[keep]
    return labels, cr / max(cr.sum(), 1.0), cs / max(cs.sum(), 1.0)


def row_keys(df: pd.DataFrame, kinds: dict[str, str]) -> np.ndarray:
    """A 64-bit hash of each row's content, by value rather than dtype (int 5 = float 5.0, True = 1).

    Categorical columns are hashed through their labels (module docstring), continuous ones as float64 with
    -0.0 folded into 0.0; rows equal in this sense get equal keys (distinct rows collide with probability
    about n^2 / 2^64).
    """
    out = np.full(len(df), 0x345678, dtype=np.uint64)
    for name, kind in kinds.items():  # one column at a time: memory stays one column, not the table
        if kind == "categorical":
            codes, uniques = pd.factorize(labels_fast(df[name]))
            part = pd.util.hash_array(np.asarray(uniques, dtype=object))[codes]
        else:
            x = numeric(df[name]) + 0.0  # + 0.0 turns -0.0 into 0.0
            part = pd.util.hash_array(np.where(np.isnan(x), np.nan, x))  # one NaN bit pattern
        out = (out ^ part) * np.uint64(1000003)  # order-dependent combination, wrapping modulo 2^64
    return out


def capped_order(keys: np.ndarray, cap: int | None, salt: int) -> np.ndarray:
    """Positions of at most ``cap`` rows, in the order of a seeded hash of their content keys.

    Each distinct content gets a pseudo-random priority ``hash(key xor salt)``; the rows with the smallest
    priorities are kept (a uniform random subset of the distinct contents; copies of one content are kept or
    dropped together). Two tables holding the same rows in any order get equal selections in equal order.
    """
    salted = np.asarray(keys, dtype=np.uint64) ^ np.uint64(salt & 0xFFFFFFFFFFFFFFFF)
    priority = pd.util.hash_array(salted)
    order = np.lexsort((keys, priority))  # ties only between equal keys (or a 2^-64 collision)
    return order if cap is None else order[:cap]
