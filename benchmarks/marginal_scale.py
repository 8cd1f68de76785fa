"""Cost of the select-measure-generate models against the number of rows (issue 18): Adult's train split replicated
(32,561 x k rows, epsilon 1; the public schema, or ``--schema dp``: DP discovery, in the engine for a file), each
fit in a fresh process so that its peak memory is its own.

Prints one row per (model, source, rows): fit seconds, peak resident memory of the process, and the ledger epsilon.
Sources: ``numpy`` and ``duckdb`` fit a pandas frame (read from the Parquet file in the child, so the frame is in
the peak) and count in NumPy / DuckDB; ``duckdb-file`` and ``spark-file`` hand the Parquet file's path to the
model, which counts where the rows live (the rows never enter the Python process; Spark's JVM is a separate
process, not in the peak shown). ``--format csv`` writes CSV files instead: without a schema the frame sources read
them as text (private dtypes, as ``dpsynth fit FILE.csv`` does) and the file sources discover them in the engine.

    python benchmarks/marginal_scale.py --models mst,aim --rows 1,10,100 --sources numpy,duckdb-file
    python benchmarks/marginal_scale.py --models mst --schema dp --sources numpy,duckdb-file
    python benchmarks/marginal_scale.py --models mst --schema dp --format csv --sources numpy,duckdb-file

Measured 2026-11-25 on 2 CPU cores: see the README ("Select-measure-generate", scale).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import pandas as pd
from dpsynth import datasets
from dpsynth.models import get_model_class
model, source, path, schema = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
schema = datasets.schema("adult") if schema == "public" else None
backend = source.split("-")[0]
t = time.perf_counter()
dtypes = "private" if path.endswith(".csv") and schema is None else "public"
if source.endswith("-file"):
    data = path
elif path.endswith(".csv"):
    from dpsynth._io import read_table
    data = read_table(path, as_text=dtypes == "private")
else:
    data = pd.read_parquet(path)
m = get_model_class(model)(backend=backend).fit(data, epsilon=1.0, delta=1e-5, schema=schema, seed=0, dtypes=dtypes)
fit = time.perf_counter() - t
from dpsynth.bench.worker import peak_rss_mb  # VmHWM: ru_maxrss carries the parent's peak
peak = peak_rss_mb()
print(json.dumps({"rows": int(round(m.metadata_.n_rows)), "fit_s": fit, "peak_mb": peak,
                  "epsilon": m.ledger_.epsilon()}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="mst,aim")
    parser.add_argument("--rows", default="1,10,100", help="replication factors of Adult's 32,561 rows")
    parser.add_argument("--sources", default="numpy,duckdb-file",
                        help="numpy, duckdb (a pandas frame counted there), duckdb-file, spark-file (a path)")
    parser.add_argument("--schema", default="public", choices=["public", "dp"],
                        help="Adult's public schema, or none (DP discovery: in the engine for a *-file source)")
    parser.add_argument("--format", default="parquet", choices=["parquet", "csv"], help="the files written")
    args = parser.parse_args()
    import pandas as pd

    from dpsynth import datasets

    train = datasets.load("adult").train
    print(f"schema: {args.schema}, files: {args.format}")
    print(f"{'model':9s} {'source':11s} {'rows (DP)':>10s} {'fit_s':>8s} {'peak_mb':>8s} {'epsilon':>8s}")
    with tempfile.TemporaryDirectory() as folder:
        files = {}
        for k in args.rows.split(","):
            files[k] = Path(folder) / f"adult_x{k}.{args.format}"
            replicated = pd.concat([train] * int(k), ignore_index=True)
            if args.format == "csv":
                replicated.to_csv(files[k], index=False)
            else:
                replicated.to_parquet(files[k])
            del replicated
        for model in args.models.split(","):
            for source in args.sources.split(","):
                for k, path in files.items():
                    run = subprocess.run([sys.executable, "-c", _CHILD, model, source, str(path), args.schema],
                                         capture_output=True, text=True)
                    if run.returncode != 0:
                        print(f"{model:9s} {source:11s} x{k:>9s} failed: {run.stderr.strip().splitlines()[-1]}")
                        continue
                    r = json.loads(run.stdout.strip().splitlines()[-1])
                    print(f"{model:9s} {source:11s} {r['rows']:10d} {r['fit_s']:8.1f} {r['peak_mb']:8.0f} "
                          f"{r['epsilon']:8.3f}", flush=True)


if __name__ == "__main__":
    main()
