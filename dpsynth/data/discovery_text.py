"""DP discovery for private dtypes (``dtypes="private"``): a text frame's column kinds, bounds and dtypes from DP
counts. The query design and the neighbouring relation are in :mod:`dpsynth.data.discovery` (module docstring);
the text rules (what is missing, what is a number) in :mod:`dpsynth.data.text`."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from dpsynth.data.discovery import (
    MIXED_ZERO_SHARE,
    check_feasible,
    discover_categorical,
    dp_bounds,
    floored_counts,
    geometric_grid,
    histogram_numeric,
    noise_floor,
    noisy_row_count,
    numeric_counts,
    plan_for_ledger,
    public_grid,
    spend_metadata,
)
from dpsynth.data.metadata import CategoricalHistogram, DPMetadata, NumericHistogram
from dpsynth.data.schema import Column, Schema
from dpsynth.data.text import parse_numbers
from dpsynth.errors import InputError
from dpsynth.privacy.ledger import PrivacyLedger
from dpsynth.privacy.mechanisms import gaussian_counts, selection_threshold

__all__ = ["discover_private_dtypes"]

_FIXED_DTYPES = {"integer": "Int64", "continuous": "float64", "mixed": "float64", "categorical": "str",
                 "binary": "str"}


def discover_private_dtypes(data: pd.DataFrame, ledger: PrivacyLedger, share: float, rng
                             ) -> tuple[Schema, DPMetadata]:
    """DP discovery on a text frame: two Gaussian count queries per column whatever it turns out to be (so the
    number of queries, hence sigma, is fixed before any is answered) plus the row count."""
    k = data.shape[1]
    selection_delta = ledger.target_delta / 4 / k  # any column may turn out to be text
    # 2k + 1 queries: sigma and threshold are the pre-flight plan's
    plan = plan_for_ledger(data, ledger, share, "private")
    sigma, threshold = (0.0, selection_threshold(0.0, selection_delta)) if plan is None else \
        (plan.sigma, plan.category_rows)
    n_rows = noisy_row_count(data, ledger, sigma, rng)
    check_feasible(plan, n_rows)
    columns, hists, excluded = [], {}, []
    for name in data.columns:
        col, hist = _discover_typed(data[name], n_rows, ledger, sigma, threshold, selection_delta, rng)
        if col is None:
            excluded.append(name)
            continue
        columns.append(col)
        hists[name] = hist
    if not columns:
        raise InputError("DP discovery found no usable column; declare a schema.")
    return Schema(tuple(columns), provenance="dp", excluded=tuple(excluded)), DPMetadata(n_rows, hists, sigma=sigma)


def _discover_typed(series: pd.Series, n_rows, ledger, sigma, threshold, selection_delta, rng):
    """One column of a text frame. Query 1 ("DP kind and bounds"): counts over integer-valued numbers by decade,
    other numbers by decade, exact zeros, missing cells and text cells (each cell in exactly one: sensitivity 1).
    Post-processing decides: numeric iff the floored number mass exceeds the noisy text count (a minority of text
    tokens, like '?', are then missing values, said in a warning only when their DP count clears the floor);
    integer iff no non-integer decade clears the floor; bounds and the mixed kind as for numeric dtypes. Query 2 is
    the shape histogram (numeric) or partition selection with the missing count (text). Every column is nullable;
    the dtype is fixed per kind (``_FIXED_DTYPES``); missing mass below the floor is set to 0 (post-processing), so
    noise alone does not make a model emit missing values."""
    name = str(series.name)
    numbers, is_text, is_missing = parse_numbers(series)
    edges = geometric_grid()
    present = numbers[np.isfinite(numbers)]
    zero = present == 0
    integral = np.mod(present, 1) == 0
    int_counts, _, _ = numeric_counts(present[integral & ~zero], edges, ())
    frac_counts, _, _ = numeric_counts(present[~integral], edges, ())
    cells = np.concatenate([int_counts, frac_counts, [zero.sum(), is_missing.sum(), is_text.sum()]])
    spend_metadata(ledger, sigma, f"DP kind and bounds {name}", bins=len(cells))
    noisy = gaussian_counts(cells, sigma=sigma, rng=rng)
    d = len(int_counts)
    floor = noise_floor(sigma, noisy)
    noisy_int, noisy_frac = noisy[:d], noisy[d:2 * d]
    noisy_zero, noisy_text = noisy[-3], noisy[-1]  # noisy[-2], the missing cell, is re-counted by query 2
    zero_count = float(noisy_zero) if noisy_zero >= floor else 0.0
    is_integral = not bool((noisy_frac >= floor).any())
    # an integer column is bounded from its integer cells alone (its other cells hold noise only); otherwise a
    # decade's two cells are summed, with noise sd sqrt(2) sigma
    decades, sd = (noisy_int, sigma) if is_integral else (noisy_int + noisy_frac, math.sqrt(2.0) * sigma)
    bins = floored_counts(decades, sd, zero_kept=zero_count > 0, integral=is_integral)
    number_mass = float(bins.sum()) + zero_count
    text_mass = float(noisy_text) if noisy_text >= floor else 0.0
    if number_mass <= text_mass or number_mass <= 0:
        text = series.where(~is_missing)
        col, hist = discover_categorical(text, n_rows, ledger, sigma, threshold, selection_delta, rng,
                                          nullable=True, dtype="str")
        if hist is not None:
            hist = CategoricalHistogram(hist.categories, hist.counts, hist.missing if hist.missing >= floor else 0.0)
        return col, hist
    if text_mass > 0:
        warnings.warn(f"Column '{name}' is numeric but some values (about {text_mass:.0f}, a DP estimate) are not "
                      "numbers; they are treated as missing.", stacklevel=5)
    lower, upper = dp_bounds(bins, zero_count, edges)
    if is_integral:
        lower, upper = math.floor(lower), math.ceil(upper)
    mixed = bins.sum() > 0 and zero_count >= MIXED_ZERO_SHARE * number_mass and lower <= 0 <= upper
    kind = "mixed" if mixed else ("integer" if is_integral else "continuous")
    col = Column(name, kind, nullable=True, lower=lower, upper=upper, special_values=(0.0,) if mixed else (),
                 integer_valued=is_integral and mixed, dtype="Int64" if is_integral else _FIXED_DTYPES[kind])
    hist = histogram_numeric(pd.Series(numbers, name=name), col, public_grid(col), ledger, sigma, rng)
    if hist.missing < floor:
        hist = NumericHistogram(hist.edges, hist.counts, hist.special_counts, 0.0)
    return col, hist
