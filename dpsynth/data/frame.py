"""Checks on input frames, conforming private data to a schema, and restoring dtypes of synthetic data.

Documented handling of out-of-schema values (nothing is dropped silently):

- numeric values outside the public ``[lower, upper]`` bounds are **clipped** to the bounds (what DP needs:
  the bounds must not depend on the data). A DP fit says so from a DP estimate of the clipped rows (the metadata
  histograms count them; :mod:`dpsynth.data.discovery`); only a non-private use (``exact=True``) warns here with
  the exact number clipped;
- categorical values outside the declared categories raise :class:`SchemaError`, unless the column
  declares an ``other`` category, to which they are then mapped (DP category discovery does this for rare
  categories);
- NaN is kept (and modelled) in nullable columns and refused in others; infinite values are refused.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from dpsynth.data.schema import Schema
from dpsynth.errors import InputError

__all__ = ["check_frame", "check_column", "conform", "restore_dtypes", "categorical_codes"]


def check_frame(df: object) -> None:
    """Refuse inputs no model can learn from, with one clear line: not a frame, no rows or columns, duplicate
    or non-string column names, and any column :func:`check_column` refuses (every column is checked, also
    ones a schema excludes: drop those before fitting)."""
    if not isinstance(df, pd.DataFrame):
        raise InputError(f"Expected a pandas DataFrame. Found {type(df).__name__}.")
    if df.shape[1] == 0:
        raise InputError("The table has no columns.")
    if df.shape[0] == 0:
        raise InputError("The table has no rows.")
    names = [str(c) for c in df.columns]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"The table has duplicate column names: {dupes}.")
    bad = [c for c in df.columns if not isinstance(c, str)]
    if bad:
        raise InputError(f"Column names must be strings. Found {bad[:5]}; rename them "
                         "(e.g. df.columns = df.columns.astype(str)).")
    for name in df.columns:
        check_column(df[name])


# infer_dtype results of an object column whose values cannot collide: equal values are the same datum
_SAFE_OBJECT_TYPES = ("string", "empty", "boolean", "integer", "floating", "mixed-integer-float")
_DATE_TYPES = ("datetime", "datetime64", "date", "time", "timedelta", "timedelta64", "period")
_DATE_HINT = "convert it to a number (e.g. days since an epoch) or to text"


def check_column(series: pd.Series) -> None:
    """Refuse a column whose values dpsynth cannot model without changing them (one InputError line).

    Accepted: bool, integer and float dtypes (numpy or nullable), ``str`` / ``string``, ``category`` with
    such categories, and ``object`` columns holding only text, only booleans or only numbers. Refused:
    dates and durations (datetime64, timedelta64, period, or ``datetime`` objects), complex numbers (casting
    would drop the imaginary part), lists / dicts / other containers, bytes, decimals, and object columns
    mixing types (``True == 1`` and ``1 == "1"`` after a CSV round trip would merge distinct categories).
    """
    name, dtype = series.name, series.dtype
    if pd.api.types.is_complex_dtype(dtype):
        raise InputError(f"Column '{name}' holds complex numbers (dtype {dtype}); split it into real and "
                         "imaginary columns (casting would drop the imaginary part).")
    if (pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype)
            or isinstance(dtype, pd.PeriodDtype)):
        raise InputError(f"Column '{name}' holds dates or times (dtype {dtype}); {_DATE_HINT}.")
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        return
    if isinstance(dtype, pd.CategoricalDtype):
        _check_objects(name, pd.Series(dtype.categories, dtype=object), "category")
        return
    if pd.api.types.is_object_dtype(dtype):
        _check_objects(name, series, "object")
        return
    if pd.api.types.is_string_dtype(dtype):  # str, string, string[pyarrow]
        return
    raise InputError(f"Column '{name}' has dtype {dtype}, which dpsynth cannot model; convert it to numbers, "
                     "text or a category.")


def _check_objects(name, values: pd.Series, dtype: str) -> None:
    found = pd.api.types.infer_dtype(values, skipna=True)
    if found in _SAFE_OBJECT_TYPES:
        return
    if found in _DATE_TYPES:
        raise InputError(f"Column '{name}' holds dates or times ({found} values, dtype {dtype}); {_DATE_HINT}.")
    present = [v for v in values.tolist() if not (v is None or v is pd.NA or (isinstance(v, float) and v != v))]
    types = sorted({type(v).__name__ for v in present})
    containers = [v for v in present if isinstance(v, (list, tuple, dict, set, frozenset, np.ndarray, pd.Series))]
    if containers:
        # no example value: this check runs on private rows, and a message must not quote them
        raise InputError(f"Column '{name}' holds {type(containers[0]).__name__} values; "
                         "each cell must be one number, boolean or text (split or encode them as text first).")
    if found == "complex" or any(isinstance(v, (complex, np.complexfloating)) for v in present):
        raise InputError(f"Column '{name}' holds complex numbers; split it into real and imaginary columns.")
    if len(types) > 1:
        raise InputError(f"Column '{name}' mixes value types ({', '.join(types)}) in one {dtype} column; equal-looking "
                         f"values (True and 1, 1 and '1') would merge. Convert it to one type, e.g. "
                         f"df['{name}'].astype(str).")
    raise InputError(f"Column '{name}' holds {', '.join(types) or found} values, which dpsynth cannot model; "
                     "convert them to numbers or text.")


def categorical_codes(series: pd.Series, categories: tuple, other=None, *, unknown_as_missing: bool = False
                      ) -> np.ndarray:
    """Index of each value in ``categories`` (-1 for NaN); values are matched as-is or by their string form.

    Values outside ``categories`` map to the index of ``other`` when given, to -1 (missing) with
    ``unknown_as_missing``, else raise InputError.
    """
    lookup = {c: i for i, c in enumerate(categories)}
    lookup_str = {str(c): i for i, c in enumerate(categories)}
    inverse, uniques = pd.factorize(series, use_na_sentinel=True)
    mapped = np.empty(len(uniques), dtype=np.int64)
    for j, u in enumerate(uniques):
        i = lookup.get(u)
        if i is None:
            i = lookup_str.get(str(u))
        if i is None and unknown_as_missing:
            i = -1
        elif i is None:
            if other is None:
                raise InputError(f"Column '{series.name}': value {u!r} is not among the declared categories.")
            i = lookup[other]
        mapped[j] = i
    return np.where(inverse < 0, -1, mapped[np.clip(inverse, 0, None)] if len(mapped) else -1)  # -1: missing


def conform(df: pd.DataFrame, schema: Schema, *, exact: bool = False) -> pd.DataFrame:
    """Return the schema's columns of ``df`` in schema order, numerics as float clipped to bounds, categoricals
    mapped onto the declared category values (NaN kept). Raises SchemaError on mismatch.

    With ``exact=True`` (non-private use only) the errors and the clipping warning carry exact counts and values;
    otherwise they name the rule and the column, and clipping is not reported here (DESIGN.md §1 rule 8)."""
    schema.validate(df, exact=exact)
    out = {}
    clipped = {}
    for col in schema.columns:
        series = df[col.name]
        if col.is_numeric:
            values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):
                n_out = int(np.sum((values < col.lower) | (values > col.upper)))
            if n_out:
                clipped[col.name] = n_out
            out[col.name] = np.clip(values, col.lower, col.upper)
        else:
            codes = categorical_codes(series, col.categories, col.other, unknown_as_missing=col.unknown_as_missing)
            cats = np.asarray(list(col.categories) + [np.nan], dtype=object)
            out[col.name] = cats[codes]  # code -1 picks the trailing NaN
    if clipped and exact:
        warnings.warn(
            "Values outside the schema bounds were clipped to the bounds: "
            + ", ".join(f"{k} ({v} rows)" for k, v in clipped.items()),
            stacklevel=3,
        )
    return pd.DataFrame(out, index=pd.RangeIndex(len(df)))


def restore_dtypes(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Give sampled data the schema's columns, order and dtypes (ints stay ints, categories stay categories)."""
    missing = [n for n in schema.names if n not in frame.columns]
    if missing:
        raise InputError(f"Internal error: the sampler produced no values for {missing}.")
    out = {}
    for col in schema.columns:
        values = frame[col.name]
        if col.is_numeric:
            arr = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
            arr = np.where(np.isnan(arr), np.nan, np.clip(arr, col.lower, col.upper))
            if col.grid_step is not None:  # whole numbers, or multiples of the schema's step (special values kept)
                arr = np.where(np.isin(arr, col.special_values), arr, col.snap(arr))
            if col.rounds:
                has_nan = np.isnan(arr).any()
                dtype = col.dtype or ("Int64" if has_nan else "int64")
                if dtype == "int64" and has_nan:
                    dtype = "Int64"
                if dtype in ("int64", "Int64"):
                    out[col.name] = pd.array(np.where(np.isnan(arr), 0, arr).astype(np.int64), dtype=dtype)
                    if has_nan:
                        out[col.name][np.isnan(arr)] = pd.NA
                    continue
                out[col.name] = pd.Series(arr, dtype="float64").to_numpy()
            else:
                out[col.name] = arr
        else:
            out[col.name] = _restore_categorical(values, col)
    return pd.DataFrame(out, index=pd.RangeIndex(len(frame)))


def _restore_categorical(values: pd.Series, col) -> pd.Series:
    if col.dtype is not None and str(values.dtype) == col.dtype and col.dtype != "category":
        return pd.Series(values.array)  # already in the declared dtype (a decoder's output): no object round trip
    cats = list(col.categories)
    series = pd.Series(values.to_numpy(dtype=object), dtype=object)
    if col.dtype == "category":
        return pd.Series(pd.Categorical(series, categories=cats))
    if col.dtype in ("bool", "boolean") or (col.dtype is None and all(isinstance(c, (bool, np.bool_)) for c in cats)):
        return series.astype("boolean" if series.isna().any() or col.dtype == "boolean" else "bool")
    natural_int = col.dtype is None and all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in cats)
    if col.dtype in ("int64", "Int64") or natural_int:
        return series.astype("Int64" if series.isna().any() or col.dtype == "Int64" else "int64")
    if col.dtype == "float64":
        return series.astype("float64")
    if col.dtype in ("string", "str"):
        return series.astype(col.dtype)
    return series
