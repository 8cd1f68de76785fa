"""Benchmark results in one embedded DuckDB file (issue 22).

Two tables: ``runs`` (one row per run: its key, the grid coordinates, status and error, the ledger's epsilon,
times, peak memory) and ``metrics`` (the run's tidy evaluation table: metric, subject, value, spread, n_seeds,
note). A run and its metrics are written in **one transaction** as soon as the run ends, and DuckDB's write-ahead
log makes a committed transaction durable: ``kill -9`` of the driver loses only the runs still in flight, and the
next ``dpsynth bench`` on the same file skips every recorded run (tests/bench/test_bench.py kills a driver and
resumes). Only the driver process writes; ``dpsynth bench report`` opens the file read-only.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from dpsynth.errors import InputError

__all__ = ["ResultStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    key VARCHAR, spec VARCHAR, model VARCHAR, label VARCHAR, params VARCHAR, dataset VARCHAR,
    epsilon DOUBLE, delta DOUBLE, seed INTEGER, schema_mode VARCHAR, train_rows INTEGER, version VARCHAR,
    status VARCHAR, error VARCHAR, ledger_epsilon DOUBLE, fit_s DOUBLE, sample_s DOUBLE, eval_s DOUBLE,
    risk_s DOUBLE, wall_s DOUBLE, peak_mb DOUBLE, n_synthetic BIGINT, threads INTEGER, finished_at TIMESTAMP, run JSON
);
CREATE TABLE IF NOT EXISTS metrics (
    key VARCHAR, metric VARCHAR, subject VARCHAR, value DOUBLE, spread DOUBLE, n_seeds INTEGER, note VARCHAR
);
"""


def _duckdb():
    try:
        import duckdb
    except ModuleNotFoundError:
        raise InputError('`dpsynth bench` stores results in DuckDB: pip install "duckdb>=1.0" '
                         '(or pip install -e ".[scale]").') from None
    return duckdb


class ResultStore:
    """The results file; open it with ``read_only=True`` to read while nothing writes."""

    def __init__(self, path: str | Path, *, read_only: bool = False):
        duckdb = _duckdb()
        self.path = Path(path)
        if read_only and not self.path.is_file():
            raise InputError(f"Results file {self.path} does not exist.")
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.IOException as exc:  # locked by a running driver, or not a DuckDB file
            raise InputError(f"Cannot open results file {self.path}: {str(exc).splitlines()[0]}") from None
        if not read_only:
            self.con.execute(_SCHEMA)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def statuses(self) -> dict[str, str]:
        """key -> status of every recorded run."""
        if not self._has_tables():
            return {}
        return dict(self.con.execute("SELECT key, status FROM runs").fetchall())

    def record(self, spec_name: str, run, result: dict[str, Any], *, wall_s: float, threads: int) -> None:
        """Write one finished run (replacing an earlier record of the same key) in one transaction."""
        key = run.key
        rows = [(key, m["metric"], m["subject"], m["value"], m["spread"], m["n_seeds"], m["note"])
                for m in result.get("metrics", [])]
        ledger = result.get("ledger_epsilon")
        values = {
            "key": key, "spec": spec_name, "model": run.model, "label": run.label,
            "params": json.dumps(run.params, sort_keys=True), "dataset": run.dataset, "epsilon": run.epsilon,
            "delta": run.delta, "seed": run.seed, "schema_mode": run.schema, "train_rows": run.rows,
            "version": run.version, "status": result["status"], "error": result.get("error", ""),
            "ledger_epsilon": math.inf if ledger == "inf" else ledger, "fit_s": result.get("fit_s"),
            "sample_s": result.get("sample_s"), "eval_s": result.get("eval_s"), "risk_s": result.get("risk_s"),
            "wall_s": wall_s, "peak_mb": result.get("peak_mb"), "n_synthetic": result.get("n_synthetic"),
            "threads": threads, "run": json.dumps(run.to_dict()),
        }
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute("DELETE FROM metrics WHERE key = ?", [key])
            self.con.execute("DELETE FROM runs WHERE key = ?", [key])
            self.con.execute(f"INSERT INTO runs ({', '.join(values)}, finished_at) "
                             f"VALUES ({', '.join('?' for _ in values)}, current_timestamp)", list(values.values()))
            if rows:
                self.con.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    def runs(self) -> pd.DataFrame:
        return self.con.execute("SELECT * FROM runs ORDER BY dataset, label, epsilon, delta, seed").df()

    def metrics(self) -> pd.DataFrame:
        return self.con.execute("SELECT * FROM metrics").df()

    def _has_tables(self) -> bool:
        names = {r[0] for r in self.con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        return "runs" in names
