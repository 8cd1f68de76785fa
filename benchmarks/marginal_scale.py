"""Cost of the select-measure-generate models against the number of rows (issue 18): Adult's train split replicated
(32,561 x k rows, public schema, epsilon 1), each fit in a fresh process so that its peak memory is its own.

Prints one row per (model, backend, rows): fit seconds, peak resident memory of the process (the frame itself
included: the fit takes a pandas DataFrame), and the ledger epsilon. With ``--backend duckdb`` the count tables are
computed by DuckDB (SQL ``GROUP BY`` over a table of cell codes it holds) instead of NumPy.

    python benchmarks/marginal_scale.py --models mst,aim --rows 1,10,100 --backends numpy,duckdb

Measured 2026-11-25 on 2 CPU cores: see the README ("Select-measure-generate", scale).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

_CHILD = r"""
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
import pandas as pd
from dpsynth import datasets
from dpsynth.models import get_model_class
model, backend, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = datasets.load("adult")
train = pd.concat([d.train] * k, ignore_index=True)
params = {"backend": backend}
t = time.perf_counter()
m = get_model_class(model)(**params).fit(train, epsilon=1.0, delta=1e-5, schema=d.schema, seed=0)
fit = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rows": len(train), "fit_s": fit, "peak_mb": peak, "epsilon": m.ledger_.epsilon()}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="mst,aim")
    parser.add_argument("--rows", default="1,10,100", help="replication factors of Adult's 32,561 rows")
    parser.add_argument("--backends", default="numpy,duckdb")
    args = parser.parse_args()
    print(f"{'model':6s} {'backend':8s} {'rows':>10s} {'fit_s':>8s} {'peak_mb':>8s} {'epsilon':>8s}")
    for model in args.models.split(","):
        for backend in args.backends.split(","):
            for k in args.rows.split(","):
                run = subprocess.run([sys.executable, "-c", _CHILD, model, backend, k], capture_output=True, text=True)
                if run.returncode != 0:
                    print(f"{model:6s} {backend:8s} x{k:>9s} failed: {run.stderr.strip().splitlines()[-1]}")
                    continue
                r = json.loads(run.stdout.strip().splitlines()[-1])
                print(f"{model:6s} {backend:8s} {r['rows']:10d} {r['fit_s']:8.1f} {r['peak_mb']:8.0f} "
                      f"{r['epsilon']:8.3f}", flush=True)


if __name__ == "__main__":
    main()
