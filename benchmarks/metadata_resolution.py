"""What the DP metadata's grid costs the numbers (issue 18): decile TVD of each numeric column after its rows are
cut into a model's cells and drawn back, on every table of the generality registry.

The select-measure-generate models (``aim``, ``batch-aim``, ``mst``) count rows in cells built from the metadata
phase's DP histograms (:class:`dpsynth.marginals.domain.Discretizer`) and decode cells back into numbers from those
histograms. A perfect model reproduces the cells exactly, so encoding the real rows and decoding them again measures
what the grid alone loses: the floor no model on this engine can go below. No model is trained, so many seeds are
cheap. Per table (public schema from the training split, as ``generality.py --schema public``; ``--schema none``:
DP discovery from the pandas dtypes) it prints the mean over seeds of

- ``tvd1``: the mean 1-way TVD over the numeric columns, each cut at the real deciles (ties merged);
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


def decile_tvd(real: pd.Series, decoded: pd.Series) -> float:
    from dpsynth.evaluation.unsupervised import decile_bins

    a, b = decile_bins(real, decoded, "numeric")
    p = pd.Series(a).value_counts(normalize=True)
    q = pd.Series(b).value_counts(normalize=True)
    return float(0.5 * p.sub(q, fill_value=0.0).abs().sum())


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
    tvds = {c.name: decile_tvd(typed[c.name], decoded[c.name]) for c in schema.columns if c.is_numeric}
    zooms = sum(e.mechanism.startswith("zoom") for e in ledger.entries)
    return {"tvds": tvds, "zooms": zooms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default=",".join(TABLES))
    parser.add_argument("--schema", default="public", choices=("public", "none"))
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    print(f"{'table':16}{'numeric':>8}{'tvd1':>8}{'zooms':>7}  worst")
    means = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.tables.split(","):
            runs = [run_table(name, args.schema, args.epsilon, seed, Path(tmp)) for seed in range(args.seeds)]
            per_column = pd.DataFrame([r["tvds"] for r in runs]).mean()
            if per_column.empty:
                print(f"{name:16}{0:>8}{'-':>8}{0:>7}")
                continue
            tvd1 = float(per_column.mean())
            means.append(tvd1)
            zooms = np.mean([r["zooms"] for r in runs])
            print(f"{name:16}{len(per_column):>8}{tvd1:>8.4f}{zooms:>7.1f}  {per_column.idxmax()} "
                  f"{per_column.max():.3f}", flush=True)
    print(f"mean over tables: {np.mean(means):.4f}")


if __name__ == "__main__":
    main()
