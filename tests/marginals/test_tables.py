"""Fitting from a file or a Spark DataFrame (dpsynth.marginals.tables): the engine counts exactly what pandas counts,
so the same seed gives the same model (metadata, selection, rows) as a pandas fit of the same rows; the schema check
refuses what Schema.validate refuses, in messages without private values or counts; what cannot be fitted from a
file says so in one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpsynth.data.schema import Column, Schema
from dpsynth.errors import InputError, SchemaError
from dpsynth.models.mst import MST

pytest.importorskip("duckdb")


def _tricky(n: int = 3000, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """Booleans, float codes of integer categories, missing numbers, values beyond the bounds (clipped), a special
    value, integers, an "other" category, unknown values read as missing, text with a quote."""
    rng = np.random.default_rng(seed)
    x = rng.normal(50, 25, n)
    x[rng.random(n) < 0.1] = np.nan
    word = rng.choice(["a", "b's", "c", "rare1", "rare2"], n, p=[0.4, 0.3, 0.2, 0.05, 0.05]).astype(object)
    word[rng.random(n) < 0.05] = None
    frame = pd.DataFrame({
        "flag": rng.random(n) < 0.3,
        "code": rng.choice([1.0, 2.0, 3.0], n),
        "x": x,
        "gain": np.where(rng.random(n) < 0.7, 0.0, np.round(rng.exponential(1000, n), 2)),
        "age": rng.integers(17, 91, n),
        "word": word,
        "town": rng.choice(["p", "q", "zz"], n),
    })
    schema = Schema((
        Column("flag", "binary", categories=(False, True)),
        Column("code", "categorical", categories=(1, 2, 3)),
        Column("x", "continuous", nullable=True, lower=0.0, upper=100.0),
        Column("gain", "mixed", lower=0.0, upper=5000.0, special_values=(0.0,)),
        Column("age", "integer", lower=17, upper=90),
        Column("word", "categorical", nullable=True, categories=("a", "b's", "c", "__other__"), other="__other__"),
        Column("town", "categorical", nullable=True, categories=("p", "q"), unknown_as_missing=True),
    ), provenance="public")
    return frame, schema


def _assert_same_fit(a, b) -> None:
    assert a.metadata_.n_rows == pytest.approx(b.metadata_.n_rows)
    for name, hist in a.metadata_.histograms.items():
        np.testing.assert_allclose(hist.counts, b.metadata_.histograms[name].counts)
    assert a.selected_ == b.selected_
    for x, y in zip(a.model_.marginals, b.model_.marginals):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9)
    pd.testing.assert_frame_equal(a.sample(800, seed=1), b.sample(800, seed=1))


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".csv.gz"])
def test_a_file_fit_is_the_pandas_fit(tmp_path, suffix):
    frame, schema = _tricky()
    path = tmp_path / f"t{suffix}"
    if suffix == ".parquet":
        frame.to_parquet(path)
    else:
        frame.to_csv(path, index=False)  # missing values as empty fields; the engine reads the text back
    reference = MST(iterations=40).fit(frame, epsilon=1.0, delta=1e-5, schema=schema, seed=4)
    from_file = MST(iterations=40, backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5, schema=schema, seed=4)
    _assert_same_fit(reference, from_file)
    assert from_file.ledger_.epsilon() == pytest.approx(reference.ledger_.epsilon())


def test_csv_missing_tokens_are_read_as_pandas_reads_them(tmp_path):
    """NA, null, NaN, empty fields: missing, as pandas.read_csv reads them; blank lines skipped."""
    text = "x,word\n1.5,a\nNA,null\n\n,NaN\n2.5,\"b's\"\n"
    path = tmp_path / "t.csv"
    path.write_text(text)
    schema = Schema((Column("x", "continuous", nullable=True, lower=0.0, upper=10.0),
                     Column("word", "categorical", nullable=True, categories=("a", "b's"))), provenance="public")
    from dpsynth.data.discovery import categorical_cells, numeric_cells, public_grid
    from dpsynth.marginals.tables import DuckDBTable, count_metadata_cells

    n, cells = count_metadata_cells(DuckDBTable(str(path)), schema)
    frame = pd.read_csv(path)
    assert n == len(frame) == 4
    x = schema.columns[0]
    np.testing.assert_array_equal(cells["x"], numeric_cells(frame["x"], x, public_grid(x)))
    np.testing.assert_array_equal(cells["word"], categorical_cells(frame["word"], schema.columns[1]))


@pytest.mark.parametrize("change, error, rule", [
    (lambda f: f.assign(code=f["code"].where(f.index != 7, 9.0)), SchemaError, "outside the declared categories"),
    (lambda f: f.assign(age=f["age"].astype(str).where(f.index != 7, "ancient")), SchemaError, "non-numeric"),
    (lambda f: f.assign(gain=f["gain"].where(f.index != 7, np.inf)), SchemaError, "infinite"),
    (lambda f: f.assign(age=f["age"].where(f.index != 7, np.nan)), SchemaError, "not nullable"),
    (lambda f: f.drop(columns="town"), SchemaError, "lacks columns"),
    (lambda f: f.assign(extra=1), SchemaError, "does not declare"),
    (lambda f: f.assign(age=pd.Timestamp("2020-01-01")), InputError, "type"),
])
def test_the_schema_check_refuses_what_validate_refuses_without_private_values(tmp_path, change, error, rule):
    frame, schema = _tricky(500)
    path = tmp_path / "bad.parquet"
    change(frame).to_parquet(path)
    with pytest.raises(error, match=rule) as caught:
        MST(backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5, schema=schema, seed=0)
    message = str(caught.value)
    assert "\n" not in message and "500" not in message and "9.0" not in message and "ancient" not in message


def test_what_cannot_be_fitted_from_a_file_says_so(tmp_path, adult_schema):
    from dpsynth.models.dp_tldm import DPTLDM

    frame, schema = _tricky(300)
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    with pytest.raises(InputError, match="backend='duckdb' or 'spark'"):
        MST().fit(str(path), epsilon=1.0, delta=1e-5, schema=schema)
    with pytest.raises(InputError, match="needs a public schema"):
        MST(backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5)
    with pytest.raises(InputError, match="fits a pandas DataFrame"):
        DPTLDM().fit(str(path), epsilon=1.0, delta=1e-5, schema=schema)
    with pytest.raises(InputError, match="No such file"):
        MST(backend="duckdb").fit(str(tmp_path / "none.parquet"), epsilon=1.0, delta=1e-5, schema=schema)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n1,2\n3\n")
    with pytest.raises(InputError, match="line 3 has 1 fields"):
        MST(backend="duckdb").fit(str(ragged), epsilon=1.0, delta=1e-5, schema=schema)


def _malformed_csv(tmp_path, schema, frame):
    """The frame as CSV with one field with text after its closing quote (holding a 'private' word) deep in the file."""
    path = tmp_path / "malformed.csv"
    frame.to_csv(path, index=False)
    lines = path.read_text().splitlines()
    fields = lines[200].split(",")
    fields[0] = '"secretvalue"x'  # Python's csv reads it (secretvaluex); DuckDB refuses it
    lines[200] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_engine_failure_mid_file_is_one_line_without_the_row(tmp_path):
    """DuckDB's CSV errors quote the offending line ("Original Line: ..."): the message keeps the engine's first
    line only, without quoted values, and the engine's exception is not chained (DESIGN.md §1 rule 8)."""
    frame, schema = _tricky(500)
    path = _malformed_csv(tmp_path, schema, frame)
    with pytest.raises(InputError, match="DuckDB could not read .*malformed.csv") as caught:
        MST(backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5, schema=schema, seed=0)
    message = str(caught.value)
    assert "\n" not in message and "secretvalue" not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_engine_errors_cut_quoted_values():
    from dpsynth.marginals.tables import engine_errors

    with pytest.raises(InputError) as caught:
        with engine_errors("DuckDB", "t.csv"):
            raise ValueError("Conversion Error: Could not convert string 'alice smith' to INT32\nLINE 1: \"bob\"")
    assert "alice" not in str(caught.value) and "bob" not in str(caught.value)
    assert "Could not convert string '…' to INT32" in str(caught.value)
    with pytest.raises(SchemaError):  # dpsynth's own errors pass unchanged
        with engine_errors("DuckDB"):
            raise SchemaError("kept")


def test_cli_fits_a_file_without_loading_it(tmp_path, monkeypatch):
    """`dpsynth fit FILE --backend duckdb --schema S` hands the path to the engine: pandas never reads the rows."""
    import dpsynth.datasets
    from dpsynth.cli.main import main
    from dpsynth.models import load_model

    frame, schema = _tricky(1500)
    data, schema_file, out = tmp_path / "t.parquet", tmp_path / "s.json", tmp_path / "m.dpsynth"
    frame.to_parquet(data)
    schema.save(schema_file)

    def refuse(*args, **kwargs):
        raise AssertionError("the CLI loaded the private table into pandas")

    monkeypatch.setattr(dpsynth.datasets, "load_table", refuse)
    assert main(["fit", str(data), "--model", "mst", "--backend", "duckdb", "--schema", str(schema_file),
                 "--epsilon", "1", "--out", str(out), "--quiet", "--seed", "2"]) == 0
    model = load_model(out)
    reference = MST().fit(frame, epsilon=1.0, delta=1e-5, schema=schema, seed=2)
    assert model.selected_ == reference.selected_


def test_spark_fits_a_path_and_a_spark_frame_as_pandas_does(spark, tmp_path):
    frame, schema = _tricky(2000, seed=3)
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    csv = tmp_path / "t.csv"
    frame.to_csv(csv, index=False)
    reference = MST(iterations=40).fit(frame, epsilon=1.0, delta=1e-5, schema=schema, seed=6)
    malformed = _malformed_csv(tmp_path, schema, frame)
    with pytest.raises(InputError) as caught:  # Spark reads the field (the value is then unknown), DuckDB refuses it
        MST(iterations=40, backend="spark").fit(str(malformed), epsilon=1.0, delta=1e-5, schema=schema, seed=6)
    assert "\n" not in str(caught.value) and "secretvalue" not in str(caught.value)
    for source in (str(path), str(csv), spark.read.parquet(str(path))):
        fit = MST(iterations=40, backend="spark").fit(source, epsilon=1.0, delta=1e-5, schema=schema, seed=6)
        _assert_same_fit(reference, fit)
