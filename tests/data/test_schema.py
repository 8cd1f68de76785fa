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


def test_reviewed_marks_a_copy_public_and_the_inferred_file_says_to_review_it(tmp_path):
    inferred = infer_schema(pd.DataFrame({"a": [1, 2, 3] * 4, "b": ["x", "y", "x"] * 4}))
    assert inferred.provenance == "inferred"
    reviewed = inferred.reviewed()
    assert reviewed.provenance == "public" and inferred.provenance == "inferred"
    assert reviewed.columns == inferred.columns and reviewed.excluded == inferred.excluded
    path = tmp_path / "s.json"
    inferred.save(path)
    data = json.loads(path.read_text())
    assert list(data)[:2] == ["note", "provenance"] and '"provenance": "public"' in data["note"]
    assert Schema.load(path) == inferred  # the note is accepted on load
    data["provenance"] = "public"  # what the user does after reviewing (keeping the note is harmless)
    path.write_text(json.dumps(data))
    assert Schema.load(path) == reviewed
    assert "note" not in reviewed.to_dict()


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
        (dict(name="x", kind="weird"), "field 'kind' must be one of"),
        (dict(name="x", kind="categorical"), "field 'categories' must be a non-empty list"),
        (dict(name="x", kind="binary", categories=("a", "b", "c")), "exactly 2 entries"),
        (dict(name="x", kind="integer", lower=0), "field 'upper' must be a finite number"),
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


def _col(**fields):
    return {"columns": [{"name": "c", **fields}]}


# (schema mapping as parsed from JSON/YAML, substrings the one-line message must hold: column, field, rule, value)
MALFORMED = [
    ({"columns": 5}, ["'columns'", "non-empty list", "Found 5 (int)"]),
    ({"columns": []}, ["'columns'", "non-empty list", "Found [] (list)"]),
    ([1, 2], ["must be a mapping", "Found [1, 2] (list)"]),
    (None, ["must be a mapping", "Found None (NoneType)"]),
    ({"columns": ["age"]}, ["mapping with 'name' and 'kind'", "Found 'age' (str)"]),
    (_col(kind="integer", lower="x", upper=1), ["Column 'c'", "'lower'", "finite number", "Found 'x' (str)"]),
    (_col(kind="integer", lower=True, upper=5), ["Column 'c'", "'lower'", "finite number", "Found True (bool)"]),
    (_col(kind="continuous", lower=0, upper=float("inf")), ["'upper'", "finite number", "Found inf (float)"]),
    (_col(kind="categorical", categories=[[1], [2]]), ["Column 'c'", "'categories'", "strings, numbers or booleans",
                                                      "Found [1] (list)"]),
    (_col(kind="categorical", categories="abc"), ["Column 'c'", "'categories'", "must be a list", "Found 'abc' (str)"]),
    (_col(kind="categorical", categories={"a": 1}), ["'categories'", "must be a list", "(dict)"]),
    (_col(kind="categorical", categories=["a", None]), ["'categories'", "strings, numbers or booleans", "None"]),
    (_col(kind="categorical", categories=["a", float("nan")]), ["'categories'", "NaN", "nullable"]),
    (_col(kind="categorical", categories=[True, 1]), ["'categories'", "duplicates", "[True, 1]"]),
    (_col(kind="categorical", categories=["a", "b"], other="z"), ["'other'", "one of the column's categories",
                                                                  "Found 'z' (str)"]),
    (_col(kind="categorical", categories=["a"], lower=0), ["'lower'", "numeric columns only", "Found 0 (int)"]),
    (_col(kind="integer", lower=0, upper=1, categories=["a"]), ["'categories'", "categorical or binary columns only"]),
    (_col(kind="mixed", lower=0, upper=9, special_values=5), ["Column 'c'", "'special_values'", "list of numbers",
                                                              "Found 5 (int)"]),
    (_col(kind="mixed", lower=0, upper=9, special_values=["0"]), ["'special_values'", "Found '0' (str)"]),
    (_col(kind="mixed", lower=0, upper=9, special_values=[10]), ["'special_values'", "[lower, upper] = [0, 9]",
                                                                 "Found 10 (int)"]),
    (_col(kind="integer", lower=0, upper=1, nullable="no"), ["Column 'c'", "'nullable'", "true or false",
                                                             "Found 'no' (str)"]),
    (_col(kind="mixed", lower=0, upper=9, special_values=[0], integer_valued=1), ["'integer_valued'", "Found 1 (int)"]),
    (_col(kind="integer", lower=0, upper=1, dtype=5), ["'dtype'", "must be one of", "Found 5 (int)"]),
    (_col(kind=3), ["'kind'", "must be one of", "Found 3 (int)"]),
    ({"columns": [{"name": 7, "kind": "integer"}]}, ["name must be a non-empty string", "Found 7 (int)"]),
    ({**_col(kind="integer", lower=0, upper=1), "provenance": "maybe"}, ["'provenance'", "public, inferred, dp",
                                                                         "Found 'maybe' (str)"]),
    ({**_col(kind="integer", lower=0, upper=1), "target": 5}, ["'target'", "Found 5 (int)"]),
    ({**_col(kind="integer", lower=0, upper=1), "excluded": "id"}, ["'excluded'", "list of column names",
                                                                    "Found 'id' (str)"]),
    ({**_col(kind="integer", lower=0, upper=1), "note": 5}, ["'note'", "Found 5 (int)"]),
    (_col(kind="continuous", lower=0, upper=1, step=0), ["Column 'c'", "'step'", "finite number > 0", "Found 0 (int)"]),
    (_col(kind="continuous", lower=0, upper=1, step="x"), ["'step'", "finite number > 0", "Found 'x' (str)"]),
    (_col(kind="continuous", lower=0, upper=1, step=True), ["'step'", "finite number > 0", "Found True (bool)"]),
    (_col(kind="integer", lower=0, upper=10, step=0.5), ["'step'", "whole number", "Found 0.5 (float)"]),
    (_col(kind="continuous", lower=0.1, upper=0.4, step=0.5), ["'step'", "a multiple in [lower, upper]",
                                                               "Found 0.5 (float)"]),
    (_col(kind="categorical", categories=["a"], step=1), ["'step'", "numeric columns only", "Found 1 (int)"]),
]


@pytest.mark.parametrize("data, expected", MALFORMED, ids=[str(i) for i in range(len(MALFORMED))])
def test_malformed_schema_is_one_schema_error_line(data, expected):
    with pytest.raises(SchemaError) as info:
        Schema.from_dict(data)
    message = str(info.value)
    assert "\n" not in message
    for part in expected:
        assert part in message, message


def test_malformed_yaml_file_is_one_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("columns: 5\n")
    with pytest.raises(SchemaError, match="Found 5 \\(int\\)"):
        Schema.load(path)
    path.write_text("columns:\n  - name: a\n    kind: [unclosed\n")  # a YAML parse error spans several lines
    with pytest.raises(SchemaError, match="not valid YAML") as info:
        Schema.load(path)
    assert "\n" not in str(info.value)


def test_valid_values_are_normalised_not_coerced():
    col = Column.from_dict({"name": "m", "kind": "mixed", "lower": 0, "upper": 9, "special_values": [0],
                            "categories": None, "nullable": True})
    assert col.lower == 0.0 and isinstance(col.lower, float) and col.special_values == (0.0,) and col.nullable is True
    assert Column("b", "binary", categories=["no", "yes"], nullable=np.bool_(True)).categories == ("no", "yes")


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
        schema.validate(pd.DataFrame({"a": [1], "b": ["z"]}), exact=True)
    with pytest.raises(SchemaError, match=r"outside the declared categories \(not shown: private\)") as info:
        schema.validate(pd.DataFrame({"a": [1], "b": ["z"]}))
    assert "'z'" not in str(info.value)
    with pytest.raises(SchemaError, match="not nullable"):
        schema.validate(pd.DataFrame({"a": [1.0, np.nan], "b": ["x", "y"]}))
    with pytest.raises(SchemaError, match="infinite"):
        schema.validate(pd.DataFrame({"a": [np.inf], "b": ["x"]}))
    with pytest.raises(SchemaError, match="non-numeric"):
        schema.validate(pd.DataFrame({"a": ["seven"], "b": ["x"]}))
    schema.validate(pd.DataFrame({"a": [1, 99], "b": ["x", "y"]}))  # out of bounds: clipped later, not refused


def test_step_snaps_values_to_its_multiples_inside_the_bounds_and_survives_a_file():
    """A numeric column's ``step``: values are whole multiples of it; snap() rounds to the nearest multiple inside
    the bounds (the first and last multiples, not the bounds themselves), keeps NaN, and gives tidy decimals."""
    floors = Column("floors", "continuous", lower=0.9, upper=3.6, step=0.5)
    assert floors.lattice() == (1.0, 3.5) and floors.grid_step == 0.5
    got = floors.snap(np.array([0.9, 1.24, 1.26, 1.74, 2.9, 3.6, np.nan]))
    np.testing.assert_array_equal(got[:-1], [1.0, 1.0, 1.5, 1.5, 3.0, 3.5])
    assert np.isnan(got[-1])
    tenths = Column("x", "continuous", lower=0, upper=1, step=0.1)
    assert tenths.snap(np.array([0.29999, 0.7]))[0] == 0.3  # not 0.30000000000000004
    assert [str(v) for v in tenths.snap(np.array([0.3, 0.7]))] == ["0.3", "0.7"]
    thousands = Column("price", "integer", lower=75_000, upper=7_700_000, step=1000)
    np.testing.assert_array_equal(thousands.snap(np.array([74_000.0, 221_900.0, 221_400.0])),
                                  [75_000, 222_000, 221_000])
    assert Column("n", "integer", lower=0, upper=9).grid_step == 1.0
    assert Column("y", "continuous", lower=0, upper=9).snap(np.array([1.234]))[0] == 1.234  # no step: untouched
    assert Column.from_dict(json.loads(json.dumps(floors.to_dict()))) == floors
    assert "step" not in Column("y", "continuous", lower=0, upper=9).to_dict()
