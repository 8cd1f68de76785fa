"""DP metadata discovery: every query is in the ledger, and the documented rules hold."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from dp_accounting import dp_event

from dpsynth.data.discovery import OTHER, calibrate_metadata_sigma, resolve_schema
from dpsynth.errors import InputError
from dpsynth.privacy.accounting import epsilon_of
from dpsynth.privacy.ledger import PrivacyLedger


def _ledger(eps=1.0, delta=1e-5):
    return PrivacyLedger(target_epsilon=eps, target_delta=delta)


def _category_frame(n=32_561):
    """Categories at 30%, 20%, ... down to exactly 1% (326 rows) and one seen once."""
    shares = {"a": 0.30, "b": 0.20, "c": 0.15, "d": 0.10, "e": 0.05, "f": 0.03, "g": 0.02, "h": 0.015}
    counts = {k: int(v * n) for k, v in shares.items()}
    counts["one_percent"] = math.ceil(0.01 * n)
    counts["singleton"] = 1
    counts["a"] += n - sum(counts.values())
    values = np.concatenate([[k] * c for k, c in counts.items()])
    return pd.DataFrame({"cat": values})


def test_rare_category_dropped_frequent_kept_at_default_budget():
    df = _category_frame()
    kept_singleton = other_slots = 0
    for seed in range(20):
        ledger = _ledger()
        schema, meta = resolve_schema(df, None, ledger=ledger, share=0.1, rng=np.random.default_rng(seed))
        col = schema["cat"]
        cats = set(col.categories)
        assert {"a", "b", "c", "d", "e", "f", "g", "h", "one_percent"} <= cats, f"seed {seed}: {cats}"
        kept_singleton += "singleton" in cats
        # one unreleased row is far below the noise of the residual: no "other" slot, the row reads as missing
        other_slots += OTHER in cats
        assert (col.other == OTHER) == (OTHER in cats) and col.unknown_as_missing == (OTHER not in cats)
        assert ledger.epsilon() <= 0.1 + 1e-9
    assert kept_singleton == 0
    assert other_slots <= 3  # the residual clears 2.33 noise sds by chance about 1% of the time


def test_singleton_rows_are_read_as_missing_not_dropped():
    from dpsynth.data.frame import conform

    df = _category_frame()
    schema, _ = resolve_schema(df, None, ledger=_ledger(), share=0.1, rng=np.random.default_rng(0))
    assert schema["cat"].unknown_as_missing and OTHER not in schema["cat"].categories
    out = conform(df, schema)
    assert len(out) == len(df)
    assert out["cat"].isna().sum() == (~df["cat"].isin(schema["cat"].categories)).sum() >= 1


def test_many_unreleased_rows_get_an_other_slot():
    """5% of 10,000 rows hold identifiers seen once each: none is released, their mass is, as __other__."""
    from dpsynth.data.frame import conform

    rng = np.random.default_rng(0)
    values = np.where(rng.random(10_000) < 0.05, [f"id{i}" for i in range(10_000)], rng.choice(["x", "y"], 10_000))
    df = pd.DataFrame({"cat": values})
    schema, meta = resolve_schema(df, None, ledger=_ledger(), share=0.1, rng=rng)
    col = schema["cat"]
    assert col.categories == ("x", "y", OTHER) and col.other == OTHER and not col.unknown_as_missing
    assert meta.histograms["cat"].counts[-1] == pytest.approx(500, abs=150)
    assert (conform(df, schema)["cat"] == OTHER).sum() == df["cat"].str.startswith("id").sum()


def test_a_two_valued_text_column_stays_binary():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"answer": rng.choice(["no", "yes"], 5000, p=[0.7, 0.3])})
    for seed in range(5):
        schema, _ = resolve_schema(df, None, ledger=_ledger(), share=0.1, rng=np.random.default_rng(seed))
        col = schema["answer"]
        assert col.kind == "binary" and col.categories == ("no", "yes") and col.unknown_as_missing


def test_every_query_is_recorded_with_its_sigma_and_budget_share():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(50, 2, 20_000), "c": rng.choice(["u", "v"], 20_000),
                       "k": np.arange(20_000) % 5})
    ledger = _ledger()
    resolve_schema(df, None, ledger=ledger, share=0.2, rng=rng)  # x: bounds 10 ... 100, its rows in 6 of 64 bins
    mechanisms = [e.mechanism for e in ledger.entries]
    # stage 1 (row count, bounds, the float column's step, the text profile), stage 2 (one histogram per column
    # still in), then the zoom of x (its 64 grid bins; k, on unit bins, needs none)
    assert mechanisms == ["row count", "DP bounds x", "DP step x", "profile c", "DP bounds k", "histogram x",
                          "partition selection c", "histogram k", "zoom x"]
    sigma = ledger.entries[0].params["sigma"]
    by_name = {e.mechanism: e.params for e in ledger.entries}
    assert by_name["profile c"]["sigma"] == pytest.approx(2 * sigma)  # weight 1/4
    stage_one = [e.params["sigma"] for e in ledger.entries[:5] if "profile" not in e.mechanism]
    stage_two = [e.params["sigma"] for e in ledger.entries[5:8]]
    assert stage_one == pytest.approx([sigma] * 4, rel=2e-3)  # the step query has a histogram's weight
    # the plan holds back a quarter-weight zoom for each numeric column; k (unit bins) cannot zoom, so stage 2 gets
    # its part and x's zoom the quarter held back for x (twice the noise sd)
    assert stage_two == pytest.approx([stage_two[0]] * 3, rel=2e-3) and stage_two[0] < sigma * (1 - 1e-2)
    assert by_name["zoom x"]["sigma"] == pytest.approx(stage_two[0] * 2, rel=2e-2)
    # the phase alone is (0.2, delta/2)-DP for its Gaussians (exactly the budget: nothing was excluded), and the
    # selection delta is accounted
    gauss = epsilon_of([(e.event, e.count) for e in ledger.entries], 1e-5 / 2)
    assert 0.2 * (1 - 3e-3) <= gauss <= 0.2 * (1 + 1e-9)
    assert sum(e.extra_delta for e in ledger.entries) == pytest.approx(1e-5 / 4)
    # the allocation is in the ledger: each query's share of the phase's GDP budget, summing to 1
    shares = [e.params["budget_share"] for e in ledger.entries]
    assert sum(shares) == pytest.approx(1.0, abs=5e-3)
    assert by_name["profile c"]["budget_share"] == pytest.approx(by_name["row count"]["budget_share"] / 4, rel=1e-2)


def test_an_identifier_is_excluded_by_its_profile_and_its_budget_goes_to_the_others():
    """Budget by need: a text column with no frequent value (an ID) costs a quarter-weight profile, not a partition
    selection; stage 2 spends the rest on the columns kept, at a lower sigma than the pre-flight plan's."""
    from dpsynth.data.discovery import plan_discovery

    rng = np.random.default_rng(3)
    n = 20_000
    df = pd.DataFrame({"id": [f"p{i:06d}" for i in rng.permutation(n)], "note": [f"free text {i}" for i in range(n)],
                       "c": rng.choice(["u", "v", "w"], n), "x": rng.normal(0, 1, n)})
    ledger = _ledger()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        schema, meta = resolve_schema(df, None, ledger=ledger, share=0.1, rng=rng)
    said = [str(w.message) for w in caught]
    assert any(m.startswith("Column 'id' is excluded: no value is frequent enough") for m in said), said
    assert schema.names == ["c", "x"] and schema.excluded == ("id", "note")
    mechanisms = [e.mechanism for e in ledger.entries]
    assert "partition selection id" not in mechanisms and "partition selection note" not in mechanisms
    plan = plan_discovery(df, epsilon=1.0, delta=1e-5, share=0.1)
    stage_two = {e.mechanism: e.params["sigma"] for e in ledger.entries}["histogram x"]
    # two of the four planned histograms were not needed: 1/sigma^2 of the two left grows by about
    # (planned weight left) / (weight they would have had)
    assert stage_two < 0.8 * plan.sigma and meta.sigma == pytest.approx(stage_two)
    gauss = epsilon_of([(e.event, e.count) for e in ledger.entries], 1e-5 / 2)
    assert 0.1 * (1 - 3e-3) <= gauss <= 0.1 * (1 + 1e-9)  # the whole phase budget, no more


def test_the_profile_query_has_sensitivity_one():
    """Adding or removing one row moves the frequent mass by at most 1, or the missing count by 1, never both."""
    from dpsynth.data.discovery import PROFILE_CUT

    rng = np.random.default_rng(4)
    cut = 7.0 * PROFILE_CUT * 4

    def cells(values):
        s = pd.Series(values, dtype=object)
        c = s.dropna().value_counts().to_numpy(dtype=float)
        return np.array([np.clip(c - cut, 0, None).sum(), float(s.isna().sum())])

    for _ in range(200):
        base = list(rng.choice(["a", "b", "c", None], int(rng.integers(1, 40)), p=[0.5, 0.2, 0.2, 0.1]))
        extra = rng.choice(["a", "b", "c", "new", None])
        assert np.linalg.norm(cells(base + [extra]) - cells(base)) <= 1.0 + 1e-12


def test_dp_bounds_cover_the_bulk_and_mixed_zero_detected():
    rng = np.random.default_rng(1)
    n = 30_000
    gain = np.where(rng.random(n) < 0.8, 0, rng.integers(1000, 20_000, n))
    df = pd.DataFrame({"age": rng.integers(20, 70, n), "gain": gain})
    schema, meta = resolve_schema(df, None, ledger=_ledger(), share=0.1, rng=rng)
    assert schema["age"].kind == "integer"
    # bounds are decade edges around the 0.5% and 99.5% quantiles
    assert (schema["age"].lower, schema["age"].upper) == (10, 100)
    assert schema["gain"].kind == "mixed" and schema["gain"].special_values == (0.0,)
    assert (schema["gain"].lower, schema["gain"].upper) == (0, 100_000)
    assert meta.n_rows == pytest.approx(n, abs=2000)
    # the shape histogram inside the bounds: unit bins for the integer range, zeros as the special value's cell
    hist = meta.histograms["gain"]
    assert hist.special_counts[0.0] == pytest.approx((gain == 0).sum(), abs=5 * meta.sigma)
    assert len(meta.histograms["age"].counts) == 91


def test_discovery_on_real_adult_at_epsilon_one():
    """The bundled Adult train split, no schema, epsilon = 1, default 10% metadata share (sigma ~150): bounds clip
    almost nothing, capital-gain/loss are mixed with special value 0, categories above the selection threshold
    (~2.3% of the rows here) survive, none seen fewer than ~100 times does."""
    from dpsynth import datasets

    train = datasets.load("adult").train
    for seed in range(2):
        ledger = _ledger()
        schema, meta = resolve_schema(train, None, ledger=ledger, share=0.1, rng=np.random.default_rng(seed))
        assert ledger.epsilon() <= 0.1 + 1e-9
        for col in schema.columns:
            values = train[col.name]
            if col.is_discrete:
                share = values.value_counts(normalize=True)
                assert set(share[share >= 0.035].index) <= set(col.categories), col.name
                assert not set(share[share * len(train) < 100].index) & set(col.categories), col.name
            else:
                clipped = ((values < col.lower) | (values > col.upper)).mean()
                assert clipped <= 0.015, (col.name, col.lower, col.upper, clipped)
        for name in ("capital-gain", "capital-loss"):
            assert schema[name].kind == "mixed" and schema[name].special_values == (0.0,)
        assert schema["age"].kind == "integer" and schema["fnlwgt"].upper >= 1e6


def test_rare_ones_of_an_integer_flag_and_nullable_integers_survive_discovery():
    rng = np.random.default_rng(3)
    n = 5000
    nullable = pd.array(rng.integers(1, 50, n), dtype="Int64")
    nullable[:200] = pd.NA
    df = pd.DataFrame({"flag": (rng.random(n) < 0.12).astype(int), "k": nullable})
    schema, meta = resolve_schema(df, None, ledger=_ledger(), share=0.1, rng=rng)
    assert schema["flag"].lower == 0 and schema["flag"].upper >= 1  # not [0, 0]: the ones are kept
    assert schema["k"].nullable and meta.histograms["k"].missing > 0


def test_a_spurious_far_decade_does_not_set_a_bound():
    """Pure noise clears the floor on some decade ~1% of the time per column; only the run of decades around the
    bulk counts. 5,000 simulated noisy decade histograms of a column living in [1, 10): never a bound beyond."""
    from dpsynth.data import discovery

    rng = np.random.default_rng(0)
    sigma, n = 10.0, 3000
    edges = discovery.geometric_grid()
    true = np.zeros(len(edges) - 1)
    true[np.searchsorted(edges, 1.0)] = n  # every value in [1, 10)
    far = adjacent = 0
    for _ in range(5000):
        noisy = true + rng.normal(0, sigma, true.shape)
        kept = discovery.floored_counts(noisy, sigma, zero_kept=False, integral=True)
        lower, upper = discovery.dp_bounds(kept, 0.0, edges)
        far += upper > 100 or lower < 0.1  # [0.1, 1) may be added (towards zero at 2 sigma)
        adjacent += upper == 100  # noise clearing the strict floor right next to the bulk: ~1/28 of 1%
    assert far == 0 and adjacent <= 5
    # without the run rule the same noise gives far bounds: the test has power
    spurious = sum(bool((rng.normal(0, sigma, true.shape) >= discovery.noise_floor(sigma, np.append(true, 0))).any())
                   for _ in range(5000))
    assert spurious > 10


def test_public_schema_still_pays_for_its_histograms(adult_small, adult_schema):
    ledger = _ledger()
    schema, meta = resolve_schema(adult_small, adult_schema, ledger=ledger, share=0.1, rng=np.random.default_rng(0))
    assert schema is adult_schema
    # the row count, one histogram per column, then a zoom for the columns on 64-bin grids whose DP mass needs one
    may_zoom = {c.name for c in adult_schema.columns if c.is_numeric and c.upper - c.lower > 200}
    assert may_zoom == {"fnlwgt", "capital-gain", "capital-loss"}
    zoomed = [e.mechanism.removeprefix("zoom ") for e in ledger.entries[len(adult_schema) + 1:]]
    assert [e.mechanism for e in ledger.entries[:len(adult_schema) + 1]] == \
        ["row count"] + [f"histogram {name}" for name in adult_schema.names]
    assert set(zoomed) <= may_zoom  # on this small sample, none: every bin's mass is a few noise sds
    assert 0 < ledger.epsilon() <= 0.1 + 1e-9
    assert set(meta.histograms) == set(adult_schema.names)


def test_non_private_mode_is_exact_and_recorded(adult_small):
    ledger = PrivacyLedger(target_epsilon=math.inf, target_delta=1e-5)
    schema, meta = resolve_schema(adult_small, None, ledger=ledger, share=0.1, rng=np.random.default_rng(0))
    assert meta.n_rows == len(adult_small)
    assert math.isinf(ledger.epsilon())
    assert schema.provenance == "inferred"


def test_calibration_meets_the_share():
    sigma = calibrate_metadata_sigma(16, 0.1, 5e-6)
    assert epsilon_of([(dp_event.GaussianDpEvent(sigma), 16)], 5e-6) <= 0.1
    assert epsilon_of([(dp_event.GaussianDpEvent(sigma * 0.99), 16)], 5e-6) > 0.1


def test_bad_input_under_dp_discovery():
    rng = np.random.default_rng(0)
    n = 5000
    with pytest.warns(UserWarning, match="'a' is excluded: too few non-missing values.*schema.*metadata-share"):
        schema, _ = resolve_schema(pd.DataFrame({"a": np.full(n, np.nan), "b": rng.normal(size=n)}), None,
                                   ledger=_ledger(), share=0.1, rng=rng)
    assert schema.excluded == ("a",) and schema.names == ["b"]
    with pytest.raises(InputError, match="infinite"):
        resolve_schema(pd.DataFrame({"a": np.r_[np.inf, rng.normal(size=n)]}), None, ledger=_ledger(), share=0.1,
                       rng=rng)
    ids = pd.DataFrame({"id": [f"u{i}" for i in range(n)], "x": rng.integers(0, 9, n)})
    with pytest.warns(UserWarning, match="'id'.*excluded"):
        schema, _ = resolve_schema(ids, None, ledger=_ledger(), share=0.1, rng=rng)
    assert schema.excluded == ("id",)
    const = pd.DataFrame({"c": np.full(n, 5), "k": ["z"] * n})
    schema, _ = resolve_schema(const, None, ledger=_ledger(), share=0.5, rng=rng)
    assert schema["c"].lower <= 5 <= schema["c"].upper and "z" in schema["k"].categories


def test_delta_larger_than_one_over_n_is_warned(adult_small, adult_schema):
    from dpsynth.models.marginals import Marginals

    with pytest.warns(UserWarning, match="larger than 1/n"):
        Marginals().fit(adult_small, epsilon=1.0, delta=1e-3, schema=adult_schema)


def test_separate_runs_of_decades_keep_their_mass():
    """Real mass on both sides of zero, or in decades far apart, is bounded as a whole (issue 15: a standard
    normal column used to be bounded to [-10, -0.1], clipping half of its rows; values near -1e308, 1 and +1e308
    kept only one run). Far values beyond the grid's 1e10 count in its outermost decades and are clipped there."""
    from dpsynth.data.discovery import _numeric_bounds, histogram_numeric, public_grid

    rng = np.random.default_rng(0)
    ledger = _ledger()
    normal = pd.Series(rng.normal(size=4000), name="x")
    col = _numeric_bounds(normal, ledger, 100.0, rng)
    assert col.lower <= -1 and col.upper >= 1
    spread = pd.Series(np.r_[np.full(1500, -1e308), np.full(1500, 1.0), np.full(1500, 1e308)], name="far")
    with pytest.warns(UserWarning, match=r"'far': about \d+ rows \(a DP estimate"):
        col = _numeric_bounds(spread, ledger, 100.0, rng)  # stage 1: bounds
        histogram_numeric(spread, col, public_grid(col), ledger, 100.0, rng)  # stage 2 reports the clipping
    assert col.lower == -1e10 and col.upper == 1e10


def _blood_pressure(n=40_000, seed=0):
    """Cardio's ap_lo in miniature: bounds stretched by typos (-70 ... 11,000), 98% of the values in 60 ... 100."""
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(80, 9, n)).clip(40, 130)
    typos = rng.random(n) < 0.02
    values[typos] = rng.choice([1000.0, 1100.0, 8000.0, -70.0, 11_000.0], typos.sum())
    from dpsynth.data.schema import Column, Schema

    schema = Schema((Column("ap_lo", "integer", lower=-70, upper=11_000),))
    return pd.DataFrame({"ap_lo": values.astype(int)}), schema


def test_zoom_window_is_the_shortest_run_holding_the_mass():
    from dpsynth.data.discovery import zoom_window

    counts = np.zeros(64)
    counts[[3, 4, 5]] = [100, 10_000, 300]
    counts[60] = 400
    assert zoom_window(counts, 0.0) == (4, 5)  # 10,000 of 10,800 = 93%: one bin
    counts[5] = 1_000
    assert zoom_window(counts, 0.0) == (4, 6)  # 10,000 of 11,500 = 87% < 90%: its heavier neighbour joins
    # with noise sd 100, mass is what lies above 2 sds: 150 of clipped noise in every empty bin is none, and bin 4
    # alone holds 9,800 of the 10,800 left (91%)
    assert zoom_window(np.where(counts > 0, counts, 150.0), 100.0) == (4, 5)
    assert zoom_window(np.zeros(8), 10.0) == (0, 8)  # nothing above the noise: the whole grid


def test_zoom_resolves_a_spike_the_grid_put_in_one_bin():
    """With the public bounds [-70, 11000], 64 grid bins are 173 wide and one holds 98% of the rows. The zoom
    re-measures that bin in unit bins, so the decoded column keeps its median and spread (before the
    zoom, values were drawn blind inside the bin: median 9 where the real one is 80). The phase stays within its
    share, with one more query on the ledger."""
    from dpsynth.marginals.domain import Discretizer

    data, schema = _blood_pressure()
    ledger = _ledger(1.0)
    _, meta = resolve_schema(data, schema, ledger=ledger, share=0.1, rng=np.random.default_rng(1))
    assert [e.mechanism for e in ledger.entries] == ["row count", "histogram ap_lo", "zoom ap_lo"]
    assert ledger.epsilon() <= 0.1 + 1e-9
    hist = meta.histograms["ap_lo"]
    widths = np.diff(hist.edges)
    lo, hi = ledger.entries[-1].params["window"]
    inside = (hist.edges[:-1] >= lo) & (hist.edges[1:] <= hi)
    assert lo <= 60 and hi >= 100 and widths[inside].max() <= 1  # one bin a value
    bulk = (hist.edges[:-1] >= 54.5) & (hist.edges[1:] <= 105.5)  # where the rows are (empty cells: clipped noise)
    assert hist.counts[bulk].sum() == pytest.approx(data["ap_lo"].between(55, 105).sum(), rel=0.02)
    cells = Discretizer.build(schema, meta, max_bins=32)
    codes = cells.encode(data)
    decoded = cells.decode(codes, np.random.default_rng(2))["ap_lo"]
    assert abs(decoded.median() - data["ap_lo"].median()) <= 2
    assert abs(decoded.quantile(0.9) - data["ap_lo"].quantile(0.9)) <= 4
    # the typos keep their grid bins (1.5% of the rows; they share coarse cells with the top of the bulk, so
    # decoding gives them part of those cells)
    assert 0.005 <= (decoded > 900).mean() <= 0.025


def test_zoom_is_planned_in_dp_discovery_and_costs_no_extra_budget():
    """Without a schema (public dtypes), a numeric column on a 64-bin grid gets its zoom in stage 2; the plan counts
    one per numeric column, and the phase spends exactly its share."""
    data, _ = _blood_pressure()
    data["grade"] = np.where(data["ap_lo"] > 85, "high", "normal")
    ledger = _ledger(1.0)
    schema, meta = resolve_schema(data, None, ledger=ledger, share=0.1, rng=np.random.default_rng(0))
    mechanisms = [e.mechanism for e in ledger.entries]
    assert "zoom ap_lo" in mechanisms and mechanisms.index("zoom ap_lo") > mechanisms.index("histogram ap_lo")
    gauss = epsilon_of([(e.event, e.count) for e in ledger.entries], 1e-5 / 2)  # the phase is (share eps, delta/2)
    assert 0.1 * (1 - 3e-3) <= gauss <= 0.1 * (1 + 1e-9)
    assert np.diff(meta.histograms["ap_lo"].edges).min() < np.diff(meta.histograms["ap_lo"].edges).max() / 8


def test_the_zoom_query_has_sensitivity_one():
    """Adding one row changes the released zoom cells (the sub-bins) by at most 1 in one cell, wherever the row lies:
    in the window, beside it, on its edges, at a special value, out of range or missing."""
    from dpsynth.data.discovery import numeric_cells, zoom_edges, zoom_grid
    from dpsynth.data.schema import Column

    col = Column("x", "mixed", nullable=True, lower=-70.0, upper=11_000.0, special_values=(0.0,), integer_valued=True)
    base = pd.Series(np.r_[np.arange(60.0, 101.0), [0.0, 5000.0, np.nan]])
    for lo, hi in [(102.97, 275.94), (-70.0, 102.97), (10_827.0, 11_000.0)]:
        sub = zoom_edges(col, lo, hi, 64)
        full, part = zoom_grid(col, sub)
        before = numeric_cells(base, col, full)[part]
        for row in [80.0, lo, hi, np.nextafter(hi, -np.inf), 0.0, -1e6, 1e6, np.nan, 5000.0, -70.0, 11_000.0]:
            after = numeric_cells(pd.concat([base, pd.Series([row])], ignore_index=True), col, full)[part]
            diff = after - before
            assert diff.min() >= 0 and diff.sum() <= 1, (lo, hi, row)
            assert diff.sum() == (lo <= row < hi or (row == hi == col.upper)) * (row != 0.0), (lo, hi, row)


# ---------------------------------------------------------------------------------------------- steps
def test_step_classes_put_each_value_in_its_coarsest_step():
    from dpsynth.data.discovery import STEP_CANDIDATES, step_classes

    values = [2.0, 0.0, -3.0, 1.5, -0.5, 2.25, 0.1 + 0.2, 0.7, 0.15, 0.37, 122.005, 0.004, 47.5112, 1e-5, 3e-6,
              math.pi, 1e12 + 0.5, np.nan, np.inf, -np.inf]
    expected = {1.0: 3, 0.5: 3, 0.25: 1, 0.1: 2, 0.05: 1, 0.01: 1, 0.005: 1, 0.001: 1, 1e-4: 1, 1e-5: 1, 1e-6: 1}
    counts = step_classes(np.array(values))
    assert counts.tolist() == [expected[c] for c in STEP_CANDIDATES] + [1]  # pi; NaN and +-inf count nowhere
    assert counts.sum() == len(values) - 3


@pytest.mark.parametrize("shares, lower, upper, step", [
    ({1.0: 0.6, 0.5: 0.4}, 1, 10, 0.5),  # floors
    ({1.0: 0.3, 0.5: 0.3, 0.25: 0.4}, 0, 10, 0.25),  # bathrooms
    ({1.0: 0.97, 0.5: 0.03}, 1, 10, 0.5),  # 3% of the rows off the whole numbers: seen above the noise
    ({1.0: 0.9, 0.5: 0.1}, 1, 10, 0.5),
    ({0.01: 0.5, 0.1: 0.3, 1.0: 0.2}, 0, 100, 0.01),  # money
    ({1.0: 0.5, None: 0.5}, 0, 100, None),  # half of the values continuous
    ({1.0: 1.0}, 0.2, 0.9, 0.25),  # whole numbers by class, but 1 and 0.5 have < 2 multiples inside the bounds
])
def test_the_step_is_the_coarsest_whose_multiples_hold_the_rows(shares, lower, upper, step):
    from dpsynth.data.discovery import STEP_CANDIDATES, dp_step

    n = 10_000
    cells = np.zeros(len(STEP_CANDIDATES) + 1)
    for c, share in shares.items():
        cells[STEP_CANDIDATES.index(c) if c is not None else -1] = share * n
    assert dp_step(cells, 0.0, lower, upper) == step
    rng = np.random.default_rng(0)
    for _ in range(20):  # noise of 20 rows a cell (floor ~63) changes nothing here
        assert dp_step(cells + rng.normal(0, 20, len(cells)), 20.0, lower, upper) == step


def test_no_step_when_the_noise_could_hide_a_twentieth_of_the_rows():
    from dpsynth.data.discovery import STEP_CANDIDATES, STEP_SHARE, dp_step, noise_floor

    cells = np.zeros(len(STEP_CANDIDATES) + 1)
    cells[1] = 2000.0  # 2,000 rows in halves
    sigma = 30.0
    assert noise_floor(sigma, cells) <= STEP_SHARE * 2000 and dp_step(cells, sigma, 0, 10) == 0.5
    sigma = 400.0  # a class of 100 rows (5%) cannot be seen: the rows could be on any step
    assert noise_floor(sigma, cells) > STEP_SHARE * 2000 and dp_step(cells, sigma, 0, 10) is None


def _steps_frame(n: int = 20_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    whole = rng.integers(0, 60, n).astype(float)
    whole[rng.random(n) < 0.05] = np.nan  # whole numbers in a float column (a CSV integer column with gaps)
    return pd.DataFrame({
        "floors": rng.choice([1.0, 1.5, 2.0, 2.5, 3.0], n, p=[0.45, 0.15, 0.3, 0.05, 0.05]),
        "bathrooms": rng.integers(2, 17, n) * 0.25,
        "latitude": np.round(rng.uniform(47.2, 47.8, n), 4),
        "income": rng.lognormal(10, 1, n),
        "years": whole,
        "count": rng.integers(0, 5, n),  # an integer dtype: no step query
    })


@pytest.mark.parametrize("dtypes", ["public", "private"])
def test_dp_discovery_finds_each_float_columns_step(dtypes):
    """Halves, quarters, four decimals, whole numbers in a float column: found with DP (each fit's step queries are
    in the ledger, at a histogram's weight for public float dtypes, sharing the reserve with private ones); a
    continuous column gets none. A model's samples are then multiples of the steps."""
    from dpsynth.data.discovery import STEP_RESERVE
    from dpsynth.models import get_model_class

    df = _steps_frame()
    data = df if dtypes == "public" else df.astype(str).replace("nan", "")
    expected = {"floors": 0.5, "bathrooms": 0.25, "latitude": 1e-4, "income": None, "years": 1.0}
    for seed in range(3):
        ledger = _ledger()
        schema, _ = resolve_schema(data, None, ledger=ledger, share=0.1, rng=np.random.default_rng(seed),
                                   dtypes=dtypes)
        found = {c.name: c.step for c in schema.columns if c.name in expected}
        if dtypes == "private":  # a text column of whole numbers is an integer column (step 1 by kind)
            assert schema["years"].kind == "integer"
            found["years"] = schema["years"].grid_step
        assert found == expected
        steps = [e for e in ledger.entries if e.mechanism.startswith("DP step")]
        sigma = ledger.entries[0].params["sigma"]  # the row count's: a weight-1 stage-1 query
        if dtypes == "public":
            assert sorted(e.mechanism for e in steps) == ["DP step " + c for c in sorted(
                ["floors", "bathrooms", "latitude", "income", "years"])]
            assert [e.params["sigma"] for e in steps] == pytest.approx([sigma] * 5, rel=1e-6)
        else:  # 6 columns' reserve shared by the 4 non-integer ones
            assert len(steps) == 4
            weight = STEP_RESERVE * 6 / 4
            assert [e.params["sigma"] for e in steps] == pytest.approx([sigma / math.sqrt(weight)] * 4, rel=1e-6)
        gauss = epsilon_of([(e.event, e.count) for e in ledger.entries], 1e-5 / 2)
        assert gauss <= 0.1 * (1 + 1e-9)
    fit = get_model_class("mst")(iterations=20).fit(data, epsilon=1.0, delta=1e-5, seed=0, dtypes=dtypes)
    sample = fit.sample(2000, seed=0)
    for name, step in expected.items():
        if step is not None:
            values = pd.to_numeric(sample[name]).dropna().to_numpy(float) / step
            np.testing.assert_allclose(values, np.round(values), atol=1e-6, err_msg=name)
    assert sample["floors"].isin([1.0, 1.5, 2.0, 2.5, 3.0]).mean() > 0.95


# ------------------------------------------------------------------------------------------ a declared target
def _rare_target_frame(n=4_000, positives=600, seed=0):
    """A loan-like table: 13 text and numeric columns and a yes/no target whose 'yes' (15%) is below the release
    threshold of an ordinary column at epsilon 1 (~1,000 rows) and well above a declared target's (~330)."""
    rng = np.random.default_rng(seed)
    data = {f"c{i}": rng.choice(["u", "v", "w"], n) for i in range(7)}
    data.update({f"x{i}": rng.integers(0, 90, n) for i in range(6)})
    y = np.array(["yes"] * positives + ["no"] * (n - positives))
    return pd.DataFrame({**data, "y": rng.permutation(y)})


def _discovery_run(df, target, seed=0):
    ledger = _ledger()
    schema, meta = resolve_schema(df, None, ledger=ledger, share=0.1, rng=np.random.default_rng(seed), target=target)
    assert epsilon_of([(e.event, e.count) for e in ledger.entries], 1e-5 / 2) <= 0.1 * (1 + 1e-9)  # the phase's
    return {e.mechanism: e.params["sigma"] for e in ledger.entries}, schema, meta


def test_a_declared_text_target_holds_a_reserve_and_stage_one_is_untouched():
    from dpsynth.data.discovery import TARGET_SHARE, plan_discovery

    df = _rare_target_frame()
    k = df.shape[1]
    plain = plan_discovery(df, epsilon=1.0, delta=1e-5, share=0.1)
    plan = plan_discovery(df, epsilon=1.0, delta=1e-5, share=0.1, target="y")
    # stage 1 is planned as without a target; the reserve is TARGET_SHARE of itself and the k - 1 other queries
    assert plan.sigma == plain.sigma and plan.weights == plain.weights
    assert plan.target == "y" and plan.target_reserve / (k - 1 + plan.target_reserve) == pytest.approx(TARGET_SHARE)
    assert plan.target_rows < plain.category_rows / 2
    assert "is released first, and again from a reserve" in plan.describe()
    for column in ("x0", "b"):  # a number or a boolean of public dtype has no threshold to clear: no reserve
        other = plan_discovery(df.assign(b=df["y"] == "yes"), epsilon=1.0, delta=1e-5, share=0.1, target=column)
        assert other.target is None and other.target_reserve == 0.0
    with pytest.raises(InputError, match="target must be a column of the data"):
        plan_discovery(df, epsilon=1.0, delta=1e-5, share=0.1, target="nope")

    plain_sigmas = _discovery_run(df, None)[0]
    # a numeric target: the same release as without it, the schema naming it
    numeric, schema, _ = _discovery_run(df, "x0")
    assert numeric == plain_sigmas and schema.target == "x0"
    # stage 1 as without a target, but the target's profile: a declared target is wanted whatever its values
    rare, schema, meta = _discovery_run(df, "y")
    stage_one = [m for m in plain_sigmas if m.startswith(("row count", "DP bounds", "profile", "DP step"))]
    assert "profile y" in stage_one and "profile y" not in rare
    assert all(rare[m] == plain_sigmas[m] for m in stage_one if m != "profile y")
    # 'yes' (600 rows) is below the first release's threshold: the reserve pays for a second release, at the first's
    # sigma over sqrt(w), which is the one kept (its histogram records its own sigma); the other columns' sigma is
    # the first's (the reserve was held, then spent)
    w = plan.target_reserve
    first, again = rare["partition selection y"], rare["partition selection y (the target's reserve)"]
    assert again == pytest.approx(first / math.sqrt(w), rel=1e-9)
    assert "yes" in schema["y"].categories and meta.sigma_of("y") == pytest.approx(again)
    assert rare["partition selection c0"] == pytest.approx(first, rel=3e-3) == meta.sigma
    # stage 2's budget: the plain one (k weight-1 queries) plus the skipped profile's (weight 1/4 at the plan's
    # sigma), now k weight-1 queries and the reserve of weight w
    left = k / plain_sigmas["histogram x0"] ** 2 + 0.25 / plain.sigma ** 2
    assert (k + w) / first ** 2 == pytest.approx(left, rel=3e-3)
    assert schema.target == "y"


def test_a_reserve_the_target_does_not_need_goes_to_the_other_columns():
    """A balanced target keeps both classes in its first release: no second release, and the other columns spend
    the reserve (their sigma a little above the plain one: the target's own query was made at the held sigma)."""
    df = _rare_target_frame(positives=2_000)
    plain_sigmas = _discovery_run(df, None)[0]
    sigmas, schema, meta = _discovery_run(df, "y")
    assert not any("reserve" in m for m in sigmas) and set(schema["y"].categories) == {"no", "yes"}
    first, rest = sigmas["partition selection y"], sigmas["histogram x0"]
    assert rest < first and meta.sigma == pytest.approx(rest) and meta.sigma_of("y") == pytest.approx(first)
    # the same stage-2 budget as without a target (plus the skipped profile), shared out as spent
    k = df.shape[1]
    plan = discovery_plan_of(df)
    left = k / plain_sigmas["histogram x0"] ** 2 + 0.25 / plan.sigma ** 2
    assert 1 / first ** 2 + (k - 1) / rest ** 2 == pytest.approx(left, rel=3e-3)
    assert rest < plain_sigmas["histogram x0"] * 1.05  # the others lose little to the target


def discovery_plan_of(df):
    from dpsynth.data.discovery import plan_discovery

    return plan_discovery(df, epsilon=1.0, delta=1e-5, share=0.1)


@pytest.mark.parametrize("dtypes", ["public", "private"])
def test_a_declared_targets_rare_class_is_released_where_it_was_not(dtypes):
    from dpsynth.data.text import as_text

    df = _rare_target_frame()
    data = as_text(df) if dtypes == "private" else df
    with_target = without = 0
    for seed in range(5):
        plain, _ = resolve_schema(data, None, ledger=_ledger(), share=0.1, rng=np.random.default_rng(seed),
                                  dtypes=dtypes)
        declared, _ = resolve_schema(data, None, ledger=_ledger(), share=0.1, rng=np.random.default_rng(seed),
                                     dtypes=dtypes, target="y")
        without += "yes" in plain["y"].categories
        with_target += "yes" in declared["y"].categories
        assert plain.target is None and declared.target == "y"
    # 600 rows: ~2.5 noise sds under an ordinary column's threshold, ~4.5 above the target's
    assert without == 0 and with_target == 5


def test_a_target_released_with_one_class_or_none_is_warned_from_dp_outputs_only():
    df = _rare_target_frame(positives=15)
    with pytest.warns(UserWarning, match=r"target column 'y' has 1 class\(es\) released at this budget"):
        schema, _ = resolve_schema(df, None, ledger=_ledger(), share=0.1, rng=np.random.default_rng(0), target="y")
    assert schema.target == "y"
    ids = df.assign(y=[f"id{i}" for i in range(len(df))])  # ID-like: no value released, even from the reserve
    with pytest.warns(UserWarning, match="target column 'y' was not released at this budget") as caught:
        schema, _ = resolve_schema(ids, None, ledger=_ledger(), share=0.1, rng=np.random.default_rng(0), target="y")
    assert schema.target is None and "y" in schema.excluded
    # the first release's warning is dropped with it: only the release kept (the reserve's) speaks
    assert sum("Column 'y' is excluded" in str(w.message) for w in caught) == 1


def test_a_complete_column_of_a_small_table_is_not_called_missing():
    """The exclusion reason is read off the noisy missing count and the DP row count. On a table near the release
    threshold (400 rows, a value needs about 350) "fewer present rows than the threshold" held for any missing count
    above zero, and a complete 0-7 score was called "(almost) all missing" on 3 of the 11 seeds that were not refused
    up front; the reason now names the table's size. A column that is missing in a large table is still called so."""
    said = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        df = pd.DataFrame({"score": rng.integers(0, 8, 400).astype(str), "x": rng.normal(50, 10, 400)})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                resolve_schema(df, None, ledger=_ledger(), share=0.1, rng=rng)
            except InputError:
                continue  # the DP row count was below the threshold: refused up front
        said += [str(w.message) for w in caught if str(w.message).startswith("Column 'score' is excluded")]
    assert len(said) >= 5, said
    assert not any("missing" in m for m in said), said
    assert all("the table is too small for DP discovery of its values" in m and "a DP estimate" in m for m in said)

    rng = np.random.default_rng(0)
    n = 20_000
    df = pd.DataFrame({"empty": pd.Series([None] * n, dtype=object), "c": rng.choice(["u", "v"], n)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        schema, _ = resolve_schema(df, None, ledger=_ledger(), share=0.1, rng=rng)
    assert any(str(w.message).startswith("Column 'empty' is excluded: (almost) all its values are missing")
               for w in caught), [str(w.message) for w in caught]
    assert schema.excluded == ("empty",)
