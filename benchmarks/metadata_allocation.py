"""Metadata allocation benchmark (issue 16, item 3): what DP discovery releases on real tables, over seeds.

For each table of the generality benchmark's registry, the training split (80%, seeded as there) is discovered
without a schema, as ``dpsynth fit FILE.csv`` does (``dtypes="private"``: every cell read as text) and, with
``--dtypes public``, from the pandas-typed frame. No model is trained: this measures the metadata phase alone, so
many seeds are cheap. Per table it prints the means over seeds of

- ``kept``: columns kept (of all); ``cats``: text values released (over all kept text columns);
- ``sigma``: the noise sd of the stage-2 histograms (lower is better: what the allocation left for them);
- ``tvd1``: the mean 1-way total variation distance between each kept column's DP histogram (its released cells:
  categories, "other", bins, special values, missing) and the real column on the same cells;
- ``refused``: seeds on which the pre-flight estimate refused the table;
- ``q_sd``: the noise sd of the row-count query; ``n_sd``: that of the DP row count the phase releases (the query
  pooled with the row totals of the histograms that count every row: :func:`dpsynth.data.metadata.pooled_count`);
  ``n_rms``: the released count's RMS error over the seeds (measured against the table's true size).

``--dtypes schema`` resolves the bench's public schema instead (``dpsynth bench``'s ``schema: public``: the schema
dpsynth ships for the dataset, else the one ``schema infer`` proposes, taken as public; no discovery): the ``kept``,
``cats`` and ``tvd1`` columns then describe that schema's histograms.

Run it on two commits to compare allocations (the numbers below are from the same seeds)::

    DPSYNTH_DATA=../shared/datasets python benchmarks/metadata_allocation.py --seeds 10

Measured 2026-11-25 (10 seeds, epsilon 1, share 0.1, private dtypes); before = equal sigma for every query, after =
the two-stage allocation (profiles, then histograms with what is left): see the README ("Metadata allocation").
The row count columns: README "The DP row count" (2026-12-07).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generality import TABLES, as_csv_reads, load_split  # noqa: E402


def real_cells(series: pd.Series, col, hist) -> np.ndarray:
    """The real column's counts on the cells of its DP histogram (same order as ``hist``'s noisy counts)."""
    from dpsynth.data.discovery import numeric_counts
    from dpsynth.data.frame import categorical_codes
    from dpsynth.data.metadata import CategoricalHistogram

    if isinstance(hist, CategoricalHistogram):
        codes = categorical_codes(series, col.categories, col.other, unknown_as_missing=col.unknown_as_missing)
        counts = np.bincount(codes[codes >= 0], minlength=len(col.categories)).astype(float)
        return np.append(counts, float((codes < 0).sum()))
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
    values = np.where(np.isnan(values), np.nan, np.clip(values, hist.edges[0], hist.edges[-1]))
    counts, specials, missing = numeric_counts(values, hist.edges, tuple(hist.special_counts))
    return np.concatenate([counts, specials, [missing]]).astype(float)


def dp_cells(hist) -> np.ndarray:
    from dpsynth.data.metadata import CategoricalHistogram

    if isinstance(hist, CategoricalHistogram):
        return np.append(hist.counts, hist.missing)
    return np.concatenate([hist.counts, list(hist.special_counts.values()), [hist.missing]])


def tvd(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.clip(a, 0, None), np.clip(b, 0, None)
    if a.sum() <= 0 or b.sum() <= 0:
        return 1.0
    return float(0.5 * np.abs(a / a.sum() - b / b.sum()).sum())


def run(frame: pd.DataFrame, *, dtypes: str, epsilon: float, share: float, seed: int, public=None) -> dict:
    """One metadata phase: DP discovery with ``dtypes``, or with ``public`` (a Schema) that schema's release."""
    from dpsynth.data.discovery import prepare_private_text, resolve_schema
    from dpsynth.errors import InputError
    from dpsynth.privacy.ledger import PrivacyLedger

    ledger = PrivacyLedger(target_epsilon=epsilon, target_delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            schema, meta = resolve_schema(frame, public, ledger=ledger, share=share, rng=np.random.default_rng(seed),
                                          dtypes="public" if public is not None else dtypes)
        except InputError:
            return {"refused": 1}
    data = prepare_private_text(frame, schema) if dtypes == "private" else frame
    q_sd = next(e.params["sigma"] for e in ledger.entries if e.mechanism == "row count")
    rows = {"q_sd": q_sd, "n_sd": meta.n_rows_sd, "n_err2": (meta.n_rows - len(frame)) ** 2}
    tvds, cats = [], 0
    for col in schema.columns:
        hist = meta.histograms[col.name]
        tvds.append(tvd(dp_cells(hist), real_cells(data[col.name], col, hist)))
        if col.is_discrete:
            cats += len(col.categories) - (col.other is not None)
    return {"refused": 0, "kept": len(schema.columns), "cats": cats, "sigma": meta.sigma,
            "tvd1": float(np.mean(tvds)), **rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", default=",".join(TABLES))
    parser.add_argument("--dtypes", default="private", choices=("private", "public", "schema"))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--metadata-share", type=float, default=0.1)
    args = parser.parse_args()
    print(f"{'table':16s} {'rows':>6s} {'cols':>4s} {'kept':>6s} {'cats':>6s} {'sigma':>7s} {'tvd1':>6s} refused "
          f"{'q_sd':>7s} {'n_sd':>7s} {'n_rms':>7s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.tables.split(","):
            public = None
            if args.dtypes == "schema":
                from types import SimpleNamespace

                from dpsynth.bench.worker import prepare_data

                train, _, public, _ = prepare_data(SimpleNamespace(path=None, dataset=name, rows=None,
                                                                   schema="public"))
                frame = train
            else:
                train, _ = load_split(name, 0)
                text, typed = as_csv_reads(train, Path(tmp), name)
                frame = text if args.dtypes == "private" else typed
            runs = [run(frame, dtypes=args.dtypes, epsilon=args.epsilon, share=args.metadata_share, seed=s,
                        public=public) for s in range(args.seeds)]
            done = [r for r in runs if not r["refused"]]

            def mean(key):
                return float(np.mean([r[key] for r in done])) if done else float("nan")

            print(f"{name:16s} {len(train):6d} {train.shape[1]:4d} {mean('kept'):6.1f} {mean('cats'):6.1f} "
                  f"{mean('sigma'):7.1f} {mean('tvd1'):6.3f} {len(runs) - len(done):3d}/{len(runs)} "
                  f"{mean('q_sd'):7.1f} {mean('n_sd'):7.1f} {np.sqrt(mean('n_err2')):7.1f}", flush=True)


if __name__ == "__main__":
    main()
