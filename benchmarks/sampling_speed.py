"""Sampling throughput (issue 19: >= 100,000 rows/s): rows per second of ``model.sample(n)`` end to end (generator,
decoding, marginal map, dtypes) for models fitted on Adult's train split (public schema, epsilon 1).

The fits are cut short (one epoch, a few steps: ``--param`` overrides): throughput depends on the network's size and
the decoder, which training length does not change. Each model is timed at 1 and 2 torch threads, best of
``--repeats`` runs after a warm-up.

    python benchmarks/sampling_speed.py --models dtgan-d,dtgan-g,dp-sactgan,dp-tldm,dp-auto-gan,mst --rows 200000

``--load A.dpsynth B.dpsynth`` times saved models instead of fitting: the same files timed with ``PYTHONPATH`` on a
checkout of each of two commits compare their samplers back to back (the README's before / after figures).
"""

from __future__ import annotations

import argparse
import time
import warnings

#: short fits: the sampler's cost does not depend on how long the model trained
SHORT_FIT = {
    "dtgan-d": {"gan_epochs": 1, "classifier_epochs": 1},
    "dtgan-g": {"generator_steps": 5, "classifier_epochs": 1},
    "dp-sactgan": {"generator_steps": 5, "classifier_epochs": 1},
    "dp-tldm": {"vae_epochs": 1, "diffusion_epochs": 1},
    "dp-auto-gan": {"autoencoder_epochs": 1, "gan_epochs": 1},
    "mst": {"iterations": 50},
    "aim": {"iterations": 50, "round_iterations": 20},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="dtgan-d,dtgan-g,dp-sactgan,dp-tldm,dp-auto-gan,mst")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--load", nargs="+", default=None, metavar="MODEL_FILE",
                        help="time these saved models instead of fitting --models")
    args = parser.parse_args()
    import torch

    from dpsynth import datasets
    from dpsynth.models import get_model_class, load_model

    warnings.simplefilter("ignore")
    print(f"{args.rows:,} rows per sample() call, best of {args.repeats}")
    print(f"{'model':12s} {'threads':>7s} {'rows/s':>10s} {'fit_s':>7s}")
    if args.load:
        fitted = ((load_model(path), float("nan")) for path in args.load)
    else:
        bundle = datasets.load("adult")

        def fit(name):
            t = time.perf_counter()
            model = get_model_class(name)(**SHORT_FIT.get(name, {})).fit(
                bundle.train, epsilon=1.0, delta=1e-5, schema=bundle.schema, seed=0, progress=False)
            return model, time.perf_counter() - t

        fitted = (fit(name) for name in args.models.split(","))
    for model, fit_s in fitted:
        name = model.name
        for threads in (int(k) for k in args.threads.split(",")):
            torch.set_num_threads(threads)
            model.sample(5_000, seed=0)  # warm-up
            best = float("inf")
            for r in range(args.repeats):
                t = time.perf_counter()
                out = model.sample(args.rows, seed=r + 1)
                best = min(best, time.perf_counter() - t)
            assert len(out) == args.rows
            print(f"{name:12s} {threads:7d} {args.rows / best:10,.0f} {fit_s:7.1f}", flush=True)


if __name__ == "__main__":
    main()
