"""Rank-preserving marginal calibration: known answers, rank preservation, specials/NaN untouched, round trip."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpsynth.data.metadata import DPMetadata, NumericHistogram
from dpsynth.data.schema import Column, Schema
from dpsynth.models.marginal_map import MarginalMap


def _meta(hists, sigma=0.0):
    return DPMetadata(1000.0, hists, sigma=sigma)


def test_continuous_column_follows_the_histogram_and_keeps_ranks():
    rng = np.random.default_rng(0)
    schema = Schema((Column("x", "continuous", lower=0.0, upper=10.0), Column("y", "continuous", lower=-50, upper=50)))
    # DP histogram: all mass uniform on [6, 8]; the model draws x ~ N(2, 1) and y = 3x + noise
    edges = np.linspace(0, 10, 11)
    counts = np.zeros(10)
    counts[6:8] = 500
    meta = _meta({"x": NumericHistogram(edges, counts),
                  "y": NumericHistogram(np.array([-50.0, 50.0]), np.array([0.0]))})
    x = rng.normal(2, 1, 20_000)
    ref = pd.DataFrame({"x": x, "y": 3 * x + rng.normal(0, 0.1, x.size)})
    mmap = MarginalMap.fit(ref, schema, meta)
    assert "y" not in mmap.columns  # an empty histogram gives no usable target: column left alone
    x2 = rng.normal(2, 1, 5000)
    frame = pd.DataFrame({"x": x2, "y": 3 * x2})
    out = mmap.apply(frame, np.random.default_rng(1))
    assert stats.kstest(out["x"], stats.uniform(loc=6, scale=2).cdf).pvalue > 0.01
    assert stats.spearmanr(out["x"], frame["x"]).statistic > 0.999  # monotone map: ranks kept
    assert (out["y"] == frame["y"]).all()
    # a map that ignored the histogram would fail the first check
    assert stats.kstest(frame["x"], stats.uniform(loc=6, scale=2).cdf).pvalue < 1e-6


def test_integer_column_with_ties_matches_unit_bins_exactly_in_distribution():
    rng = np.random.default_rng(0)
    schema = Schema((Column("k", "integer", lower=0, upper=4),))
    edges = np.arange(-0.5, 5.0, 1.0)
    target = np.array([0.1, 0.2, 0.4, 0.2, 0.1])
    meta = _meta({"k": NumericHistogram(edges, target * 1000)})
    ref = pd.DataFrame({"k": rng.choice(5, 50_000, p=[0.6, 0.1, 0.1, 0.1, 0.1]).astype(float)})  # a tied spike at 0
    mmap = MarginalMap.fit(ref, schema, meta)
    out = mmap.apply(pd.DataFrame({"k": rng.choice(5, 40_000, p=[0.6, 0.1, 0.1, 0.1, 0.1]).astype(float)}),
                     np.random.default_rng(2))
    freq = np.bincount(out["k"].astype(int), minlength=5) / len(out)
    assert np.all(out["k"] == np.round(out["k"]))
    assert np.abs(freq - target).max() < 0.02


def test_special_values_follow_their_dp_count_missing_is_untouched_and_bins_below_two_sigma_are_empty():
    rng = np.random.default_rng(0)
    schema = Schema((Column("g", "mixed", lower=0.0, upper=100.0, special_values=(0.0,), nullable=True),))
    edges = np.linspace(0, 100, 11)
    counts = np.full(10, 5.0)  # noise-level counts everywhere ...
    counts[9] = 400.0  # ... and the real mass in [90, 100]
    # a DP row count consistent with the cells (445 regular + 300 zeros + 50 missing)
    meta = DPMetadata(795.0, {"g": NumericHistogram(edges, counts, {0.0: 300.0}, missing=50.0)}, sigma=10.0)
    values = np.where(rng.random(10_000) < 0.3, 0.0, rng.uniform(1, 50, 10_000))
    values[rng.random(10_000) < 0.05] = np.nan
    mmap = MarginalMap.fit(pd.DataFrame({"g": values}), schema, meta)
    out = mmap.apply(pd.DataFrame({"g": values}), np.random.default_rng(1))["g"].to_numpy()
    assert np.array_equal(np.isnan(out), np.isnan(values))
    present = out[~np.isnan(out)]
    # the zeros' share follows the DP counts (300 of 700 kept), not the model's 30%; every model zero stays a
    # zero or moves up (ranks kept), and the regular values land in the one bin that clears 2 sigma
    assert abs(np.mean(present == 0.0) - 300 / 700) < 0.02
    assert np.all(out[values == 0.0] >= 0.0)
    regular = present[present != 0.0]
    assert regular.min() >= 90.0  # the noise-level bins (5 < 2 sigma) got no mass


def test_a_model_collapsed_onto_the_special_value_is_spread_back():
    """A 0/1 column read as mixed (special 0, unit bins up to 10): the DP histogram says 10% ones, the model drew
    only zeros. The tied zeros are spread over the DP CDF, so about 10% become 1 (no other value has mass)."""
    schema = Schema((Column("y", "mixed", lower=0.0, upper=10.0, special_values=(0.0,), integer_valued=True),))
    edges = np.arange(-0.5, 11.0, 1.0)
    counts = np.zeros(11)
    counts[1] = 400.0
    meta = DPMetadata(4000.0, {"y": NumericHistogram(edges, counts, {0.0: 3600.0})}, sigma=100.0)
    mmap = MarginalMap.fit(pd.DataFrame({"y": np.zeros(5000)}), schema, meta)
    out = mmap.apply(pd.DataFrame({"y": np.zeros(20_000)}), np.random.default_rng(0))["y"].to_numpy()
    assert set(np.unique(out)) == {0.0, 1.0}
    assert abs(np.mean(out == 1.0) - 0.1) < 0.01


def test_round_trip_through_dict_gives_the_same_map():
    rng = np.random.default_rng(0)
    schema = Schema((Column("x", "continuous", lower=0.0, upper=1.0),))
    meta = _meta({"x": NumericHistogram(np.linspace(0, 1, 5), np.array([1.0, 2, 3, 4]) * 100)})
    mmap = MarginalMap.fit(pd.DataFrame({"x": rng.random(1000)}), schema, meta)
    again = MarginalMap.from_dict(mmap.to_dict())
    frame = pd.DataFrame({"x": rng.random(100)})
    a = mmap.apply(frame, np.random.default_rng(5))
    b = again.apply(frame, np.random.default_rng(5))
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("name", ["dp-auto-gan", pytest.param("dp-tldm", marks=[
    pytest.mark.slow(reason="dp-auto-gan covers the switch, about 11 s"), pytest.mark.ci])])
def test_models_use_it_and_can_switch_it_off(name, adult_small, adult_schema):
    from dpsynth.models import get_model_class

    cls = get_model_class(name)
    on = cls(**cls.fast_params).fit(adult_small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    off = cls(**{**cls.fast_params, "match_marginals": False}).fit(
        adult_small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    assert on.marginal_map_ is not None and "age" in on.marginal_map_.columns
    assert off.marginal_map_ is None
    # post-processing only: both ledgers hold the same events
    assert on.ledger_.to_dict()["entries"] == off.ledger_.to_dict()["entries"]


class _FakeTransformer:
    """The two things CategoryWeights reads from a TableTransformer: spans and DP slot counts."""

    def __init__(self, counts):
        from dpsynth.data.transformers.base import Span

        width = len(counts)
        self.output_info = [Span(0, 1, "tanh", "x", "value"), Span(1, 1 + width, "softmax", "c", "category")]
        self._counts = {1: np.asarray(counts, dtype=float)}

    def slot_counts(self):
        return self._counts


@pytest.mark.parametrize("mode", ["probs", "logits"])
def test_category_weights_match_the_dp_counts_and_keep_row_order(mode):
    from dpsynth.models.marginal_map import CategoryWeights

    rng = np.random.default_rng(0)
    logits = rng.normal(0, 1, (20_000, 3)) + np.array([1.5, 0.0, -1.0])  # model over-produces slot 0
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    block = probs if mode == "probs" else logits
    arr = np.column_stack([rng.random(len(block)), block])
    target = np.array([0.2, 0.5, 0.3])
    weights = CategoryWeights.fit(arr, _FakeTransformer(target * 1000), sigma=0.0, mode=mode)
    out = weights.apply(arr)
    assert np.array_equal(out[:, 0], arr[:, 0])  # numeric slots untouched
    if mode == "probs":
        p = out[:, 1:] / out[:, 1:].sum(1, keepdims=True)
        freq = p.mean(0)
        # the same multiplicative weight for every row: a row likelier to be slot 0 before stays likelier after
        assert stats.spearmanr(probs[:, 0], p[:, 0]).statistic > 0.95
    else:
        freq = np.bincount(out[:, 1:].argmax(1), minlength=3) / len(out)
    assert np.abs(freq - target).max() < 0.02
    before = probs.mean(0) if mode == "probs" else np.bincount(logits.argmax(1), minlength=3) / len(logits)
    assert np.abs(before - target).max() > 0.2  # the test data really needed the correction
    again = CategoryWeights.from_dict(weights.to_dict())
    assert np.array_equal(again.apply(arr), out)


def test_category_weights_keep_a_small_measured_category_possible():
    from dpsynth.models.marginal_map import CategoryWeights

    rng = np.random.default_rng(1)
    probs = rng.dirichlet([1, 1, 1], 5000)
    arr = np.column_stack([np.zeros(len(probs)), probs])
    weights = CategoryWeights.fit(arr, _FakeTransformer([900.0, 100.0, 3.0]), sigma=10.0, mode="probs")
    assert np.all(np.isfinite(weights.log_weights[1]))
    assert np.exp(weights.log_weights[1][2]) > 0


@pytest.mark.parametrize("mode", ["probs", "logits"])
def test_a_slot_the_dp_counts_leave_empty_gets_no_rows(mode):
    """40 slots of which 37 are empty in the DP histogram (noise only, below 2 sd: category_target zeroes them),
    while the generator spreads a fifth of its mass over them: after the weights, the empty slots get no row (a
    floor of 1e-4 of the span gave them ~1e-4 of the rows each, 0.4% in all) and the three others match."""
    from dpsynth.models.marginal_map import CategoryWeights

    rng = np.random.default_rng(4)
    k = 40
    logits = rng.normal(0, 1, (20_000, k)) + np.r_[2.0, 1.5, 1.0, np.full(k - 3, -0.5)]
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    block = probs if mode == "probs" else logits
    arr = np.column_stack([np.zeros(len(block)), block])
    counts = np.r_[5000.0, 3000.0, 2000.0, rng.uniform(-150.0, 150.0, k - 3)]  # noise below 2 sd
    weights = CategoryWeights.fit(arr, _FakeTransformer(counts), sigma=100.0, mode=mode)
    out = weights.apply(arr)
    if mode == "probs":
        p = out[:, 1:] / out[:, 1:].sum(1, keepdims=True)
        drawn = np.array([rng.choice(k, p=row) for row in p[:4000]])
        freq = np.bincount(drawn, minlength=k) / len(drawn)
        assert p[:, 3:].sum(1).max() < 1e-6
    else:
        freq = np.bincount(out[:, 1:].argmax(1), minlength=k) / len(out)
    assert freq[3:].sum() == 0
    assert np.abs(freq[:3] - [0.5, 0.3, 0.2]).max() < 0.03


def test_a_column_with_its_own_sigma_keeps_a_class_the_phase_sigma_would_zero():
    """Per-column noise sds (a declared target released from its reserve, sigma 30, while the phase's is 100): a
    class of 150 rows among 40 slots clears 2 x 30 and keeps its rows; at the phase's sigma it would be emptied."""
    from dpsynth.models.marginal_map import CategoryWeights

    rng = np.random.default_rng(4)
    k = 40
    probs = rng.dirichlet(np.ones(k), 5000)
    arr = np.column_stack([np.zeros(len(probs)), probs])
    counts = np.r_[5000.0, 3000.0, 150.0, np.zeros(k - 3)]
    own = CategoryWeights.fit(arr, _FakeTransformer(counts), sigma={"c": 30.0, "x": 100.0}, mode="probs")
    phase = CategoryWeights.fit(arr, _FakeTransformer(counts), sigma=100.0, mode="probs")
    assert np.exp(own.log_weights[1][2] - own.log_weights[1][0]) > 1e-3  # kept
    assert phase.log_weights[1][2] - phase.log_weights[1][0] < -20  # emptied at the phase's sigma


@pytest.mark.parametrize("seed", [2, 3, 5])
def test_argmax_weights_on_a_collapsed_generator_keep_the_best_iterate(seed):
    """A mode-collapsed generator (every row nearly the same logits) makes argmax counts jump with the weights;
    a plain fixed-point iteration then ends with one category taking most rows (TVD ~0.99 on these seeds).
    The fit must return its best iterate: never worse than no weights, and close to the target here."""
    from dpsynth.models.marginal_map import CategoryWeights

    rng = np.random.default_rng(seed)
    k = 40
    logits = rng.normal(0, 3, k) + rng.normal(0, 0.05, (20_000, k))
    target = np.r_[0.9, np.full(k - 1, 0.1 / (k - 1))]
    rng.shuffle(target)
    arr = np.column_stack([np.zeros(len(logits)), logits])
    weights = CategoryWeights.fit(arr, _FakeTransformer(target * 1000), sigma=0.0, mode="logits")
    out = weights.apply(arr)
    freq = np.bincount(out[:, 1:].argmax(1), minlength=k) / len(out)
    unweighted = np.bincount(logits.argmax(1), minlength=k) / len(logits)
    tvd = 0.5 * np.abs(freq - target).sum()
    assert tvd <= 0.5 * np.abs(unweighted - target).sum()
    assert tvd < 0.15


def rng_total(seed: int) -> float:
    """Noise of a DP total (the row count less two cells: sd ~ sqrt(3) sigma)."""
    return float(np.random.default_rng(1000 + seed).normal(0, 126.0 * np.sqrt(3)))


def test_a_small_tables_histogram_is_merged_until_it_carries_the_shape():
    """45 unit bins of ~90 rows each under noise sd 126 (a 4,000-row table, epsilon 1, 15 metadata queries): each
    bin alone is below 2 sd, so thresholding bin by bin left nothing and the map was skipped. Merged blocks keep
    the bulk of the mass, and their CDF is close to the true one; a large table keeps its bins as measured."""
    from dpsynth.models.marginal_map import coarsened

    edges = np.arange(22.5, 68.0, 1.0)
    truth = np.full(45, 90.0)
    true_cdf = np.concatenate([[0.0], np.cumsum(truth) / truth.sum()])
    errors, old_errors = [], []
    for seed in range(20):
        noisy = truth + np.random.default_rng(seed).normal(0, 126.0, 45)
        old = np.where(noisy >= 2 * 126.0, noisy, 0)  # the old rule: a few bins that the noise lifted, or nothing
        if old.sum() > 0:
            old_cdf = np.concatenate([[0.0], np.cumsum(old) / old.sum()])
            old_errors.append(np.abs(old_cdf - true_cdf).max())
        kept, merged = coarsened(noisy, edges, 126.0, total=truth.sum() + rng_total(seed))
        assert merged[0] == edges[0] and merged[-1] == edges[-1] and len(merged) == len(kept) + 1
        assert set(merged) <= set(edges) and len(kept) < 45
        cdf = np.concatenate([[0.0], np.cumsum(kept) / kept.sum()])
        errors.append(np.abs(np.interp(edges, merged, cdf) - true_cdf).max())
    assert np.median(errors) < 0.15 and np.median(errors) < 0.5 * np.median(old_errors)
    big = np.full(45, 5000.0) + np.random.default_rng(0).normal(0, 126.0, 45)
    kept, merged = coarsened(big, edges, 126.0, total=45 * 5000.0)
    assert np.array_equal(merged, edges) and np.array_equal(kept, big)
    assert coarsened(truth, edges, 0.0)[0] is not None and np.array_equal(coarsened(truth, edges, 0.0)[1], edges)
    # per-bin noise sds (a zoom's sub-bins are noisier): a bin of 300 rows clears 2 sds of 126 but not of 252
    counts = np.r_[np.full(40, 5000.0), [300.0, 300.0], np.zeros(3)]
    assert coarsened(counts, edges, 126.0)[0][40] == 300.0
    kept, _ = coarsened(counts, edges, np.r_[np.full(40, 126.0), np.full(5, 252.0)], total=counts.sum())
    assert kept[40] == 0.0 and kept[:40].sum() == 40 * 5000.0


def test_a_minority_category_survives_when_few_slots_cannot_add_much_noise():
    """A binary column with 240 of 4,000 rows in its minority slot, noise sd 126: the 2-sd threshold (252) erased
    it about half of the time; two clipped slots can add at most ~100 rows of noise mass, so they are kept as
    measured. With 40 slots (38 of them empty) clipping would add ~1,900 rows of mass: the threshold applies."""
    from dpsynth.models.marginal_map import category_target

    kept_minority = 0
    for seed in range(50):
        rng = np.random.default_rng(seed)
        noisy = np.array([3760.0, 240.0]) + rng.normal(0, 126.0, 2)
        target = category_target(noisy, 126.0)
        assert np.array_equal(target, np.clip(noisy, 0, None))
        kept_minority += target[1] > 0
        many = np.r_[2000.0, 2000.0, np.zeros(38)] + rng.normal(0, 126.0, 40)
        thresholded = category_target(many, 126.0)
        assert (thresholded[2:] > 0).sum() <= 3 and thresholded[0] > 0 and thresholded[1] > 0
    assert kept_minority >= 44  # 240 + N(0, 126) > 0 w.p. 0.97; the old 2-sd threshold kept it w.p. 0.47


def test_a_threshold_never_makes_a_column_constant_when_its_dp_counts_are_not():
    """Three classes of a 325-row table (206 / 63 / 56) measured with noise sd 97 read 378 / 116 / 101: below
    2 sd, the two minorities would be erased and the model's column would be constant (DP-TLDM returned only
    'USA' on the cars table). The clipped counts are kept instead; a column whose counts are one slot stays one."""
    from dpsynth.models.marginal_map import category_target

    target = category_target(np.array([101.16, 116.32, 377.90]), 97.46)
    assert np.count_nonzero(target) == 3 and np.allclose(target, [101.16, 116.32, 377.90])
    many = np.r_[5000.0, 150.0, -30.0, np.full(20, -5.0)]  # one clear slot, one below 2 sd, the rest noise
    assert np.count_nonzero(category_target(many, 97.46)) == 2  # clipped: every positive count kept
    single = np.r_[5000.0, np.full(20, -5.0)]
    assert np.count_nonzero(category_target(single, 97.46)) == 1  # truly one value: nothing invented


def test_knots_of_a_split_bin_a_point_mass_and_a_zero_width_bin():
    from dpsynth.models.marginal_map import _knots

    xs, cdf = _knots(np.array([-1.0, 1.0, 3.0]), np.array([20.0, 20.0]), {0.0: 60.0})
    # [-1, 0): 10, step of 60 at 0, (0, 1): 10, [1, 3): 20
    assert np.allclose(xs, [-1.0, 0.0, 0.0, 1.0, 3.0]) and np.allclose(cdf, [0.0, 0.1, 0.7, 0.8, 1.0])
    xs, cdf = _knots(np.array([5.0, 5.0]), np.array([10.0]), {})  # a constant column's histogram
    assert np.all(np.isfinite(cdf)) and cdf[-1] == 1.0 and np.all(xs == 5.0)
