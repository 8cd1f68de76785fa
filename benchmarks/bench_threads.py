"""Why ``dpsynth bench`` gives each worker ``cores // workers`` threads (issue 22): the same grid of DP-SGD fits
run by 2 workers with 1 thread each, by 2 workers with every core each (oversubscribed), and by 1 worker with every
core, through ``dpsynth bench`` itself (each run its own process). Prints wall time of the grid and the mean fit
seconds per run.

    python benchmarks/bench_threads.py                       # dp-tldm, 4 fits on 8,000 Adult rows, epsilon 1
    python benchmarks/bench_threads.py --model dp-auto-gan --runs 4 --rows 8000

Run it on an idle machine: it measures contention for the cores.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import pandas as pd


def main() -> None:
    from dpsynth.bench import ResultStore, parse_spec, run_bench

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="dp-tldm")
    ap.add_argument("--runs", type=int, default=4, help="fits in the grid (seeds 0..runs-1)")
    ap.add_argument("--rows", type=int, default=8000)
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    spec = parse_spec({"name": "threads", "models": [args.model], "datasets": ["adult"], "epsilons": [1],
                       "seeds": list(range(args.runs)), "rows": args.rows, "metrics": ["unsupervised"]})
    rows = []
    for workers, threads in ((2, max(1, cores // 2)), (2, cores), (1, cores)):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.duckdb")
            start = time.perf_counter()
            run_bench(spec, path, workers=workers, threads=threads, progress=False, echo=lambda _: None)
            wall = time.perf_counter() - start
            with ResultStore(path, read_only=True) as store:
                runs = store.runs()
        rows.append({"workers": workers, "threads each": threads, "cores": cores, "grid s": round(wall, 1),
                     "fit s (mean)": round(float(runs["fit_s"].mean()), 1), "ok": int((runs["status"] == "ok").sum())})
        print(rows[-1], flush=True)
    print()
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
