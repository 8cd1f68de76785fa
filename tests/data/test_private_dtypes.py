"""Private dtypes (issue 14 item 1): without a schema, nothing the released schema says comes from a dtype pandas
inferred from the private values. For D and D plus one row holding a missing value, a non-numeric token or an
out-of-range number, fits seeded identically release the same schema and the same output dtypes."""

from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpsynth._io import read_table
from dpsynth.data.text import as_text, infer_text_dtypes, parse_numbers
from dpsynth.models import get_model_class

N = 3000


def _base() -> pd.DataFrame:
    """Several kinds: small integers, a wide integer range, a continuous column, a mixed column (70% zeros), text
    with three values, a two-valued flag stored as booleans."""
    rng = np.random.default_rng(7)
    return pd.DataFrame({
        "age": rng.integers(18, 90, N),
        "income": rng.integers(1_000, 200_000, N),
        "score": rng.normal(50.0, 10.0, N).round(3),
        "gain": np.where(rng.random(N) < 0.7, 0, rng.integers(100, 5_000, N)),
        "city": rng.choice(["Lyon", "Paris", "Nice"], N),
        "flag": rng.random(N) < 0.4,
    })


EXTRA = {  # what the one extra row holds in the perturbed column
    "missing": lambda col: None,
    "token": lambda col: "?",
    "out of range": lambda col: 1e12,
}


def _as_csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """What ``dpsynth fit data.csv`` sees: the CSV read as text."""
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    buffer.seek(0)
    return pd.read_csv(buffer, dtype="str")


def _with_extra_row(frame: pd.DataFrame, column: str, kind: str) -> pd.DataFrame:
    row = frame.iloc[[0]].astype(object).copy()
    row[column] = EXTRA[kind](column)
    return pd.concat([frame.astype(object), row], ignore_index=True)


def _released(frame: pd.DataFrame, seed: int, dtypes: str = "private") -> tuple[dict, dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = get_model_class("marginals")().fit(frame, epsilon=1.0, delta=1e-5, seed=seed, dtypes=dtypes)
    sample = model.sample(50, seed=0)
    return model.schema_.to_dict(), {c: str(t) for c, t in sample.dtypes.items()}


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(column=st.sampled_from(list(_base().columns)), kind=st.sampled_from(list(EXTRA)),
       seed=st.integers(0, 2**31 - 1))
def test_one_extra_row_changes_neither_schema_nor_dtypes(column, kind, seed):
    base = _as_csv_frame(_base())
    neighbour = _as_csv_frame(_with_extra_row(_base(), column, kind))
    assert _released(base, seed) == _released(neighbour, seed)


def test_the_same_neighbours_change_pandas_inferred_dtypes():
    """The property above has power: with dtypes taken from pandas' inference (``dtypes="public"`` on a CSV read
    with inference), one missing value or one '?' changes the released schema deterministically."""
    def inferred(frame):
        buffer = io.StringIO()
        frame.to_csv(buffer, index=False)
        buffer.seek(0)
        return pd.read_csv(buffer)

    base = _released(inferred(_base()), 1, dtypes="public")
    for kind in ("missing", "token"):
        assert base != _released(inferred(_with_extra_row(_base(), "age", kind)), 1, dtypes="public")


def test_private_dtypes_are_fixed_per_kind_and_every_column_nullable():
    schema, dtypes = _released(_as_csv_frame(_base()), 3)
    kinds = {c["name"]: c["kind"] for c in schema["columns"]}
    assert kinds["age"] == "integer" and kinds["income"] == "integer" and kinds["score"] == "continuous"
    assert kinds["gain"] == "mixed" and kinds["city"] == "categorical"
    assert all(c.get("nullable") for c in schema["columns"])
    assert dtypes["age"] == "Int64" and dtypes["score"] == "float64" and dtypes["city"] == "str"
    assert dtypes["flag"] == "str"  # a CSV holds text: 'True'/'False' stay text


def test_a_numeric_column_with_many_tokens_warns_from_a_dp_count_and_treats_them_as_missing():
    frame = _base().astype(object)
    frame.loc[:599, "age"] = "?"  # 20% tokens: clears the floor, still a minority
    with pytest.warns(UserWarning, match=r"'age' is numeric but some values \(about \d+, a DP estimate\)"):
        model = get_model_class("marginals")().fit(as_text(frame), epsilon=1.0, delta=1e-5, seed=0,
                                                   dtypes="private")
    assert model.schema_["age"].kind == "integer"
    hist = model.metadata_.histograms["age"]
    assert hist.missing == pytest.approx(600, abs=6 * model.metadata_.sigma)


def test_a_text_column_stays_text_when_numbers_are_the_minority():
    frame = pd.DataFrame({"code": ["A1"] * 2000 + ["7"] * 500, "x": np.arange(2500) % 10})
    model = get_model_class("marginals")().fit(frame, epsilon=1.0, delta=1e-5, seed=0, dtypes="private")
    assert model.schema_["code"].kind in ("categorical", "binary") and "A1" in model.schema_["code"].categories


def test_parse_numbers_classifies_each_cell_once():
    numbers, is_text, is_missing = parse_numbers(pd.Series([" 3 ", "-2.5e3", ".5", "1e999", "inf", "?", None, "007"],
                                                           dtype="str"))
    np.testing.assert_allclose(numbers[[0, 1, 2, 7]], [3.0, -2500.0, 0.5, 7.0])
    assert is_text.tolist() == [False, False, False, True, True, True, False, False]
    assert is_missing.tolist() == [False] * 6 + [True, False]


def test_as_text_round_trips_numbers_and_keeps_missing():
    frame = pd.DataFrame({"f": [0.1, np.nan, 1e20], "i": pd.array([1, None, 3], dtype="Int64"),
                          "b": [True, False, True]})
    text = as_text(frame)
    assert text["f"].tolist()[0] == "0.1" and pd.isna(text["f"][1]) and pd.isna(text["i"][1])
    assert float(text["f"][2]) == 1e20 and text["b"].tolist() == ["True", "False", "True"]
    back = infer_text_dtypes(text)  # non-private mode only
    assert str(back["i"].dtype) == "Int64" and back["f"].dtype == float and back["b"].dtype == text["b"].dtype


def test_nullable_boolean_column_with_a_missing_value_fits():
    """A pandas 'boolean' column can hold NA: DP discovery declares it nullable (it used to declare it not
    nullable, spend the metadata budget, then fail quoting the exact missing count)."""
    frame = pd.DataFrame({"b": pd.array([True, False, None, True] * 500, dtype="boolean"),
                          "x": np.arange(2000) % 7})
    model = get_model_class("marginals")().fit(frame, epsilon=1.0, delta=1e-5, seed=0)
    assert model.schema_["b"].nullable and model.schema_["b"].kind == "binary"
    assert str(model.sample(100, seed=0)["b"].dtype) == "boolean"


def test_cli_fit_of_a_csv_uses_private_dtypes(tmp_path, capsys):
    from dpsynth.cli import main

    base, neighbour = tmp_path / "d.csv", tmp_path / "d1.csv"
    _base().to_csv(base, index=False)
    _with_extra_row(_base(), "age", "missing").to_csv(neighbour, index=False)
    schemas = []
    for path in (base, neighbour):
        out = tmp_path / f"{path.stem}.dpsynth"
        assert main(["fit", str(path), "--epsilon", "1", "--seed", "5", "--out", str(out), "--quiet"]) == 0
        capsys.readouterr()
        assert main(["info", str(out), "--json"]) == 0
        info = json.loads(capsys.readouterr().out)
        assert info["fit"]["dtypes"] == "private"
        schemas.append(info["schema"])
    assert schemas[0] == schemas[1]


def test_read_table_as_text(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,x\n,y\n?,NA\n")
    frame = read_table(path, as_text=True)
    assert frame["a"].tolist()[0] == "1" and pd.isna(frame["a"][1]) and frame["a"][2] == "?"
    assert pd.isna(frame["b"][2])
