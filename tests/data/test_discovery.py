"""DP metadata discovery: every query is in the ledger, and the documented rules hold."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsynth.data.discovery import OTHER, calibrate_metadata_sigma, resolve_schema
from dpsynth.privacy.accounting import epsilon_of
from dpsynth.privacy.ledger import PrivacyLedger
from dp_accounting import dp_event


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
    kept_singleton = 0
    for seed in range(20):
        ledger = _ledger()
        schema, meta = resolve_schema(df, None, ledger=ledger, share=0.1, rng=np.random.default_rng(seed))
        cats = set(schema["cat"].categories)
        assert {"a", "b", "c", "d", "e", "f", "g", "h", "one_percent"} <= cats, f"seed {seed}: {cats}"
        kept_singleton += "singleton" in cats
        assert OTHER in cats and schema["cat"].other == OTHER
        assert ledger.epsilon() <= 0.1 + 1e-9
    assert kept_singleton == 0


def test_singleton_rows_go_to_other_not_dropped():
    from dpsynth.data.frame import conform

    df = _category_frame(5000)
    schema, _ = resolve_schema(df, None, ledger=_ledger(), share=0.1, rng=np.random.default_rng(0))
    out = conform(df, schema)
    assert len(out) == len(df)
    assert (out["cat"] == OTHER).sum() >= 1


def test_every_query_is_recorded_with_its_sigma():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(50, 10, 20_000), "c": rng.choice(["u", "v"], 20_000), "k": np.arange(20_000) % 5})
    ledger = _ledger()
    resolve_schema(df, None, ledger=ledger, share=0.2, rng=rng)
    mechanisms = [e.mechanism for e in ledger.entries]
    assert mechanisms == ["row count", "DP quantiles x", "partition selection c", "DP quantiles k"]
    sigma = ledger.entries[0].params["sigma"]
    assert all(e.params["sigma"] == sigma for e in ledger.entries)
    # the phase alone is (0.2, delta/2)-DP for its Gaussians, and the selection delta is accounted
    gauss = epsilon_of([(dp_event.GaussianDpEvent(sigma), 4)], 1e-5 / 2)
    assert gauss == pytest.approx(0.2, rel=2e-3)
    assert sum(e.extra_delta for e in ledger.entries) == pytest.approx(1e-5 / 4)


def test_dp_bounds_cover_the_bulk_and_mixed_zero_detected():
    rng = np.random.default_rng(1)
    n = 30_000
    gain = np.where(rng.random(n) < 0.8, 0, rng.integers(1000, 20_000, n))
    df = pd.DataFrame({"age": rng.integers(20, 70, n), "gain": gain})
    schema, meta = resolve_schema(df, None, ledger=_ledger(), share=0.1, rng=rng)
    assert schema["age"].kind == "integer"
    # bounds are edges of the coarse grid (5 groups per decade) around the 0.5% and 99.5% quantiles
    assert 12 <= schema["age"].lower <= 21 and 65 <= schema["age"].upper <= 101
    assert schema["gain"].kind == "mixed" and schema["gain"].special_values == (0.0,)
    assert meta.n_rows == pytest.approx(n, abs=2000)


def test_public_schema_still_pays_for_its_histograms(adult_small, adult_schema):
    ledger = _ledger()
    schema, meta = resolve_schema(adult_small, adult_schema, ledger=ledger, share=0.1, rng=np.random.default_rng(0))
    assert schema is adult_schema
    assert len(ledger.entries) == len(adult_schema) + 1
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
    from dpsynth.errors import InputError

    rng = np.random.default_rng(0)
    n = 5000
    with pytest.raises(InputError, match="too few values to bound"):
        resolve_schema(pd.DataFrame({"a": np.full(n, np.nan), "b": rng.normal(size=n)}), None, ledger=_ledger(),
                       share=0.1, rng=rng)
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
    from dpsynth.models.marginals import MarginalsSynthesizer

    with pytest.warns(UserWarning, match="larger than 1/n"):
        MarginalsSynthesizer().fit(adult_small, epsilon=1.0, delta=1e-3, schema=adult_schema)
