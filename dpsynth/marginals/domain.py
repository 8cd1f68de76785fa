"""The discrete domain select-measure-generate models count on, built from public and DP facts only.

Each schema column becomes one attribute with a fixed number of cells (:class:`ColumnCells`):

- a categorical or binary column: one cell per declared or DP-released category (``"__other__"`` included when the
  column has it), plus a missing cell when the column is nullable. With ``rare`` > 0 (the models' ``rare_cells``;
  off by default, 3 is MST's rule), the categories whose DP metadata count is below ``rare`` noise standard
  deviations share one cell when there are two or more of them: a cell measured for a handful of rows is mostly
  noise, and merging them shrinks every marginal the column enters (Adult's native-country: 42 cells). Decoding
  draws a category of the shared cell in proportion to the DP counts. On Adult it measured worse (README);
- a numeric column: up to ``max_bins`` bins, then one cell per special value, then a missing cell when nullable.
  The bins are unions of the metadata histogram's bins (public grid or DP discovery, :mod:`dpsynth.data.discovery`;
  uneven where the metadata zoomed into a run of grid bins, :func:`dpsynth.data.discovery.release_zooms`),
  cut where the DP histogram's cumulative mass crosses ``k / max_bins``: equal-mass bins from DP counts (no exact
  quantile is ever read), so most of the resolution goes where the rows are. Small integer ranges keep their unit
  bins when they fit. Bounds found by DP discovery are whole decades: there the bins also end where the DP histogram
  says the rows do (:func:`support`), so no bin unites the rows' last values with a stretch of empty range; inside
  a cell that still does (a zoom's thin slices), decoding draws that stretch at its unclipped sum
  (:func:`stretches_at_their_sums`).

Encoding private rows into cells (:meth:`Discretizer.encode`) is what backends count; it uses the schema only.
Decoding (:meth:`Discretizer.decode`) maps cells back to values: a category, a missing value, a special value, or
a number drawn inside its bin — first one of the metadata bins the cell unites, in proportion to their DP counts
(smoothed along the grid where the density is smooth, :func:`smooth_fine_counts`), then inside it from a linear
density sloped as the neighbouring bins' DP densities (a frequency polygon, :func:`fine_slopes`; whole numbers and
multiples of a schema ``step``: rounded to the nearest multiple inside that bin, :func:`snap_inside`, so a unit bin
decodes to its one value). Decoding reads only DP outputs (post-processing), and never emits a value outside
the schema's domain (no ``None`` where the column is not nullable).

The metadata histograms are also *measurements* of the 1-way marginals (:meth:`Discretizer.metadata_measurement`):
a cell that unites k metadata cells has noise variance k sigma^2, so the estimation weighs it accordingly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpsynth.data.frame import categorical_codes
from dpsynth.data.metadata import CategoricalHistogram, DPMetadata, NumericHistogram
from dpsynth.data.schema import Schema, tidy_multiples
from dpsynth.errors import InputError
from dpsynth.marginals.graphical_model import draw_rows

__all__ = ["ColumnCells", "Discretizer", "DEFAULT_MAX_BINS", "fine_slopes", "linear_inside", "smooth_fine_counts",
           "smooth_grid_counts", "snap_inside", "stretches_at_their_sums", "support"]

DEFAULT_MAX_BINS = 32


@dataclass
class ColumnCells:
    """How one column maps to cells. Numeric: ``edges`` (coarse bin edges), ``fine_edges`` and ``fine_weights``
    (the metadata histogram's bins and their clipped DP counts, for decoding), ``groups`` (fine bins per coarse
    bin). Categorical: ``categories``, ``category_cells`` (the cell of each category; empty: one cell each) and
    ``fine_weights`` (their clipped DP counts, for decoding a shared cell)."""

    name: str
    kind: str  # "categorical" or "numeric"
    nullable: bool
    categories: tuple = ()
    edges: np.ndarray = field(default_factory=lambda: np.zeros(0))
    fine_edges: np.ndarray = field(default_factory=lambda: np.zeros(0))
    fine_weights: np.ndarray = field(default_factory=lambda: np.zeros(0))
    specials: tuple[float, ...] = ()
    rounds: bool = False
    category_cells: tuple[int, ...] = ()
    step: float = 0.0  # numeric: the values' spacing (schema ``step``; 1 for whole numbers; 0: any number)

    @property
    def n_bins(self) -> int:
        return max(len(self.edges) - 1, 0)

    @property
    def n_category_cells(self) -> int:
        return max(self.category_cells) + 1 if self.category_cells else len(self.categories)

    def cell_of_category(self) -> np.ndarray:
        """The cell of each category (identity unless rare categories share a cell)."""
        return np.asarray(self.category_cells, dtype=np.int64) if self.category_cells else \
            np.arange(len(self.categories), dtype=np.int64)

    @property
    def size(self) -> int:
        body = self.n_category_cells if self.kind == "categorical" else self.n_bins + len(self.specials)
        return body + int(self.nullable)

    @property
    def missing_cell(self) -> int | None:
        return self.size - 1 if self.nullable else None

    def groups(self) -> np.ndarray:
        """Coarse bin of each fine bin."""
        centres = (self.fine_edges[:-1] + self.fine_edges[1:]) / 2
        return np.clip(np.searchsorted(self.edges, centres, side="right") - 1, 0, self.n_bins - 1)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "nullable": self.nullable,
                "categories": [c.item() if isinstance(c, np.generic) else c for c in self.categories],
                "edges": [float(x) for x in self.edges], "fine_edges": [float(x) for x in self.fine_edges],
                "fine_weights": [float(x) for x in self.fine_weights], "specials": [float(s) for s in self.specials],
                "rounds": self.rounds, "category_cells": [int(c) for c in self.category_cells], "step": self.step}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ColumnCells:
        return cls(d["name"], d["kind"], bool(d["nullable"]), tuple(d["categories"]), np.asarray(d["edges"], float),
                   np.asarray(d["fine_edges"], float), np.asarray(d["fine_weights"], float),
                   tuple(float(s) for s in d["specials"]), bool(d["rounds"]),
                   tuple(int(c) for c in d.get("category_cells", ())),  # files before rare cells: one cell each
                   float(d.get("step", 1.0 if d["rounds"] else 0.0)))  # files before steps: whole numbers or none


def _rare_cells(counts: np.ndarray, threshold: float) -> tuple[int, ...]:
    """The cell of each category when those with a DP count below ``threshold`` share one (the last cell; the
    others keep their order); () when fewer than two are rare (nothing to merge)."""
    rare = counts < threshold
    if threshold <= 0 or rare.sum() < 2:
        return ()
    kept = np.cumsum(~rare) - 1
    return tuple(int(c) for c in np.where(rare, int((~rare).sum()), kept))


def _coarse_edges(edges: np.ndarray, weights: np.ndarray, max_bins: int, inside: tuple[int, int] | None = None
                  ) -> np.ndarray:
    """At most ``max_bins`` bins, each a union of consecutive fine bins, cut at equal steps of the DP mass (a
    little mass uniform along the range is mixed in so that a run of empty fine bins still gets a bin of its own
    eventually; along the range, not per fine bin, so that a zoom's many narrow sub-bins do not draw the coarse bins
    away from the rest of the range).

    ``inside`` (fine bins ``[lo, hi)``, :func:`support`): those equal-mass cuts only inside, and a cut at each end
    of it, then (as far as a quarter of ``max_bins`` allows) ``TAIL_STEPS`` fine bins out from them: a bin then no
    longer unites the rows' last values with a stretch of empty range inside which decoding would draw numbers by the
    noise (that stretch's mass is measured on its own), and a thin real tail keeps narrow bins next to the rows."""
    k = len(edges) - 1
    if k <= max_bins:
        return edges.copy()
    lo, hi = inside or (0, k)
    # the cuts beyond the support: at its ends, then TAIL_STEPS fine bins out from them, as many as a quarter of
    # the bins allows (the rows keep the rest)
    ends = [i for d in (0, *TAIL_STEPS) for i in ((lo - d) * (lo > 0), (hi + d) * (hi < k)) if 0 < i < k]
    ends = list(dict.fromkeys(ends))[: max(max_bins // 4, 2)]
    if len(ends) >= max_bins - 1:
        ends, lo, hi = [], 0, k  # no room for the rows' own bins: cut by mass alone
    inside_mask = (np.arange(k) >= lo) & (np.arange(k) < hi)
    widths = np.where(inside_mask, np.diff(edges), 0.0)
    uniform = widths / widths.sum() if widths.sum() > 0 else np.full(k, 1.0 / k)
    mass = np.where(inside_mask, np.clip(weights, 0, None), 0.0)
    mass = mass / mass.sum() if mass.sum() > 0 else uniform
    cdf = np.cumsum(0.9 * mass + 0.1 * uniform)
    bins = max_bins - len(ends)
    cuts = np.searchsorted(cdf, np.arange(1, bins) / bins, side="left") + 1  # fine edge index after the bin
    first, last = max(lo + 1, 1), min(hi - 1, k - 1)
    inner = np.clip(cuts, first, last) if first <= last else np.zeros(0, dtype=int)
    inner = np.unique(np.r_[inner, ends].astype(int))
    return np.concatenate([[edges[0]], edges[inner], [edges[-1]]])


#: :func:`_coarse_edges`: beyond each end of the rows' support, bins end this many fine bins out (then the rest)
TAIL_STEPS = (2, 8)
#: :func:`support`: a bin beyond this many noise sds surely holds rows (pure noise: once in ~30,000 bins); without
#: one (a small table, every bin mostly noise) nothing is cut ...
SUPPORT_BIN_SD = 4.0
#: ... declaring a bin empty costs its squared positive z-score, declaring it full this much (so a bin counts as
#: rows when its count is beyond sqrt(2) noise sds: pure noise averages 0.5 a bin) ...
SUPPORT_PENALTY = 2.0
#: ... and a run cut off must hold less than this many noise sds of its sum
SUPPORT_RUN_SD = 3.0


def support(noisy: np.ndarray, sd: np.ndarray, edges: np.ndarray, *, into_slices: bool = False) -> tuple[int, int]:
    """The fine bins ``[lo, hi)`` of a numeric column's DP histogram that hold its rows, read off the unclipped noisy
    counts ``noisy``, their noise sds ``sd`` and the bins' ``edges`` (post-processing).

    Why: DP bounds are whole decades (discovery), so a column often fills a tenth of its range, and every empty grid
    bin keeps a clipped count of about 0.4 noise sd: drawing numbers inside a cell by those counts put 4% of
    California's synthetic latitudes below 32.5 or above 42, and longitudes down to -988.

    How: at each end, only within the outermost run of equal-width bins (a zoom's sub-bins are a run of their own,
    and its window holds 90% of the DP mass: a cut never crosses from the grid into them, unless they are one whole
    number each, as a year's: King County's sale years 2014-2015 got a window of 1984-2125) and never past a bin beyond
    ``SUPPORT_BIN_SD`` noise sds, the change point that minimises the cost of calling the bins before it empty (each
    its squared positive z-score) and those after it full (``SUPPORT_PENALTY`` each), moved back until what it cuts
    off sums to within ``SUPPORT_RUN_SD`` noise sds of 0. With no bin beyond
    ``SUPPORT_BIN_SD`` sds (a small table: every bin mostly noise) nothing is cut. A cut-off run is not dropped: the
    cells still cover the whole range (:func:`_coarse_edges` gives it bins of its own, whose mass is measured), so
    a thin real tail the noise hides keeps its rows. Exact counts (sd 0): the empty ends.

    ``into_slices``: the cut may go on into a zoom's thin slices of a continuous column too (for where numbers are
    drawn inside a cell, :func:`stretches_at_their_sums`; the cells themselves never end there: bins spent on the
    slices' noise cost the measured joint). The bins that surely hold rows: :func:`sure_bins`."""
    noisy, sd = np.asarray(noisy, float), np.asarray(sd, float)
    k = len(noisy)
    if k == 0:
        return 0, 0
    if not np.any(sd > 0):
        full = np.flatnonzero(noisy > 0)
        return (int(full[0]), int(full[-1]) + 1) if len(full) else (0, k)
    strong = np.flatnonzero(sure_bins(noisy, sd, edges))
    if len(strong) == 0:
        return 0, k
    widths = np.diff(np.asarray(edges, float))
    same = np.r_[True, np.isclose(widths[1:], widths[:-1], rtol=1e-6, atol=0.0)]
    first_run = int(np.argmin(same[1:])) + 1 if not same[1:].all() else k  # bins of the first run
    last_run = k - (int(np.argmin(same[::-1])) + 1) if not same[1:].all() else 0  # where the last run starts
    # a zoom's sub-bins of one whole number each (edges at half-integers: a year's 1984.5, 1985.5, ...) are not
    # thin slices of a continuous column's mass: a cut may go on through them
    x = np.asarray(edges, float)
    half = np.isclose(np.mod(x - 0.5, 1.0), 0.0, atol=1e-9) | np.isclose(np.mod(x - 0.5, 1.0), 1.0, atol=1e-9)
    whole = (widths <= 1.0 + 1e-9) & (half[:-1] | half[1:])
    while first_run < k and (into_slices or whole[first_run]):
        first_run += 1
    while last_run > 0 and (into_slices or whole[last_run - 1]):
        last_run -= 1

    def cut(values: np.ndarray, sds: np.ndarray, run: int) -> int:
        z = np.where(sds > 0, values / np.where(sds > 0, sds, 1.0), 0.0)[:run]
        cost = np.r_[0.0, np.cumsum(np.clip(z, 0, None) ** 2 - SUPPORT_PENALTY)]
        best = int(np.argmin(cost))
        sums, spread = np.r_[0.0, np.cumsum(values[:best])], np.r_[0.0, np.sqrt(np.cumsum(sds[:best] ** 2))]
        return int(np.flatnonzero(sums <= SUPPORT_RUN_SD * spread)[-1])

    lo = cut(noisy, sd, min(first_run, int(strong[0])))
    hi = k - cut(noisy[::-1], sd[::-1], min(k - last_run, k - 1 - int(strong[-1])))
    return (lo, hi) if lo < hi else (0, k)


def sure_bins(noisy: np.ndarray, sd: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The fine bins that surely hold rows (a mask; post-processing): each bin beyond ``SUPPORT_BIN_SD`` noise sds,
    and a zoom's whole window where none of its slices is: a zoom is released only where the grid's DP mass above
    the noise is at least ``ZOOM_MIN_SD`` noise sds of its sum (:func:`~dpsynth.data.discovery.zoom_window`), so the
    window holds rows as a block even when its rows are too few for any slice to show (the window's slices are the
    bins narrower than the grid's, which are all equal).

    Why: statsmodels' co2 series (2,225 numbers 313-374, no schema, epsilon 1) got DP bounds [100, 1000] and a zoom
    of 64 slices of 0.9 over 311-367, each 35 rows under noise sd 134: with no bin beyond 4 sds nothing was cut, the
    cell holding the rows also held the empty grid bins from 100 up, and `batch-aim` drew 8-25% of its numbers
    outside the real range."""
    noisy, sd = np.asarray(noisy, float), np.asarray(sd, float)
    sure = noisy > SUPPORT_BIN_SD * sd
    widths = np.diff(np.asarray(edges, float))
    window = widths < widths.max() * (1 - 1e-6) if len(widths) else np.zeros(0, dtype=bool)
    if window.any() and not sure[window].any():
        sure = sure | window
    return sure


def stretches_at_their_sums(weights: np.ndarray, noisy: np.ndarray, sd: np.ndarray, edges: np.ndarray,
                            groups: np.ndarray | None = None) -> np.ndarray:
    """Decoding weights of a numeric column's fine bins (``weights``: the clipped DP counts, smoothed or not) with each
    stretch beyond the rows' support (:func:`support`, into a zoom's slices too) scaled to its unclipped sum, clipped
    at 0, separately in each coarse cell (``groups``: the cell of each fine bin; None: one cell), where that cell
    also holds a bin that surely holds rows (:func:`sure_bins`).

    Why: an empty bin's clipped noise is 0.4 noise sd on average, so a cell whose bins are mostly empty drew most of
    its numbers there: King County's zip codes 98001-98199 sit in 9 of a zoom's 64 slices (22 wide, sd 443 each), and
    the cell that held 98001-98023 also held 20 empty slices, whose clipped noise outweighed the real one's 3,000 rows:
    15% of the synthetic zip codes were outside the real range. The unclipped sum is unbiased and is still there for
    a thin real tail the noise hides. Why only beside a sure bin: a run of thin real slices (California's average
    bedrooms 0.87-0.97, 1,500 rows in 19 slices at 0.25 noise sd each) looks empty slice by slice, and its sum is as
    noisy as its rows; in a cell with nothing sure beside it, a low draw of that sum sent the cell's rows onto its one
    kept slice (decile TVD of the column 0.04 -> 0.11). Post-processing of the DP histogram (its unclipped counts and
    their sds)."""
    out = np.asarray(weights, float).copy()
    noisy, sd = np.asarray(noisy, float), np.asarray(sd, float)
    lo, hi = support(noisy, sd, edges, into_slices=True)
    groups = np.zeros(len(out), dtype=np.int64) if groups is None else np.asarray(groups)
    strong = np.unique(groups[lo:hi][sure_bins(noisy, sd, edges)[lo:hi]])
    for side in (np.arange(len(out)) < lo, np.arange(len(out)) >= hi):
        for g in np.intersect1d(groups[side], strong):
            part = side & (groups == g)
            held = out[part].sum()
            if held > 0:
                out[part] *= max(float(noisy[part].sum()), 0.0) / held
    return out


class Discretizer:
    """The cells of every column of ``schema``, from the DP metadata (see the module docstring)."""

    def __init__(self, columns: list[ColumnCells]):
        self.columns = columns

    @classmethod
    def build(cls, schema: Schema, metadata: DPMetadata, max_bins: int = DEFAULT_MAX_BINS, rare: float = 0.0
              ) -> Discretizer:
        """``rare``: categories whose DP count is below ``rare`` times the metadata's noise sd share a cell (0, or
        exact metadata: one cell per category)."""
        if not (isinstance(max_bins, int) and max_bins >= 2):
            raise InputError(f"max_bins must be an integer >= 2. Found {max_bins!r}.")
        sigma = 0.0 if metadata.non_private else float(metadata.sigma or 0.0)
        out = []
        for col in schema.columns:
            hist = metadata.histograms[col.name]
            if col.is_discrete:
                counts = np.clip(np.asarray(getattr(hist, "counts", np.zeros(len(col.categories))), float), 0, None)
                if len(counts) != len(col.categories):  # no DP counts of these categories: nothing to merge on
                    counts = np.full(len(col.categories), np.inf)
                noise = metadata.sigma_of(col.name) if sigma else 0.0  # a declared target's may differ
                out.append(ColumnCells(col.name, "categorical", col.nullable, tuple(col.categories),
                                       fine_weights=np.where(np.isfinite(counts), counts, 1.0),
                                       category_cells=_rare_cells(counts, rare * noise)))
                continue
            if not isinstance(hist, NumericHistogram):
                raise InputError(f"Column '{col.name}': numeric column without a numeric DP histogram.")
            counts = np.asarray(hist.counts, float)
            sd = hist.bin_noise(sigma)[1]  # a zoom's sub-bins are noisier than the grid's bins
            # bins are cut by the mass above the noise (counts less 2 noise sds: clipped noise alone would give every
            # empty fine bin of a long tail ~0.4 sigma of mass, equal-mass cuts would spend many bins out there, each
            # measured with its own noise, and rows would be drawn into the tail: one RAND HIE fit lost R2 2.1 to
            # it). Within a bin, values are drawn by the counts themselves (a bin's own mass comes from the
            # measurements; the fine counts only shape it): a thin region inside a bin (RAND HIE's `lpi` between 3.1
            # and 5.3: 12% of the rows, every fine count under 1 noise sd) must not collapse onto the bin's strong
            # fine bins (1-way TVD 0.21 vs the histogram's 0.14).
            # bounds found by DP discovery are whole decades (Latitude 32-42 gets [10, 100]): a cut at each end of
            # the rows' support (:func:`support`), or an edge bin reaching into the empty range would draw numbers
            # there by the noise. Declared bounds are the user's: their thin tails keep the rows' bins
            discovered = schema.provenance == "dp"
            lo, hi = support(*hist.bin_noise(sigma), hist.edges) if discovered else (0, len(counts))
            fine_edges = np.asarray(hist.edges, float)
            edges = _coarse_edges(fine_edges, np.clip(counts - 2.0 * sd, 0, None), max_bins, (lo, hi))
            weights = smooth_grid_counts(fine_edges, np.clip(counts, 0, None), sd)
            cells = ColumnCells(col.name, "numeric", col.nullable, (), edges, fine_edges, weights,
                                tuple(col.special_values), col.rounds, step=float(col.grid_step or 0.0))
            if discovered:  # inside a cell, the empty stretch beyond the rows (a zoom's slices too) at its sum
                cells.fine_weights = stretches_at_their_sums(weights, *hist.bin_noise(sigma), fine_edges,
                                                             cells.groups())
            out.append(cells)
        return cls(out)

    @property
    def sizes(self) -> list[int]:
        return [c.size for c in self.columns]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    # ------------------------------------------------------------------ private rows -> cells
    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        """Cell codes (n rows x columns, int32) of a frame conformed to the schema; reads nothing but ``frame``."""
        out = np.empty((len(frame), len(self.columns)), dtype=np.int32)
        for j, cells in enumerate(self.columns):
            out[:, j] = encode_column(frame[cells.name], cells)
        return out

    # ------------------------------------------------------------------ cells -> values (post-processing)
    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        data = {}
        for j, cells in enumerate(self.columns):
            data[cells.name] = decode_column(codes[:, j], cells, rng)
        return pd.DataFrame(data)

    def metadata_measurement(self, j: int, metadata: DPMetadata) -> tuple[np.ndarray, np.ndarray] | None:
        """The metadata histogram of column ``j`` summed onto its cells, with each cell's noise sd (None when the
        metadata is exact or has no noise level). The sums are of the unclipped noisy counts where the histogram
        has them: a cell of 40 (nearly) empty fine bins summed from clipped counts would read ~16 noise sds too
        many rows (King County at epsilon 1: per-column mean errors of about +1 sd, up to +2.6)."""
        cells = self.columns[j]
        sigma = metadata.sigma_of(cells.name)
        if sigma <= 0 or metadata.non_private:
            return None
        hist = metadata.histograms[cells.name]
        if isinstance(hist, CategoricalHistogram):
            mapping = cells.cell_of_category()
            y = np.bincount(mapping, weights=hist.unclipped(), minlength=cells.n_category_cells)
            var = sigma ** 2 * np.bincount(mapping, minlength=cells.n_category_cells).astype(float)
        else:
            groups = cells.groups()
            noisy, sd = hist.bin_noise(sigma)
            y = np.bincount(groups, weights=noisy, minlength=cells.n_bins)
            var = np.bincount(groups, weights=sd ** 2, minlength=cells.n_bins)
            specials = [float(hist.special_counts.get(s, 0.0)) for s in cells.specials]
            y, var = np.concatenate([y, specials]), np.concatenate([var, np.full(len(specials), sigma ** 2)])
        if cells.nullable:
            y, var = np.append(y, float(hist.missing)), np.append(var, sigma ** 2)
        return y, np.sqrt(np.maximum(var, sigma ** 2))

    def beyond_support(self, j: int, metadata: DPMetadata) -> tuple[np.ndarray, np.ndarray] | None:
        """Masks of column ``j``'s cells that lie wholly below and wholly above its rows' support in the DP histogram
        (:func:`support`) and at least ``TAIL_STEPS[0]`` fine bins out from it: the empty range the cut-off stretches
        span, without the narrow tail bins :func:`_coarse_edges` keeps next to the rows for a thin real tail the noise
        hides. None: not a numeric column, exact metadata, or no such cell. Post-processing of the DP histogram."""
        cells = self.columns[j]
        hist = metadata.histograms.get(cells.name)
        if cells.kind != "numeric" or metadata.non_private or not isinstance(hist, NumericHistogram):
            return None
        fine = np.asarray(hist.edges, float)
        lo, hi = support(*hist.bin_noise(float(metadata.sigma or 0.0)), fine)
        if (lo, hi) == (0, len(fine) - 1):
            return None
        edges = np.asarray(cells.edges, float)
        at = np.abs(fine[None, :] - edges[:, None]).argmin(axis=1)  # the coarse edges are fine edges: their indices
        body = np.zeros(cells.size, dtype=bool)
        below, above = body.copy(), body.copy()
        below[:cells.n_bins] = at[1:] <= lo - TAIL_STEPS[0]
        above[:cells.n_bins] = at[:-1] >= hi + TAIL_STEPS[0]
        return (below, above) if below.any() or above.any() else None

    def to_dict(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self.columns]

    @classmethod
    def from_dict(cls, d: list[dict[str, Any]]) -> Discretizer:
        return cls([ColumnCells.from_dict(c) for c in d])


def encode_column(series: pd.Series, cells: ColumnCells) -> np.ndarray:
    if cells.kind == "categorical":
        col_other = "__other__" if "__other__" in cells.categories else None
        codes = categorical_codes(series, cells.categories, col_other, unknown_as_missing=cells.nullable)
        if cells.category_cells:
            codes = np.where(codes >= 0, cells.cell_of_category()[np.maximum(codes, 0)], codes)
    else:
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
        codes = np.clip(np.searchsorted(cells.edges, values, side="right") - 1, 0, cells.n_bins - 1)
        for i, s in enumerate(cells.specials):
            codes = np.where(values == s, cells.n_bins + i, codes)
        codes = np.where(np.isnan(values), -1, codes)
    if (codes < 0).any():
        if not cells.nullable:
            raise InputError(f"Column '{cells.name}' has missing values but is not nullable in the schema.")
        codes = np.where(codes < 0, cells.missing_cell, codes)
    return codes.astype(np.int32)


def decode_column(codes: np.ndarray, cells: ColumnCells, rng: np.random.Generator) -> np.ndarray:
    missing = codes == cells.missing_cell if cells.nullable else np.zeros(len(codes), bool)
    if cells.kind == "categorical":
        values = np.asarray(list(cells.categories) + [np.nan], dtype=object)
        category = np.minimum(codes, cells.n_category_cells - 1).astype(np.int64)
        if cells.category_cells:  # a category of each cell, in proportion to the DP counts (uniform when all 0)
            mapping = cells.cell_of_category()
            weights = np.where(mapping[None, :] == np.arange(cells.n_category_cells)[:, None],
                               np.asarray(cells.fine_weights, float) + 1e-9, 0.0)
            category = draw_rows(weights, np.where(missing, 0, category), rng)
        return values[np.where(missing, len(cells.categories), category)]
    out = np.full(len(codes), np.nan)
    in_bin = (codes < cells.n_bins) & ~missing
    if in_bin.any():
        groups = cells.groups()
        # a fine bin inside the coarse bin, in proportion to its DP count (uniform when they are all 0)
        weights = np.where(groups[None, :] == np.arange(cells.n_bins)[:, None], cells.fine_weights + 1e-9, 0.0)
        fine = draw_rows(weights, codes[in_bin].astype(np.int64), rng)
        lo, hi = cells.fine_edges[fine], cells.fine_edges[fine + 1]
        slopes = fine_slopes(cells.fine_edges, cells.fine_weights)
        x = lo + (hi - lo) * linear_inside(rng.random(len(fine)), slopes[fine])
        if cells.step > 0:
            x = snap_inside(x, lo, hi, cells.step, cells.fine_edges[0], cells.fine_edges[-1])
        out[in_bin] = x
    for i, s in enumerate(cells.specials):
        out[codes == cells.n_bins + i] = s
    return out


def snap_inside(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, step: float, bottom: float, top: float
                ) -> np.ndarray:
    """``x`` (drawn in the fine bins ``[lo, hi]``) rounded to the nearest multiple of ``step``, kept inside its own
    fine bin when the bin holds a multiple (so a value keeps its cell: a bin edge at 100.2 must not send 100.3 to
    100, a cell below), and always inside ``[bottom, top]``. Values come out as tidy decimals (1.5, 0.25)."""
    k = np.round(x / step)
    first, last = np.ceil(lo / step - 1e-9), np.floor(hi / step + 1e-9)
    k = np.where(first <= last, np.clip(k, first, last), k)
    k = np.clip(k, math.ceil(bottom / step - 1e-9), math.floor(top / step + 1e-9))
    return tidy_multiples(k * step, step)


def fine_slopes(edges: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The slope of a linear density inside each fine bin (a frequency polygon), relative to the bin's mean density:
    ``f(t) = 1 + s (t - 1/2)`` on the bin scaled to [0, 1], ``s`` from the neighbours' densities (central difference,
    one-sided at the ends), clipped to [-2, 2] so that the density stays non-negative. Each bin keeps its mass: only
    where inside it the values fall changes. A histogram's uniform bins are off by O(width) where the density slopes;
    the polygon by O(width^2) (Adult's fnlwgt on its 64-bin public grid: decile TVD of the decoded column 0.019 ->
    0.011, README). Reads only DP counts and public edges (post-processing)."""
    density = np.asarray(weights, float) / np.maximum(np.diff(edges), 1e-300)
    left = np.r_[density[:1], density[:-1]]
    right = np.r_[density[1:], density[-1:]]
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(density > 0, (right - left) / (2.0 * density), 0.0)
    return np.clip(np.nan_to_num(slope), -2.0, 2.0)


def linear_inside(u: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """Inverse CDF of the density ``1 + s (t - 1/2)`` on [0, 1] at uniforms ``u``: solves ``t + s (t^2 - t) / 2 = u``
    (the root in [0, 1]; ``t = u`` where the slope is 0)."""
    a = slope / 2.0
    b = 1.0 - a  # in [0, 2]; b + sqrt(...) is 0 only at u = 0 with slope 2, where t = 0
    # (-b + sqrt(b^2 + 4 a u)) / (2 a) written without the cancellation as a -> 0 (then t = u)
    root = b + np.sqrt(np.maximum(b * b + 4.0 * a * u, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(root > 0, 2.0 * u / root, 0.0)
    return np.clip(t, 0.0, 1.0)


#: the smoothing bandwidths (sd of a Gaussian kernel, in fine bins) :func:`smooth_fine_counts` chooses among
_BANDWIDTHS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)


def smooth_fine_counts(counts: np.ndarray, sigma: float) -> np.ndarray:
    """A numeric column's DP fine counts (each with Gaussian noise of sd ``sigma``) smoothed along the grid by the
    Gaussian kernel whose bandwidth minimises Stein's unbiased estimate of the squared error, ``||y - S y||^2 +
    2 sigma^2 tr(S) - n sigma^2`` (no smoothing among the candidates): a smooth density (Adult's age, one fine bin a
    year, 130 noise sd a bin at epsilon 1) gets a wide kernel, a spiky one (hours-per-week: 40, 50, 60) none.
    These counts only shape where inside a cell decoded numbers fall (the cells' masses come from the
    measurements): decile TVD of Adult's age decoded from its cells 0.0047 -> 0.0011 (README). The counts given
    are clipped at 0, so the estimate is approximate near empty bins; it reads only DP outputs (post-processing)."""
    y = np.asarray(counts, float)
    n = len(y)
    if sigma <= 0 or n < 8:
        return y
    best, best_risk = y, n * sigma ** 2  # no smoothing: S = I, no residual, tr(S) = n
    for h in _BANDWIDTHS:
        reach = int(math.ceil(4 * h))
        if reach >= n:
            break
        smoother = _kernel_matrix(n, h, reach)
        smoothed = smoother @ y
        risk = float(np.sum((y - smoothed) ** 2) + 2 * sigma ** 2 * np.trace(smoother) - n * sigma ** 2)
        if risk < best_risk:
            best, best_risk = smoothed, risk
    return np.clip(best, 0.0, None)


def smooth_grid_counts(edges: np.ndarray, counts: np.ndarray, sigma: float | np.ndarray) -> np.ndarray:
    """:func:`smooth_fine_counts` on each run of equal-width bins of ``edges`` separately: a zoomed histogram
    (:func:`dpsynth.data.discovery.release_zoom`) has sub-bins 64 times narrower than the grid bins beside them,
    and a kernel along the bin index must not average a wide bin's count into a narrow one's. ``sigma``: the
    noise sd, one for all bins or one per bin (each run smoothed at its median)."""
    widths = np.diff(edges)
    breaks = np.flatnonzero(~np.isclose(widths[1:], widths[:-1], rtol=1e-6, atol=0.0)) + 1
    sds = np.split(np.broadcast_to(np.asarray(sigma, float), len(widths)), breaks)
    parts = [smooth_fine_counts(part, float(np.median(sd)))
             for part, sd in zip(np.split(np.asarray(counts, float), breaks), sds)]
    return np.concatenate(parts) if parts else np.asarray(counts, float)


def _kernel_matrix(n: int, bandwidth: float, reach: int) -> np.ndarray:
    """The n x n matrix of a Gaussian kernel smoother (sd ``bandwidth``, cut at ``reach`` bins), reflected at the
    grid's ends (each row a weighted average)."""
    offsets = np.arange(-reach, reach + 1)
    kernel = np.exp(-0.5 * (offsets / bandwidth) ** 2)
    kernel /= kernel.sum()
    rows = np.repeat(np.arange(n), len(offsets))
    cols = (np.arange(n)[:, None] + offsets[None, :]).ravel()
    cols = np.where(cols < 0, -cols - 1, np.where(cols >= n, 2 * n - 1 - cols, cols))  # mirror: ... 1 0 | 0 1 ...
    matrix = np.zeros((n, n))
    np.add.at(matrix, (rows, cols), np.tile(kernel, n))
    return matrix
