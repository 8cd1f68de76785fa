"""Tests of dpsynth.data.transformers: round trips (Adult; NaNs and unseen categories), dtypes, layout, DP-only
fitting (mode recovery from a noisy histogram, PrivacyError for exact fits), JSON state, condition vectors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsynth.data.metadata import CategoricalHistogram, DPMetadata, NumericHistogram
from dpsynth.data.schema import Column, Schema
from dpsynth.data.transformers import (
    ACTIVATIONS,
    ROLES,
    ConditionSampler,
    NumericTransformer,
    TableTransformer,
)
from dpsynth.errors import InputError, NotFittedError, PrivacyError, SchemaError

NUMERIC_METHODS = ["mode_specific", "minmax", "standard", "quantile"]


# ---------------------------------------------------------------------------------------------- helpers
def noisy_metadata(df: pd.DataFrame, schema: Schema, *, sigma: float, rng, bins: int = 64) -> DPMetadata:
    """Gaussian-noised histograms over public bins, clipped at 0 — what DP discovery hands the encoders."""
    hists = {}
    for col in schema:
        s = df[col.name]
        noise = lambda size=None: rng.normal(0.0, sigma, size)  # noqa: E731
        miss = float(s.isna().sum()) + noise() if col.nullable else 0.0
        if col.is_discrete:
            counts = np.array([(s == c).sum() for c in col.categories], dtype=float)
            hists[col.name] = CategoricalHistogram(col.categories, np.clip(counts + noise(len(counts)), 0, None),
                                                   max(miss, 0.0))
            continue
        x = s.to_numpy(dtype=float, na_value=np.nan)
        x = np.clip(x[~np.isnan(x)], col.lower, col.upper)
        special = {}
        for v in col.special_values:
            special[v] = max(float((x == v).sum()) + noise(), 0.0)
            x = x[x != v]
        edges = np.linspace(col.lower, col.upper, bins + 1)
        counts, _ = np.histogram(x, edges)
        hists[col.name] = NumericHistogram(edges, np.clip(counts + noise(len(counts)), 0, None), special,
                                           max(miss, 0.0))
    return DPMetadata(float(len(df)) + rng.normal(0.0, sigma), hists)


def same_values(a: pd.Series, b: pd.Series) -> bool:
    """Equal element-wise with NaN == NaN (compared as objects)."""
    a_na, b_na = a.isna().to_numpy(), b.isna().to_numpy()
    if not (a_na == b_na).all():
        return False
    return bool((a.to_numpy(dtype=object)[~a_na] == b.to_numpy(dtype=object)[~b_na]).all())


# ---------------------------------------------------------------------------------------------- Adult
@pytest.fixture(scope="module")
def adult_dp():
    from dpsynth import datasets

    train = datasets.load("adult").train
    schema = datasets.schema("adult")
    meta = noisy_metadata(train, schema, sigma=20.0, rng=np.random.default_rng(0))
    return train, schema, meta


@pytest.fixture(scope="module")
def adult_ms(adult_dp):
    train, schema, meta = adult_dp
    return TableTransformer(schema).fit(meta, rng=0)


def check_round_trip(df, back, schema, *, rel_tol=0.0, abs_tol=0.0):
    assert list(back.columns) == schema.names
    assert len(back) == len(df)
    for col in schema:
        a, b = df[col.name].reset_index(drop=True), back[col.name]
        assert a.dtype == b.dtype, (col.name, a.dtype, b.dtype)
        if col.is_discrete:
            assert same_values(a, b), col.name
        else:
            assert (a.isna() == b.isna()).all(), col.name
            x, y = a.to_numpy(float, na_value=np.nan), b.to_numpy(float, na_value=np.nan)
            ok = ~np.isnan(x)
            tol = abs_tol + rel_tol * (col.upper - col.lower)
            assert np.abs(x[ok] - y[ok]).max() <= tol, (col.name, np.abs(x[ok] - y[ok]).max())


def test_adult_round_trip_mode_specific_exact(adult_dp, adult_ms):
    train, schema, _ = adult_dp
    X = adult_ms.transform(train)
    assert X.dtype == np.float32 and X.shape == (len(train), adult_ms.output_dim)
    check_round_trip(train, adult_ms.inverse_transform(X), schema)  # ints: exact after rounding


def test_adult_round_trip_with_posterior_mode_sampling(adult_dp, adult_ms):
    train, schema, _ = adult_dp
    X = adult_ms.transform(train, rng=np.random.default_rng(5))
    check_round_trip(train, adult_ms.inverse_transform(X), schema)


def test_adult_test_split_round_trip(adult_dp, adult_ms):
    """The official test split, encoded with the transformer fitted on the training split's DP metadata."""
    from dpsynth import datasets

    test = datasets.load("adult").test
    check_round_trip(test, adult_ms.inverse_transform(adult_ms.transform(test, rng=0)), adult_dp[1])


@pytest.mark.parametrize("numeric", ["minmax", "standard", "quantile"])
@pytest.mark.parametrize("categorical", ["onehot", "ordinal"])
def test_adult_round_trip_other_encoders(adult_dp, numeric, categorical):
    train, schema, meta = adult_dp
    tt = TableTransformer(schema, numeric=numeric, categorical=categorical).fit(meta, rng=0)
    back = tt.inverse_transform(tt.transform(train))
    # float32 output: quantile's CDF is steep where data is dense, so allow a tiny fraction of the range
    check_round_trip(train, back, schema, rel_tol=1e-3 if numeric == "quantile" else 0.0)


def test_adult_layout(adult_dp, adult_ms):
    train, _, _ = adult_dp
    info = adult_ms.output_info
    assert info[0].start == 0 and info[-1].end == adult_ms.output_dim
    assert all(a.end == b.start for a, b in zip(info, info[1:]))
    assert all(s.activation in ACTIVATIONS and s.role in ROLES and s.width >= 1 for s in info)
    X = adult_ms.transform(train.head(2000))
    for s in info:
        block = X[:, s.start : s.end]
        if s.activation == "softmax":
            assert np.all(block.sum(axis=1) == 1.0) and set(np.unique(block)) <= {0.0, 1.0}
        else:
            assert np.all(np.abs(block) <= 1.0)
    cg = [s for s in info if s.column == "capital-gain"]
    assert [s.role for s in cg] == ["value", "mode"]  # mixed: alpha + [modes..., special 0]
    work = next(c for c in adult_ms.column_info if c.name == "workclass")
    assert work.missing_slot == work.end - 1  # nullable categorical: missing is the last category slot


def test_inverse_accepts_any_real_values(adult_dp, adult_ms):
    _, schema, _ = adult_dp
    raw = np.random.default_rng(1).normal(0.0, 3.0, size=(500, adult_ms.output_dim))
    raw[0, :5] = [np.nan, np.inf, -np.inf, 1e30, -1e30]
    for softmax in ("argmax", "logits"):
        out = adult_ms.inverse_transform(raw, softmax=softmax, rng=2)
        for col in schema:
            if col.is_numeric:
                v = out[col.name].to_numpy(float)
                assert np.all((v >= col.lower) & (v <= col.upper)), col.name
                assert out[col.name].dtype == np.int64
            else:
                assert set(out[col.name].dropna()) <= set(col.categories)
    with pytest.raises(InputError, match="array"):
        adult_ms.inverse_transform(raw[:, :-1])


# ---------------------------------------------------------------------------------------------- small frames
def small_schema() -> Schema:
    return Schema((
        Column("x", "continuous", nullable=True, lower=-5.0, upper=5.0),
        Column("n", "integer", nullable=True, lower=0, upper=10),
        Column("k", "integer", lower=1, upper=3),
        Column("color", "categorical", nullable=True, categories=("red", "green", "blue")),
        Column("flag", "binary", categories=(False, True)),
        Column("size", "categorical", categories=(1, 2, 3), dtype="category"),
        Column("debt", "mixed", nullable=True, lower=-1.0, upper=1000.0, special_values=(0.0, -1.0)),
        Column("income", "long_tail", lower=0.0, upper=1e6),
    ))


def small_frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 2, n).clip(-5, 5)
    x[::7] = np.nan
    debt = rng.exponential(200, n).clip(0, 1000)
    debt[::3], debt[1::5], debt[2::11] = 0.0, -1.0, np.nan
    color = rng.choice(np.array(["red", "green", "blue", None], dtype=object), n)
    return pd.DataFrame({
        "x": x,
        "n": pd.array(np.where(np.arange(n) % 9 == 0, None, rng.integers(0, 11, n)).tolist(), dtype="Int64"),
        "k": rng.integers(1, 4, n),
        "color": pd.Series(color).astype("str"),
        "flag": rng.random(n) < 0.3,
        "size": pd.Categorical(rng.choice([1, 2, 3], n), categories=[1, 2, 3]),
        "debt": debt,
        "income": np.round(rng.lognormal(9, 1.5, n).clip(0, 1e6), 2),
    })


@pytest.mark.parametrize("numeric", NUMERIC_METHODS)
@pytest.mark.parametrize("with_metadata", [True, False])
def test_small_frame_round_trip_with_nans(numeric, with_metadata):
    schema, df = small_schema(), small_frame()
    meta = noisy_metadata(df, schema, sigma=2.0, rng=np.random.default_rng(0)) if with_metadata else None
    tt = TableTransformer(schema, numeric=numeric, max_modes=5).fit(meta, rng=1)
    back = tt.inverse_transform(tt.transform(df, rng=3))
    assert back["x"].dtype == np.float64 and back["n"].dtype == "Int64" and back["k"].dtype == np.int64
    assert back["flag"].dtype == bool and isinstance(back["size"].dtype, pd.CategoricalDtype)
    assert list(back["size"].cat.categories) == [1, 2, 3]
    # float32 output: the quantile CDF is flat where the DP histogram has no mass, so allow 0.2% of the range
    check_round_trip(df, back, schema, rel_tol=2e-3 if numeric == "quantile" else 1e-5)
    specials = df["debt"].isin([0.0, -1.0]).to_numpy()
    assert (back["debt"].to_numpy()[specials] == df["debt"].to_numpy()[specials]).all()  # special values exact
    # long tail: relative accuracy in the original space
    inc, inc_back = df["income"].to_numpy(), back["income"].to_numpy()
    rel = 5e-3 if numeric == "quantile" else 1e-5
    assert np.all(np.abs(inc - inc_back) <= rel * (inc + 1.0)), np.max(np.abs(inc - inc_back) / (inc + 1.0))


def test_unseen_categories_nullable_become_missing():
    schema, df = small_schema(), small_frame(50)
    tt = TableTransformer(schema, numeric="minmax").fit(None, rng=0)
    df.loc[[3, 4], "color"] = ["purple", "mauve"]
    back = tt.inverse_transform(tt.transform(df))
    assert back.loc[[3, 4], "color"].isna().all()
    keep = ~df.index.isin([3, 4])
    assert same_values(df["color"][keep].reset_index(drop=True), back["color"][keep].reset_index(drop=True))


def test_unseen_categories_not_nullable_raise():
    schema, df = small_schema(), small_frame(50)
    tt = TableTransformer(schema, numeric="minmax").fit(None, rng=0)
    df["size"] = df["size"].astype(object)
    df.loc[7, "size"] = 9
    with pytest.raises(SchemaError, match=r"Column 'size'.*unseen.*9"):
        tt.transform(df)


def test_unseen_categories_map_to_other_when_declared():
    schema = Schema((Column("c", "categorical", categories=("a", "b", "other"), other="other"),))
    tt = TableTransformer(schema).fit(None, rng=0)
    back = tt.inverse_transform(tt.transform(pd.DataFrame({"c": ["a", "zzz", "b"]})))
    assert back["c"].tolist() == ["a", "other", "b"]


def test_categories_matched_by_string_form():
    schema = Schema((Column("c", "categorical", categories=("1", "2")),))
    tt = TableTransformer(schema).fit(None, rng=0)
    back = tt.inverse_transform(tt.transform(pd.DataFrame({"c": [1, 2, 2]})))
    assert back["c"].tolist() == ["1", "2", "2"]


@pytest.mark.parametrize(
    "column, values, message",
    [
        (Column("v", "continuous", lower=0, upper=1), [0.5, np.nan], "missing values but is not nullable"),
        (Column("v", "continuous", lower=0, upper=1), [0.5, np.inf], "infinite"),
        (Column("v", "continuous", lower=0, upper=1), ["0.5", "abc"], "non-numeric"),
        (Column("v", "categorical", categories=("a",)), ["a", None], "missing values but is not nullable"),
    ],
)
def test_bad_values_raise_schema_error(column, values, message):
    tt = TableTransformer(Schema((column,))).fit(None, rng=0)
    with pytest.raises(SchemaError, match=message):
        tt.transform(pd.DataFrame({"v": pd.Series(values, dtype=object)}))


def test_missing_schema_column_raises():
    tt = TableTransformer(small_schema(), numeric="minmax").fit(None, rng=0)
    with pytest.raises(SchemaError, match="lacks columns"):
        tt.transform(small_frame(10).drop(columns=["k"]))


@pytest.mark.parametrize("numeric", NUMERIC_METHODS)
def test_out_of_bound_values_are_clipped(numeric):
    schema = Schema((Column("v", "continuous", lower=0.0, upper=10.0), Column("i", "integer", lower=1, upper=5)))
    tt = TableTransformer(schema, numeric=numeric).fit(None, rng=0)
    df = pd.DataFrame({"v": [-3.0, 4.0, 25.0], "i": [0, 3, 99]})
    back = tt.inverse_transform(tt.transform(df))
    assert np.allclose(back["v"], [0.0, 4.0, 10.0], atol=1e-4)
    assert back["i"].tolist() == [1, 3, 5]


def test_numeric_only_missing_span_for_scalers():
    col = Column("v", "continuous", nullable=True, lower=0, upper=1)
    t = NumericTransformer(col, method="minmax")
    assert [(s.activation, s.role, s.width) for s in t.spans] == [("tanh", "value", 1), ("softmax", "missing", 2)]
    assert [s.activation for s in NumericTransformer(col, method="standard").spans] == ["linear", "softmax"]
    assert len(NumericTransformer(Column("w", "continuous", lower=0, upper=1), method="minmax").spans) == 1


# ---------------------------------------------------------------------------------------------- DP-only fitting
def bimodal_column(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    return np.where(rng.random(n) < 0.4, rng.normal(20, 2, n), rng.normal(70, 3, n)).clip(0, 100)


def test_mode_specific_recovers_both_modes_from_dp_histogram():
    col = Column("v", "continuous", lower=0.0, upper=100.0)
    values = bimodal_column()
    rng = np.random.default_rng(1)
    edges = np.linspace(0, 100, 51)
    counts, _ = np.histogram(values, edges)
    hist = NumericHistogram(edges, np.clip(counts + rng.normal(0, 10.0, len(counts)), 0, None))
    t = NumericTransformer(col, max_modes=10).fit(hist, rng=np.random.default_rng(2))
    enc = t.encoder
    for centre, weight in ((20.0, 0.4), (70.0, 0.6)):
        near = np.abs(enc.means - centre) < 6.0
        assert near.any(), (centre, enc.means)
        assert abs(enc.weights[near].sum() - weight) < 0.06, (centre, enc.weights[near].sum())
    main = np.argmax(np.where(np.abs(enc.means - 20) < 6, enc.weights, 0))
    assert abs(enc.means[main] - 20.0) < 1.5 and 1.0 < enc.stds[main] < 4.0


def test_mode_specific_covers_whole_public_range():
    """Modes fitted on mass in [0, 10] still encode 999 invertibly (a background mode covers the gap)."""
    col = Column("v", "continuous", lower=0.0, upper=1000.0)
    edges = np.linspace(0, 1000, 101)
    counts = np.zeros(100)
    counts[0] = 500.0
    t = NumericTransformer(col).fit(NumericHistogram(edges, counts), rng=np.random.default_rng(0))
    values = pd.Series([0.5, 5.0, 9.9, 300.0, 500.0, 999.0, 1000.0])
    out = np.zeros((len(values), t.output_dim), dtype=np.float32)
    t.transform_into(values, out, rng=np.random.default_rng(1))
    assert np.all(np.abs(out[:, 0]) <= 1.0)
    back = t.inverse_transform(out, softmax="argmax", rng=None)
    assert np.allclose(back, values, atol=1e-3)


@settings(max_examples=30, deadline=None)
@given(
    method=st.sampled_from(NUMERIC_METHODS),
    lower=st.floats(-1e4, 1e4),
    width=st.floats(1e-2, 1e5),
    seed=st.integers(0, 2**16),
)
def test_numeric_round_trip_property(method, lower, width, seed):
    """Any in-bound value survives transform -> inverse_transform (float32 output) within 1e-4 of the range,
    for a histogram with random noisy counts."""
    rng = np.random.default_rng(seed)
    col = Column("v", "continuous", lower=lower, upper=lower + width)
    edges = np.linspace(col.lower, col.upper, 33)
    hist = NumericHistogram(edges, np.clip(rng.normal(20, 30, 32), 0, None))
    t = NumericTransformer(col, method=method).fit(hist, rng=rng)
    values = pd.Series(rng.uniform(col.lower, col.upper, 200))
    out = np.zeros((200, t.output_dim), dtype=np.float32)
    t.transform_into(values, out, rng=rng)
    back = t.inverse_transform(out, softmax="argmax", rng=None).to_numpy()
    tol = (2e-3 if method == "quantile" else 1e-4) * width + 1e-6 * abs(lower)
    assert np.all(np.abs(back - values.to_numpy()) <= tol)


def test_transform_accepts_conformed_frames(adult_dp, adult_ms):
    from dpsynth.data.frame import conform

    train, schema, _ = adult_dp
    head = train.head(3000)
    assert np.array_equal(adult_ms.transform(conform(head, schema)), adult_ms.transform(head))


def test_fit_is_a_function_of_metadata_only():
    schema = small_schema().subset(["x", "color", "debt"])
    meta = noisy_metadata(small_frame(), schema, sigma=2.0, rng=np.random.default_rng(0))
    a = TableTransformer(schema).fit(meta, rng=7).to_dict()
    b = TableTransformer(schema).fit(DPMetadata.from_dict(json.loads(json.dumps(meta.to_dict()))), rng=7).to_dict()
    assert a == b and a["non_private"] is False
    exact = DPMetadata(meta.n_rows, meta.histograms, non_private=True)
    assert TableTransformer(schema).fit(exact, rng=7).to_dict()["non_private"] is True


def test_fit_exact_requires_non_private_mode():
    schema, df = small_schema(), small_frame()
    for flag in (False, None, "yes"):
        with pytest.raises(PrivacyError, match="non-private"):
            TableTransformer(schema).fit_exact(df, non_private=flag)
    tt = TableTransformer(schema).fit_exact(df, non_private=True, rng=0)
    assert tt.to_dict()["non_private"] is True
    check_round_trip(df, tt.inverse_transform(tt.transform(df)), schema, rel_tol=1e-4)


def test_fit_exact_mode_specific_on_bimodal_values():
    schema = Schema((Column("v", "continuous", lower=0.0, upper=100.0),))
    tt = TableTransformer(schema).fit_exact(pd.DataFrame({"v": bimodal_column()}), non_private=True, rng=0)
    means = tt.transformers_[0].encoder.means
    assert np.abs(means - 20).min() < 1.0 and np.abs(means - 70).min() < 1.0


def test_wrong_histogram_type_raises():
    schema = Schema((Column("v", "continuous", lower=0.0, upper=1.0),))
    meta = DPMetadata(10.0, {"v": CategoricalHistogram(("a",), np.array([10.0]))})
    with pytest.raises(SchemaError, match="NumericHistogram"):
        TableTransformer(schema).fit(meta)


def test_not_fitted_and_bad_options():
    tt = TableTransformer(small_schema())
    with pytest.raises(NotFittedError):
        tt.transform(small_frame(5))
    with pytest.raises(NotFittedError):
        _ = tt.output_info
    with pytest.raises(InputError, match="numeric must be one of"):
        TableTransformer(small_schema(), numeric="bogus")
    with pytest.raises(InputError, match="max_modes"):
        TableTransformer(small_schema(), max_modes=0)


# ---------------------------------------------------------------------------------------------- state
@pytest.mark.parametrize("numeric", NUMERIC_METHODS)
@pytest.mark.parametrize("categorical", ["onehot", "ordinal"])
def test_json_round_trip_gives_identical_transforms(numeric, categorical):
    schema, df = small_schema(), small_frame()
    meta = noisy_metadata(df, schema, sigma=2.0, rng=np.random.default_rng(0))
    tt = TableTransformer(schema, numeric=numeric, categorical=categorical).fit(meta, rng=1)
    text = json.dumps(tt.to_dict())
    assert "pickle" not in text
    tt2 = TableTransformer.from_dict(json.loads(text))
    assert tt2.output_info == tt.output_info and tt2.column_info == tt.column_info
    X1, X2 = tt.transform(df, rng=4), tt2.transform(df, rng=4)
    assert np.array_equal(X1, X2)
    raw = np.random.default_rng(3).normal(size=(100, tt.output_dim))
    pd.testing.assert_frame_equal(tt.inverse_transform(raw), tt2.inverse_transform(raw))
    assert tt2.to_dict() == tt.to_dict()


def test_from_dict_rejects_bad_state():
    with pytest.raises(InputError, match="version"):
        TableTransformer.from_dict({"version": 99})


# ---------------------------------------------------------------------------------------------- conditions
def test_condition_sampler_follows_dp_frequencies():
    schema = Schema((
        Column("c", "categorical", nullable=True, categories=("a", "b", "c")),
        Column("v", "continuous", lower=0, upper=1),
    ))
    meta = DPMetadata(1000.0, {"c": CategoricalHistogram(("a", "b", "c"), np.array([600.0, 300.0, 0.0]), 100.0)})
    tt = TableTransformer(schema).fit(meta, rng=0)
    cs = ConditionSampler(tt, log_frequency=False)
    assert cs.n_spans == 1 and cs.cond_dim == 4
    batch = cs.sample(20000, rng=0)
    freq = batch.vectors.mean(axis=0)
    assert np.allclose(freq, [0.6, 0.3, 0.0, 0.1], atol=0.015)
    assert np.array_equal(batch.output_index, tt.output_info[0].start + batch.slot)
    log_p = ConditionSampler(tt, log_frequency=True).probabilities()[0]
    assert np.allclose(log_p, np.log1p([600, 300, 0, 100]) / np.log1p([600, 300, 0, 100]).sum())
    with_modes = ConditionSampler(tt, include_modes=True)
    # the continuous column adds one span over its modes, after the category span
    assert with_modes.n_spans == 2 and with_modes.spans[0].role == cs.spans[0].role
    assert with_modes.spans[1].role == "mode" and with_modes.cond_dim > cs.cond_dim


def test_condition_sampler_without_metadata_is_uniform():
    tt = TableTransformer(Schema((Column("c", "categorical", categories=("a", "b")),))).fit(None, rng=0)
    assert np.allclose(ConditionSampler(tt).probabilities()[0], [0.5, 0.5])


@pytest.mark.parametrize("softmax", ["argmax", "probs", "logits"])
def test_zero_rows_keep_columns_and_dtypes(softmax):
    schema = small_schema()
    tt = TableTransformer(schema, numeric="minmax").fit(None, rng=0)
    assert tt.transform(small_frame(5).iloc[:0]).shape == (0, tt.output_dim)
    empty = tt.inverse_transform(np.zeros((0, tt.output_dim)), softmax=softmax, rng=0)
    full = tt.inverse_transform(tt.transform(small_frame(50)))
    assert list(empty.columns) == schema.names and len(empty) == 0
    assert dict(empty.dtypes) == dict(full.dtypes)


def test_condition_sampler_modes_and_original_frequencies():
    schema = Schema((
        Column("c", "categorical", categories=("a", "b")),
        Column("m", "mixed", lower=0.0, upper=100.0, special_values=(0.0,)),
    ))
    edges = np.linspace(0, 100, 11)
    meta = DPMetadata(1000.0, {
        "c": CategoricalHistogram(("a", "b"), np.array([900.0, 100.0])),
        "m": NumericHistogram(edges, np.full(10, 30.0), {0.0: 700.0}),
    })
    tt = TableTransformer(schema).fit(meta, rng=0)
    cs = ConditionSampler(tt, include_modes=True)
    assert [s.role for s in cs.spans] == ["category", "mode"]
    mode_counts = tt.slot_counts()[2]
    assert mode_counts[-1] == 700.0 and np.isclose(mode_counts[:-1].sum(), 300.0)  # special slot last
    batch = cs.sample_original(40000, rng=1)
    first = batch.span == 0
    assert abs(batch.slot[first].mean() - 0.1) < 0.01  # 'b' drawn with its DP frequency
    second = batch.span == 1
    assert abs((batch.slot[second] == tt.output_info[2].width - 1).mean() - 0.7) < 0.015


def test_mode_is_drawn_from_posterior_with_rng_and_argmax_without():
    from dpsynth.data.transformers import ModeSpecificEncoder

    enc = ModeSpecificEncoder(-5.0, 5.0)
    enc.set_state({"means": [0.0, 1.0], "stds": [0.5, 1.0], "weights": [0.3, 0.7]})
    x = np.full(40000, 0.6)
    dens = np.array([0.3 / 0.5 * np.exp(-0.5 * (0.6 / 0.5) ** 2), 0.7 / 1.0 * np.exp(-0.5 * 0.4**2)])
    posterior = dens / dens.sum()
    _, modes = enc.encode(x, rng=np.random.default_rng(0))
    share = np.bincount(modes, minlength=2) / len(x)
    assert np.allclose(share, posterior, atol=0.01)  # 4 standard errors at n = 40,000
    _, argmax = enc.encode(x, rng=None)
    assert np.all(argmax == np.argmax(posterior))
    # a value 4 sigma outside mode 0 may only use mode 1, whatever the posterior says
    _, far = enc.encode(np.full(1000, 3.5), rng=np.random.default_rng(1))
    assert np.all(far == 1)


def test_weighted_vgm_matches_scikit_learn_on_unit_weights():
    """With unit counts and no within-bin variance the updates are scikit-learn's BayesianGaussianMixture."""
    from sklearn.mixture import BayesianGaussianMixture

    from dpsynth.data.transformers.mode_specific import weighted_vgm

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0.3, 0.05, 200), rng.normal(0.7, 0.08, 100)])
    w, m, v = weighted_vgm(x, np.ones_like(x), np.zeros_like(x), n_components=4, max_iter=2000, tol=1e-12)
    ref = BayesianGaussianMixture(
        n_components=4, weight_concentration_prior_type="dirichlet_process", weight_concentration_prior=1e-3,
        max_iter=2000, tol=1e-12, random_state=0,
    ).fit(x.reshape(-1, 1))
    ours = sorted((mi, vi, wi) for wi, mi, vi in zip(w, m, v) if wi > 0.05)
    theirs = sorted((mi, vi, wi) for wi, mi, vi in zip(ref.weights_, ref.means_[:, 0], ref.covariances_.ravel())
                    if wi > 0.05)
    assert len(ours) == len(theirs) == 2
    ours, theirs = np.array(ours), np.array(theirs)
    assert np.allclose(ours[:, :2], theirs[:, :2], rtol=1e-2)  # means and variances
    assert np.allclose(ours[:, 2], theirs[:, 2], atol=0.02)  # stick-breaking weights depend on component order


@pytest.mark.parametrize(
    "column, values, dtype",
    [
        (Column("v", "binary", nullable=True, categories=(False, True)), [True, None, False], "boolean"),
        (Column("v", "categorical", nullable=True, categories=(1, 5, 9)), [5, None, 9], "Int64"),
        (Column("v", "categorical", categories=(1, 5, 9)), [5, 1, 9], "int64"),
        (Column("v", "categorical", nullable=True, categories=("a", "b"), dtype="object"), ["a", None, "b"], "object"),
        (Column("v", "categorical", nullable=True, categories=("a", "b"), dtype="string"), ["a", None, "b"], "string"),
        (Column("v", "integer", nullable=True, lower=0, upper=9, dtype="float64"), [3, None, 7], "float64"),
        (Column("v", "mixed", nullable=True, lower=0, upper=9, special_values=(0,), integer_valued=True),
         [0, None, 7], "Int64"),
    ],
)
def test_dtypes_restored_with_missing_values(column, values, dtype):
    tt = TableTransformer(Schema((column,)), numeric="minmax").fit(None, rng=0)
    back = tt.inverse_transform(tt.transform(pd.DataFrame({"v": pd.Series(values, dtype=object)})))["v"]
    assert str(back.dtype) == dtype
    assert back.isna().tolist() == [v is None for v in values]
    assert [v for v in back.tolist() if not pd.isna(v)] == [v for v in values if v is not None]


def test_from_dict_rejects_corrupt_mode_state():
    schema = Schema((Column("v", "continuous", lower=0.0, upper=1.0),))
    state = TableTransformer(schema).fit(None, rng=0).to_dict()
    state["columns"]["v"]["encoder"]["stds"] = [-1.0] * len(state["columns"]["v"]["encoder"]["stds"])
    with pytest.raises(InputError, match="positive stds"):
        TableTransformer.from_dict(state)


def test_merge_redundant_components_by_moment_matching():
    from dpsynth.data.transformers.mode_specific import merge_redundant

    w, m, v = merge_redundant(np.array([0.3, 0.3, 0.4]), np.array([0.0, 0.1, 5.0]), np.array([1.0, 1.0, 1.0]))
    assert np.allclose(w, [0.6, 0.4]) and np.allclose(m, [0.05, 5.0])
    assert np.isclose(v[0], 1.0 + 0.05**2)  # within variance + between-means variance
    w2, _, _ = merge_redundant(np.array([0.5, 0.5]), np.array([0.0, 0.1]), np.array([1.0, 9.0]))
    assert len(w2) == 2  # same centre but very different spread: two modes


def test_per_column_overrides_and_their_state():
    schema = small_schema()
    tt = TableTransformer(schema, overrides={"x": "minmax", "color": "ordinal"}).fit(None, rng=0)
    by_name = {c.name: c for c in tt.column_info}
    assert [s.activation for s in by_name["x"].spans] == ["tanh", "softmax"] and by_name["x"].spans[1].role == "missing"
    assert by_name["color"].spans[0].role == "value"
    assert by_name["debt"].spans[1].role == "mode"  # the default (mode_specific) elsewhere
    again = TableTransformer.from_dict(json.loads(json.dumps(tt.to_dict())))
    assert again.overrides == {"x": "minmax", "color": "ordinal"} and again.output_info == tt.output_info
    assert "overrides" in repr(tt)
    with pytest.raises(InputError, match="Column 'color'"):
        TableTransformer(schema, overrides={"color": "minmax"})
    with pytest.raises(InputError, match="not in the schema"):
        TableTransformer(schema, overrides={"nope": "minmax"})


def test_transform_is_row_wise():
    """Guarantee: without an rng, each row's encoding depends on that row only (no statistics of the batch)."""
    schema, df = small_schema(), small_frame(60)
    meta = noisy_metadata(df, schema, sigma=2.0, rng=np.random.default_rng(0))
    tt = TableTransformer(schema).fit(meta, rng=0)
    full = tt.transform(df)
    parts = np.vstack([tt.transform(df.iloc[i : i + 7]) for i in range(0, 60, 7)])
    assert np.array_equal(full, parts)


def test_denoising_uses_each_bins_own_noise_sd():
    """Bins below 2 noise sds are read as empty; where the histogram records per-bin sds (a zoom's noisier
    sub-bins), each bin is held to its own."""
    from dpsynth.data.metadata import NumericHistogram
    from dpsynth.data.transformers.table import _denoise

    counts = np.array([5000.0, 300.0, 300.0])
    plain = _denoise(NumericHistogram(np.arange(4.0), counts), 126.0)
    np.testing.assert_array_equal(plain.counts, counts)
    zoomed = _denoise(NumericHistogram(np.arange(4.0), counts, bin_sd=np.array([126.0, 126.0, 252.0])), 126.0)
    np.testing.assert_array_equal(zoomed.counts, [5000.0, 300.0, 0.0])
