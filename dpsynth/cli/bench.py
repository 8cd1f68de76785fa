"""CLI subcommand ``dpsynth bench`` (registered by :mod:`dpsynth.cli.main`; issue 22).

``dpsynth bench SPEC.yaml --results results.duckdb [--workers N] [--executor local|ray|ray://host:port]
[--threads T] [--retry-failed] [--quiet]`` runs every run of the spec that the results file does not hold yet (see
:mod:`dpsynth.bench`). ``dpsynth bench --paper NAME --results R.duckdb [--datasets ...] [--seeds ...] [--models
...]`` runs a seed paper's grid the same way and prints ours beside its numbers (:mod:`dpsynth.bench.papers`).
``dpsynth bench report results.duckdb [--html report.html] [--metric NAME[:SUBJECT] ...] [--markdown]`` prints the
summary table (mean ± std over seeds) and the runs that did not finish, and writes the HTML page with plots.
"""

from __future__ import annotations

import argparse

from dpsynth.errors import InputError

__all__ = ["add_parsers", "run_bench_command"]


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bench", help="run a benchmark grid from a YAML spec, or report on its results",
                              description="dpsynth bench SPEC.yaml --results R.duckdb | dpsynth bench report "
                                          "R.duckdb [--html OUT.html]")
    p.add_argument("target", nargs="?", help="a spec file (YAML), or 'report'")
    p.add_argument("results_file", nargs="?", help="with 'report': the results file")
    p.add_argument("--results", help="results file (DuckDB) to add runs to; created if missing")
    p.add_argument("--workers", type=int, default=1, help="runs at a time (each gets cores // workers threads)")
    p.add_argument("--threads", type=int, help="threads per run (default: cores // workers)")
    p.add_argument("--executor", default="local", help="'local' (default), 'ray' (local mode) or 'ray://host:port'")
    p.add_argument("--retry-failed", action="store_true", help="run again the runs recorded as failed / timeout")
    p.add_argument("--html", help="with 'report': write the HTML page here")
    p.add_argument("--metric", action="append", default=[], help="with 'report': add a metric of the evaluation "
                   "table to the summary: NAME (mean over its subjects) or NAME:SUBJECT (e.g. "
                   "ml_efficacy.auc.synthetic:lr)")
    p.add_argument("--markdown", action="store_true", help="with 'report': print the summary as a Markdown table")
    p.add_argument("--paper", help="run a seed paper's grid and print ours beside its numbers: dp-tldm, "
                   "dp-auto-gan, unified, dtgan or dp-sactgan")
    p.add_argument("--datasets", help="with --paper: a subset of its datasets (comma-separated)")
    p.add_argument("--seeds", help="with --paper: seeds (comma-separated; default the paper's, or 0, 1, 2)")
    p.add_argument("--models", help="with --paper: a subset of its models (comma-separated)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_bench_command)


def _list(text: str | None) -> list[str] | None:
    return [x for x in text.split(",") if x] if text else None


def run_bench_command(args) -> int:
    if args.target == "report":
        return _report(args)
    from dpsynth.bench import load_spec, run_bench

    if not args.results:
        raise InputError("dpsynth bench needs --results FILE.duckdb (where the runs are recorded).")
    if args.results_file:
        raise InputError(f"dpsynth bench SPEC takes one spec file. Found also {args.results_file!r}; "
                         f"use --results for the results file.")
    if args.paper:
        return _paper(args)
    if not args.target:
        raise InputError("dpsynth bench needs a spec file (or --paper NAME, or 'report R.duckdb').")
    spec = load_spec(args.target)
    counts = run_bench(spec, args.results, workers=args.workers, executor=args.executor,
                       retry_failed=args.retry_failed, threads=args.threads, progress=not args.quiet)
    print("finished: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) +
          f" -> {args.results}")
    return 0


def _paper(args) -> int:
    import pandas as pd

    from dpsynth.bench import run_bench
    from dpsynth.bench.papers import PAPERS, compare, paper_spec
    from dpsynth.bench.store import ResultStore

    if args.target:
        raise InputError(f"--paper runs the paper's own grid; drop the spec file {args.target!r}.")
    try:
        seeds = None if args.seeds is None else [int(s) for s in _list(args.seeds)]
    except ValueError:
        raise InputError(f"--seeds takes integers separated by commas. Found {args.seeds!r}.") from None
    spec = paper_spec(args.paper, datasets=_list(args.datasets), seeds=seeds, models=_list(args.models))
    print(f"{PAPERS[args.paper].title}: {len(spec.runs)} runs")
    run_bench(spec, args.results, workers=args.workers, executor=args.executor, retry_failed=args.retry_failed,
              threads=args.threads, progress=not args.quiet)
    with ResultStore(args.results, read_only=True) as store:
        runs, metrics = store.runs(), store.metrics()
    keys = {run.key for run in spec.runs}
    table = compare(args.paper, runs[runs["key"].isin(keys)], metrics)
    with pd.option_context("display.width", 220, "display.max_columns", 50):
        print("ours (paper):")
        print(table.to_string(index=False) if not table.empty else "no finished run")
    return 0


def _report(args) -> int:
    import pandas as pd

    from dpsynth.bench.report import failures, markdown, summary, write_html
    from dpsynth.bench.store import ResultStore

    if not args.results_file:
        raise InputError("dpsynth bench report needs the results file: dpsynth bench report R.duckdb")
    with ResultStore(args.results_file, read_only=True) as store:
        runs, metrics = store.runs(), store.metrics()
    table = summary(runs, metrics, args.metric)
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        if table.empty:
            print("no run recorded")
        else:
            print(markdown(table) if args.markdown else table.to_string(index=False))
        bad = failures(runs)
        if not bad.empty:
            print("\nruns that did not finish:")
            print(bad.to_string(index=False))
    if args.html:
        write_html(args.html, runs, metrics, extra=args.metric)
        print(f"report -> {args.html}")
    return 0
