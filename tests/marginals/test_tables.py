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
    from dpsynth.models.gaussian_copula import GaussianCopula

    frame, schema = _tricky(300)
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    with pytest.raises(InputError, match="backend='duckdb' or 'spark'"):
        MST().fit(str(path), epsilon=1.0, delta=1e-5, schema=schema)
    with pytest.raises(InputError, match="dtypes='private' is for a CSV file"):  # a typed table: refused unread
        MST(backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5, dtypes="private")
    with pytest.raises(InputError, match="fits a pandas DataFrame"):  # a model that reads frames only
        GaussianCopula().fit(str(path), epsilon=float("inf"), delta=1e-5, schema=schema)
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


def test_cli_fits_a_file_without_loading_it(tmp_path, pandas_loader_refused):
    """`dpsynth fit FILE --backend duckdb --schema S` hands the path to the engine: pandas never reads the rows."""
    from dpsynth.cli.main import main
    from dpsynth.models import load_model

    frame, schema = _tricky(1500)
    data, schema_file, out = tmp_path / "t.parquet", tmp_path / "s.json", tmp_path / "m.dpsynth"
    frame.to_parquet(data)
    schema.save(schema_file)
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


def _typed(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    """A frame whose dtypes are those an SQL column is released with (every column nullable): pandas and the
    engines then run the same discovery. Booleans, integers with missing values, a mixed column (70% zeros),
    a normal column on both sides of 0, text with a rare value, missing values and a quote, an identifier."""
    rng = np.random.default_rng(seed)
    age = pd.array(rng.integers(17, 91, n), dtype="Int64")
    age[rng.random(n) < 0.05] = pd.NA
    flag = pd.array(rng.random(n) < 0.3, dtype="boolean")
    flag[rng.random(n) < 0.02] = pd.NA
    word = rng.choice(["a", "b's", "c", "rare"], n, p=[0.5, 0.3, 0.19, 0.01]).astype(object)
    word[rng.random(n) < 0.1] = None
    return pd.DataFrame({
        "flag": flag,
        "age": age,
        "gain": np.where(rng.random(n) < 0.7, 0.0, np.round(rng.exponential(1000, n), 2)),
        "z": rng.normal(0, 3, n),
        "word": pd.array(word, dtype="str"),
        "id": pd.array([f"u{i}" for i in range(n)], dtype="str"),
    })


def _assert_same_discovery(a, b) -> None:
    assert a.schema_.columns == b.schema_.columns and a.schema_.excluded == b.schema_.excluded
    assert a.metadata_.n_rows == pytest.approx(b.metadata_.n_rows)
    for name, hist in a.metadata_.histograms.items():
        other = b.metadata_.histograms[name]
        np.testing.assert_allclose(hist.counts, other.counts)
        assert hist.missing == pytest.approx(other.missing)


def test_dp_discovery_runs_in_duckdb_as_in_pandas(tmp_path):
    """Without a schema, a Parquet file is discovered in DuckDB from its column types and SQL counts: the same
    seed gives the pandas fit's schema, histograms, selection and samples (the identifier excluded in both)."""
    frame = _typed()
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    with pytest.warns(UserWarning, match="'id' is excluded"):
        reference = MST(iterations=40).fit(frame, epsilon=1.0, delta=1e-5, seed=3)
    with pytest.warns(UserWarning, match="'id' is excluded"):
        from_file = MST(iterations=40, backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5, seed=3)
    kinds = {c.name: c.kind for c in from_file.schema_.columns}
    assert kinds == {"flag": "binary", "age": "integer", "gain": "mixed", "z": "continuous", "word": "categorical"}
    assert from_file.schema_.provenance == "dp" and from_file.schema_.excluded == ("id",)
    word = from_file.schema_["word"]
    assert "rare" not in word.categories and {"a", "b's", "c"} <= set(word.categories)
    _assert_same_discovery(reference, from_file)
    _assert_same_fit(reference, from_file)
    assert from_file.ledger_.epsilon() == pytest.approx(reference.ledger_.epsilon())
    assert from_file.ledger_.epsilon() <= 1.0 + 1e-9
    assert sum(e.phase == "metadata" for e in from_file.ledger_.entries) == \
        sum(e.phase == "metadata" for e in reference.ledger_.entries)


def test_engine_discovery_excludes_types_no_model_represents(tmp_path):
    """A date column is public structure a model cannot represent: excluded before any query, with a warning."""
    frame = _typed(3000).drop(columns="id")
    frame["day"] = pd.to_datetime("2020-01-01") + pd.to_timedelta(np.arange(3000) % 300, unit="D")
    path = tmp_path / "d.parquet"
    frame.to_parquet(path)
    with pytest.warns(UserWarning, match="'day' is excluded: its type is not a number, text or boolean"):
        fit = MST(iterations=20, backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5, seed=0)
    assert fit.schema_.excluded == ("day",)
    assert not any(e.mechanism.endswith(" day") for e in fit.ledger_.entries)
    assert list(fit.sample(50, seed=0).columns) == [c for c in frame.columns if c != "day"]


def test_engine_discovery_refuses_infinite_values(tmp_path):
    frame = _typed(2000).drop(columns="id")
    frame.loc[5, "z"] = np.inf
    path = tmp_path / "inf.parquet"
    frame.to_parquet(path)
    with pytest.raises(InputError, match="'z' holds infinite values"):
        MST(backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5)


def test_spark_discovers_as_pandas_does(spark, tmp_path):
    frame = _typed(3000, seed=1)
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    with pytest.warns(UserWarning, match="'id' is excluded"):
        reference = MST(iterations=30).fit(frame, epsilon=1.0, delta=1e-5, seed=5)
    for source in (str(path), spark.read.parquet(str(path))):
        with pytest.warns(UserWarning, match="'id' is excluded"):
            fit = MST(iterations=30, backend="spark").fit(source, epsilon=1.0, delta=1e-5, seed=5)
        _assert_same_discovery(reference, fit)
        _assert_same_fit(reference, fit)


def _cli_fit_without_loading(data, out) -> None:
    """`dpsynth fit DATA --model mst --backend duckdb` (seed 2, 20 iterations; callers take the
    ``pandas_loader_refused`` fixture)."""
    from dpsynth.cli.main import main

    assert main(["fit", str(data), "--model", "mst", "--backend", "duckdb", "--epsilon", "1", "--out", str(out),
                 "--seed", "2", "--param", "iterations=20"]) == 0


def test_cli_discovers_a_parquet_file_in_the_engine(tmp_path, pandas_loader_refused, capsys):
    """`dpsynth fit FILE.parquet --backend duckdb` without a schema: DP discovery in DuckDB (the pre-flight plan
    from the file's column types), pandas never reads the rows; the result is the library's fit."""
    from dpsynth.models import load_model

    frame = _typed(3000).drop(columns="id")
    data, out = tmp_path / "t.parquet", tmp_path / "m.dpsynth"
    frame.to_parquet(data)
    _cli_fit_without_loading(data, out)
    assert "DP discovery of 5 column(s)" in capsys.readouterr().err
    model = load_model(out)
    reference = MST(iterations=20).fit(frame, epsilon=1.0, delta=1e-5, seed=2)
    assert model.schema_.columns == reference.schema_.columns and model.selected_ == reference.selected_


#: tokens on which the number rule (dpsynth.data.text) has to agree in pandas and in the engines
_TOKENS = ["1.", ".5", "+3", "-0", "0.0", "1e5", "1E-2", "-.5e1", " 7 ", "\t8", "007", "12345678901", "2.5", "-3",
           "1e999", "inf", "-Infinity", "1.2.3", "0x10", "1_000", "\u0663", "e5", "+", ".", "?", "NA", ""]


def _text_table(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    """A CSV's worth of text: integers with '?' and missing cells, a mixed column (70% zeros), numbers padded with
    spaces, categories (one of them a number), an identifier, and a column of the number rule's hard tokens."""
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, n).astype(object)
    age[rng.random(n) < 0.03] = "?"
    age[rng.random(n) < 0.05] = None
    gain = np.where(rng.random(n) < 0.7, 0.0, np.round(rng.exponential(1000, n), 2)).astype(object)
    word = rng.choice(["a", "b's", "c", "1"], n, p=[0.45, 0.3, 0.15, 0.1]).astype(object)
    word[rng.random(n) < 0.1] = None
    return pd.DataFrame({"age": age, "gain": gain, "z": [f" {v:.3f} " for v in rng.normal(0, 3, n)],
                         "word": word, "id": [f"u{i}" for i in range(n)], "token": rng.choice(_TOKENS, n)})


def test_the_number_rule_counts_the_same_in_sql(tmp_path):
    """The kind-and-bounds cells and the shape cells of text columns, counted by DuckDB from the CSV, equal those
    pandas counts on the same file read as text: each hard token (padding, exponents, '1.', '.5', overflow, inf,
    hex, non-ASCII digits) is a number, text or missing alike."""
    from dpsynth._io import read_table
    from dpsynth.data.discovery import public_grid
    from dpsynth.data.discovery_text import TextFrameColumns
    from dpsynth.marginals.tables import DuckDBTable, SQLTextColumns

    path = tmp_path / "t.csv"
    _text_table(3000).to_csv(path, index=False)
    pandas_side = TextFrameColumns(read_table(str(path), as_text=True))
    sql_side = SQLTextColumns(DuckDBTable(str(path)))
    for name in ("age", "gain", "z", "word", "token"):
        np.testing.assert_array_equal(sql_side.kind_cells(name), pandas_side.kind_cells(name), err_msg=name)
    assert sql_side.kind_cells("token")[-1] > 0  # the text cell is not empty: the test can tell text from numbers
    col = Column("token", "continuous", nullable=True, lower=-10.0, upper=10.0)
    np.testing.assert_array_equal(sql_side.number_cells(col, public_grid(col)),
                                  pandas_side.number_cells(col, public_grid(col)))
    assert sql_side.value_counts("word") == pandas_side.value_counts("word")


@pytest.mark.parametrize("target", [None, "word"])
def test_a_csv_without_schema_is_discovered_in_duckdb_as_in_pandas(tmp_path, target):
    """`fit("t.csv", backend="duckdb")` without a schema: private-dtype discovery in SQL (kinds from DP counts of
    the text classes), then the numeric columns read by the number rule; the same seed gives the fit of the
    pandas path (the file read as text, dtypes="private"): schema, histograms, selection, rows, ledger; with a
    declared target too (its heavier query at the same sigma in both)."""
    from dpsynth._io import read_table

    path = tmp_path / "t.csv"
    _text_table(10000).to_csv(path, index=False)
    with pytest.warns(UserWarning, match="'id' is excluded"):
        reference = MST(iterations=30).fit(read_table(str(path), as_text=True), epsilon=1.0, delta=1e-5, seed=3,
                                           dtypes="private", target=target)
    with pytest.warns(UserWarning, match="'id' is excluded"):
        from_file = MST(iterations=30, backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5, seed=3,
                                                             target=target)
    assert from_file.schema_.target == reference.schema_.target == target
    kinds = {c.name: c.kind for c in from_file.schema_.columns}
    assert kinds["age"] == "integer" and kinds["gain"] == "mixed" and kinds["z"] == "continuous"
    assert kinds["word"] == "categorical" and "1" in from_file.schema_["word"].categories
    assert from_file.fit_info_["dtypes"] == "private"
    _assert_same_discovery(reference, from_file)
    _assert_same_fit(reference, from_file)
    assert [e.mechanism for e in from_file.ledger_.entries] == [e.mechanism for e in reference.ledger_.entries]
    assert from_file.ledger_.epsilon() == pytest.approx(reference.ledger_.epsilon())


def test_spark_discovers_a_csv_as_pandas_does(spark, tmp_path):
    from dpsynth._io import read_table

    path = tmp_path / "t.csv"
    _text_table(3000, seed=1).to_csv(path, index=False)
    with pytest.warns(UserWarning, match="'id' is excluded"):
        reference = MST(iterations=30).fit(read_table(str(path), as_text=True), epsilon=1.0, delta=1e-5, seed=5,
                                           dtypes="private")
    with pytest.warns(UserWarning, match="'id' is excluded"):
        fit = MST(iterations=30, backend="spark").fit(str(path), epsilon=1.0, delta=1e-5, seed=5)
    _assert_same_discovery(reference, fit)
    _assert_same_fit(reference, fit)


def test_cli_discovers_a_csv_in_the_engine(tmp_path, pandas_loader_refused, capsys):
    """`dpsynth fit FILE.csv --backend duckdb` without a schema: the plan and the discovery run in DuckDB (private
    dtypes), pandas never reads the rows; the model is the library's pandas-path fit of the text."""
    from dpsynth._io import read_table
    from dpsynth.models import load_model

    data, out = tmp_path / "t.csv", tmp_path / "m.dpsynth"
    _text_table(3000).drop(columns="id").to_csv(data, index=False)
    reference = MST(iterations=20).fit(read_table(str(data), as_text=True), epsilon=1.0, delta=1e-5, seed=2,
                                       dtypes="private")
    _cli_fit_without_loading(data, out)
    assert "DP discovery of 5 column(s) (16 Gaussian count queries" in capsys.readouterr().err
    model = load_model(out)
    assert model.schema_.columns == reference.schema_.columns and model.selected_ == reference.selected_


def test_a_csv_is_staged_once_in_a_private_directory_removed_at_close(tmp_path, monkeypatch):
    """A CSV is parsed into a temporary Parquet copy at the first query (mode 0700 directory); close() removes it,
    a fit leaves none behind, and a file that fails to parse leaves no partial copy."""
    import os
    import tempfile

    from dpsynth.marginals.tables import DuckDBTable

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    path = tmp_path / "t.csv"
    _text_table(500).to_csv(path, index=False)
    table = DuckDBTable(str(path))
    assert not list(scratch.iterdir())  # opening reads the header only
    assert table.row_count() == 500
    (copy,) = scratch.iterdir()
    assert oct(copy.stat().st_mode & 0o777) == "0o700"
    assert table.row_count() == 500 and list(scratch.iterdir()) == [copy]  # staged once
    table.close()
    assert not list(scratch.iterdir())
    with pytest.warns(UserWarning, match="'id' is excluded: its values are nearly all distinct"):
        MST(iterations=10, backend="duckdb").fit(str(path), epsilon=float("inf"), delta=0.0, seed=0)  # no noise
    assert not list(scratch.iterdir())
    frame, schema = _tricky(500)
    with pytest.raises(InputError, match="DuckDB could not read"):
        MST(backend="duckdb").fit(str(_malformed_csv(tmp_path, schema, frame)), epsilon=1.0, delta=1e-5,
                                  schema=schema, seed=0)
    assert not list(scratch.iterdir()) and os.path.exists(path)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_non_private_engine_fit_discovers_exactly(tmp_path, suffix):
    """epsilon = inf without a schema in DuckDB: the discovery's floors and thresholds without noise keep exactly
    the cells with rows (kinds, zero mass, integrality exact; every category kept; an ID-like column excluded as
    infer_schema excludes it), and delta = 0 is accepted."""
    frame = _text_table(3000)
    path = tmp_path / f"t{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        _typed(3000).to_parquet(path)
    with pytest.warns(UserWarning, match="'id' is excluded: its values are nearly all distinct"):
        fit = MST(iterations=10, backend="duckdb").fit(str(path), epsilon=float("inf"), delta=0.0, seed=0)
    kinds = {c.name: c.kind for c in fit.schema_.columns}
    assert kinds["gain"] == "mixed" and kinds["age"] == "integer"
    word = fit.schema_["word"]
    expected = {"a", "b's", "c", "1"} if suffix == ".csv" else {"a", "b's", "c", "rare"}
    assert set(word.categories) == expected
    assert fit.ledger_.non_private


def _blood_pressure(n: int = 20_000, seed: int = 0) -> pd.DataFrame:
    """A column whose outliers stretch its range (97% of the rows in one of 64 grid bins, under the public bounds
    and under DP bounds [10, 1e5] alike): the metadata zooms."""
    rng = np.random.default_rng(seed)
    ap = np.round(rng.normal(80, 9, n))
    ap[rng.random(n) < 0.03] = 11_000
    return pd.DataFrame({"ap": ap.astype(np.int64), "g": rng.choice(["a", "b"], n)})


@pytest.mark.parametrize("path_kind", ["public schema", "dp discovery", "private dtypes"])
def test_a_zoom_is_counted_by_the_engine_as_by_pandas(tmp_path, path_kind):
    """The zoom query (a finer grid where the DP mass is) counted by DuckDB gives the pandas release: the same
    window, sub-bins and noisy counts, on each of the three metadata paths."""
    from dpsynth._io import read_table
    from dpsynth.models.marginals import Marginals

    frame = _blood_pressure()
    schema = Schema((Column("ap", "integer", lower=0, upper=11_000), Column("g", "categorical", categories=("a", "b"))),
                    provenance="public") if path_kind == "public schema" else None
    path = tmp_path / ("t.csv" if path_kind == "private dtypes" else "t.parquet")
    if path_kind == "private dtypes":
        frame.to_csv(path, index=False)
        reference = Marginals().fit(read_table(path, as_text=True), epsilon=1.0, delta=1e-5, seed=5, dtypes="private")
    else:
        frame.to_parquet(path)
        reference = Marginals().fit(frame, epsilon=1.0, delta=1e-5, schema=schema, seed=5)
    from_file = Marginals(backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5, schema=schema, seed=5)
    zooms = [e for e in reference.ledger_.entries if e.mechanism == "zoom ap"]
    assert len(zooms) == 1 and [e.params for e in from_file.ledger_.entries if e.mechanism == "zoom ap"] == \
        [zooms[0].params]
    ours, theirs = reference.metadata_.histograms["ap"], from_file.metadata_.histograms["ap"]
    assert len(ours.edges) > 65  # the zoom's sub-bins are in the released histogram
    np.testing.assert_allclose(ours.edges, theirs.edges)
    np.testing.assert_allclose(ours.counts, theirs.counts)


#: numbers on which the step classes (dpsynth.data.discovery.step_classes) have to agree in pandas and the engines
_STEP_VALUES = [2.0, 0.0, -3.0, 1.5, -0.5, 2.25, 0.1 + 0.2, 0.7, 0.15, 0.37, 122.005, 0.004, 47.5112, 1e-5, 3e-6,
                3.141592653589793, 1e12 + 0.5, 123456.789, -0.0001, 2.5e-7, 1e300, None]


def _step_frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"v": rng.choice(np.array(_STEP_VALUES, dtype=object), 3000),
                         "u": [round(x, d) for x, d in zip(rng.uniform(-5, 5, 3000), rng.integers(0, 8, 3000))]
                       }).astype(float)


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_the_step_classes_count_the_same_in_sql(tmp_path, engine, request):
    """The step query's cells of float columns (a Parquet file) and of text numbers (a CSV), counted by DuckDB and
    Spark, equal those pandas counts (the frame, and the CSV read as text): decimals computed in floating point,
    negative numbers, huge and tiny values."""
    from dpsynth._io import read_table
    from dpsynth.data.discovery import FrameColumns
    from dpsynth.data.discovery_text import TextFrameColumns
    from dpsynth.marginals.tables import DuckDBTable, SparkTable, SQLColumns, SQLTextColumns

    if engine == "spark":
        request.getfixturevalue("spark")  # skips where pyspark or Java is missing
    table = DuckDBTable if engine == "duckdb" else SparkTable
    frame = _step_frame()
    parquet, csv = tmp_path / "s.parquet", tmp_path / "s.csv"
    frame.to_parquet(parquet)
    frame.to_csv(csv, index=False)
    for name in ("v", "u"):
        expected = FrameColumns(frame).step_cells(name)
        assert (expected > 0).sum() >= 8, name  # the values spread over the classes: the test can tell them apart
        np.testing.assert_array_equal(SQLColumns(table(str(parquet))).step_cells(name), expected, name)
        np.testing.assert_array_equal(SQLTextColumns(table(str(csv))).step_cells(name), expected, name)
        np.testing.assert_array_equal(TextFrameColumns(read_table(str(csv), as_text=True)).step_cells(name),
                                      expected, name)
