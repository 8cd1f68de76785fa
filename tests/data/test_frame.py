from __future__ import annotations

import datetime
import warnings

import numpy as np
import pandas as pd
import pytest

from dpsynth.data.frame import check_frame, conform, restore_dtypes
from dpsynth.data.schema import Column, Schema
from dpsynth.errors import InputError


def _schema():
    return Schema(
        (
            Column("i", "integer", lower=0, upper=10, dtype="int64"),
            Column("n", "integer", nullable=True, lower=0, upper=10),
            Column("c", "categorical", nullable=True, categories=("x", "y"), dtype="str"),
            Column("b", "binary", categories=(False, True), dtype="bool"),
            Column("k", "categorical", categories=(1, 2, 3), dtype="int64"),
        )
    )


def test_conform_clips_to_bounds_with_a_warning_and_keeps_every_row():
    df = pd.DataFrame({"i": [-5, 3, 50], "n": [1.0, np.nan, 2.0], "c": ["x", None, "y"], "b": [True, False, True],
                       "k": [1, 2, 3]})
    with pytest.warns(UserWarning, match=r"i \(2 rows\)"):
        out = conform(df, _schema(), exact=True)  # non-private use: the exact count
    assert out["i"].tolist() == [0.0, 3.0, 10.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a DP fit reports clipping from DP counts only (discovery), never here
        assert conform(df, _schema())["i"].tolist() == [0.0, 3.0, 10.0]
    assert len(out) == 3 and out["c"].isna().tolist() == [False, True, False]


def test_restore_dtypes_keeps_ints_categories_and_nans():
    raw = pd.DataFrame({"i": [1.4, 2.6, 99.0], "n": [1.2, np.nan, 3.0], "c": ["x", np.nan, "y"],
                        "b": [True, False, True], "k": [1, 3, 2]})
    out = restore_dtypes(raw, _schema())
    assert str(out["i"].dtype) == "int64" and out["i"].tolist() == [1, 3, 10]
    assert str(out["n"].dtype) == "Int64" and out["n"].isna().tolist() == [False, True, False]
    assert str(out["c"].dtype) == "str" and pd.isna(out["c"][1])
    assert str(out["b"].dtype) == "bool" and str(out["k"].dtype) == "int64"


def test_other_category_absorbs_unknown_values():
    schema = Schema((Column("c", "categorical", categories=("a", "__other__"), other="__other__"),))
    out = conform(pd.DataFrame({"c": ["a", "zz", "a"]}), schema)
    assert out["c"].tolist() == ["a", "__other__", "a"]


@pytest.mark.parametrize("bad, message", [
    (pd.DataFrame(), "no columns"),
    (pd.DataFrame({"a": []}), "no rows"),
    ([1, 2], "Expected a pandas DataFrame"),
    (pd.DataFrame([[1, 2]], columns=["a", "a"]), "duplicate column names"),
    (pd.DataFrame([[1, 2]], columns=[0, 1]), "Column names must be strings"),
])
def test_check_frame(bad, message):
    with pytest.raises(InputError, match=message):
        check_frame(bad)


# ---------------------------------------------------------------------------------------- columns refused
@pytest.mark.parametrize("values, message", [
    (pd.Series([True, 1, False], dtype=object), r"mixes value types \(bool, int\)"),
    (pd.Series([1, "a", 2.5, "b"], dtype=object), r"mixes value types \(float, int, str\)"),
    (pd.Series(pd.Categorical([1, "1"])), r"mixes value types \(int, str\) in one category column"),
    (pd.Series([1 + 2j, 3 + 0j]), r"complex numbers \(dtype complex128\)"),
    (pd.Series([1 + 2j, "a"], dtype=object), "complex numbers"),
    (pd.Series([[1, 2], [3]]), r"holds list values; each cell"),  # no example: the value is private
    (pd.Series([{"a": 1}, {"b": 2}]), "holds dict values"),
    (pd.Series(pd.to_datetime(["2020-01-01", "2020-01-02"])),
     r"dates or times \(dtype datetime64.*days since an epoch"),
    (pd.Series(pd.to_datetime(["2020-01-01"]).tz_localize("UTC")), "dates or times"),
    (pd.Series(pd.to_timedelta([1, 2], unit="D")), "dates or times"),
    (pd.Series(pd.period_range("2020-01", periods=2, freq="M")), "dates or times"),
    (pd.Series([datetime.date(2020, 1, 1), None], dtype=object), r"dates or times \(date values"),
    (pd.Series([b"x", b"y"], dtype=object), "holds bytes values"),
    (pd.Series(pd.interval_range(0, 2)), "dtype interval"),
])
def test_columns_no_model_can_represent_are_refused(values, message):
    frame = pd.DataFrame({"ok": range(len(values)), "v": values})
    with pytest.raises(InputError, match=message) as info:
        check_frame(frame)
    assert "Column 'v'" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("values", [
    pd.Series(["a", None, "b"]), pd.Series(["a", None], dtype=object), pd.Series([True, None], dtype=object),
    pd.Series([1, 2.5, None], dtype=object), pd.Series([1, None], dtype="Int64"),
    pd.Series([True, None], dtype="boolean"),
    pd.Series(["a", "b"], dtype="string"), pd.Series(pd.Categorical(["a", "b"])), pd.Series([np.nan, np.nan]),
])
def test_columns_of_one_type_are_accepted(values):
    check_frame(pd.DataFrame({"v": values}))


def test_schema_validate_refuses_a_list_column_with_input_error_not_type_error():
    schema = Schema((Column("c", "categorical", categories=("a", "b")),))
    with pytest.raises(InputError, match="holds list values"):
        schema.validate(pd.DataFrame({"c": [["a"], ["b"]]}))


# ---------------------------------------------------------------------------------------- contract dtypes
def _dtype_schema():
    return Schema((
        Column("cat", "categorical", nullable=True, categories=("x", "y", "z"), dtype="category"),
        Column("n", "integer", nullable=True, lower=0, upper=9, dtype="Int64"),
        Column("flag", "binary", nullable=True, categories=(False, True), dtype="boolean"),
        Column("s", "categorical", categories=("u", "v"), dtype="string"),
        Column("t", "binary", categories=("no", "yes"), dtype="str"),
        Column("k", "categorical", nullable=True, categories=(1, 2, 3), dtype="int64"),
        Column("f", "continuous", lower=0, upper=1),
    ))


def _raw_sample():
    return pd.DataFrame({"cat": ["x", np.nan, "z", "y"], "n": [1.2, np.nan, 3.0, 9.4],
                         "flag": [True, np.nan, False, True],
                         "s": ["u", "v", "u", "v"], "t": ["no", "yes", "yes", "no"], "k": [1, np.nan, 3, 2],
                         "f": [0.1, 0.5, 0.9, 0.2]})


def test_restored_extension_dtypes_pass_the_contract_check():
    from dpsynth.models.checks import check_sample_frame as _check_frame

    out = restore_dtypes(_raw_sample(), _dtype_schema())
    _check_frame(out, _dtype_schema(), 4)
    assert [str(out[c].dtype) for c in out] == ["category", "Int64", "boolean", "string", "str", "Int64", "float64"]


@pytest.mark.parametrize("column, wrong", [
    ("cat", lambda s: s.astype(object)),
    ("cat", lambda s: pd.Series(pd.Categorical(s, categories=["z", "y", "x"]))),
    ("n", lambda s: s.astype("float64")),
    ("flag", lambda s: s.astype(object)),
    ("s", lambda s: s.astype(object)),
    ("t", lambda s: s.astype("string")),
    ("k", lambda s: s.astype("float64")),
])
def test_contract_check_catches_a_wrong_dtype(column, wrong):
    from dpsynth.models.checks import check_sample_frame as _check_frame

    out = restore_dtypes(_raw_sample(), _dtype_schema())
    out[column] = wrong(out[column])
    with pytest.raises(AssertionError, match=column):
        _check_frame(out, _dtype_schema(), 4)


def test_marginals_keep_extension_dtypes_through_the_contract(tmp_path):
    from dpsynth.models import get_model_class
    from dpsynth.models.checks import check_synthesizer

    rng = np.random.default_rng(0)
    n = 300
    data = pd.DataFrame({
        "cat": pd.Categorical(rng.choice(["x", "y", "z", None], n), categories=["x", "y", "z"]),
        "n": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(0, 10, n)), dtype="Int64"),
        "flag": pd.array(np.where(rng.random(n) < 0.2, None, rng.random(n) < 0.5), dtype="boolean"),
        "s": pd.array(rng.choice(["u", "v"], n), dtype="string"),
        "t": pd.Series(rng.choice(["no", "yes"], n), dtype="str"),
        "k": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(1, 4, n)), dtype="Int64"),
        "f": rng.random(n),
    })
    check_synthesizer(get_model_class("marginals"), data, _dtype_schema(), tmp_path, delta=1e-3, n=200)


def test_restore_dtypes_rounds_to_the_step_keeps_special_values_and_the_contract_checks_it():
    """Every model's samples pass restore_dtypes: a stepped column comes out in its multiples (within the bounds),
    a mixed column's special value is kept even off the multiples, and the contract check refuses values off them."""
    from dpsynth.models.checks import check_sample_frame

    schema = Schema((Column("floors", "continuous", lower=1, upper=3.5, step=0.5),
                     Column("gain", "mixed", lower=0.3, upper=10, special_values=(0.3,), step=0.25),
                     Column("price", "integer", lower=75_000, upper=90_000, step=1000)))
    raw = pd.DataFrame({"floors": [0.2, 1.26, 2.74, 9.0], "gain": [0.3, 0.31, 4.13, 9.99],
                        "price": [80_499.0, 80_501.0, 60_000.0, 89_999.4]})
    out = restore_dtypes(raw, schema)
    assert out["floors"].tolist() == [1.0, 1.5, 2.5, 3.5]
    assert out["gain"].tolist() == [0.3, 0.5, 4.25, 10.0]  # 0.31 -> the first multiple inside [0.3, 10]: 0.5
    assert out["price"].tolist() == [80_000, 81_000, 75_000, 90_000] and str(out["price"].dtype) == "int64"
    check_sample_frame(out, schema, 4)
    with pytest.raises(AssertionError, match="floors: values off the multiples of step 0.5"):
        check_sample_frame(out.assign(floors=[1.0, 1.2, 2.5, 3.5]), schema, 4)
