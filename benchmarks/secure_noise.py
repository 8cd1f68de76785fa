"""What secure noise costs: models fitted with the default noise and with ``noise="secure"`` (OpenDP's count noise
and selections; the training models' noise and Poisson batches from the system's cryptographic generator).

For each model, schema mode and noise, on the official Adult split at the given epsilon (delta = 1e-5), fit, sample
the DP row count and print the mean ± std over seeds of

- ``fit_s``: fit time (OpenDP's exact samplers draw each noisy cell and selection one by one; a DP-SGD step's noise
  is four Box-Muller normals a coordinate from ``os.urandom``);
- ``eps``: the ledger's epsilon (the counts' discrete Gaussians are recorded as such and compose by PLD as the
  continuous ones do; until 2026-12-08 secure fits composed by RDP only, which cost DP-SGD about 9% more noise);
- ``xgb_auc``, ``xgb_acc``: XGBoost trained on the synthetic rows, tested on adult.test;
- ``tvd2``: mean 2-way TVD at the real deciles (``adult_quality.marginal_tvd``);

with ``--schema public`` (the shipped schema: only the row count and the histograms are metadata queries) and
``--schema none`` (DP discovery: bounds, profiles and partition selection, all noised by OpenDP in secure mode).

Example::

    python benchmarks/secure_noise.py --models marginals,mst,aim,batch-aim --seeds 0,1,2
    python benchmarks/secure_noise.py --models dp-tldm,dp-auto-gan,dp-vae,pate-gan,dp-syn --schema public
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from adult_quality import marginal_tvd, utility  # noqa: E402

COLUMNS = ("fit_s", "eps", "xgb_auc", "xgb_acc", "tvd2")


def run(model: str, schema_mode: str, noise: str, seed: int, epsilon: float, train, test) -> dict[str, float]:
    from dpsynth.datasets import schema as dataset_schema
    from dpsynth.models import get_model_class

    fitted = get_model_class(model)()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted.fit(train, epsilon=epsilon, delta=1e-5, seed=seed, noise=noise,
                   schema=dataset_schema("adult") if schema_mode == "public" else None)
    fit_s = time.perf_counter() - t0
    synth = fitted.sample(seed=seed + 1000)  # the DP row count
    scores = utility(synth, test, seed=seed)
    return {"fit_s": fit_s, "eps": fitted.ledger_.epsilon(), "xgb_auc": scores["xgb_auc"],
            "xgb_acc": scores["xgb_acc"], "tvd2": marginal_tvd(train, synth)["tvd2"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="marginals,mst,aim,batch-aim")
    parser.add_argument("--schema", default="public,none", help="comma-separated: public, none")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    from dpsynth.datasets import load

    train, test = load("adult").split()
    seeds = [int(s) for s in args.seeds.split(",")]
    lines = []
    for model, schema_mode in itertools.product(args.models.split(","), args.schema.split(",")):
        for noise in ("numpy", "secure"):
            runs = [run(model, schema_mode, noise, seed, args.epsilon, train, test) for seed in seeds]
            for seed, r in zip(seeds, runs):
                print(f"  {model} schema={schema_mode} noise={noise} seed={seed}: "
                      + ", ".join(f"{k} {v:.4f}" for k, v in r.items()), flush=True)
            cells = " | ".join(f"{np.mean([r[c] for r in runs]):.4f} ± {np.std([r[c] for r in runs], ddof=1):.4f}"
                               if len(runs) > 1 else f"{runs[0][c]:.4f}" for c in COLUMNS)
            lines.append(f"| {model} | {schema_mode} | {noise} | {cells} |")
    print(f"\nAdult, epsilon {args.epsilon:g}, delta 1e-5, seeds {args.seeds}\n")
    print("| model | schema | noise | " + " | ".join(COLUMNS) + " |")
    print("|---|---|---|" + "---|" * len(COLUMNS))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
