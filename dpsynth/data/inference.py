"""Propose a schema by reading the data: NOT differentially private.

:func:`infer_schema` looks at the actual values (distinct counts, min/max, frequencies), so its output
describes private data. It is meant for a data owner to *review and edit*; it becomes public metadata only
once they vouch for it (e.g. the bounds are known ranges, the categories are a documented code list).
dpsynth uses it without a ledger entry only in the explicit non-private mode (``epsilon=inf``).

Rules (documented, tested):
- bool, or exactly two distinct values -> ``binary``;
- text / category columns -> ``categorical`` (categories sorted by their string form); text columns whose
  values are nearly all distinct (> 50% of rows and > 50 values) are ID-like and *excluded* with a warning;
- numeric columns: ``integer`` when all values are whole numbers, else ``continuous`` with the ``step`` its values
  are whole multiples of when they have at most 6 decimals (King County's ``floors``: 0.5); a value at the
  minimum or maximum holding >= 10% of the rows, in a column with > 10 distinct values, makes the column
  ``mixed`` with that special value (0 in Adult's capital-gain, seed 000 §4.2); a non-negative column whose
  99th percentile is > 50 times its median (and > 1000) is ``long_tail``;
- columns with missing values are ``nullable``; all-missing columns are excluded with a warning (like ID-like
  ones); infinite values are errors;
- a numeric column whose extremes are far from the bulk gets a warning (its bounds are kept): when the central 90%
  of its values spans at most 2 of the :data:`GRID_BINS` equal bins its bounds are cut into for DP histograms,
  nearly every row would share one or two of them (Cardio's ``ap_lo``, 70-100 for 90% of the rows inside
  [-70, 11000]). Without a zoom (:func:`dpsynth.data.discovery.release_zooms`) values were drawn there without
  detail (synthetic median 9 against the real 80); the zoom resolves them with a second, noisier query, and bounds
  the column can really take resolve them with none. The owner should write that range (values outside the
  bounds are clipped);
- columns no model can represent are errors (:func:`~dpsynth.data.frame.check_column`): dates and times,
  complex numbers, lists, object columns mixing types (``True`` and ``1`` would merge into one category).

The result has ``provenance="inferred"``; a DP fit refuses it until the user reviews it and marks it public
(``"provenance": "public"`` in the file, or :meth:`~dpsynth.data.schema.Schema.reviewed` in code).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from dpsynth.data.frame import check_column, check_frame
from dpsynth.data.schema import DTYPES, Column, Schema
from dpsynth.errors import InputError

__all__ = ["infer_schema", "infer_column", "unit_grid", "decimal_step", "ID_LIKE_RATIO", "SPECIAL_VALUE_SHARE",
           "GRID_BINS", "UNIT_GRID_SPAN", "STEP_DECIMALS"]

ID_LIKE_RATIO = 0.5
SPECIAL_VALUE_SHARE = 0.10
#: equal bins a public numeric range is cut into for DP histograms (``dpsynth.data.discovery.public_grid``; integer
#: ranges of at most ``UNIT_GRID_SPAN`` get one bin per value instead)
GRID_BINS = 64
UNIT_GRID_SPAN = 200
#: a numeric column whose values all have at most this many decimals gets the ``step`` they are multiples of
STEP_DECIMALS = 6


def infer_schema(df: pd.DataFrame, *, target: str | None = None, warn: bool = True) -> Schema:
    """Propose a :class:`Schema` for ``df`` by reading it (not DP: see the module docstring).

    Returns a schema with ``provenance="inferred"``: review it, then use ``schema.reviewed()`` (or set
    ``"provenance": "public"`` in its file) to vouch that it is public before a DP fit."""
    check_frame(df)
    if target is not None and target not in df.columns:
        raise InputError(f"Target column '{target}' is not in the data. Columns: {list(df.columns)}.")
    columns, excluded = [], []
    for name in df.columns:
        all_missing = bool(df[name].isna().all())
        col = None if all_missing else infer_column(df[name])
        if col is None:
            excluded.append(name)
            if warn:
                if all_missing:
                    why, fix = "has no values (all missing)", "declare it in a schema"
                elif _dates_as_text(df[name]):
                    why = "holds dates or times stored as text (nearly all values distinct)"
                    fix = "convert it to a number (e.g. days since an epoch)"
                else:
                    why, fix = "looks like an identifier (nearly all values distinct)", "declare it in a schema"
                warnings.warn(f"Column '{name}' {why} and is excluded; {fix} to keep it.", stacklevel=2)
        else:
            columns.append(col)
            if warn:
                _warn_crowded(col, df[name])
    if target in excluded:
        raise InputError(f"Target column '{target}' is all missing or looks like an identifier; declare it in a "
                         "schema.")
    if not columns:
        raise InputError("No usable column: every column is all missing or looks like an identifier.")
    return Schema(tuple(columns), target=target, provenance="inferred", excluded=tuple(excluded))


def unit_grid(col: Column) -> bool:
    """Whether a numeric column's DP histograms take one bin per value: whole numbers, or multiples of a declared
    ``step``, over at most ``UNIT_GRID_SPAN`` of them (public structure: the schema's bounds and step)."""
    step = col.grid_step
    return step is not None and col.upper - col.lower <= UNIT_GRID_SPAN * step


def _warn_crowded(col: Column, series: pd.Series) -> None:
    """The warning for bounds stretched by a few extreme values (module docstring); reads the exact values, as the
    rest of this module does: it speaks to the data owner, never in a DP fit."""
    if col.is_discrete or col.lower is None or col.upper is None or col.upper <= col.lower:
        return
    if unit_grid(col):
        return  # one bin per value
    values = pd.to_numeric(series, errors="coerce").dropna().to_numpy(dtype=float)
    values = values[~np.isin(values, col.special_values)]
    if values.size == 0:
        return
    low, high = np.quantile(values, [0.05, 0.95])
    width = (col.upper - col.lower) / GRID_BINS
    if high - low <= 2 * width:
        warnings.warn(f"Column '{col.name}': 90% of its values lie in [{low:g}, {high:g}], within 2 of the "
                      f"{GRID_BINS} equal bins DP histograms cut its bounds [{col.lower:g}, {col.upper:g}] into, so "
                      "the DP metadata must zoom into them with a second, noisier query; write the range it can "
                      "really take into the schema (values outside are clipped).", stacklevel=3)


def _dtype_name(series: pd.Series) -> str | None:
    name = str(series.dtype)
    return name if name in DTYPES else None


def _dates_as_text(series: pd.Series) -> bool:
    """Whether a text column's values read as dates or times (up to 1,000 of them, each with a digit and a date or
    time separator, 90% parsed by pandas): its exclusion message then says how to keep it, since a schema has no
    date kind. Reads the private values, as all of :func:`infer_schema` does; the message quotes none."""
    if not (pd.api.types.is_object_dtype(series.dtype) or pd.api.types.is_string_dtype(series.dtype)):
        return False
    values = series.dropna().astype(str).head(1000)
    if values.empty or not values.str.contains(r"\d", regex=True).all() or \
            not values.str.contains(r"[-/:]", regex=True).all():
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = pd.to_datetime(values, errors="coerce", format="mixed")
    return bool(parsed.notna().mean() >= 0.9)


def infer_column(series: pd.Series) -> Column | None:
    """One column's proposed metadata, or None for an ID-like column."""
    check_column(series)
    name = str(series.name)
    nullable = bool(series.isna().any())
    values = series.dropna()
    if values.empty:
        raise InputError(f"Column '{name}' has no values (all missing); drop it or declare it in a schema.")
    dtype = _dtype_name(series)
    if pd.api.types.is_bool_dtype(series.dtype):
        return Column(name, "binary", nullable=nullable, categories=(False, True), dtype=dtype)
    if not pd.api.types.is_numeric_dtype(series.dtype):
        uniques = pd.unique(values)
        if len(uniques) > max(50, ID_LIKE_RATIO * len(series)):
            return None
        cats = tuple(sorted((_plain(u) for u in uniques), key=lambda v: (str(type(v)), str(v))))
        kind = "binary" if len(cats) == 2 else "categorical"
        return Column(name, kind, nullable=nullable, categories=cats, dtype=dtype)
    arr = values.to_numpy(dtype=float)
    if np.isinf(arr).any():
        raise InputError(f"Column '{name}' holds infinite values; replace them or mark them missing.")
    uniques = np.unique(arr)
    integral = bool(np.all(np.mod(arr, 1) == 0))
    if len(uniques) == 2:
        cats = tuple(int(u) if integral else float(u) for u in uniques)
        return Column(name, "binary", nullable=nullable, categories=cats, dtype=dtype)
    lower, upper = float(arr.min()), float(arr.max())
    step = None if integral else decimal_step(uniques)
    special = _special_value(arr, uniques, lower, upper)
    if special is not None:
        return Column(name, "mixed", nullable=nullable, lower=lower, upper=upper, special_values=(special,),
                      integer_valued=integral, dtype=dtype, step=step)
    if lower >= 0 and len(uniques) > 10:
        median, q99 = np.quantile(arr, [0.5, 0.99])
        if q99 > 1000 and q99 > 50 * max(median, 1e-12):
            return Column(name, "long_tail", nullable=nullable, lower=lower, upper=upper, integer_valued=integral,
                          dtype=dtype, step=step)
    kind = "integer" if integral else "continuous"
    return Column(name, kind, nullable=nullable, lower=lower, upper=upper, dtype=dtype, step=step)


def decimal_step(values: np.ndarray) -> float | None:
    """The largest step of which every value is a whole multiple, when the values have at most
    ``STEP_DECIMALS`` decimals (None otherwise): 0.5 for 1, 1.5, 2, 3.5; 0.25 for quarters; 0.0001 for four-decimal
    coordinates. Values computed in floating point (0.1 + 0.2) count as their decimal; a quotient (1/3) has none."""
    values = np.asarray(values, float)
    for decimals in range(1, STEP_DECIMALS + 1):
        scaled = values * 10.0 ** decimals
        if np.abs(scaled).max() >= 2.0 ** 52:
            return None
        whole = np.round(scaled)
        if np.all(np.abs(scaled - whole) <= 1e-6):
            common = int(np.gcd.reduce(np.abs(whole).astype(np.int64)))
            return round(common / 10.0 ** decimals, decimals) if common else None
    return None


def _special_value(arr: np.ndarray, uniques: np.ndarray, lower: float, upper: float) -> float | None:
    if len(uniques) <= 10:
        return None
    for candidate in (lower, upper):
        if np.mean(arr == candidate) >= SPECIAL_VALUE_SHARE:
            return float(candidate)
    return None


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    return value
