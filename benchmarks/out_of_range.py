"""Synthetic numbers outside the real column's range, for fits without a schema (DP discovery's decade bounds).

DP discovery bounds a numeric column by whole decades, so California's latitudes (32.5-42) get [10, 100] and its
longitudes [-1000, -100]; a model that draws numbers by the noise of the empty bins out there writes latitudes of 10
and longitudes of -988. Per table and model, each fitted as ``dpsynth fit FILE.csv`` does (the training split of
``generality.py`` written to CSV, every cell read as text, ``dtypes="private"``), it prints the mean over seeds of

- ``outside``: the share of synthetic numbers outside the real training column's [min, max], averaged over the
  numeric columns the model kept;
- ``worst``: the column with the largest share, and that share.

Run it on two commits to compare::

    DPSYNTH_DATA=../shared/datasets python benchmarks/out_of_range.py --tables housing,king --models batch-aim,marginals

A table ending in ``.csv`` is a file of yours, fitted whole (no split); statsmodels' co2 series, for instance
(README "A zoom's window holds rows as a block")::

    python -c "import statsmodels.api as sm; sm.datasets.co2.load_pandas().data.to_csv('co2.csv', index=False)"
    python benchmarks/out_of_range.py --tables co2.csv --models mst,aim,batch-aim,marginals
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generality import as_csv_reads, load_split  # noqa: E402
from metadata_resolution import outside  # noqa: E402


def outside_shares(real: pd.DataFrame, synthetic: pd.DataFrame) -> dict[str, float]:
    """Per numeric column of ``real`` that ``synthetic`` kept: the share of its synthetic numbers outside the real
    [min, max] (:func:`metadata_resolution.outside`)."""
    return {name: outside(real[name], synthetic[name]) for name in real.columns
            if name in synthetic and pd.api.types.is_numeric_dtype(real[name]) and real[name].notna().any()}


def run(table: str, model: str, epsilon: float, seed: int, folder: Path) -> dict[str, float]:
    from dpsynth.models import get_model_class

    if table.endswith(".csv"):
        from dpsynth._io import read_table

        train = read_table(table)  # a file of yours: every row
    else:
        train, _ = load_split(table, seed)
    text, typed = as_csv_reads(train, folder, f"{Path(table).stem}-{seed}")
    fitted = get_model_class(model)()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted.fit(text, epsilon=epsilon, delta=1e-5, seed=seed, dtypes="private", progress=False)
    return outside_shares(typed, fitted.sample(seed=seed))  # the DP row count, as a release would


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="housing,king")
    parser.add_argument("--models", default="batch-aim,marginals")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    print(f"{'table':10}{'model':12}{'outside':>9}  worst")
    with tempfile.TemporaryDirectory() as tmp:
        for table in args.tables.split(","):
            for model in args.models.split(","):
                runs = pd.DataFrame([run(table, model, args.epsilon, seed, Path(tmp)) for seed in range(args.seeds)])
                per_column = runs.mean()
                print(f"{Path(table).stem:10}{model:12}{per_column.mean():>9.4f}  {per_column.idxmax()} "
                      f"{per_column.max():.4f}",
                      flush=True)


if __name__ == "__main__":
    main()
