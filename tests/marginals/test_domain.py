"""The discrete domain: cells from DP metadata only, equal-DP-mass numeric bins, encode/decode that stay in the
schema's domain, metadata histograms as measurements with the right noise, DuckDB reading a file like NumPy."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from dpsynth.data.discovery import resolve_schema
from dpsynth.data.frame import conform
from dpsynth.data.metadata import CategoricalHistogram, DPMetadata, NumericHistogram
from dpsynth.data.schema import Column, Schema
from dpsynth.marginals.backends import NumPyBackend
from dpsynth.marginals.domain import ColumnCells, Discretizer, stretches_at_their_sums, support, sure_bins
from dpsynth.privacy.ledger import PrivacyLedger


def _numeric(counts, lower=0.0, upper=64.0, nullable=False, specials=()):
    col = Column("x", "mixed" if specials else "continuous", nullable=nullable, lower=lower, upper=upper,
                 special_values=specials)
    edges = np.linspace(lower, upper, len(counts) + 1)
    hist = NumericHistogram(edges, np.asarray(counts, float), {s: 50.0 for s in specials}, 10.0 if nullable else 0)
    return Schema((col,)), DPMetadata(float(sum(counts)) + 60, {"x": hist}, sigma=4.0)


def test_numeric_bins_follow_the_dp_mass():
    counts = np.r_[np.full(8, 1000.0), np.zeros(56)]  # all the mass in the first 8 of 64 fine bins
    schema, meta = _numeric(counts)
    cells = Discretizer.build(schema, meta, max_bins=8).columns[0]
    assert cells.n_bins <= 8 and cells.size == cells.n_bins
    # most bins go where the rows are: at least 5 of them inside [0, 8)
    assert np.sum(cells.edges[1:] <= 8.0 + 1e-9) >= 5
    assert cells.edges[0] == 0.0 and cells.edges[-1] == 64.0


def test_noise_tails_get_no_bins_and_thin_regions_keep_their_shape():
    """Bins are cut by the mass above the noise (counts less 2 sds), so a tail of pure noise gets few bins. Inside a
    bin, values follow the clipped fine counts: a thin region whose fine counts are each at 2 noise sds is drawn
    across its fine bins in proportion, not piled onto the bin's strong fine bins."""
    rng = np.random.default_rng(3)
    sigma = 4.0
    # fine bins 0-5: a thin region (8 = 2 sds each); 6: strong (400); 7-9: dense; 10-63: noise only
    counts = np.r_[np.full(6, 8.0), 400.0, np.full(3, 300.0), np.clip(rng.normal(0.0, sigma, 54), 0, None)]
    schema, meta = _numeric(counts)
    cells = Discretizer.build(schema, meta, max_bins=8).columns[0]
    # the noise tail [10, 64) gets at most two bins of its own (the support's end and one step out: a quarter of 8)
    assert np.sum(cells.edges > 10.0 + 1e-9) <= 3
    # all codes of the first bin: decoded values spread over the thin fine bins, in their proportions
    first = np.zeros((6000, 1), dtype=np.int32)
    values = Discretizer([cells]).decode(first, np.random.default_rng(0))["x"].to_numpy()
    in_bin = counts[: int(np.searchsorted(cells.fine_edges, cells.edges[1]))]
    assert cells.edges[1] > 6.0  # the thin region shares the first bin with the strong fine bin
    assert abs(np.mean(values < 6.0) - in_bin[:6].sum() / in_bin.sum()) < 0.03  # kept, in proportion


def _latitudes(seed: int, sigma: float = 171.0):
    """California's latitudes as DP discovery sees them: rows in [32.5, 42.3] (7 of 64 grid bins), decade bounds
    [10, 100], Gaussian noise of sd ``sigma`` on every bin (the unclipped counts and their sd kept, as discovery
    keeps them)."""
    edges = np.linspace(10.0, 100.0, 65)
    true = np.zeros(64)
    true[16:23] = [500, 2000, 4000, 3000, 2000, 1000, 300]
    noisy = true + np.random.default_rng(seed).normal(0.0, sigma, 64)
    hist = NumericHistogram(edges, np.clip(noisy, 0, None), {}, 0.0, noisy=noisy, bin_sd=np.full(64, sigma))
    col = Column("x", "continuous", nullable=False, lower=10.0, upper=100.0)
    return edges, true, hist, Schema((col,), provenance="dp"), DPMetadata(float(true.sum()), {"x": hist}, sigma=sigma)


def test_support_cuts_the_empty_decade_off_and_never_a_bin_that_surely_holds_rows():
    lows, highs = [], []
    for seed in range(40):
        edges, _, hist, _, _ = _latitudes(seed)
        lo, hi = support(hist.noisy, hist.bin_sd, edges)
        # bins 17 and 21 hold 2,000 and 1,000 rows (> 4 noise sds): never cut off
        assert lo <= 17 and hi >= 22
        lows.append(lo)
        highs.append(hi)
    # the 16 empty bins below and 41 above: (nearly) all cut off on most seeds
    assert np.mean(np.array(lows) >= 15) >= 0.85 and np.mean(np.array(highs) <= 24) >= 0.85
    # no bin beyond 4 noise sds (a small table: 30 rows a bin under noise of sd 171): nothing is cut
    for seed in range(20):
        noisy = 30.0 + np.random.default_rng(seed).normal(0.0, 171.0, 64)
        assert support(noisy, np.full(64, 171.0), np.linspace(10.0, 100.0, 65)) == (0, 64)
    # exact counts: the empty ends
    assert support(np.r_[0, 0, 5, 0, 7, 0], np.zeros(6), np.arange(7.0)) == (2, 5)


def test_support_cuts_through_a_zoom_of_whole_numbers_but_not_into_thin_slices_of_a_continuous_column():
    """King County's sale years (2014, 2015) get decade bounds [1000, 10000] and a zoom of one bin a year over
    1984-2125: the empty years inside the zoom are cut off too. A zoom of a continuous column (sub-bins of 0.11, not
    whole numbers) is where 90% of the DP mass is, and its thin real slices are never cut."""
    grid = np.linspace(1000.0, 10000.0, 65)
    years = np.r_[1984.375, np.arange(1984.5, 2125.0, 1.0), 2125.0]  # grid bin 7, one sub-bin a year
    edges = np.r_[grid[:7], years, grid[9:]]
    k = len(edges) - 1
    first_year = 7 + int(np.searchsorted(years, 2013.5))  # the bin of 2014
    true = np.zeros(k)
    true[first_year:first_year + 2] = [12_000, 6_000]
    sd = np.where(np.diff(edges) < 2.0, 300.0, 171.0)
    slices = np.linspace(1984.375, 2125.0, 1281)  # the same window in 1,280 sub-bins of 0.11
    continuous = np.r_[grid[:7], slices, grid[9:]]
    for seed in range(20):
        noisy = true + np.random.default_rng(seed).normal(0.0, sd)
        lo, hi = support(noisy, sd, edges)
        assert first_year - 3 <= lo <= first_year and first_year + 2 <= hi <= first_year + 5
        inside = np.random.default_rng(seed).normal(0.0, 300.0, 1280)
        inside[400:500] += 180.0  # the rows, in slices of 180 (0.6 noise sd) each
        lo, hi = support(np.r_[noisy[:7], inside, noisy[-56:]], np.r_[sd[:7], np.full(1280, 300.0), sd[-56:]],
                         continuous)
        assert lo <= 7 and hi >= 7 + 1280  # never inside the continuous zoom


def test_numbers_are_not_drawn_by_the_noise_of_an_empty_decade(monkeypatch):
    """With bounds from DP discovery the bins end where the rows do (:func:`support`), so decoding the real rows'
    cells puts (almost) no number outside the rows' range; with the support switched off, or with the same bounds
    declared in a public schema (the user's range: left as declared), the edge bins reach into the empty decade and
    several per cent of the numbers land there (California's latitudes down to 10, longitudes to -988)."""
    from dpsynth.marginals import domain

    def outside_share(seed: int, provenance: str = "dp") -> float:
        edges, true, _, schema, meta = _latitudes(seed)
        schema = replace(schema, provenance=provenance)
        rng = np.random.default_rng(seed + 100)
        fine = rng.choice(64, size=20_000, p=true / true.sum())
        rows = pd.DataFrame({"x": edges[fine] + rng.random(20_000) * np.diff(edges)[fine]})
        disc = Discretizer.build(schema, meta)
        cells = disc.columns[0]
        assert cells.edges[0] == 10.0 and cells.edges[-1] == 100.0  # every value still has a cell
        decoded = disc.decode(disc.encode(rows), np.random.default_rng(seed))["x"]
        return float(np.mean((decoded < 32.5) | (decoded > 42.3)))

    with_support = [outside_share(seed) for seed in range(5)]
    declared = [outside_share(seed, "public") for seed in range(5)]
    monkeypatch.setattr(domain, "support", lambda noisy, sd, edges, **_: (0, len(noisy)))
    without = [outside_share(seed) for seed in range(5)]
    assert np.mean(with_support) < 0.01 and np.mean(without) > 4 * np.mean(with_support)
    assert declared == without


def _zip_codes(seed: int, tail: float = 0.0):
    """King County's zip codes as DP discovery sees them: decade bounds [10,000, 100,000] on 64 grid bins (sd 221),
    the grid bin that holds the rows zoomed into 64 slices of 22 (sd 443, not whole numbers), the rows in 8 slices
    (98,001-98,177); ``tail`` rows spread thinly over the 20 slices below them (a real tail the noise hides)."""
    grid = np.linspace(10_000.0, 100_000.0, 65)
    slices = np.linspace(grid[62], grid[63], 65)
    edges = np.r_[grid[:62], slices, grid[63:]]
    true = np.zeros(len(edges) - 1)
    first = 62 + 37  # the slice of 98,001
    true[first:first + 8] = [3000, 3500, 2300, 2800, 3200, 1100, 600, 800]
    true[first - 20:first] = tail / 20
    sd = np.where(np.diff(edges) < 100.0, 443.0, 221.0)
    noisy = true + np.random.default_rng(seed).normal(0.0, sd)
    hist = NumericHistogram(edges, np.clip(noisy, 0, None), {}, 0.0, noisy=noisy, bin_sd=sd)
    col = Column("x", "continuous", nullable=False, lower=10_000.0, upper=100_000.0)
    meta = DPMetadata(float(true.sum()), {"x": hist}, sigma=221.0)
    return edges, true, first, Schema((col,), provenance="dp"), meta


def _decoded(edges, true, schema, meta, seed: int) -> np.ndarray:
    """The rows (drawn from ``true``) encoded into the cells and decoded again."""
    rng = np.random.default_rng(seed + 100)
    fine = rng.choice(len(true), size=int(true.sum()), p=true / true.sum())
    rows = pd.DataFrame({"x": edges[fine] + rng.random(len(fine)) * np.diff(edges)[fine]})
    disc = Discretizer.build(schema, meta)
    return disc.decode(disc.encode(rows), np.random.default_rng(seed))["x"].to_numpy()


def test_numbers_inside_a_cell_are_not_drawn_by_the_noise_of_a_zooms_empty_slices(monkeypatch):
    """The cells never end inside a zoom's slices of a continuous column (:func:`support`), so the cell holding the
    first zip codes also holds 20 empty slices; inside it the empty stretch is drawn at its unclipped sum
    (:func:`stretches_at_their_sums`), not by its clipped noise (0.4 sd a slice: more than the real slice's rows).
    A thin real tail there keeps its rows (the unclipped sum is unbiased)."""
    from dpsynth.marginals import domain

    def outside(seed: int) -> float:
        edges, true, first, schema, meta = _zip_codes(seed)
        x = _decoded(edges, true, schema, meta, seed)
        return float(np.mean((x < edges[first]) | (x > edges[first + 8])))

    with_sums = [outside(seed) for seed in range(6)]
    with monkeypatch.context() as patch:
        patch.setattr(domain, "stretches_at_their_sums", lambda weights, *_: weights)
        without = [outside(seed) for seed in range(6)]
    assert np.mean(without) > 0.06 and np.mean(with_sums) < np.mean(without) / 2
    # a tail of 2,000 rows over the 20 slices below (0.2 noise sd a slice): decoded there at about its share
    shares = []
    for seed in range(12):
        edges, true, first, schema, meta = _zip_codes(seed, tail=2000.0)
        x = _decoded(edges, true, schema, meta, seed)
        shares.append(np.mean((x >= edges[first - 20]) & (x < edges[first])))
    assert 0.6 < np.mean(shares) / (2000.0 / true.sum()) < 2.0
    # the weights: the cut into the slices, each stretch scaled to its unclipped sum, cell by cell
    edges, _, first, _, meta = _zip_codes(0)
    hist = meta.histograms["x"]
    lo, hi = support(hist.noisy, hist.bin_sd, edges, into_slices=True)
    assert support(hist.noisy, hist.bin_sd, edges)[0] == 62  # the cells' cut stops where the slices begin
    assert first - 4 <= lo <= first and hi >= first + 5  # never past a slice beyond 4 sds (the first five)
    groups = np.minimum(np.arange(len(edges) - 1) // 40, 2)
    weights = stretches_at_their_sums(hist.counts, hist.noisy, hist.bin_sd, edges, groups)
    for g in range(3):  # the slices of 98,001 on are in the last cell
        below = (np.arange(len(weights)) < lo) & (groups == g)
        if g == 2:
            assert np.isclose(weights[below].sum(), max(hist.noisy[below].sum(), 0.0))
        else:  # nothing sure in the cell: as it was
            assert np.array_equal(weights[below], hist.counts[below])
    assert np.array_equal(weights[lo:hi], hist.counts[lo:hi])
    # a cell with no slice beyond 4 sds keeps its weights: thin real slices look empty one by one
    thin = np.full(40, 40.0) + np.random.default_rng(1).normal(0.0, 160.0, 40)
    strong = np.r_[thin, 5000.0, thin]
    grid = np.arange(82.0)
    split = np.r_[np.zeros(40, int), np.ones(42, int)][:81]
    kept = stretches_at_their_sums(np.clip(strong, 0, None), strong, np.full(81, 160.0), grid, np.zeros(81, int))
    alone = stretches_at_their_sums(np.clip(strong, 0, None), strong, np.full(81, 160.0), grid, split)
    assert not np.allclose(kept[:40], np.clip(thin, 0, None))  # beside the sure bin: scaled to the sum
    assert np.allclose(alone[:40], np.clip(thin, 0, None))  # a cell of its own with nothing sure: left as it was


def _series(seed: int):
    """statsmodels' co2 series as DP discovery sees it: decade bounds [100, 1000] on 64 grid bins (sd 67), the 4 that
    hold the rows zoomed into 64 slices (sd 134, not whole numbers), 2,000 rows over slices 2-62 and 150 in the next
    grid bin: about 33 rows a slice, a quarter of a noise sd: no bin is beyond 4 sds."""
    grid = np.linspace(100.0, 1000.0, 65)
    slices = np.linspace(grid[15], grid[19], 65)
    edges = np.r_[grid[:15], slices, grid[19:]]
    true = np.zeros(len(edges) - 1)
    true[15 + 2:15 + 62] = 2000 / 60
    true[15 + 64] = 150.0
    sd = np.where(np.diff(edges) < 10.0, 134.0, 67.0)
    noisy = true + np.random.default_rng(seed).normal(0.0, sd)
    hist = NumericHistogram(edges, np.clip(noisy, 0, None), {}, 0.0, noisy=noisy, bin_sd=sd)
    col = Column("x", "continuous", nullable=False, lower=100.0, upper=1000.0)
    return edges, true, Schema((col,), provenance="dp"), DPMetadata(float(true.sum()), {"x": hist}, sigma=67.0)


def test_a_zooms_window_holds_rows_as_a_block_when_no_slice_shows_them(monkeypatch):
    """A zoom is released only where the grid's DP mass is beyond 5 noise sds of its sum, so its window surely holds
    rows even when each of its slices is mostly noise (:func:`sure_bins`): the cells then end at the window and the
    empty grid bins from 100 up are drawn at their unclipped sum (about 0), where they held a cell with the rows and
    drew a quarter of its numbers by their clipped noise. Known answers: the window is sure as a block only where
    none of its slices is; equal bins (no zoom) add nothing."""
    from dpsynth.marginals import domain

    edges, true, _, meta = _series(0)
    hist = meta.histograms["x"]
    window = np.diff(edges) < 10.0
    assert not np.any(hist.noisy > 4 * hist.bin_sd)
    assert np.array_equal(sure_bins(hist.noisy, hist.bin_sd, edges), window)
    strong = hist.noisy.copy()
    strong[40] = 5 * 134.0
    assert np.flatnonzero(sure_bins(strong, hist.bin_sd, edges)).tolist() == [40]
    equal = np.linspace(0.0, 1.0, 11)
    assert not sure_bins(np.full(10, 3.0), np.ones(10), equal).any()
    lo, _ = support(hist.noisy, hist.bin_sd, edges)
    assert lo == 15  # the cells' cut: where the window begins

    def outside(seed: int) -> float:
        edges, true, schema, meta = _series(seed)
        x = _decoded(edges, true, schema, meta, seed)
        return float(np.mean((x < edges[15 + 2]) | (x > edges[15 + 65])))

    # measured over these 10 seeds: 0.037 of the numbers outside the rows' range with the block, 0.103 without
    with_block = [outside(seed) for seed in range(10)]
    with monkeypatch.context() as patch:
        patch.setattr(domain, "sure_bins", lambda noisy, sd, edges: np.asarray(noisy) > 4 * np.asarray(sd))
        without = [outside(seed) for seed in range(10)]
    assert np.mean(without) > 0.08 and np.mean(with_block) < np.mean(without) / 2, (with_block, without)


def test_encode_decode_round_trip_stays_in_the_domain():
    schema, meta = _numeric(np.full(64, 100.0), nullable=True, specials=(0.0,))
    disc = Discretizer.build(schema, meta, max_bins=16)
    cells = disc.columns[0]
    assert cells.size == cells.n_bins + 2  # a special value and a missing cell
    values = pd.DataFrame({"x": [0.0, np.nan, 3.3, 63.9, 64.0, 17.0]})
    codes = disc.encode(values)[:, 0]
    assert codes[0] == cells.n_bins and codes[1] == cells.missing_cell
    decoded = disc.decode(codes[:, None], np.random.default_rng(0))["x"].to_numpy()
    assert decoded[0] == 0.0 and np.isnan(decoded[1])
    for value, back, code in zip(values["x"][2:], decoded[2:], codes[2:]):
        assert cells.edges[code] <= back <= cells.edges[code + 1]  # drawn inside the value's bin


def test_numbers_inside_a_bin_follow_the_slope_of_the_density():
    """Decoding draws inside each fine bin from a linear density sloped as its neighbours (a frequency polygon): on
    a density that rises linearly (f(x) = 2x on [0, 1], 8 fine bins, exact counts) the decoded values follow the true
    CDF x^2 to within the sampling noise in the inner bins, where uniform bins are off by up to h^2/8 = 0.002."""
    from scipy import stats

    from dpsynth.marginals.domain import fine_slopes, linear_inside

    edges = np.linspace(0.0, 1.0, 9)
    weights = np.diff(edges ** 2) * 1e5  # exact mass of each fine bin
    slopes = fine_slopes(edges, weights)
    np.testing.assert_allclose(slopes[1:-1], 2 * np.diff(edges)[1:-1] / (edges[1:-2] + edges[2:-1]), rtol=1e-12)
    assert slopes[0] == 1.0 and abs(slopes[-1] - 1 / 15) < 1e-12  # one-sided at the ends: less than the truth
    rng = np.random.default_rng(0)
    u = rng.random(400_000)
    np.testing.assert_allclose(linear_inside(u, np.full_like(u, 2.0)), np.sqrt(u), atol=1e-12)  # f(t) = 2t
    np.testing.assert_allclose(linear_inside(u, np.zeros_like(u)), u, atol=1e-15)
    counts = np.diff(edges ** 2)
    cells = ColumnCells("x", "numeric", False, (), edges.copy(), edges, weights)
    codes = rng.choice(8, size=400_000, p=counts / counts.sum())
    x = Discretizer([cells]).decode(codes[:, None], np.random.default_rng(1))["x"].to_numpy()
    inner = (x >= 0.25) & (x < 0.875)  # bins 2-6: both neighbours' slope is the truth's
    y = (x[inner] ** 2 - 0.0625) / (0.765625 - 0.0625)  # the true CDF restricted to [0.25, 0.875), on [0, 1]
    polygon = stats.kstest(y, "uniform").statistic
    flat = np.concatenate([rng.uniform(edges[k], edges[k + 1], int(round(counts[k] * 400_000))) for k in range(2, 7)])
    uniform = stats.kstest((flat ** 2 - 0.0625) / (0.765625 - 0.0625), "uniform").statistic
    assert polygon < 0.004 < uniform  # uniform bins: ~0.0055 off the true CDF


def test_fine_counts_are_smoothed_where_the_density_is_smooth_and_kept_where_it_is_spiky():
    """The noisy fine counts a cell's numbers are drawn by get the Gaussian kernel whose bandwidth minimises Stein's
    unbiased risk estimate: on a smooth density at Adult's noise (sd 130 a bin) the error falls by more than half;
    on isolated spikes no smoothing is chosen, so they stay where they are; exact metadata is left as it is."""
    from dpsynth.marginals.domain import smooth_fine_counts

    rng = np.random.default_rng(0)
    x = np.arange(80)
    smooth = 1000 * np.exp(-0.5 * ((x - 35) / 12) ** 2)
    spikes = np.zeros(80)
    spikes[[20, 40, 50, 60]] = [3000, 15000, 2000, 1500]
    gains = []
    for _ in range(5):
        noisy = np.clip(smooth + rng.normal(0, 130, 80), 0, None)
        gains.append(np.linalg.norm(smooth_fine_counts(noisy, 130.0) - smooth) / np.linalg.norm(noisy - smooth))
        noisy = np.clip(spikes + rng.normal(0, 130, 80), 0, None)
        np.testing.assert_array_equal(smooth_fine_counts(noisy, 130.0), noisy)
    assert max(gains) < 0.6
    np.testing.assert_array_equal(smooth_fine_counts(smooth, 0.0), smooth)


def test_metadata_histogram_is_a_measurement_with_summed_noise():
    schema, meta = _numeric(np.arange(64, dtype=float), nullable=True)
    disc = Discretizer.build(schema, meta, max_bins=8)
    y, sigma = disc.metadata_measurement(0, meta)
    groups = disc.columns[0].groups()
    np.testing.assert_allclose(y[:-1], np.bincount(groups, weights=np.arange(64.0)))
    # a cell uniting k fine bins has noise sd sqrt(k) sigma
    np.testing.assert_allclose(sigma[:-1], 4.0 * np.sqrt(np.bincount(groups)))
    assert y[-1] == 10.0 and sigma[-1] == 4.0


def _categorical(counts, sigma=4.0, nullable=False):
    col = Column("c", "categorical", categories=tuple(f"k{i}" for i in range(len(counts))), nullable=nullable)
    hist = CategoricalHistogram(col.categories, np.asarray(counts, float), 30.0 if nullable else 0.0)
    return Schema((col,)), DPMetadata(float(sum(counts)), {"c": hist}, sigma=sigma)


def test_a_histogram_with_its_own_sigma_is_measured_and_merged_at_it():
    """A histogram released apart from the others (a declared target's) records its own noise sd: the measurement
    reports it, the rare-cell threshold scales with it, and it survives the metadata's JSON round trip."""
    schema, meta = _categorical([500.0, 3.0, 200.0, 0.0, 9.0, 11.0])
    own = DPMetadata(meta.n_rows, {"c": replace(meta.histograms["c"], sigma=2.0)}, sigma=meta.sigma)
    assert own.sigma_of("c") == 2.0 and meta.sigma_of("c") == meta.sigma and own.sigmas() == {"c": 2.0}
    _, sd = Discretizer.build(schema, own).metadata_measurement(0, own)
    np.testing.assert_allclose(sd, 2.0)
    # threshold 3 x 2: k1 and k3 are rare (at the phase's sigma 4, k4 and k5 would be too)
    assert Discretizer.build(schema, own, rare=3.0).columns[0].category_cells == (0, 4, 1, 4, 2, 3)
    back = DPMetadata.from_dict(json.loads(json.dumps(own.to_dict())))
    assert back.sigma_of("c") == 2.0 and back.sigma == meta.sigma


def test_rare_categories_share_one_cell_built_from_the_dp_counts_only():
    """Categories whose DP count is below rare x sigma share the last cell (two or more of them); the others keep
    their order. Private rows are encoded onto the shared cell, the metadata counts are summed onto it with the
    summed noise, and decoding draws its categories in proportion to their DP counts."""
    schema, meta = _categorical([500.0, 3.0, 200.0, 0.0, 9.0, 11.0], nullable=True)
    cells = Discretizer.build(schema, meta, rare=3.0).columns[0]  # threshold 12: k1, k3, k4, k5 are rare
    assert cells.category_cells == (0, 2, 1, 2, 2, 2) and cells.size == 3 + 1 and cells.missing_cell == 3
    frame = pd.DataFrame({"c": ["k0", "k1", "k2", "k5", None, "k3"]})
    assert Discretizer([cells]).encode(frame)[:, 0].tolist() == [0, 2, 1, 2, 3, 2]
    y, sd = Discretizer([cells]).metadata_measurement(0, meta)
    np.testing.assert_allclose(y, [500.0, 200.0, 23.0, 30.0])
    np.testing.assert_allclose(sd, [4.0, 4.0, 8.0, 4.0])  # four noisy counts summed: sd 2 sigma
    codes = np.array([[2]] * 23000 + [[0]] * 10 + [[3]] * 10, dtype=np.int32)
    values = Discretizer([cells]).decode(codes, np.random.default_rng(0))["c"]
    shared = values.iloc[:23000].value_counts(normalize=True)
    assert set(shared.index) == {"k1", "k4", "k5"}  # k3's DP count is 0: never drawn (up to 1e-9 of mass)
    for name, count in (("k1", 3.0), ("k4", 9.0), ("k5", 11.0)):
        assert abs(shared[name] - count / 23.0) < 0.015
    assert (values.iloc[23000:23010] == "k0").all() and values.iloc[23010:].isna().all()
    restored = Discretizer.from_dict(Discretizer([cells]).to_dict()).columns[0]
    assert restored.category_cells == cells.category_cells and restored.size == cells.size


@pytest.mark.parametrize("counts, rare, sigma", [
    ([500.0, 3.0, 200.0], 3.0, 4.0),  # one rare category: nothing to merge
    ([500.0, 3.0, 2.0], 0.0, 4.0),  # rare=0: one cell each
    ([500.0, 3.0, 2.0], 3.0, 0.0)])  # exact metadata (no noise): one cell each
def test_categories_keep_a_cell_each_when_there_is_nothing_to_merge(counts, rare, sigma):
    schema, meta = _categorical(counts, sigma=sigma)
    cells = Discretizer.build(schema, meta, rare=rare).columns[0]
    assert cells.category_cells == () and cells.size == len(counts)
    old = {k: v for k, v in cells.to_dict().items() if k != "category_cells"}  # a model file from before
    assert Discretizer.from_dict([old]).columns[0].size == len(counts)


def _adult_parquet(adult, adult_schema, tmp_path, *, rows: int, state: int, rare: float = 0.0):
    """A conformed Adult sample, its cells (from DP metadata; rare categories sharing a cell with ``rare`` > 0) and
    the same rows written as Parquet."""
    train = adult[0].sample(rows, random_state=state).reset_index(drop=True)
    schema, meta = resolve_schema(train, adult_schema, ledger=PrivacyLedger(target_epsilon=1.0, target_delta=1e-5),
                                  share=0.1, rng=np.random.default_rng(0))
    frame = conform(train, schema)
    path = tmp_path / "adult.parquet"
    frame.to_parquet(path)
    return frame, Discretizer.build(schema, meta, rare=rare), path


@pytest.mark.parametrize("rare", [0.0, 3.0])
def test_duckdb_reads_a_file_as_numpy_counts_the_frame(adult, adult_schema, tmp_path, rare):
    pytest.importorskip("duckdb")
    from dpsynth.marginals.backends import DuckDBBackend

    frame, disc, path = _adult_parquet(adult, adult_schema, tmp_path, rows=3000, state=3, rare=rare)
    assert (disc.sizes[13] < 40) == (rare > 0)  # native-country's rare countries share a cell
    ours, duck = NumPyBackend(disc.encode(frame), disc.sizes), DuckDBBackend(path, disc)
    for clique in [(1,), (0, 14), (3, 5, 14)]:
        np.testing.assert_array_equal(duck.counts(clique), ours.counts(clique))


def test_duckdb_matches_numpy_on_booleans_integers_and_missing_values():
    pytest.importorskip("duckdb")
    from dpsynth.marginals.backends import DuckDBBackend

    rng = np.random.default_rng(5)
    n = 2000
    frame = pd.DataFrame({"flag": rng.random(n) < 0.3, "code": rng.choice([1, 2, 3], n),
                          "x": np.where(rng.random(n) < 0.1, np.nan, rng.normal(50, 10, n))})
    schema = Schema((Column("flag", "binary", categories=(False, True)),
                     Column("code", "categorical", categories=(1, 2, 3)),
                     Column("x", "continuous", nullable=True, lower=0.0, upper=100.0)))
    schema, meta = resolve_schema(frame, schema, ledger=PrivacyLedger(target_epsilon=1.0, target_delta=1e-5),
                                  share=0.1, rng=np.random.default_rng(0))
    frame = conform(frame, schema)
    disc = Discretizer.build(schema, meta)
    ours, duck = NumPyBackend(disc.encode(frame), disc.sizes), DuckDBBackend(frame, disc)
    for clique in [(0,), (1,), (2,), (0, 1, 2)]:
        np.testing.assert_array_equal(duck.counts(clique), ours.counts(clique))


def test_spark_counts_the_tables_numpy_counts(spark, adult, adult_schema, tmp_path):
    """Spark (local mode) gives the same marginals as pandas/NumPy from a pandas frame, a Spark DataFrame and a
    Parquet path, on categories, binned numbers, booleans, integer codes and missing values."""
    from dpsynth.marginals.backends import SparkBackend

    rng = np.random.default_rng(7)
    n = 1500
    frame = pd.DataFrame({"flag": rng.random(n) < 0.3, "code": rng.choice([1, 2, 3], n),
                          "x": np.where(rng.random(n) < 0.1, np.nan, rng.normal(50, 10, n)),
                          "word": rng.choice(["a", "b's", "c"], n)})
    schema = Schema((Column("flag", "binary", categories=(False, True)),
                     Column("code", "categorical", categories=(1, 2, 3)),
                     Column("x", "continuous", nullable=True, lower=0.0, upper=100.0),
                     Column("word", "categorical", categories=("a", "b's", "c"))))
    schema, meta = resolve_schema(frame, schema, ledger=PrivacyLedger(target_epsilon=1.0, target_delta=1e-5),
                                  share=0.1, rng=np.random.default_rng(0))
    frame = conform(frame, schema)
    disc = Discretizer.build(schema, meta)
    ours = NumPyBackend(disc.encode(frame), disc.sizes)
    from_pandas = SparkBackend(frame, disc, spark=spark)
    cliques = [(), (0,), (1,), (2,), (3,), (0, 1, 2), (2, 3)]
    for clique in cliques:
        np.testing.assert_array_equal(from_pandas.counts(clique), ours.counts(clique))
    from_pandas.close()

    frame, disc, path = _adult_parquet(adult, adult_schema, tmp_path, rows=2000, state=4, rare=3.0)
    ours = NumPyBackend(disc.encode(frame), disc.sizes)
    from_path, from_spark = SparkBackend(str(path), disc, spark=spark), \
        SparkBackend(spark.read.parquet(str(path)), disc, spark=spark)
    for clique in [(1,), (0, 14), (3, 5, 14)]:
        np.testing.assert_array_equal(from_path.counts(clique), ours.counts(clique))
        np.testing.assert_array_equal(from_spark.counts(clique), ours.counts(clique))


def test_mst_fits_the_same_model_on_spark(spark, adult, adult_schema):
    """`--backend spark` changes where tables are counted, nothing else: same seed, same selection and rows."""
    from dpsynth.models.mst import MST

    train = adult[0].sample(3000, random_state=5).reset_index(drop=True)
    fits = [MST(iterations=30, backend=b).fit(train, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
            for b in ("numpy", "spark")]
    assert fits[0].selected_ == fits[1].selected_
    pd.testing.assert_frame_equal(fits[0].sample(500, seed=1), fits[1].sample(500, seed=1))


def test_metadata_measurements_are_unbiased_with_the_noise_they_report():
    """Cells of many fine bins, most of them empty, and a zoomed column (sub-bins noisier than the grid's bins):
    over 30 releases the metadata measurement of each cell, less the exact count, divided by the sd it reports, is
    standard normal. Summed from the clipped counts (the measurement before the histograms kept their unclipped
    noisy counts) the mean was > +1 and the spread ~2: the model trusted biased counts."""
    rng = np.random.default_rng(0)
    n = 20_000
    pressure = np.round(rng.normal(80, 9, n)).clip(40, 130)  # 98% of the mass in 2 of 64 grid bins: a zoom
    skew = rng.exponential(3.0, n).clip(0, 100)  # a long empty tail on [0, 100]
    cats = rng.choice(40, n, p=np.r_[[0.6, 0.38], np.full(38, 0.02 / 38)])  # 38 rare categories merged into a cell
    data = pd.DataFrame({"p": pressure.astype(int), "s": skew, "c": [f"k{i}" for i in cats]})
    schema = Schema((Column("p", "integer", lower=-70, upper=11_000), Column("s", "continuous", lower=0, upper=100),
                     Column("c", "categorical", categories=tuple(f"k{i}" for i in range(40)))))
    data = conform(data, schema)
    z = {"p": [], "s": [], "c": []}
    for seed in range(30):
        ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5)
        _, meta = resolve_schema(data, schema, ledger=ledger, share=0.1, rng=np.random.default_rng(seed))
        disc = Discretizer.build(schema, meta, max_bins=16, rare=3.0)
        codes = disc.encode(data)
        for j, name in enumerate(disc.names):
            y, sd = disc.metadata_measurement(j, meta)
            exact = np.bincount(codes[:, j], minlength=len(y))
            z[name].extend((y - exact) / sd)
    assert any(e.mechanism == "zoom p" for e in ledger.entries)
    for name, values in z.items():
        values = np.asarray(values)
        assert abs(values.mean()) < 0.25, name
        assert 0.7 < values.std() < 1.3, name


def test_unclipped_counts_and_bin_noise_survive_a_file_and_are_checked():
    """A released histogram keeps its unclipped noisy counts and per-bin noise sds through JSON (a model file);
    older files without them read the clipped counts at the metadata's sigma; a wrong length is a clear error."""
    import json

    from dpsynth.errors import InputError

    hist = NumericHistogram(np.arange(4.0), np.array([0.0, 5.0, 2.0]), noisy=np.array([-3.0, 5.0, 2.0]),
                            bin_sd=np.array([1.0, 2.0, 2.0]))
    cats = CategoricalHistogram(("a", "b"), np.array([0.0, 7.0]), noisy=np.array([-1.5, 7.0]))
    meta = DPMetadata.from_dict(json.loads(json.dumps(DPMetadata(12.0, {"x": hist, "c": cats}, sigma=1.0).to_dict())))
    noisy, sd = meta.histograms["x"].bin_noise(1.0)
    np.testing.assert_array_equal(noisy, [-3.0, 5.0, 2.0])
    np.testing.assert_array_equal(sd, [1.0, 2.0, 2.0])
    np.testing.assert_array_equal(meta.histograms["c"].unclipped(), [-1.5, 7.0])
    old = NumericHistogram(np.arange(4.0), np.array([0.0, 5.0, 2.0]))
    np.testing.assert_array_equal(old.bin_noise(3.0)[0], [0.0, 5.0, 2.0])
    np.testing.assert_array_equal(old.bin_noise(3.0)[1], [3.0, 3.0, 3.0])
    with pytest.raises(InputError, match="noise sds must be 3 finite numbers >= 0"):
        NumericHistogram(np.arange(4.0), np.ones(3), bin_sd=np.ones(2))
    with pytest.raises(InputError, match="noisy counts must be 2 finite numbers"):
        CategoricalHistogram(("a", "b"), np.ones(2), noisy=np.array([1.0, np.nan]))


def test_a_declared_step_gives_one_bin_per_value_and_decodes_back_to_the_values():
    """King County's floors (1, 1.5, ..., 3.5) and bathrooms (quarters): with the schema's ``step`` the public grid
    centres one bin on each multiple, and rows encoded to their cells decode to exactly their values (a DP release
    at epsilon 1, max_bins 32). Without it the 64 equal grid bins put 1.5 inside [1.48, 1.52): half of the decoded
    values land below 1.5, and the decile distance of the column is ~0.1-0.2."""
    from dpsynth.data.discovery import public_grid
    from dpsynth.evaluation.unsupervised import decile_bins, kway_tvd

    rng = np.random.default_rng(0)
    n = 5_000
    data = pd.DataFrame({"floors": rng.choice([1.0, 1.5, 2.0, 2.5, 3.0, 3.5], n, p=[.49, .09, .38, .01, .028, .002]),
                         "bathrooms": np.round(rng.gamma(4, 0.55, n) * 4).clip(2, 32) / 4})
    stepped = Schema((Column("floors", "continuous", lower=1, upper=3.5, step=0.5),
                      Column("bathrooms", "continuous", lower=0.5, upper=8, step=0.25)))
    np.testing.assert_allclose(public_grid(stepped["floors"]), np.arange(0.75, 3.8, 0.5))
    free = Schema(tuple(Column(c.name, c.kind, lower=c.lower, upper=c.upper) for c in stepped.columns))
    distance = {}
    for name, schema in (("stepped", stepped), ("free", free)):
        _, meta = resolve_schema(data, schema, ledger=PrivacyLedger(target_epsilon=1.0, target_delta=1e-5),
                                 share=0.1, rng=np.random.default_rng(1))
        disc = Discretizer.build(schema, meta, max_bins=32)
        decoded = disc.decode(disc.encode(data), np.random.default_rng(2))
        distance[name] = [kway_tvd(*[[a] for a in decile_bins(data[c], decoded[c], "numeric")]) for c in data]
        if name == "stepped":
            pd.testing.assert_frame_equal(decoded, data, check_dtype=False)
    assert max(distance["free"]) > 0.05 and max(distance["stepped"]) == 0.0
