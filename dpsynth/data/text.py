"""Private dtypes: read every value as text, and let DP decide what a column is (DESIGN.md §1 rule 8).

pandas infers a column's dtype from its values: one empty cell turns ``int64`` into ``float64``, one ``?`` turns a
number column into text. A schema (kind, nullability, dtype) taken from such a dtype is a deterministic function
of the rows, so it would publish "some row holds a missing value / a non-numeric token here" at epsilon = infinity.
With ``dtypes="private"`` (the default of ``dpsynth fit FILE.csv`` without a schema) dpsynth instead:

1. reads every cell as text (:func:`as_text`); a cell is missing iff it is empty or one of pandas' fixed NA
   tokens (``NA``, ``N/A``, ``NaN``, ``null``, ...): a data-independent rule applied cell by cell;
2. classifies every non-missing cell by a fixed rule (:func:`parse_numbers`): a *number* is a token matching
   ``[+-]digits[.digits][e[+-]digits]`` whose value is finite; anything else (``?``, ``inf``, ``1e999``, ``n/a ``
   with a space) is *text*;
3. leaves the column's kind, integrality, nullability and dtype to DP counts of those classes
   (:func:`dpsynth.data.discovery` documents the query), with fixed dtypes per kind: ``Int64`` for integers,
   ``float64`` for continuous and mixed columns, ``str`` for categories; every column is nullable, with the DP
   count of missing cells as its missing mass.

Tokens are parsed after stripping surrounding ASCII whitespace (``STRIPPED``); digits are ASCII. Leading zeros are not
kept (``007`` is the number 7): a code with leading zeros must be declared categorical in a schema.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["DTYPE_MODES", "as_text", "parse_numbers", "NUMBER_PATTERN", "STRIPPED", "infer_text_dtypes"]

#: ``"public"``: the frame's dtypes are public structure (a caller-built DataFrame, Parquet written by someone who
#: chose the types); ``"private"``: dtypes are read from the values, so they are private and decided by DP
DTYPE_MODES = ("public", "private")
#: a number token: ASCII digits only, no backslash (the same pattern runs in DuckDB's RE2 and Spark's Java regex)
NUMBER_PATTERN = r"[+-]?(?:[0-9]+[.]?[0-9]*|[.][0-9]+)(?:[eE][+-]?[0-9]+)?"
#: what surrounds a token and is stripped before it is parsed: ASCII whitespace (the engines strip the same set)
STRIPPED = " \t\n\r\x0b\x0c"


def as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Every column as ``str`` (missing cells stay missing); a column that is already text is kept as is.

    Numbers keep their round-trip text (``repr``), booleans become ``"True"`` / ``"False"``."""
    out = {}
    for name in frame.columns:
        series = frame[name]
        if pd.api.types.is_string_dtype(series.dtype) and not isinstance(series.dtype, pd.CategoricalDtype):
            out[name] = series.astype("str")
            continue
        values = series.astype(object).to_numpy()
        missing = pd.isna(series).to_numpy()
        text = np.array([None if m else _text(v) for v, m in zip(values, missing)], dtype=object)
        out[name] = pd.Series(text, index=frame.index, dtype="str")
    return pd.DataFrame(out, index=frame.index)


def _text(value) -> str:
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, np.integer):
        return str(int(value))
    return str(value)


def parse_numbers(series: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(numbers, is_text, is_missing)`` for a text column: ``numbers`` holds the value of every number token
    and NaN elsewhere; ``is_text`` marks present cells that are not numbers. Each cell is in exactly one class."""
    text = series.astype("str")
    is_missing = text.isna().to_numpy()
    stripped = text.str.strip(STRIPPED)
    is_number = stripped.str.fullmatch(NUMBER_PATTERN).fillna(False).to_numpy(dtype=bool)
    numbers = np.full(len(text), np.nan)
    if is_number.any():
        with np.errstate(over="ignore"):
            numbers[is_number] = pd.to_numeric(stripped[is_number], errors="coerce").to_numpy(dtype=float)
    finite = np.isfinite(numbers)
    numbers[~finite] = np.nan  # 1e999 overflows: text, not a number
    is_text = ~is_missing & ~finite
    return numbers, is_text, is_missing


def infer_text_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    """Non-private mode only (it reads the values exactly): a text column whose present cells are all numbers
    becomes ``Int64`` (all integral) or ``float64``; others stay text."""
    out = {}
    for name in frame.columns:
        numbers, is_text, is_missing = parse_numbers(frame[name])
        present = ~is_missing
        if present.any() and not is_text.any():
            values = numbers[present]
            integral = bool(np.all(np.mod(values, 1) == 0)) and float(np.abs(values).max()) < 2.0**53
            out[name] = pd.array(numbers, dtype="Float64").astype("Int64") if integral else numbers
        else:
            out[name] = frame[name]
    return pd.DataFrame(out, index=frame.index)
