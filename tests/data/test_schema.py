from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpsynth.data.inference import infer_schema
from dpsynth.data.schema import Column, Schema
from dpsynth.errors import SchemaError


def test_adult_inferred_kinds(adult):
    train, _ = adult
    schema = infer_schema(train, target="income")
    assert schema["age"].kind == "integer"
    assert schema["capital-gain"].kind == "mixed" and schema["capital-gain"].special_values == (0.0,)
    assert schema["capital-loss"].kind == "mixed"
    assert schema["education"].kind == "categorical" and len(schema["education"].categories) == 16
    assert schema["income"].kind == "binary" and schema.target == "income"
    assert schema["workclass"].nullable and not schema["age"].nullable
    assert schema.provenance == "inferred"


def test_bundled_adult_schema_is_public_and_fits_both_splits(adult, adult_schema):
    train, test = adult
    assert adult_schema.provenance == "public"
    adult_schema.validate(train)
    adult_schema.validate(test)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_schema_file_round_trip(adult_schema, tmp_path, suffix):
    path = tmp_path / f"schema{suffix}"
    adult_schema.save(path)
    assert Schema.load(path) == adult_schema
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left


def test_zero_bounds_survive_round_trip():
    col = Column("x", "continuous", lower=0.0, upper=0.0)
    assert Column.from_dict(json.loads(json.dumps(col.to_dict()))) == col


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(name="x", kind="weird"), "kind must be one of"),
        (dict(name="x", kind="categorical"), "non-empty list of categories"),
        (dict(name="x", kind="binary", categories=("a", "b", "c")), "binary but has 3"),
        (dict(name="x", kind="integer", lower=0), "finite 'upper'"),
        (dict(name="x", kind="integer", lower=5, upper=1), "lower 5.0 > upper 1.0"),
        (dict(name="x", kind="continuous", lower=0, upper=1, special_values=(0,)), "only mixed"),
        (dict(name="x", kind="mixed", lower=0, upper=1), "no special_values"),
        (dict(name="x", kind="categorical", categories=("a", "a")), "duplicates"),
        (dict(name="x", kind="long_tail", lower=-1, upper=5), "lower >= 0"),
    ],
)
def test_invalid_columns_are_refused(kwargs, message):
    with pytest.raises(SchemaError, match=message):
        Column(**kwargs)


def test_unknown_schema_keys_are_refused():
    with pytest.raises(SchemaError, match="unknown keys"):
        Schema.from_dict({"columns": [{"name": "x", "kind": "integer", "lower": 0, "upper": 1, "bound": 3}]})


def test_bad_schema_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_text("{not json")
    with pytest.raises(SchemaError, match="not valid JSON"):
        Schema.load(path)
    with pytest.raises(SchemaError, match="Cannot read"):
        Schema.load(tmp_path / "missing.json")


def _schema():
    return Schema((Column("a", "integer", lower=0, upper=10), Column("b", "categorical", categories=("x", "y"))))


def test_validate_reports_mismatches():
    schema = _schema()
    with pytest.raises(SchemaError, match="lacks columns"):
        schema.validate(pd.DataFrame({"a": [1]}))
    with pytest.raises(SchemaError, match="does not declare"):
        schema.validate(pd.DataFrame({"a": [1], "b": ["x"], "c": [0]}))
    with pytest.raises(SchemaError, match="outside the declared categories: 'z'"):
        schema.validate(pd.DataFrame({"a": [1], "b": ["z"]}))
    with pytest.raises(SchemaError, match="not nullable"):
        schema.validate(pd.DataFrame({"a": [1.0, np.nan], "b": ["x", "y"]}))
    with pytest.raises(SchemaError, match="infinite"):
        schema.validate(pd.DataFrame({"a": [np.inf], "b": ["x"]}))
    with pytest.raises(SchemaError, match="non-numeric"):
        schema.validate(pd.DataFrame({"a": ["seven"], "b": ["x"]}))
    schema.validate(pd.DataFrame({"a": [1, 99], "b": ["x", "y"]}))  # out of bounds: clipped later, not refused
