"""DP discovery for private dtypes (``dtypes="private"``): a text frame's column kinds, bounds and dtypes from DP
counts. The query design and the neighbouring relation are in :mod:`dpsynth.data.discovery` (module docstring);
the text rules (what is missing, what is a number) in :mod:`dpsynth.data.text`."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from dpsynth.data.discovery import (
    MIXED_ZERO_SHARE,
    STEP_RESERVE,
    W_STEP,
    Allocation,
    FrameColumns,
    check_feasible,
    discovered_schema,
    dp_bounds,
    floored_counts,
    geometric_grid,
    noise_floor,
    noisy_numeric_histogram,
    noisy_row_count,
    numeric_cells,
    numeric_counts,
    plan_for_ledger,
    profile_counts,
    public_grid,
    release_stage_two,
    release_step,
    release_zooms,
    released_metadata,
    select_categories,
    spend_metadata,
    step_classes,
    zooms,
)
from dpsynth.data.metadata import DPMetadata
from dpsynth.data.schema import Column, Schema
from dpsynth.data.text import parse_numbers
from dpsynth.errors import InputError
from dpsynth.privacy.ledger import PrivacyLedger
from dpsynth.privacy.mechanisms import gaussian_counts, selection_threshold

__all__ = ["discover_private_dtypes", "TextFrameColumns"]

_FIXED_DTYPES = {"integer": "Int64", "continuous": "float64", "mixed": "float64", "categorical": "str",
                 "binary": "str"}


class TextFrameColumns:
    """What private-dtype discovery reads of a text frame (:func:`dpsynth.data.text.as_text`): the exact counts of
    each query, which :func:`discover_private_dtypes` adds noise to. A CSV file held by an SQL engine answers the
    same queries in SQL (:class:`dpsynth.marginals.tables.SQLTextColumns`), so the same counts give the same
    release. Each method's counts are one query of L2 sensitivity 1 under add/remove-one-row (the module docstring
    of :mod:`dpsynth.data.discovery`)."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame
        self.names = list(frame.columns)
        self._numbers: dict = {}  # name -> the column's numbers (NaN: missing or text), kept for the stage-2 query

    def row_count(self) -> int:
        return len(self.frame)

    def column_type(self, name) -> str:
        return "text"  # every cell is text; the kinds are what discovery decides

    def kind_cells(self, name) -> np.ndarray:
        """The cells of the kind-and-bounds query: integer-valued numbers by decade, other numbers by decade, exact
        zeros, missing cells, text cells (each cell in exactly one)."""
        numbers, is_text, is_missing = parse_numbers(self.frame[name])
        if np.isfinite(numbers).sum() >= is_text.sum():  # a cache for stage 2, kept for likely numbers only: a
            self._numbers[name] = numbers  # memory choice, no release (number_cells parses again on a miss)
        edges = geometric_grid()
        present = numbers[np.isfinite(numbers)]
        zero = present == 0
        integral = np.mod(present, 1) == 0
        int_counts, _, _ = numeric_counts(present[integral & ~zero], edges, ())
        frac_counts, _, _ = numeric_counts(present[~integral], edges, ())
        return np.concatenate([int_counts, frac_counts, [zero.sum(), is_missing.sum(), is_text.sum()]])

    def step_cells(self, name) -> np.ndarray:
        """The step query's cells of a column of numbers (:func:`~dpsynth.data.discovery.step_classes`; text
        tokens and missing cells count nowhere)."""
        numbers = self._numbers.get(name)
        return step_classes(parse_numbers(self.frame[name])[0] if numbers is None else numbers)

    def number_cells(self, col: Column, edges) -> np.ndarray:
        """The shape histogram's cells of a numeric column (text tokens count as missing)."""
        numbers = self._numbers.pop(col.name, None)
        if numbers is None:
            numbers = parse_numbers(self.frame[col.name])[0]
        return numeric_cells(pd.Series(numbers), col, edges)

    def value_counts(self, name) -> tuple[dict, int]:
        return FrameColumns(self.frame[[name]]).value_counts(name)

    def frequent_mass(self, name, cut: float) -> tuple[float, int]:
        return FrameColumns(self.frame[[name]]).frequent_mass(name, cut)


def discover_private_dtypes(source, ledger: PrivacyLedger, share: float, rng, *, target: str | None = None
                            ) -> tuple[Schema, DPMetadata]:
    """DP discovery on a text frame (or a :class:`TextFrameColumns`-like source: an engine's text CSV), in the
    two stages of :class:`~dpsynth.data.discovery.Allocation`. Stage 1: the row count, one kind-and-bounds query
    per column and, for the columns it finds to be text, a profile query
    (:func:`~dpsynth.data.discovery.profile_counts`). Stage 2: one query per column still in (the shape histogram,
    or partition selection with the missing count), at the sigma the rest of the budget allows. The plan assumes
    every column may be text (k profiles), so sigma is fixed before any query is answered; what stage 1 does not
    use goes to stage 2. A declared ``target`` found to be text holds a reserve in stage 2
    (:func:`~dpsynth.data.discovery.release_stage_two`)."""
    if isinstance(source, pd.DataFrame):
        source = TextFrameColumns(source)
    plan = plan_for_ledger(source, ledger, share, "private", target)
    alloc = Allocation(ledger, share, plan)
    n_sd = alloc.sigma()
    n_rows = noisy_row_count(source, alloc, n_sd, rng)
    check_feasible(plan, n_rows)
    pending: dict = {}  # name -> bounded numeric Column, or None for a text column
    for name in source.names:
        col = _kind_and_bounds(str(name), source.kind_cells(name), alloc, alloc.sigma(), rng)
        if col is not None:
            pending[name] = col
        elif plan is None or str(name) == target or profile_counts(
                str(name), *source.frequent_mass(name, plan.profile_cut), n_rows, alloc, plan, rng):
            pending[name] = None  # a declared target skips the profile: it is wanted, whatever its values
    # the columns of non-integer numbers share the step reserve of every column (fully adaptive composition: how
    # many there are is a DP output; the planned total holds); each gets at most a histogram's budget
    fractional = [name for name, col in pending.items() if col is not None and not col.rounds]
    if fractional:
        weight = min(W_STEP, STEP_RESERVE * len(source.names) / len(fractional))
        for name in fractional:
            pending[name] = release_step(str(name), source.step_cells(name), pending[name], alloc,
                                         alloc.sigma(weight), rng)
    alloc.hold_reserve(pending)
    n_text = sum(col is None for col in pending.values())
    # the target's reserve may pay for a second partition selection: one more share of the selections' delta
    selection_delta = ledger.target_delta / 4 / max(n_text + (alloc.target is not None), 1)

    def release(name, col, col_sigma: float, note: str):
        floor = noise_floor(col_sigma, np.zeros(_KIND_CELLS))  # missing mass below it is noise (post-processing)
        if col is not None:
            edges = public_grid(col)
            hist = noisy_numeric_histogram(source.number_cells(col, edges), col, edges, alloc, col_sigma, rng)
            return col, (replace(hist, missing=0.0) if hist.missing < floor else hist)
        key_counts, missing = source.value_counts(name)
        col, hist = select_categories(str(name), key_counts, missing, n_rows, alloc, col_sigma,
                                      selection_threshold(col_sigma, selection_delta), selection_delta, rng,
                                      nullable=True, dtype="str", note=note)
        if hist is not None:
            hist = replace(hist, missing=hist.missing if hist.missing >= floor else 0.0)
        return col, hist

    columns, hists, sigma = release_stage_two(pending, alloc, release, zooms_held=sum(
        col is not None and zooms(col) for col in pending.values()))
    if not columns:
        raise InputError("DP discovery found no usable column; declare a schema.")
    release_zooms(hists, columns, source.number_cells, alloc, sigma, alloc.stage_two, rng)
    return discovered_schema(source.names, columns, hists, target), released_metadata(n_rows, n_sd, hists, sigma)


_KIND_CELLS = 2 * (len(geometric_grid()) - 1) + 3  # cells of the kind-and-bounds query


def _kind_and_bounds(name: str, cells: np.ndarray, ledger, sigma, rng) -> Column | None:
    """Stage 1 of one column of a text table: its bounded numeric Column, or None for a text column, from the
    noisy cells of the kind-and-bounds query (:meth:`TextFrameColumns.kind_cells`).

    Post-processing decides: numeric iff the floored number mass exceeds the noisy text count (a minority of text
    tokens, like '?', are then missing values, said in a warning only when their DP count clears the floor);
    integer iff no non-integer decade clears the floor; bounds and the mixed kind as for numeric dtypes. Every
    column is nullable; the dtype is fixed per kind (``_FIXED_DTYPES``)."""
    spend_metadata(ledger, sigma, f"DP kind and bounds {name}", bins=len(cells))
    noisy = gaussian_counts(np.asarray(cells), sigma=sigma, rng=rng)
    edges = geometric_grid()
    d = len(edges) - 1
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
        return None
    if text_mass > 0:
        warnings.warn(f"Column '{name}' is numeric but some values (about {text_mass:.0f}, a DP estimate) are not "
                      "numbers; they are treated as missing.", stacklevel=5)
    lower, upper = dp_bounds(bins, zero_count, edges)
    if is_integral:
        lower, upper = math.floor(lower), math.ceil(upper)
    mixed = bins.sum() > 0 and zero_count >= MIXED_ZERO_SHARE * number_mass and lower <= 0 <= upper
    kind = "mixed" if mixed else ("integer" if is_integral else "continuous")
    return Column(name, kind, nullable=True, lower=lower, upper=upper, special_values=(0.0,) if mixed else (),
                  integer_valued=is_integral and mixed, dtype="Int64" if is_integral else _FIXED_DTYPES[kind])
