"""What the DP metadata's grid costs the numbers (issue 18): decile TVD of each numeric column after its rows are
cut into a model's cells and drawn back, on every table of the generality registry.

The select-measure-generate models (``aim``, ``batch-aim``, ``mst``) count rows in cells built from the metadata
phase's DP histograms (:class:`dpsynth.marginals.domain.Discretizer`) and decode cells back into numbers from those
histograms. A perfect model reproduces the cells exactly, so encoding the real rows and decoding them again measures
what the grid alone loses: the floor no model on this engine can go below. No model is trained, so many seeds are
cheap. Per table (public schema from the training split, as ``generality.py --schema public``; ``--schema none``:
DP discovery from the pandas dtypes) it prints the mean over seeds of

- ``tvd1``: the mean 1-way TVD over the numeric columns, each cut at the real deciles (ties merged);
- ``tvd100``: the same cut at the real percentiles (the shape inside a decile);
- ``tail``: the mean over numeric columns of |share decoded above the real 99th percentile - share of real rows
  there| plus the same below the 1st percentile (a long tail filled by noise: King County's price);
- ``out``: the mean over numeric columns of the share of decoded numbers outside the real column's [min, max]
  (DP bounds are whole decades: California's latitudes 32.5-42 get [10, 100]);
- ``worst``: the worst numeric column and its TVD;
- ``zooms``: metadata zoom queries run (:func:`dpsynth.data.discovery.release_zooms`).

Run it on two commits to compare grids::

    DPSYNTH_DATA=../shared/datasets python benchmarks/metadata_resolution.py --epsilon 0.3 --seeds 3
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


def quantile_tvd(real: pd.Series, decoded: pd.Series, cuts: int = 10) -> float:
    """TVD of a numeric column cut at the real ``cuts``-quantiles (ties merged; missing values a cell)."""
    x = pd.to_numeric(real, errors="coerce").to_numpy(float)
    y = pd.to_numeric(decoded, errors="coerce").to_numpy(float)
    finite = x[np.isfinite(x)]
    inner = np.unique(np.quantile(finite, np.linspace(0, 1, cuts + 1)))[1:-1] if finite.size else np.zeros(0)
    p, q = (pd.Series(np.where(np.isnan(v), -1, np.searchsorted(inner, v, side="right"))).value_counts(normalize=True)
            for v in (x, y))
    return float(0.5 * p.sub(q, fill_value=0.0).abs().sum())


def _finite(real: pd.Series, decoded: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The finite numbers of both columns (text and missing values left out)."""
    x = pd.to_numeric(real, errors="coerce").to_numpy(float)
    y = pd.to_numeric(decoded, errors="coerce").to_numpy(float)
    return x[np.isfinite(x)], y[np.isfinite(y)]


def tail_error(real: pd.Series, decoded: pd.Series) -> float:
    """|share of decoded rows above the real 99th percentile - real share| + the same below the 1st."""
    x, y = _finite(real, decoded)
    if not x.size or not y.size:
        return 0.0
    lo, hi = np.quantile(x, [0.01, 0.99])
    return float(abs(np.mean(y > hi) - np.mean(x > hi)) + abs(np.mean(y < lo) - np.mean(x < lo)))


def outside(real: pd.Series, decoded: pd.Series) -> float:
    """Share of the decoded numbers outside the real column's [min, max]."""
    x, y = _finite(real, decoded)
    if not x.size or not y.size:
        return 0.0
    return float(np.mean((y < x.min()) | (y > x.max())))


def run_table(name: str, mode: str, epsilon: float, seed: int, folder: Path) -> dict:
    from dpsynth.data.discovery import resolve_schema
    from dpsynth.data.frame import conform
    from dpsynth.data.inference import infer_schema
    from dpsynth.datasets import REGISTRY
    from dpsynth.marginals.domain import Discretizer
    from dpsynth.privacy.ledger import PrivacyLedger

    train, _ = load_split(name, seed)
    _, typed = as_csv_reads(train, folder, f"{name}-train")
    schema = None if mode == "none" else infer_schema(typed, target=REGISTRY[name].target, warn=False).reviewed()
    ledger = PrivacyLedger(target_epsilon=epsilon, target_delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema, meta = resolve_schema(typed, schema, ledger=ledger, share=0.1, rng=np.random.default_rng(seed))
    cells = Discretizer.build(schema, meta)
    frame = conform(typed[list(schema.names)], schema)
    decoded = cells.decode(cells.encode(frame), np.random.default_rng(seed + 1000))
    numeric = [c.name for c in schema.columns if c.is_numeric]
    zooms = sum(e.mechanism.startswith("zoom") for e in ledger.entries)
    return {"tvds": {c: quantile_tvd(typed[c], decoded[c]) for c in numeric},
            "tvd100": {c: quantile_tvd(typed[c], decoded[c], 100) for c in numeric},
            "tails": {c: tail_error(typed[c], decoded[c]) for c in numeric},
            "out": {c: outside(typed[c], decoded[c]) for c in numeric}, "zooms": zooms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default=",".join(TABLES))
    parser.add_argument("--schema", default="public", choices=("public", "none"))
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    print(f"{'table':16}{'numeric':>8}{'tvd1':>8}{'tvd100':>8}{'tail':>8}{'out':>8}{'zooms':>7}  worst")
    means, fine, tails, outs = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.tables.split(","):
            runs = [run_table(name, args.schema, args.epsilon, seed, Path(tmp)) for seed in range(args.seeds)]
            per_column = pd.DataFrame([r["tvds"] for r in runs]).mean()
            if per_column.empty:
                print(f"{name:16}{0:>8}{'-':>8}{0:>7}")
                continue
            tvd1 = float(per_column.mean())
            tvd100 = float(pd.DataFrame([r["tvd100"] for r in runs]).mean().mean())
            tail = float(pd.DataFrame([r["tails"] for r in runs]).mean().mean())
            out = float(pd.DataFrame([r["out"] for r in runs]).mean().mean())
            means.append(tvd1)
            fine.append(tvd100)
            tails.append(tail)
            outs.append(out)
            zooms = np.mean([r["zooms"] for r in runs])
            print(f"{name:16}{len(per_column):>8}{tvd1:>8.4f}{tvd100:>8.4f}{tail:>8.4f}{out:>8.4f}{zooms:>7.1f}  "
                  f"{per_column.idxmax()} {per_column.max():.3f}", flush=True)
    print(f"mean over tables: tvd1 {np.mean(means):.4f}  tvd100 {np.mean(fine):.4f}  tail {np.mean(tails):.4f}  "
          f"out {np.mean(outs):.4f}")


if __name__ == "__main__":
    main()
