"""Exact marginal count tables of private rows, computed by a backend. Backends count; they never add noise (noise
is added by :mod:`dpsynth.marginals.mechanisms`, in dpsynth, so that every release is one ledger event).

- :class:`NumPyBackend` (default): the rows encoded once into an int32 cell matrix in memory
  (:meth:`~dpsynth.marginals.domain.Discretizer.encode`); a table is one ``bincount`` over the flattened cell index.
- :class:`DuckDBBackend`: the same cells computed by SQL inside DuckDB from a Parquet/CSV file or a DataFrame, so a
  table larger than memory is counted out of core (one ``GROUP BY`` per table; DuckDB spills to disk).

Every backend caches the tables it has counted (selection asks for the same ones round after round).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dpsynth.errors import InputError

__all__ = ["NumPyBackend", "DuckDBBackend", "BACKENDS"]

BACKENDS = ("numpy", "duckdb")


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
    """Counts computed by DuckDB from ``source`` (a path to Parquet / CSV, or a DataFrame) with the cell rules of a
    :class:`~dpsynth.marginals.domain.Discretizer` translated to SQL ``CASE`` expressions. The cell codes are
    materialised once as a DuckDB table of small integers; each count table is one ``GROUP BY``."""

    def __init__(self, source: str | Path | pd.DataFrame, discretizer, *, memory_limit: str | None = None):
        try:
            import duckdb
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise InputError("The DuckDB backend needs duckdb: pip install 'dpsynth[scale]'.") from exc
        self.sizes = discretizer.sizes
        self.con = duckdb.connect()
        if memory_limit:
            self.con.execute(f"SET memory_limit = '{memory_limit}'")
        if isinstance(source, pd.DataFrame):
            self.con.register("source_frame", source)
            relation = "source_frame"
        else:
            path = str(source)
            if not Path(path).exists():
                raise InputError(f"No such file: {path}")
            reader = "read_parquet" if path.endswith(".parquet") else "read_csv_auto"
            relation = f"{reader}('{_quote(path)}')"
        exprs = [f"{_cell_sql(c)} AS c{j}" for j, c in enumerate(discretizer.columns)]
        self.con.execute(f"CREATE TEMP TABLE cells AS SELECT {', '.join(exprs)} FROM {relation}")
        self._cache: dict[tuple[int, ...], np.ndarray] = {}

    def counts(self, clique: tuple[int, ...]) -> np.ndarray:
        if clique not in self._cache:
            dims = [self.sizes[a] for a in clique]
            if not clique:
                table = np.array(float(self.con.execute("SELECT count(*) FROM cells").fetchone()[0]))
            else:
                cols = ", ".join(f"c{a}" for a in clique)
                rows = self.con.execute(f"SELECT {cols}, count(*) FROM cells GROUP BY {cols}").fetchnumpy()
                flat = np.ravel_multi_index(tuple(rows[f"c{a}"].astype(np.int64) for a in clique), dims)
                table = np.zeros(math.prod(dims))
                np.add.at(table, flat, rows["count_star()"].astype(float))
                table = table.reshape(dims)
            self._cache[clique] = table
        return self._cache[clique]


def _quote(text: str) -> str:
    return text.replace("'", "''")


def _literal(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return repr(float(value))
    return f"'{_quote(str(value))}'"


def _cell_sql(cells) -> str:
    """The SQL expression giving a column's cell code (the same rules as ``domain.encode_column``)."""
    name = '"' + cells.name.replace('"', '""') + '"'
    missing = cells.missing_cell if cells.nullable else -1
    parts = [f"WHEN {name} IS NULL THEN {missing}"]
    if cells.kind == "categorical":
        for i, c in enumerate(cells.categories):
            if isinstance(c, (bool, np.bool_)):  # DuckDB spells booleans 'true' / 'false' as text
                test = f"TRY_CAST({name} AS BOOLEAN) = {_literal(c)}"
            else:
                test = f"CAST({name} AS VARCHAR) = {_literal(str(c))}"
            parts.append(f"WHEN {test} THEN {i}")
        other = cells.categories.index("__other__") if "__other__" in cells.categories else missing
        parts.append(f"ELSE {other}")
    else:
        x = f"CAST({name} AS DOUBLE)"
        parts.append(f"WHEN isnan({x}) THEN {missing}")
        for i, s in enumerate(cells.specials):
            parts.append(f"WHEN {x} = {float(s)!r} THEN {cells.n_bins + i}")
        for b in range(cells.n_bins - 1, 0, -1):  # the highest edge at or below x (values clipped to the bounds)
            parts.append(f"WHEN {x} >= {float(cells.edges[b])!r} THEN {b}")
        parts.append("ELSE 0")
    return "CASE " + " ".join(parts) + " END"
