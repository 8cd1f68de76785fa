from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpsynth.data.inference import infer_schema
from dpsynth.errors import InputError


def test_id_like_column_is_excluded_with_a_warning():
    df = pd.DataFrame({"id": [f"user{i}" for i in range(200)], "x": np.arange(200) % 7})
    with pytest.warns(UserWarning, match="identifier"):
        schema = infer_schema(df)
    assert schema.excluded == ("id",) and schema.names == ["x"]


def test_dates_stored_as_text_are_excluded_with_the_way_to_keep_them():
    """A CSV's timestamps are text to pandas and nearly all distinct: excluded like an identifier, but the warning
    says to convert them to numbers (a schema has no date kind, so "declare it in a schema" would not help); codes
    with dashes that are not dates stay identifiers. No value is quoted."""
    n = 300
    df = pd.DataFrame({"when": pd.date_range("2010-01-01", periods=n, freq="h").astype(str),
                       "day": pd.date_range("2010-01-01", periods=n, freq="D").strftime("%m/%d/%Y"),
                       "code": [f"A-{i:05d}-Z" for i in range(n)], "x": np.arange(n) % 7})
    with pytest.warns(UserWarning) as record:
        schema = infer_schema(df)
    said = {str(w.message).split("'")[1]: str(w.message) for w in record}
    for name in ("when", "day"):
        assert "dates or times stored as text" in said[name] and "convert it to a number" in said[name]
        assert "2010" not in said[name]
    assert "looks like an identifier" in said["code"] and "declare it in a schema" in said["code"]
    assert schema.excluded == ("when", "day", "code") and schema.names == ["x"]


def test_all_nan_column_is_excluded_with_a_warning():
    df = pd.DataFrame({"a": [np.nan, np.nan], "b": [1, 2]})
    with pytest.warns(UserWarning, match="Column 'a' has no values"):
        schema = infer_schema(df)
    assert schema.excluded == ("a",) and schema.names == ["b"]
    with pytest.raises(InputError, match="Target column 'a' is all missing"):
        infer_schema(df, target="a", warn=False)


def test_inf_values_are_an_error():
    with pytest.raises(InputError, match="infinite"):
        infer_schema(pd.DataFrame({"a": [1.0, np.inf, 3.0]}))


def test_constant_column_is_a_zero_width_integer():
    schema = infer_schema(pd.DataFrame({"const": [5] * 20, "x": np.arange(20) % 3}))
    assert schema["const"].kind == "integer" and schema["const"].lower == schema["const"].upper == 5


@pytest.mark.parametrize("values, message", [
    # True == 1 in Python: before the fix both became one category and half the rows changed value silently
    (pd.Series([True, 1, False, 0] * 5, dtype=object), r"mixes value types \(bool, int\)"),
    (pd.Series([1, "a", 2.5, "b"] * 5, dtype=object), r"mixes value types \(float, int, str\)"),
    (pd.Series([1 + 1j, 2 + 0j] * 10), "complex numbers"),  # was cast to real with only a ComplexWarning
    (pd.Series([[1], [2]] * 10), "holds list values"),  # was a TypeError (unhashable list)
    # a few distinct dates used to be called "an identifier" or fail confusingly
    (pd.Series(pd.to_datetime(["2020-01-01", "2021-06-30"] * 10)), "days since an epoch"),
])
def test_columns_no_model_can_represent_are_refused(values, message):
    with pytest.raises(InputError, match=message):
        infer_schema(pd.DataFrame({"ok": np.arange(len(values)) % 3, "v": values}))


def test_object_column_of_numbers_only_is_accepted():
    schema = infer_schema(pd.DataFrame({"v": pd.Series([1, 2.5, 3] * 5, dtype=object)}))
    assert set(schema["v"].categories) == {1, 2.5, 3}


def test_float_column_with_nans_and_whole_values_is_integer_nullable():
    schema = infer_schema(pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.0] * 5}))
    assert schema["a"].kind == "integer" and schema["a"].nullable


def test_long_tail_detection():
    rng = np.random.default_rng(0)
    values = np.exp(rng.normal(3, 2.5, size=5000))
    assert infer_schema(pd.DataFrame({"v": values}))["v"].kind == "long_tail"


def test_empty_frame_is_an_error():
    with pytest.raises(InputError, match="no rows"):
        infer_schema(pd.DataFrame({"a": []}))
    with pytest.raises(InputError, match="no columns"):
        infer_schema(pd.DataFrame())


def test_bounds_stretched_by_outliers_get_a_warning_and_are_kept():
    """Cardio's ap_lo: 60-100 for nearly every row, a few recording errors out to 11,000 and -70. Cut into 64 equal
    bins of 173, the bulk would share one bin: the owner is told, with the range that holds 90% of the values; the
    proposed bounds stay the data's extremes (the owner decides). A column that fills its range, a small integer
    range (one bin per value) say nothing."""
    rng = np.random.default_rng(0)
    bulk = rng.integers(60, 101, 5000).astype(float)
    frame = pd.DataFrame({"ap_lo": np.r_[bulk, [11000.0, -70.0, 1000.0, 800.0]],
                          "age": rng.normal(50, 10, 5004).round(1),  # fills its range
                          "height": rng.integers(140, 200, 5004),  # unit bins
                          "label": rng.integers(0, 2, 5004)})
    expected = (r"Column 'ap_lo': 90% of its values lie in \[6\d, (9\d|100)\], within 2 of the 64 equal bins "
                r".* bounds \[-70, 11000\]")
    with pytest.warns(UserWarning, match=expected) as record:
        schema = infer_schema(frame)
    assert [str(w.message).split("'")[1] for w in record] == ["ap_lo"]
    assert (schema["ap_lo"].lower, schema["ap_lo"].upper) == (-70.0, 11000.0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        infer_schema(frame[["age", "height", "label"]])
        infer_schema(frame, warn=False)


def test_decimal_columns_get_the_step_their_values_are_multiples_of():
    """floors in halves, bathrooms in quarters, coordinates in 4 decimals (sums made in floating point count as
    their decimals), and no step for quotients, whole numbers or more than 6 decimals."""
    from dpsynth.data.inference import decimal_step

    frame = pd.DataFrame({
        "floors": [1.0, 1.5, 2.0, 3.5, 2.5] * 4,
        "bathrooms": [0.75, 1.0, 2.25, 4.5, 1.75] * 4,
        "latitude": [47.5112, 47.721, 47.3097, 47.6, 47.4141] * 4,
        "sum": [0.1 + 0.2, 0.7, 1.1, 2.3, 0.4] * 4,
        "ratio": [1 / 3, 2 / 7, 0.5, 0.25, 1 / 9] * 4,
        "count": [1.0, 2.0, 3.0, 7.0, 9.0] * 4,
        "fine": [1e-7, 3e-7, 0.5, 1.0, 2.0] * 4,
    })
    schema = infer_schema(frame, warn=False)
    assert [schema[c].step for c in frame.columns] == [0.5, 0.25, 0.0001, 0.1, None, None, None]
    assert schema["count"].kind == "integer" and schema["count"].grid_step == 1.0
    assert decimal_step(np.array([0.0, 0.0])) is None
