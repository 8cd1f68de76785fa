"""Private tables held by an SQL engine instead of pandas: a Parquet / CSV file read by DuckDB, or a Spark
DataFrame (or a path Spark reads). The select-measure-generate models fit from them without the rows ever
entering the Python process: the metadata phase's exact counts, the schema check and every marginal are SQL
``GROUP BY`` queries whose results are count tables, so memory stays flat in the number of rows.

What the engines must agree on with the pandas path (tested: the same seed gives the same model):

- **missing values**: SQL ``NULL``; a floating column's NaN; in a CSV (read as text) the empty field and pandas'
  default NA tokens (``NA``, ``null``, ``NaN``, ...), as ``pandas.read_csv`` reads them. The table exposes a
  *normalised* relation in which all of these are ``NULL``;
- **numbers**: ``TRY_CAST(value AS DOUBLE)`` (text that is not a number is an error for a numeric column, as
  ``Schema.validate`` says), bins ``[edges[b], edges[b + 1])`` with the top edge in the last bin, special values
  before bins, out-of-range values counted apart (:func:`metadata_cell_sql`; clipped into the edge bins when
  counting marginals, :func:`dpsynth.marginals.backends.cell_sql`);
- **categories**: a number category matches numerically (a CSV's ``"1"`` or a float ``1.0`` is category ``1``), a
  boolean by ``TRY_CAST(... AS BOOLEAN)``, text by its text; unknown values go to ``"other"``, to missing
  (``unknown_as_missing``) or are an error, as the schema says.

The schema check (:func:`count_metadata_cells`) is part of the counting: error cells (unknown categories,
non-numeric text, infinite numbers, missing values in a non-nullable column) make a :class:`SchemaError` that
names the rule and the column, never a count or a value (DESIGN.md §1 rule 8). No noise is added here: the counts
go to :func:`dpsynth.data.discovery.public_schema_release`, the pandas path's own release.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from dpsynth.data.schema import Column, Schema
from dpsynth.errors import DPSynthError, InputError, SchemaError

__all__ = ["SQLTable", "DuckDBTable", "SparkTable", "open_table", "is_table_source", "metadata_cell_sql",
           "count_metadata_cells", "numeric_cell_counter", "SQLColumns", "SQLTextColumns", "discovery_source",
           "category_test", "NA_TOKENS", "local_spark_session", "engine_errors"]

#: pandas.read_csv's default missing-value tokens (besides the empty field)
NA_TOKENS = ("#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A",
             "NA", "NULL", "NaN", "None", "n/a", "nan", "null")
_NON_NUMERIC, _INFINITE, _UNKNOWN = -2, -3, -4  # error cells of the metadata query
#: column types a model can read (DuckDB's names, then Spark's simpleString names); dates, lists, maps, blobs are not
_ALLOWED = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
            "FLOAT", "DOUBLE", "DECIMAL", "VARCHAR", "BOOLEAN", "INT", "STRING")
_FLOATING = ("FLOAT", "DOUBLE", "REAL")
_STRIPPED_SQL = "concat(' ', chr(9), chr(10), chr(13), chr(11), chr(12))"  # dpsynth.data.text.STRIPPED


_QUOTED = re.compile(r"'[^']*'?|\"[^\"]*\"?")


@contextlib.contextmanager
def engine_errors(engine: str, what: str = "the table"):
    """Turn an engine's failure while it reads private rows into one :class:`InputError` line that holds no row.

    DuckDB and Spark quote the offending row or value in their messages ("Original Line: ...", "Could not convert
    string '...'"), which is private (DESIGN.md §1 rule 8). Kept: the exception's type and the first line of its
    message with every quoted run replaced by ``'…'`` (e.g. "CSV Error on Line: 3", as pandas' own parser errors
    name the line); the engine's exception is not chained, so a traceback does not print it either."""
    try:
        yield
    except DPSynthError:
        raise
    except Exception as exc:  # noqa: BLE001 - engines raise many types; all are a failure to read the table
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        reason = _QUOTED.sub("'…'", first)[:300]
        raise InputError(f"{engine} could not read {what}: {type(exc).__name__}: {reason}".rstrip(": ")
                         + " (the engine's message is cut to its first line without quoted values: it may quote a "
                         "private row).") from None


def _quote_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class SQLTable:
    """A private table in an SQL engine: its column names and types, and GROUP BY counts of SQL expressions over
    the normalised relation (see the module docstring). Subclasses set ``names``, ``types`` (upper-case engine
    type names without parameters) and the dialect: ``text_type`` and ``double_cast``."""

    text_type = "VARCHAR"
    double_cast = "CAST"
    names: list[str]
    types: dict[str, str]
    text_csv: bool  # a CSV file, read as text: its column types say nothing

    def quote(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def full_match(self, text_sql: str, pattern: str) -> str:
        """SQL truth of "the whole text matches the regular expression" (no backslash in ``pattern``)."""
        return f"regexp_full_match({text_sql}, {_quote_text(pattern)})"

    def strip(self, text_sql: str) -> str:
        """The text without surrounding ASCII whitespace (:data:`dpsynth.data.text.STRIPPED`)."""
        return f"trim({text_sql}, {_STRIPPED_SQL})"

    def number_sql(self, name: str) -> str:
        """The value of a text column's cell under the private-dtypes number rule (:mod:`dpsynth.data.text`): a
        stripped token matching ``NUMBER_PATTERN`` whose value is finite, else NULL (missing or text)."""
        from dpsynth.data.text import NUMBER_PATTERN

        token = self.strip(self.quote(name))
        value = f"TRY_CAST({token} AS DOUBLE)"
        return (f"(CASE WHEN {self.full_match(token, NUMBER_PATTERN)} AND abs({value}) < CAST('Infinity' AS DOUBLE) "
                f"THEN {value} END)")

    def parse_numbers(self, names) -> None:
        """Replace these text columns of the relation by their numbers (:meth:`number_sql`): after private-dtype
        discovery, a numeric column's text tokens are missing values, as in the pandas path."""
        raise NotImplementedError

    def row_count(self) -> int:
        raise NotImplementedError

    def row_batches(self, names: list[str], rows: int) -> Iterator[pd.DataFrame]:
        """The rows' ``names`` columns, in the table's order, ``rows`` at a time (streamed: one batch in memory at a
        time). For models that train on the rows themselves (DP-SGD from a file, :mod:`dpsynth.data.row_store`)."""
        raise NotImplementedError

    def code_counts(self, expr: str, inputs: dict[str, str] | None = None) -> dict[int, int]:
        """{code: number of rows} of one integer SQL expression over the relation. ``inputs``: {alias: SQL
        expression over the relation} computed once per row first, which ``expr`` then reads by alias (an
        expression repeated in a long CASE is otherwise evaluated once per branch)."""
        raise NotImplementedError

    def value_counts(self, name: str) -> dict:
        """{value: number of rows} of one column's present (non-NULL) values."""
        raise NotImplementedError

    def frequent_mass(self, name: str, cut: float) -> float:
        """sum over the column's present values of max(rows - cut, 0), computed in the engine (an identifier
        column's millions of values never reach Python)."""
        raise NotImplementedError

    def _normalised(self, names: list[str], types: dict[str, str], text_csv: bool) -> list[str]:
        """Select expressions giving each column with every missing value as NULL."""
        out = []
        for name in names:
            q = self.quote(name)
            if text_csv:
                tokens = ", ".join(_quote_text(t) for t in ("",) + NA_TOKENS)
                out.append(f"CASE WHEN {q} IN ({tokens}) THEN NULL ELSE {q} END AS {q}")
            elif types[name] in _FLOATING:
                out.append(f"CASE WHEN isnan({q}) THEN NULL ELSE {q} END AS {q}")
            else:
                out.append(q)
        return out


_DUCKDB_VECTOR = 2048  # rows in one of DuckDB's vectors (its STANDARD_VECTOR_SIZE)


class DuckDBTable(SQLTable):
    """A Parquet file (or glob of files) or a CSV file (optionally compressed; read as text, as ``dpsynth fit``
    reads a CSV with a schema) held by an embedded DuckDB; a pandas frame is accepted too (tests, small tables).
    ``memory_limit`` (e.g. ``"2GB"``): DuckDB's own cap; above it DuckDB spills to its temp directory.

    A CSV file is parsed once, at the first query, into a temporary Parquet file (streamed: memory stays flat) in a
    private directory (mode 0700) removed by :meth:`close` (or when the table is collected): the dozens of queries
    of a fit then read columns of it instead of parsing the whole text again (MST with DP discovery from a 3.2M-row
    CSV: 169 s -> 49 s, measured). Nothing in it leaves the machine; it is the file's rows, as private as the file."""

    def __init__(self, source, *, memory_limit: str | None = None):
        try:
            import duckdb
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise InputError("Fitting from a file or with the DuckDB backend needs duckdb: "
                             "pip install 'dpsynth[scale]'.") from exc
        self.con = duckdb.connect()
        if memory_limit:
            self.con.execute(f"SET memory_limit = {_quote_text(memory_limit)}")
        text_csv = False
        self.what = "the frame" if isinstance(source, pd.DataFrame) else os.fspath(source)
        self._csv: str | None = None  # the CSV reader, until the file is staged as Parquet
        self._scratch: str | None = None
        if isinstance(source, pd.DataFrame):
            self.con.register("source_frame", source)
            raw = "source_frame"
        else:
            path = os.fspath(source)
            kind = _file_kind(path)
            if kind == "parquet":
                raw = f"read_parquet({_quote_text(path)})"
            else:
                from dpsynth._io import csv_header

                delim = "\t" if ".tsv" in [s.lower() for s in Path(path).suffixes] else ","
                names = csv_header(path, delim)  # ragged files refused, as read_table refuses them
                columns = "{" + ", ".join(f"{_quote_text(n)}: 'VARCHAR'" for n in names) + "}"
                # the dialect and the columns are fixed, as pandas reads the file: nothing is sniffed from its rows
                raw = (f"read_csv({_quote_text(path)}, auto_detect = false, header = true, columns = {columns}, "
                       f"delim = {_quote_text(delim)}, quote = '\"', escape = '\"')")
                text_csv = True
                self._csv = raw
        with engine_errors("DuckDB", self.what):
            described = self.con.execute(f"DESCRIBE SELECT * FROM {raw}").fetchall()
        self.names = [row[0] for row in described]
        self.types = {row[0]: str(row[1]).split("(")[0].upper() for row in described}
        self._select = ", ".join(self._normalised(self.names, self.types, text_csv))
        self._relation = f"(SELECT {self._select} FROM {raw})"
        self.text_csv = text_csv

    @property
    def relation(self) -> str:
        """The normalised relation (SQL), the CSV staged first (see the class docstring)."""
        if self._csv is not None:
            self._stage_csv()
        return self._relation

    @relation.setter
    def relation(self, value: str) -> None:
        self._relation = value

    def _stage_csv(self) -> None:
        import shutil
        import tempfile
        import weakref

        scratch = tempfile.mkdtemp(prefix="dpsynth-csv-")
        target = os.path.join(scratch, "table.parquet")
        try:
            with engine_errors("DuckDB", self.what):
                self.con.execute(f"COPY (SELECT * FROM {self._csv}) TO {_quote_text(target)} (FORMAT parquet)")
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)  # no partial copy left behind
            raise
        self._scratch = scratch
        self._finalizer = weakref.finalize(self, shutil.rmtree, scratch, True)
        self._relation = f"(SELECT {self._select} FROM read_parquet({_quote_text(target)}))"
        self._csv = None

    def parse_numbers(self, names) -> None:
        names = set(names)
        exprs = [f"{self.number_sql(n)} AS {self.quote(n)}" if n in names else self.quote(n) for n in self.names]
        self.relation = f"(SELECT {', '.join(exprs)} FROM {self.relation})"
        self.types.update({n: "DOUBLE" for n in names})

    def row_batches(self, names: list[str], rows: int) -> Iterator[pd.DataFrame]:
        columns = ", ".join(self.quote(n) for n in names)
        vectors = max(1, int(rows) // _DUCKDB_VECTOR)
        with engine_errors("DuckDB", self.what):
            # streamed by DuckDB's vectors straight into pandas: peak memory 267 -> 343 MB from 0.3M to 5.9M Adult
            # rows (measured), where Arrow batches converted to pandas grew 230 -> 671 MB
            result = self.con.execute(f"SELECT {columns} FROM {self.relation}")
            while True:
                batch = result.fetch_df_chunk(vectors)
                if len(batch) == 0:
                    return
                yield batch

    def row_count(self) -> int:
        with engine_errors("DuckDB", self.what):
            return int(self.con.execute(f"SELECT count(*) FROM {self.relation}").fetchone()[0])

    def code_counts(self, expr: str, inputs: dict[str, str] | None = None) -> dict[int, int]:
        source = self.relation if not inputs else \
            f"(SELECT {', '.join(f'{e} AS {a}' for a, e in inputs.items())} FROM {self.relation})"
        with engine_errors("DuckDB", self.what):
            rows = self.con.execute(f"SELECT cell, count(*) FROM (SELECT {expr} AS cell FROM {source}) "
                                    "GROUP BY cell").fetchall()
        return {int(code): int(n) for code, n in rows}

    def value_counts(self, name: str) -> dict:
        q = self.quote(name)
        with engine_errors("DuckDB", self.what):
            rows = self.con.execute(f"SELECT {q}, count(*) FROM {self.relation} WHERE {q} IS NOT NULL "
                                    f"GROUP BY {q}").fetchall()
        return {value: int(n) for value, n in rows}

    def frequent_mass(self, name: str, cut: float) -> float:
        q = self.quote(name)
        with engine_errors("DuckDB", self.what):
            mass = self.con.execute(f"SELECT sum(greatest(n - {float(cut)!r}, 0)) FROM (SELECT count(*) AS n FROM "
                                    f"{self.relation} WHERE {q} IS NOT NULL GROUP BY {q})").fetchone()[0]
        return float(mass or 0.0)

    def close(self) -> None:
        self.con.close()
        if self._scratch is not None:
            self._finalizer()  # removes the staged copy of a CSV


class SparkTable(SQLTable):
    """A Spark DataFrame, or a Parquet / CSV path Spark reads (a CSV as text, with pandas' NA tokens), on the
    given session (default: the active one, else a local one)."""

    text_type = "STRING"
    double_cast = "TRY_CAST"

    def __init__(self, source, *, spark=None):
        try:
            from pyspark.sql import DataFrame as SparkFrame
            from pyspark.sql import SparkSession
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise InputError("The Spark backend needs pyspark (and Java 17+): pip install 'dpsynth[spark]'.") from exc
        if spark is None:
            spark = SparkSession.getActiveSession() or local_spark_session(SparkSession)
        text_csv = False
        self.what = "the Spark DataFrame" if isinstance(source, SparkFrame) else os.fspath(source)
        if isinstance(source, SparkFrame):
            frame = source
        else:
            path = os.fspath(source)
            if "://" not in path and not Path(path).exists():
                raise InputError(f"No such file: {path}.")
            with engine_errors("Spark", path):
                if _file_kind(path, check=False) == "parquet":
                    frame = spark.read.parquet(path)
                else:
                    # FAILFAST: a malformed record is an error (the default PERMISSIVE mode fills or cuts its fields)
                    frame = spark.read.csv(path, header=True, inferSchema=False, mode="FAILFAST")
                    text_csv = True
        self.names = list(frame.columns)
        self.types = {f.name: f.dataType.simpleString().split("(")[0].upper() for f in frame.schema.fields}
        self.frame = frame.selectExpr(*self._normalised(self.names, self.types, text_csv))
        if text_csv:
            # a CSV is parsed once, at the first query, into Spark's disk cache (memory stays flat): the dozens of
            # queries of a fit then read that instead of the text (local mode, 325k rows, MST without a schema:
            # 87 s -> 76 s; the rest is Spark's per-job cost); released by close()
            from pyspark import StorageLevel

            self.frame = self._persisted = self.frame.persist(StorageLevel.DISK_ONLY)
        self.text_csv = text_csv

    def quote(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def close(self) -> None:
        if self.text_csv:
            self._persisted.unpersist()

    def full_match(self, text_sql: str, pattern: str) -> str:
        return f"({text_sql} RLIKE {_quote_text('^(?:' + pattern + ')$')})"

    def strip(self, text_sql: str) -> str:
        return f"trim(BOTH {_STRIPPED_SQL} FROM {text_sql})"

    def parse_numbers(self, names) -> None:
        names = set(names)
        self.frame = self.frame.selectExpr(*[f"{self.number_sql(n)} AS {self.quote(n)}" if n in names
                                             else self.quote(n) for n in self.names])
        self.types.update({n: "DOUBLE" for n in names})

    def row_batches(self, names: list[str], rows: int) -> Iterator[pd.DataFrame]:
        batch: list[tuple] = []
        with engine_errors("Spark", self.what):
            # partition by partition to the driver (one partition and one batch in memory at a time)
            for row in self.frame.select(*[self.quote(n) for n in names]).toLocalIterator():
                batch.append(tuple(row))
                if len(batch) == rows:
                    yield pd.DataFrame(batch, columns=names)
                    batch = []
            if batch:
                yield pd.DataFrame(batch, columns=names)

    def row_count(self) -> int:
        with engine_errors("Spark", self.what):
            return int(self.frame.count())

    def code_counts(self, expr: str, inputs: dict[str, str] | None = None) -> dict[int, int]:
        frame = self.frame.selectExpr(*[f"{e} AS {a}" for a, e in inputs.items()]) if inputs else self.frame
        with engine_errors("Spark", self.what):
            rows = frame.selectExpr(f"{expr} AS cell").groupBy("cell").count().collect()
        return {int(r["cell"]): int(r["count"]) for r in rows}

    def value_counts(self, name: str) -> dict:
        q = self.quote(name)
        with engine_errors("Spark", self.what):
            rows = self.frame.where(f"{q} IS NOT NULL").groupBy(q).count().collect()
        return {r[0]: int(r[1]) for r in rows}

    def frequent_mass(self, name: str, cut: float) -> float:
        q = self.quote(name)
        with engine_errors("Spark", self.what):
            row = (self.frame.where(f"{q} IS NOT NULL").groupBy(q).count()
                   .selectExpr(f"sum(greatest(`count` - {float(cut)!r}, 0)) AS mass").collect()[0])
        return float(row["mass"] or 0.0)


def local_spark_session(session_cls):
    """A local Spark session for the backends (every core, no UI, few shuffle partitions), quiet."""
    spark = (session_cls.builder.master("local[*]").appName("dpsynth")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _file_kind(path: str, *, check: bool = True) -> str:
    if check and not any(ch in path for ch in "*?[") and not Path(path).exists():
        raise InputError(f"No such file: {path}.")
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in (".parquet", ".pq") or Path(path).is_dir():
        return "parquet"
    body = suffixes[-2] if len(suffixes) > 1 and suffixes[-1] == ".gz" else (suffixes[-1] if suffixes else "")
    if body in (".csv", ".tsv"):
        return "csv"
    raise InputError(f"An SQL engine reads Parquet (.parquet) or CSV / TSV (optionally .gz) files. Found '{path}'.")


def is_table_source(data) -> bool:
    """Whether ``fit`` was given something an SQL engine reads (a path or a Spark DataFrame), not a pandas frame."""
    if isinstance(data, (str, os.PathLike)):
        return True
    return type(data).__module__.startswith("pyspark.") and type(data).__name__ == "DataFrame"


def open_table(source, backend: str) -> SQLTable:
    """The engine that holds ``source`` for a model whose backend is ``backend``."""
    is_spark_frame = is_table_source(source) and not isinstance(source, (str, os.PathLike))
    if backend == "spark":
        return SparkTable(source)
    if backend == "duckdb" and not is_spark_frame:
        return DuckDBTable(source)
    what = "a Spark DataFrame" if is_spark_frame else "a file path"
    needs = "backend='spark'" if is_spark_frame else "backend='duckdb' or 'spark'"
    raise InputError(f"Fitting from {what} needs {needs} (the rows are counted where they live); "
                     f"with backend={backend!r}, pass a pandas DataFrame.")


# ---------------------------------------------------------------------------------------------- the metadata query
def category_test(value_sql: str, category, text_type: str) -> str:
    """SQL truth of "the value is this declared category" (see the module docstring for the rule)."""
    if isinstance(category, (bool, np.bool_)):
        return f"TRY_CAST({value_sql} AS BOOLEAN) = {'TRUE' if category else 'FALSE'}"
    if isinstance(category, (int, float, np.integer, np.floating)):
        return f"TRY_CAST({value_sql} AS DOUBLE) = {float(category)!r}"
    return f"CAST({value_sql} AS {text_type}) = {_quote_text(str(category))}"


def metadata_cell_sql(table: SQLTable, col: Column, edges: np.ndarray | None = None, *,
                      value_sql: str | None = None) -> str:
    """The cell of each row in the metadata phase's query of ``col`` (the cells of
    :func:`~dpsynth.data.discovery.categorical_cells` / :func:`~dpsynth.data.discovery.numeric_cells`), with
    negative error cells for what the schema refuses. ``value_sql``: the column's value (default: the column)."""
    q = value_sql or table.quote(col.name)
    if col.is_discrete:
        m = len(col.categories)
        parts = [f"WHEN {q} IS NULL THEN {m}"]
        parts += [f"WHEN {category_test(q, c, table.text_type)} THEN {i}" for i, c in enumerate(col.categories)]
        unknown = col.categories.index(col.other) if col.other is not None else \
            (m if col.unknown_as_missing else _UNKNOWN)
        return "CASE " + " ".join(parts) + f" ELSE {unknown} END"
    k, specials = len(edges) - 1, tuple(col.special_values)
    missing, below, above = k + len(specials), k + len(specials) + 1, k + len(specials) + 2
    x = f"TRY_CAST({q} AS DOUBLE)"
    parts = [f"WHEN {q} IS NULL THEN {missing}", f"WHEN {x} IS NULL THEN {_NON_NUMERIC}",
             f"WHEN isnan({x}) THEN {missing}", f"WHEN abs({x}) = CAST('Infinity' AS DOUBLE) THEN {_INFINITE}",
             f"WHEN {x} < {float(col.lower)!r} THEN {below}", f"WHEN {x} > {float(col.upper)!r} THEN {above}"]
    parts += [f"WHEN {x} = {float(s)!r} THEN {k + i}" for i, s in enumerate(specials)]
    parts += [f"WHEN {x} >= {float(edges[b])!r} THEN {b}" for b in range(k - 1, 0, -1)]
    return "CASE " + " ".join(parts) + " ELSE 0 END"


def count_metadata_cells(table: SQLTable, schema: Schema, edges: dict[str, np.ndarray] | None = None
                         ) -> tuple[int, dict[str, np.ndarray]]:
    """(row count, {column: exact metadata cells}) of ``table`` under ``schema``, checking the table against the
    schema as :meth:`Schema.validate` does (one GROUP BY per column; messages carry no count or value).
    ``edges``: the bins of numeric columns (default: the public grid of each; a model may count its own)."""
    from dpsynth.data.discovery import public_grid

    absent = [n for n in schema.names if n not in table.names]
    if absent:
        raise SchemaError(f"Data lacks columns declared in the schema: {absent}.")
    extra = [n for n in table.names if n not in schema.names and n not in schema.excluded]
    if extra:
        raise SchemaError(f"Data has columns the schema does not declare: {extra}. Add them to the schema or drop "
                          "them first.")
    for col in schema.columns:
        kind = table.types[col.name]
        if kind not in _ALLOWED:
            raise InputError(f"Column '{col.name}' has type {kind}, which no model can represent: give it as a "
                             "number, text or boolean.")
    n_rows = table.row_count()
    if n_rows == 0:
        raise InputError("The table has no rows.")
    cells = {}
    for col in schema.columns:
        bins = None if col.is_discrete else (edges or {}).get(col.name, public_grid(col))
        size = len(col.categories) + 1 if col.is_discrete else len(bins) - 1 + len(col.special_values) + 3
        counts = table.code_counts(metadata_cell_sql(table, col, bins))
        if counts.get(_UNKNOWN):
            raise SchemaError(f"Column '{col.name}' has values outside the declared categories (not shown: "
                              "private). Declare them, or an \"other\" category.")
        if counts.get(_NON_NUMERIC):
            raise SchemaError(f"Column '{col.name}' is {col.kind} but holds non-numeric values.")
        if counts.get(_INFINITE):
            raise SchemaError(f"Column '{col.name}' holds infinite values; replace them or mark them missing.")
        out = _cell_array(counts, size)
        missing = out[len(col.categories)] if col.is_discrete else out[size - 3]
        raw_missing = missing if not (col.is_discrete and col.unknown_as_missing) else \
            table.code_counts(f"CASE WHEN {table.quote(col.name)} IS NULL THEN 1 ELSE 0 END").get(1, 0)
        if raw_missing and not col.nullable:
            raise SchemaError(f"Column '{col.name}' has missing values but is not nullable in the schema; declare "
                              "it \"nullable\": true.")
        cells[col.name] = out
    return n_rows, cells


def numeric_cell_counter(table: SQLTable):
    """``count(col, edges)``: the exact cells of :func:`~dpsynth.data.discovery.numeric_cells` on ``edges``, counted
    by the engine (the zoom queries of a public schema's metadata phase; the schema check has run)."""
    def count(col: Column, edges) -> np.ndarray:
        return _cell_array(table.code_counts(metadata_cell_sql(table, col, edges)),
                           len(edges) - 1 + len(col.special_values) + 3)
    return count


def _cell_array(counts: dict[int, int], size: int) -> np.ndarray:
    """The counts of cells 0 .. size - 1 (error cells, negative, are checked by the caller before)."""
    out = np.zeros(size, dtype=np.int64)
    for code, n in counts.items():
        if not 0 <= code < size:
            raise InputError(f"The engine counted a cell ({code}) outside the query's {size} cells.")
        out[code] = n
    return out


# ---------------------------------------------------------------------------------------------- DP discovery
_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                  "UBIGINT", "INT")
#: the pandas dtype a discovered column is released with (an SQL column can always hold NULL)
_RELEASED_DTYPES = {"bool": "boolean", "integer": "Int64", "float": "float64", "text": "str"}


class SQLColumns:
    """What DP discovery reads of an engine-held table: the interface of
    :class:`dpsynth.data.discovery.FrameColumns`, answered by SQL, so :func:`dpsynth.data.discovery.discover` runs
    on a Parquet file, a DuckDB-held frame or a Spark DataFrame as it runs on pandas.

    Column types are the engine's (a Parquet file's types are public structure, as a frame's dtypes are): BOOLEAN
    -> bool, integer types -> integer, FLOAT / DOUBLE / DECIMAL -> float, VARCHAR / STRING -> text; any other type
    (dates, lists, blobs) is excluded before any query, with a warning. Every column is nullable (SQL) and is
    released with a nullable pandas dtype. A CSV file has no types (it is read as text, and its kinds would follow
    from private values): it is discovered with private dtypes (:class:`SQLTextColumns`), and refused here."""

    def __init__(self, table: SQLTable):
        if table.text_csv:
            raise InputError("A CSV file has no column types (its kinds would be read off private values): "
                             "discover it with dtypes='private', or give a public schema.")
        self.table = table
        self.names = list(table.names)

    def row_count(self) -> int:
        n = self.table.row_count()
        if n == 0:
            raise InputError("The table has no rows.")
        return n

    def column_type(self, name: str) -> str | None:
        kind = self.table.types[name]
        if kind == "BOOLEAN":
            return "bool"
        if kind in _INTEGER_TYPES:
            return "integer"
        if kind in _FLOATING or kind == "DECIMAL":
            return "float"
        return "text" if kind in ("VARCHAR", "STRING") else None

    def nullable(self, name: str) -> bool:
        return True

    def dtype(self, name: str) -> str | None:
        return _RELEASED_DTYPES.get(self.column_type(name))

    def decade_cells(self, name: str) -> np.ndarray:
        """The decade counts of non-zero numbers, then the zeros (as the pandas implementation counts them)."""
        from dpsynth.data.discovery import geometric_grid

        edges = geometric_grid()
        k = len(edges) - 1
        x = f"TRY_CAST({self.table.quote(name)} AS DOUBLE)"
        parts = [f"WHEN {x} IS NULL OR isnan({x}) THEN -1", f"WHEN abs({x}) = CAST('Infinity' AS DOUBLE) THEN "
                 f"{_INFINITE}", f"WHEN {x} = 0 THEN {k}"]
        parts += [f"WHEN {x} >= {float(edges[b])!r} THEN {b}" for b in range(k - 1, 0, -1)]
        counts = self.table.code_counts("CASE " + " ".join(parts) + " ELSE 0 END")
        if counts.get(_INFINITE):
            raise InputError(f"Column '{name}' holds infinite values; replace them or mark them missing.")
        counts.pop(-1, None)
        return _cell_array(counts, k + 1)

    def step_cells(self, name: str) -> np.ndarray:
        """The step query's cells (:func:`dpsynth.data.discovery.step_classes`), counted in SQL."""
        return _step_cells(self.table, f"TRY_CAST({self.table.quote(name)} AS DOUBLE)")

    def _missing(self, name: str) -> int:
        return self.table.code_counts(f"CASE WHEN {self.table.quote(name)} IS NULL THEN 1 ELSE 0 END").get(1, 0)

    def value_counts(self, name: str) -> tuple[dict, int]:
        return self.table.value_counts(name), self._missing(name)

    def frequent_mass(self, name: str, cut: float) -> tuple[float, int]:
        return self.table.frequent_mass(name, cut), self._missing(name)

    def numeric_cells(self, col: Column, edges) -> np.ndarray:
        return _cell_array(self.table.code_counts(metadata_cell_sql(self.table, col, edges)),
                           len(edges) - 1 + len(col.special_values) + 3)

    def categorical_cells(self, col: Column) -> np.ndarray:
        return _cell_array(self.table.code_counts(metadata_cell_sql(self.table, col)), len(col.categories) + 1)


class SQLTextColumns(SQLColumns):
    """What private-dtype discovery reads of a CSV file an engine holds as text: the interface of
    :class:`dpsynth.data.discovery_text.TextFrameColumns`, answered by SQL, so
    :func:`dpsynth.data.discovery_text.discover_private_dtypes` runs on the file without its rows entering Python.

    The text rules are the pandas path's (:mod:`dpsynth.data.text`): a cell is missing iff it is empty or one of
    pandas' NA tokens (the normalised relation), a number iff its token (stripped of ASCII whitespace) matches
    ``NUMBER_PATTERN`` and is finite (:meth:`SQLTable.number_sql`), else text; the same counts give the same
    release (tested). A Parquet file or a Spark DataFrame has column types: it is discovered by
    :class:`SQLColumns`."""

    def __init__(self, table: SQLTable):
        if not table.text_csv:
            raise InputError("dtypes='private' is for a CSV file (text); a Parquet file or a Spark DataFrame "
                             "carries column types: fit it with dtypes='public' (the default), or give a schema.")
        self.table = table
        self.names = list(table.names)

    def column_type(self, name: str) -> str:
        return "text"

    def nullable(self, name: str) -> bool:
        return True

    def dtype(self, name: str) -> str:
        return "str"

    def kind_cells(self, name: str) -> np.ndarray:
        """The kind-and-bounds query's cells (:meth:`TextFrameColumns.kind_cells`): integer-valued numbers by
        decade, other numbers by decade, exact zeros, missing, text."""
        from dpsynth.data.discovery import geometric_grid

        edges = geometric_grid()
        d = len(edges) - 1
        decade = "CASE " + " ".join(f"WHEN x >= {float(edges[b])!r} THEN {b}" for b in range(d - 1, 0, -1)) + \
            " ELSE 0 END"
        expr = (f"CASE WHEN x IS NULL THEN {2 * d + 2} WHEN isnan(x) THEN {2 * d + 1} WHEN x = 0 THEN {2 * d} "
                f"ELSE (CASE WHEN x % 1 = 0 THEN 0 ELSE {d} END) + {decade} END")
        # one input (missing as NaN, text as NULL): DuckDB 2.0 re-evaluates an input per CASE branch once a second
        # input is read beside it (7x slower, measured)
        inputs = {"x": f"CASE WHEN {self.table.quote(name)} IS NULL THEN CAST('NaN' AS DOUBLE) ELSE "
                       f"{self.table.number_sql(name)} END"}
        return _cell_array(self.table.code_counts(expr, inputs), 2 * d + 3)

    def step_cells(self, name: str) -> np.ndarray:
        """The step query's cells of a column of numbers (its text tokens count nowhere)."""
        return _step_cells(self.table, self.table.number_sql(name))

    def number_cells(self, col: Column, edges) -> np.ndarray:
        """The shape histogram's cells of a numeric column (its text tokens count as missing)."""
        expr = metadata_cell_sql(self.table, col, edges, value_sql="x")
        return _cell_array(self.table.code_counts(expr, {"x": self.table.number_sql(col.name)}),
                           len(edges) - 1 + len(col.special_values) + 3)


def _step_cells(table: SQLTable, number_sql: str) -> np.ndarray:
    """The step query's cells of the numbers ``number_sql`` reads (NULL, NaN, infinite: counted nowhere)."""
    from dpsynth.data.discovery import STEP_CANDIDATES, step_class_sql

    counts = table.code_counts(step_class_sql("x"), {"x": number_sql})
    counts.pop(-1, None)
    return _cell_array(counts, len(STEP_CANDIDATES) + 1)


def discovery_source(table: SQLTable) -> SQLColumns:
    """What DP discovery reads of an engine's table: a CSV's text (private dtypes), else its column types."""
    return SQLTextColumns(table) if table.text_csv else SQLColumns(table)
