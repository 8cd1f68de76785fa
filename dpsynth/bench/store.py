"""Benchmark results in one embedded DuckDB file (issue 22).

Two tables: ``runs`` (one row per run: its key, the grid coordinates, status and error, the ledger's epsilon,
times, peak memory) and ``metrics`` (the run's tidy evaluation table: metric, subject, value, spread, n_seeds,
note). A run and its metrics are written in **one transaction** as soon as the run ends, and DuckDB's write-ahead
log makes a committed transaction durable: ``kill -9`` of the driver loses only the runs still in flight, and the
next ``dpsynth bench`` on the same file skips every recorded run (tests/bench/test_bench.py kills a driver and
resumes).

**One writer, readers any time.** A driver holds an exclusive lock on ``R.duckdb.lock`` for as long as it runs, so a
second ``dpsynth bench`` on the same results file refuses at once instead of racing it. DuckDB itself lets one
process open a file at a time, so the driver opens the database only to read what is done and to commit a run, and
closes it in between: ``dpsynth bench report`` (read-only, retried while a commit holds the file) can follow a grid
that is still running.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Iterator
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
    """The results file. The writer (``read_only=False``: one driver) holds the lock file; every operation opens the
    database, does its work and closes it again (module docstring)."""

    #: how long a reader waits for a writer's commit to release the file
    LOCK_WAIT_S = 30.0

    def __init__(self, path: str | Path, *, read_only: bool = False):
        self._duckdb = _duckdb()
        self.path = Path(path)
        self.read_only = read_only
        self._lock = None
        if read_only:
            if not self.path.is_file():
                raise InputError(f"Results file {self.path} does not exist.")
            with self._connect():  # not a DuckDB file: say so now
                pass
            return
        self._lock = _exclusive_lock(Path(f"{self.path}.lock"))
        try:
            with self._connect() as con:
                con.execute(_SCHEMA)
        except BaseException:
            self.close()
            raise

    @contextlib.contextmanager
    def _connect(self) -> Iterator[Any]:
        deadline = time.monotonic() + self.LOCK_WAIT_S
        while True:
            try:
                con = self._duckdb.connect(str(self.path), read_only=self.read_only)
                break
            except self._duckdb.IOException as exc:  # a commit in progress (retry), or not a DuckDB file
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    raise InputError(f"Cannot open results file {self.path}: {str(exc).splitlines()[0]}") from None
                time.sleep(0.2)
        try:
            yield con
        finally:
            con.close()

    def close(self) -> None:
        if self._lock is not None:
            self._lock.close()  # releases the flock
            self._lock = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def statuses(self) -> dict[str, str]:
        """key -> status of every recorded run."""
        with self._connect() as con:
            if not _has_tables(con):
                return {}
            return dict(con.execute("SELECT key, status FROM runs").fetchall())

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
        if self.read_only:
            raise InputError(f"Results file {self.path} was opened read-only.")
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                con.execute("DELETE FROM metrics WHERE key = ?", [key])
                con.execute("DELETE FROM runs WHERE key = ?", [key])
                con.execute(f"INSERT INTO runs ({', '.join(values)}, finished_at) "
                            f"VALUES ({', '.join('?' for _ in values)}, current_timestamp)", list(values.values()))
                if rows:
                    con.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def runs(self) -> pd.DataFrame:
        with self._connect() as con:
            return con.execute("SELECT * FROM runs ORDER BY dataset, label, epsilon, delta, seed").df()

    def metrics(self) -> pd.DataFrame:
        with self._connect() as con:
            return con.execute("SELECT * FROM metrics").df()


def _has_tables(con) -> bool:
    names = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    return "runs" in names


def _exclusive_lock(path: Path):
    """An open file holding an exclusive ``flock`` on ``path`` (released when closed or when the process dies, so a
    ``kill -9``'d driver leaves no stale lock); a driver already holding it is one line naming its pid."""
    import fcntl

    handle = open(path, "a+")  # noqa: SIM115 - held open for the store's lifetime
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise InputError(f"Another dpsynth bench (pid {holder}) is writing {path.name[:-5]}; wait for it to finish "
                         "or use another results file.") from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle
