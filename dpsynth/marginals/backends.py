"""Exact marginal count tables of private rows, computed by a backend. Backends count; they never add noise (noise
is added by :mod:`dpsynth.marginals.mechanisms`, in dpsynth, so that every release is one ledger event).

- :class:`NumPyBackend` (default): the rows encoded once into an int32 cell matrix in memory
  (:meth:`~dpsynth.marginals.domain.Discretizer.encode`); a table is one ``bincount`` over the flattened cell index.
- :class:`DuckDBBackend`: the same cells computed by SQL inside DuckDB from a Parquet/CSV file or a DataFrame, so a
  table larger than memory is counted out of core (one ``GROUP BY`` per table; DuckDB spills to disk).
- :class:`SparkBackend`: the same SQL cells evaluated by Spark on a Spark DataFrame, a Parquet/CSV path or a pandas
  frame (for tables that live on a cluster); only the count tables come back to the driver.

The SQL backends share one translation of the cell rules (:func:`cell_sql`), so the three count the same tables
(tested on the same rows).

Every backend caches the tables it has counted (selection asks for the same ones round after round).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dpsynth.errors import InputError
from dpsynth.marginals.tables import DuckDBTable, SparkTable, category_test, engine_errors, local_spark_session

__all__ = ["NumPyBackend", "DuckDBBackend", "SparkBackend", "BACKENDS", "cell_sql"]

BACKENDS = ("numpy", "duckdb", "spark")


class NumPyBackend:
    """Counts on an in-memory (rows x attributes) matrix of cell codes."""

    def __init__(self, codes: np.ndarray, sizes: Sequence[int]):
        self.codes, self.sizes = codes, [int(s) for s in sizes]
        self._cache: dict[tuple[int, ...], np.ndarray] = {}

    def counts(self, clique: tuple[int, ...]) -> np.ndarray:
        if clique not in self._cache:
            dims = [self.sizes[a] for a in clique]
            if not clique:
                table = np.array(float(len(self.codes)))
            else:
                flat = np.ravel_multi_index(tuple(self.codes[:, a] for a in clique), dims)
                table = np.bincount(flat, minlength=math.prod(dims)).astype(float).reshape(dims)
            self._cache[clique] = table
        return self._cache[clique]


class DuckDBBackend:
    """Counts computed by DuckDB from ``source`` (a :class:`~dpsynth.marginals.tables.DuckDBTable`, a path to
    Parquet / CSV, or a DataFrame) with the cell rules of a :class:`~dpsynth.marginals.domain.Discretizer`
    translated to SQL ``CASE`` expressions. The cell codes are materialised once as a DuckDB table of small
    integers; each count table is one ``GROUP BY``."""

    def __init__(self, source, discretizer, *, memory_limit: str | None = None):
        self.table = source if isinstance(source, DuckDBTable) else DuckDBTable(source, memory_limit=memory_limit)
        self.sizes = discretizer.sizes
        self.con = self.table.con
        kind = "SMALLINT" if max(self.sizes, default=0) < 2**15 else "INTEGER"  # small codes: less memory per row
        exprs = [f"CAST({cell_sql(c)} AS {kind}) AS c{j}" for j, c in enumerate(discretizer.columns)]
        with engine_errors("DuckDB", self.table.what):
            self.con.execute(f"CREATE TEMP TABLE cells AS SELECT {', '.join(exprs)} FROM {self.table.relation}")
        self._cache: dict[tuple[int, ...], np.ndarray] = {}

    def counts(self, clique: tuple[int, ...]) -> np.ndarray:
        if clique not in self._cache:
            dims = [self.sizes[a] for a in clique]
            if not clique:
                table = np.array(float(self.con.execute("SELECT count(*) FROM cells").fetchone()[0]))  # no rows read
            else:
                cols = ", ".join(f"c{a}" for a in clique)
                rows = self.con.execute(f"SELECT {cols}, count(*) FROM cells GROUP BY {cols}").fetchnumpy()
                flat = np.ravel_multi_index(tuple(rows[f"c{a}"].astype(np.int64) for a in clique), dims)
                table = np.zeros(math.prod(dims))
                np.add.at(table, flat, rows["count_star()"].astype(float))
                table = table.reshape(dims)
            self._cache[clique] = table
        return self._cache[clique]


def cell_sql(cells, *, text_type: str = "VARCHAR", double_cast: str = "CAST") -> str:
    """The SQL expression giving a column's cell code (the same rules as ``domain.encode_column``).

    ``text_type`` / ``double_cast`` spell the dialect: DuckDB ``VARCHAR`` / ``CAST``; Spark ``STRING`` /
    ``TRY_CAST`` (Spark 4 runs in ANSI mode, where a failed ``CAST`` raises instead of giving NULL)."""
    name = "`" + cells.name.replace("`", "``") + "`" if text_type == "STRING" else \
        '"' + cells.name.replace('"', '""') + '"'
    missing = cells.missing_cell if cells.nullable else -1
    parts = [f"WHEN {name} IS NULL THEN {missing}"]
    if cells.kind == "categorical":
        cell_of = cells.cell_of_category()
        for i, c in enumerate(cells.categories):
            parts.append(f"WHEN {category_test(name, c, text_type)} THEN {int(cell_of[i])}")
        other = int(cell_of[cells.categories.index("__other__")]) if "__other__" in cells.categories else missing
        parts.append(f"ELSE {other}")
    else:
        x = f"{double_cast}({name} AS DOUBLE)"
        parts.append(f"WHEN {x} IS NULL OR isnan({x}) THEN {missing}")
        for i, s in enumerate(cells.specials):
            parts.append(f"WHEN {x} = {float(s)!r} THEN {cells.n_bins + i}")
        for b in range(cells.n_bins - 1, 0, -1):  # the highest edge at or below x (values clipped to the bounds)
            parts.append(f"WHEN {x} >= {float(cells.edges[b])!r} THEN {b}")
        parts.append("ELSE 0")
    return "CASE " + " ".join(parts) + " END"


class SparkBackend:
    """Counts computed by Spark: the cell codes of :func:`cell_sql` (Spark dialect) are selected from ``source`` —
    a Spark DataFrame, a Parquet / CSV path Spark can read (local or on the cluster's file system), or a pandas
    frame (sent to Spark column by column as text or doubles) — and cached by Spark; each count table is one
    ``groupBy().count()`` whose groups (at most the table's cells) are collected to the driver.

    ``spark``: the SparkSession to use; default the active one, else a local session (``local[*]``, no UI)."""

    def __init__(self, source, discretizer, *, spark=None):
        self.sizes = discretizer.sizes
        self.what = source.what if isinstance(source, SparkTable) else "the table"
        if isinstance(source, SparkTable):
            frame = source.frame
        elif isinstance(source, pd.DataFrame):
            try:
                from pyspark.sql import SparkSession
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise InputError("The Spark backend needs pyspark (and Java 17+): pip install 'dpsynth[spark]'."
                                 ) from exc
            spark = spark or SparkSession.getActiveSession() or local_spark_session(SparkSession)
            frame = _spark_frame(spark, source, discretizer)
        else:
            table = SparkTable(source, spark=spark)
            frame, self.what = table.frame, table.what
        exprs = [f"{cell_sql(c, text_type='STRING', double_cast='TRY_CAST')} AS c{j}"
                 for j, c in enumerate(discretizer.columns)]
        self.cells = frame.selectExpr(*exprs).cache()
        self._cache: dict[tuple[int, ...], np.ndarray] = {}

    def counts(self, clique: tuple[int, ...]) -> np.ndarray:
        if clique not in self._cache:
            dims = [self.sizes[a] for a in clique]
            if not clique:
                with engine_errors("Spark", self.what):
                    table = np.array(float(self.cells.count()))
            else:
                cols = [f"c{a}" for a in clique]
                with engine_errors("Spark", self.what):
                    rows = self.cells.groupBy(*cols).count().collect()
                table = np.zeros(math.prod(dims))
                if rows:
                    keys = np.array([[r[c] for c in cols] for r in rows], dtype=np.int64)
                    flat = np.ravel_multi_index(tuple(keys.T), dims)
                    np.add.at(table, flat, np.array([r["count"] for r in rows], dtype=float))
                table = table.reshape(dims)
            self._cache[clique] = table
        return self._cache[clique]

    def close(self) -> None:
        """Release the cached cell codes on the cluster."""
        self.cells.unpersist()


def _spark_frame(spark, frame: pd.DataFrame, discretizer):
    """A pandas frame as a Spark DataFrame with one plain type per column: text for categorical columns (the cell
    rules compare their text, ``str(value)``, as the NumPy encoder compares values) and doubles for numbers."""
    from pyspark.sql.types import DoubleType, StringType, StructField, StructType

    fields, columns = [], []
    for cells in discretizer.columns:
        values = frame[cells.name].astype(object)
        present = values.notna().to_numpy()
        if cells.kind == "categorical":
            fields.append(StructField(cells.name, StringType(), True))
            columns.append([str(v) if ok else None for v, ok in zip(values, present)])
        else:
            fields.append(StructField(cells.name, DoubleType(), True))
            columns.append([float(v) if ok else None for v, ok in zip(values, present)])
    rows = list(zip(*columns)) if columns else []
    return spark.createDataFrame(rows, StructType(fields))
