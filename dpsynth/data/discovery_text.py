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
    Allocation,
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
    text_profile,
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
    """DP discovery on a text frame, in the two stages of :class:`~dpsynth.data.discovery.Allocation`. Stage 1:
    the row count, one kind-and-bounds query per column and, for the columns it finds to be text, a profile query
    (:func:`~dpsynth.data.discovery.text_profile`). Stage 2: one query per column still in (the shape histogram, or
    partition selection with the missing count), at the sigma the rest of the budget allows. The plan assumes every
    column may be text (k profiles), so sigma is fixed before any query is answered; what stage 1 does not use goes
    to stage 2."""
    plan = plan_for_ledger(data, ledger, share, "private")
    alloc = Allocation(ledger, share, plan)
    n_rows = noisy_row_count(data, alloc, alloc.sigma(), rng)
    check_feasible(plan, n_rows)
    pending: dict[str, Column | None] = {}  # name -> bounded numeric Column, or None for a text column
    numbers_of: dict[str, np.ndarray] = {}
    text_of: dict[str, pd.Series] = {}  # the column read as text: the text rule's missing tokens are missing
    for name in data.columns:
        kind, col, numbers, is_missing = _kind_and_bounds(data[name], alloc, alloc.sigma(), rng)
        if kind == "numeric":
            pending[name], numbers_of[name] = col, numbers
            continue
        text_of[name] = data[name].where(~is_missing)
        if text_profile(text_of[name], n_rows, alloc, plan, rng):
            pending[name] = None
    sigma = alloc.stage_two(len(pending))
    n_text = sum(col is None for col in pending.values())
    selection_delta = ledger.target_delta / 4 / max(n_text, 1)
    threshold = selection_threshold(sigma, selection_delta)
    floor = noise_floor(sigma, np.zeros(_KIND_CELLS))  # missing mass below it is noise (post-processing)
    columns, hists = [], {}
    for name, col in pending.items():
        if col is not None:
            hist = histogram_numeric(pd.Series(numbers_of[name], name=name), col, public_grid(col), alloc, sigma, rng)
            if hist.missing < floor:
                hist = NumericHistogram(hist.edges, hist.counts, hist.special_counts, 0.0)
        else:
            col, hist = discover_categorical(text_of[name], n_rows, alloc, sigma, threshold, selection_delta,
                                              rng, nullable=True, dtype="str")
            if hist is not None:
                hist = CategoricalHistogram(hist.categories, hist.counts, hist.missing if hist.missing >= floor else 0)
        if col is not None:
            columns.append(col)
            hists[name] = hist
    if not columns:
        raise InputError("DP discovery found no usable column; declare a schema.")
    excluded = tuple(name for name in data.columns if name not in hists)
    return Schema(tuple(columns), provenance="dp", excluded=excluded), DPMetadata(n_rows, hists, sigma=sigma)


_KIND_CELLS = 2 * (len(geometric_grid()) - 1) + 3  # cells of the kind-and-bounds query


def _kind_and_bounds(series: pd.Series, ledger, sigma, rng):
    """Stage 1 of one column of a text frame: ``(kind, Column or None, numbers, is_missing)``, kind "numeric" or
    "text" (``is_missing``: the text rule's missing tokens).

    The query ("DP kind and bounds"): counts over integer-valued numbers by decade, other numbers by decade, exact
    zeros, missing cells and text cells (each cell in exactly one: sensitivity 1). Post-processing decides: numeric
    iff the floored number mass exceeds the noisy text count (a minority of text tokens, like '?', are then missing
    values, said in a warning only when their DP count clears the floor); integer iff no non-integer decade clears
    the floor; bounds and the mixed kind as for numeric dtypes. Every column is nullable; the dtype is fixed per kind
    (``_FIXED_DTYPES``)."""
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
        return "text", None, None, is_missing
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
    return "numeric", col, numbers, is_missing
