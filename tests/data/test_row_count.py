"""The metadata phase's DP row count: its row-count query pooled with the row totals of the histograms that count
every row (:func:`dpsynth.data.metadata.pooled_count`), with the noise sd that pooling implies."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpsynth.data.discovery import resolve_schema
from dpsynth.data.metadata import CategoricalHistogram, DPMetadata, NumericHistogram, pooled_count
from dpsynth.data.schema import Column, Schema
from dpsynth.errors import InputError
from dpsynth.privacy.ledger import PrivacyLedger


def test_pooled_count_weighs_each_estimate_by_its_inverse_variance():
    assert pooled_count([(100.0, 10.0), (130.0, 10.0)]) == pytest.approx((115.0, 10.0 / math.sqrt(2)))
    # weights 1/4 and 1/16: (4 * 100 + 1 * 200) / 5
    assert pooled_count([(100.0, 2.0), (200.0, 4.0)]) == pytest.approx((120.0, 1.0 / math.sqrt(1 / 4 + 1 / 16)))
    assert pooled_count([(100.0, 3.0), (250.0, 0.0)]) == (250.0, 0.0)  # an exact count wins
    with pytest.raises(ValueError):
        pooled_count([])


def test_a_row_total_needs_its_noise_sd_and_survives_a_round_trip():
    with pytest.raises(InputError, match="row total"):
        CategoricalHistogram(("a",), np.array([3.0]), row_total=3.0)
    with pytest.raises(InputError, match="row total"):
        NumericHistogram(np.array([0.0, 1.0]), np.array([3.0]), row_total=3.0, row_total_sd=0.0)
    meta = DPMetadata(12.5, {"x": NumericHistogram(np.array([0.0, 1.0]), np.array([3.0]), row_total=2.5,
                                                   row_total_sd=1.7),
                             "c": CategoricalHistogram(("a",), np.array([9.0]), row_total=11.0, row_total_sd=1.2)},
                      sigma=1.0, n_rows_sd=0.8)
    back = DPMetadata.from_dict(json.loads(json.dumps(meta.to_dict())))
    assert back.n_rows_sd == 0.8
    assert (back.histograms["x"].row_total, back.histograms["x"].row_total_sd) == (2.5, 1.7)
    assert (back.histograms["c"].row_total, back.histograms["c"].row_total_sd) == (11.0, 1.2)
    older = {k: v for k, v in meta.to_dict().items() if k != "n_rows_sd"}  # a file written before the pooling
    assert DPMetadata.from_dict(older).n_rows_sd is None


def _table(n: int, rng) -> tuple[pd.DataFrame, Schema]:
    """Four categorical columns of 2-5 categories and one number with public bounds: 64 grid bins."""
    cats = {f"c{k}": rng.integers(0, k, n).astype(str) for k in (2, 3, 4, 5)}
    frame = pd.DataFrame({**cats, "x": rng.normal(50, 15, n).clip(0, 100)})
    columns = tuple(Column(name, "categorical", categories=tuple(str(v) for v in range(int(name[1]))))
                    for name in cats) + (Column("x", "continuous", lower=0.0, upper=100.0),)
    return frame, Schema(columns)


def test_the_dp_row_count_pools_the_public_schemas_histograms_unbiased_at_the_derived_noise():
    """Public schema, epsilon 1, 400 releases of one table: the recorded sd of the DP row count is the inverse-variance
    pool of the row-count query's sigma and each histogram's sigma * sqrt(cells) (a known answer, under 0.8 of the
    query's), and the counts drawn agree with it: mean error within 4 standard errors of 0, spread within 15% of it.
    A row total summed from clipped counts would be biased upwards by several sds; one that skipped cells, below."""
    n = 5_000
    frame, schema = _table(n, np.random.default_rng(0))
    errors, sds = [], set()
    for seed in range(400):
        ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5)
        _, meta = resolve_schema(frame, schema, ledger=ledger, share=0.1, rng=np.random.default_rng(seed))
        sigma = next(e.params["sigma"] for e in ledger.entries if e.mechanism == "row count")
        cells = [e.params["bins"] for e in ledger.entries if e.mechanism.startswith("histogram")]
        assert sorted(cells) == [3, 4, 5, 6, 64 + 3]  # categories + missing; grid bins + missing, below, above
        derived = 1.0 / math.sqrt(1 / sigma**2 + sum(1 / (c * sigma**2) for c in cells))
        assert meta.n_rows_sd == pytest.approx(derived, rel=1e-9) and meta.n_rows_sd < 0.8 * sigma
        errors.append(meta.n_rows - n)
        sds.add(round(meta.n_rows_sd, 9))
    assert len(sds) == 1
    sd = sds.pop()
    assert abs(np.mean(errors)) < 4 * sd / math.sqrt(len(errors))
    assert 0.85 * sd < np.std(errors) < 1.15 * sd


def test_a_partition_selection_has_no_row_total_and_a_zoom_keeps_its_grids():
    """DP discovery: a text column's released values do not count every row (the rest are "other" or missing), so its
    histogram has no row total and the pool leaves it out; a zoomed number keeps its grid histogram's row total (the
    zoom's sub-bins count only the window's rows)."""
    rng = np.random.default_rng(1)
    n = 20_000
    spike = np.where(rng.random(n) < 0.98, rng.normal(80, 8, n).round(), rng.choice([1000.0, 9000.0], n))
    frame = pd.DataFrame({"city": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]), "bp": spike})
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5)
    _, meta = resolve_schema(frame, None, ledger=ledger, share=0.2, rng=np.random.default_rng(0))
    assert meta.histograms["city"].row_total is None
    mechanisms = [e.mechanism for e in ledger.entries]
    assert "zoom bp" in mechanisms
    grid = next(e for e in ledger.entries if e.mechanism == "histogram bp")
    hist = meta.histograms["bp"]
    assert hist.row_total_sd == pytest.approx(grid.params["sigma"] * math.sqrt(grid.params["bins"]))
    assert abs(hist.row_total - n) < 5 * hist.row_total_sd
    query = next(e.params["sigma"] for e in ledger.entries if e.mechanism == "row count")
    assert meta.n_rows_sd == pytest.approx(1 / math.sqrt(1 / query**2 + 1 / hist.row_total_sd**2))
