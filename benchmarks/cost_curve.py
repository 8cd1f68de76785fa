"""Cost curves (issue 22): fit time and peak memory of each model against the number of rows, 10k to 10M.

Adult's training split resampled with replacement (seed 0) to each size and written to Parquet once (in chunks:
the 10M-row file never sits in memory here). Each fit runs in a fresh process (its peak resident memory is its
own) at epsilon 1, delta 1e-8 (below 1 / n at every size), Adult's public schema and the model's default
hyper-parameters (``--param K=V`` sets one for every model), under a wall-clock limit: a fit that exceeds it is
printed as ``> LIMIT`` and the model's larger sizes are skipped (they would take longer still). The models that read
tables (``reads_tables``: MST, AIM, batch-AIM count marginals in DuckDB; the DP deep models encode
the rows onto disk in chunks and read each training step's sample from there) get the Parquet path with
``backend="duckdb"``, so their memory should stay flat; every other model reads the file into a pandas frame first
(in the peak). ``--source frame`` gives every model the frame (the in-memory path, for comparison). Timing only:
nothing is evaluated.

    python benchmarks/cost_curve.py --models marginals,mst,dp-tldm --rows 10000,100000,1000000
    python benchmarks/cost_curve.py --models mst --rows 10000,100000,1000000,10000000 --plot cost.png
    python benchmarks/cost_curve.py --models dtgan-d --source frame --param gan_max_steps=200

Prints one row per (model, rows): status, fit seconds, peak MB, rows per second. ``--out`` writes the rows as CSV,
``--plot`` a PNG with both curves on log-log axes. ``--record CSV`` appends the rows, dated, to a CSV kept across
runs (``benchmarks/results/cost_curve.csv`` is the README's), and ``--plot-from CSV --plot PNG`` draws such a file
without fitting anything (a line per model and source; the latest measurement of each point):

    python benchmarks/cost_curve.py --models dp-tldm --record benchmarks/results/cost_curve.csv
    python benchmarks/cost_curve.py --plot-from benchmarks/results/cost_curve.csv --plot docs/cost_curve.png
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import pandas as pd
from dpsynth import datasets
from dpsynth.models import get_model_class
name, path, source, params = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
cls = get_model_class(name)
start = time.perf_counter()
if cls.reads_tables and source == "file":
    model, data = cls(backend="duckdb", **params), path
else:
    model, data = cls(**params), pd.read_parquet(path)
model.fit(data, epsilon=1.0, delta=1e-8, schema=datasets.schema("adult"), seed=0)
fit = time.perf_counter() - start
from dpsynth.bench.worker import peak_rss_mb  # VmHWM: ru_maxrss carries the parent's peak
peak = peak_rss_mb()
print(json.dumps({"fit_s": fit, "peak_mb": peak, "epsilon": model.ledger_.epsilon(),
                  "source": "file (duckdb)" if isinstance(data, str) else "frame"}))
"""


def write_sizes(folder: Path, sizes: list[int], chunk: int = 1_000_000) -> dict[int, Path]:
    """Adult's train split resampled with replacement to each size, one Parquet file each, written in chunks."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpsynth import datasets

    train = datasets.load("adult").train
    rng = np.random.default_rng(0)
    files = {}
    for n in sizes:
        path = folder / f"adult_{n}.parquet"
        writer = None
        for start in range(0, n, chunk):
            part = train.iloc[rng.integers(0, len(train), min(chunk, n - start))].reset_index(drop=True)
            table = pa.Table.from_pandas(part, preserve_index=False)
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
        writer.close()
        files[n] = path
    return files


def fit_once(model: str, path: Path, limit_s: float, threads: int, source: str = "file",
             params: dict | None = None) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, model, str(path), source, json.dumps(params or {})],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"status": "timeout", "fit_s": time.perf_counter() - start}
    if proc.returncode != 0:
        lines = [line for line in err.splitlines() if line.strip()]
        return {"status": "failed", "error": lines[-1][:200] if lines else f"exit {proc.returncode}"}
    return {"status": "ok", **json.loads(out.strip().splitlines()[-1])}


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, axes = plt.subplots(1, 2, figsize=(12, 6.2))
    lines = list(dict.fromkeys(_line(r) for r in rows))
    colours, styles = plt.get_cmap("tab20").colors, ("-", "--", ":")
    for i, line in enumerate(lines):
        ok = sorted((r for r in rows if _line(r) == line and r["status"] == "ok"), key=lambda r: int(r["rows"]))
        if not ok:
            continue
        for ax, key in zip(axes, ("fit_s", "peak_mb")):
            ax.plot([int(r["rows"]) for r in ok], [float(r[key]) for r in ok], marker="o", markersize=4,
                    color=colours[i % len(colours)], linestyle=styles[(i // len(colours)) % len(styles)], label=line)
    for ax, label in zip(axes, ("fit time (s)", "peak memory of the fit's process (MB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
            axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.set_xlabel("rows (Adult resampled)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle("dpsynth cost curves, epsilon 1, 2 CPU cores")
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    fig.savefig(path, dpi=110)


def _line(row: dict) -> str:
    """A plot line: the model and where its rows came from."""
    source = {"file (duckdb)": "file", "frame": "pandas frame"}.get(str(row.get("source", "")), "")
    return f"{row['model']} ({source})" if source else str(row["model"])


def record(rows: list[dict], path: str) -> None:
    """Append ``rows``, dated, to the CSV at ``path`` (created with a header if missing; written to a temporary file
    and renamed, so an interrupted write leaves the old file)."""
    import datetime

    import pandas as pd

    new = pd.DataFrame(rows).assign(date=datetime.date.today().isoformat())
    old = pd.read_csv(path) if Path(path).is_file() else pd.DataFrame()
    out = pd.concat([old, new], ignore_index=True)
    tmp = Path(path).with_suffix(".csv.tmp")
    out.to_csv(tmp, index=False)
    tmp.replace(path)


def latest(path: str) -> list[dict]:
    """The rows of a recorded CSV, the latest measurement of each (model, source, rows)."""
    import pandas as pd

    frame = pd.read_csv(path)
    frame = frame.drop_duplicates(["model", "source", "rows"], keep="last").sort_values(["model", "source", "rows"])
    return frame.to_dict("records")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="marginals,mst,aim,dp-tldm,dp-auto-gan,dtgan-d")
    parser.add_argument("--rows", default="10000,100000,1000000,10000000")
    parser.add_argument("--limit", type=float, default=1800.0, help="seconds per fit (default: 30 minutes)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", help="write the rows as CSV here")
    parser.add_argument("--plot", help="write the PNG here")
    parser.add_argument("--source", choices=("file", "frame"), default="file",
                        help="file: the Parquet path to the models that read tables (default); frame: pandas for all")
    parser.add_argument("--param", action="append", default=[], metavar="K=V",
                        help="a hyper-parameter for every model (numbers, true/false, comma lists: 64,64)")
    parser.add_argument("--record", metavar="CSV", help="append the rows, dated, to this CSV (kept across runs)")
    parser.add_argument("--plot-from", metavar="CSV", help="draw --plot from a recorded CSV; fit nothing")
    args = parser.parse_args()
    if args.plot_from:
        if not args.plot:
            parser.error("--plot-from needs --plot PNG")
        plot(latest(args.plot_from), args.plot)
        return
    from adult_quality import parse_params  # this folder is on sys.path when run as a script

    params = parse_params(args.param)
    sizes = sorted(int(n) for n in args.rows.split(","))
    rows: list[dict] = []
    print(f"{'model':12s} {'rows':>9s} {'status':8s} {'source':13s} {'fit_s':>8s} {'peak_mb':>8s} {'rows/s':>9s}")
    with tempfile.TemporaryDirectory(prefix="dpsynth-cost-") as folder:
        files = write_sizes(Path(folder), sizes)
        for model in args.models.split(","):
            for n in sizes:
                r = {"model": model, "rows": n, **fit_once(model, files[n], args.limit, args.threads, args.source,
                                                           params), "params": json.dumps(params, sort_keys=True)}
                rows.append(r)
                if args.record:
                    record([r], args.record)
                if r["status"] == "ok":
                    print(f"{model:12s} {n:9d} {'ok':8s} {r['source']:13s} {r['fit_s']:8.1f} {r['peak_mb']:8.0f} "
                          f"{n / r['fit_s']:9.0f}", flush=True)
                else:
                    shown = f"> {args.limit:.0f}" if r["status"] == "timeout" else r.get("error", "")
                    print(f"{model:12s} {n:9d} {r['status']:8s} {shown}", flush=True)
                    break  # larger sizes take longer still
    if args.out:
        import pandas as pd

        pd.DataFrame(rows).to_csv(args.out, index=False)
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
