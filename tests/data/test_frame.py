from __future__ import annotations

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
        out = conform(df, _schema())
    assert out["i"].tolist() == [0.0, 3.0, 10.0]
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
