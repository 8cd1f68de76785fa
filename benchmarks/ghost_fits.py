"""Whole-model fit times with exact per-example gradients against ghost clipping (issue 23), same seeds, Adult.

Each (model, seed) is fitted twice at epsilon 1 on the official Adult split with the shipped schema: once with every
DP-SGD engine forced to the exact ``torch.func`` path (:func:`dpsynth.privacy.dpsgd.per_example_method`), once with
the default (``auto``: ghost clipping where it applies). Printed: fit seconds and XGBoost AUC trained on synthetic
rows and tested on the real test split (quality must not change beyond the seeds' spread: both paths compute the
same clipped sum; the noise draws and float rounding differ).

    python benchmarks/ghost_fits.py --models dp-tldm,dp-auto-gan --seeds 0,1 --threads 2
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd


def main() -> None:
    import torch

    import dpsynth
    from dpsynth.privacy.dpsgd import per_example_method

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="dp-tldm,dp-auto-gan")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    data = dpsynth.datasets.load("adult")
    rows = []
    for name in args.models.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            for method in ("exact", "auto"):
                with per_example_method(method):
                    start = time.perf_counter()
                    model = dpsynth.get_model_class(name)().fit(data.train, epsilon=args.epsilon, delta=1e-5,
                                                                schema=data.schema, seed=seed)
                    fit_s = time.perf_counter() - start
                synthetic = model.sample(seed=seed)
                table = dpsynth.evaluate(data.train, synthetic, real_test=data.test, schema=data.schema,
                                         metrics=["ml_efficacy"], seeds=(0,), executor="sequential").table
                auc = table[(table.metric == "ml_efficacy.auc.synthetic") & (table.subject == "xgb")]["value"]
                rows.append({"model": name, "seed": seed, "method": method, "fit_s": fit_s,
                             "auc": float(auc.iloc[0]), "epsilon": model.ledger_.epsilon()})
                print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    summary = table.groupby(["model", "method"]).agg(fit_s=("fit_s", "mean"), auc=("auc", "mean"),
                                                     auc_sd=("auc", lambda v: float(np.std(v))))
    print()
    print(summary.round(3).to_string())


if __name__ == "__main__":
    main()
