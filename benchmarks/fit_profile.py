"""Where a select-measure-generate fit spends its time, and whether a change kept its selections.

Fits ``--model`` (``batch-aim``, ``aim`` or ``mst``) on ``--dataset`` at ``--epsilon`` with the bench's public schema
and train split, and prints the fit's wall and CPU seconds, its rounds and final model cells, the seconds spent in
the graphical model's estimates, in its marginals of attribute sets (``project``: AIM's quality scores and the
round-change test) and in junction-tree sizes (AIM's model-size filter), and two fingerprints: of the selected
marginals in the budget summary and of ``sample(2000, seed=1)``. Two versions of the code that print the same
fingerprints made the same choices (run each with its own ``PYTHONPATH``, side by side, one core each).

Run: ``python benchmarks/fit_profile.py --dataset king --epsilon 1 --seed 2`` (file datasets need DPSYNTH_DATA).

Measured 2026-12-05 (King County, epsilon 1, seed 2, ``batch-aim``; two versions side by side, one core each, by
the ad-hoc script this one was written from): 281 s before the walk's ``np.einsum`` contraction, 250 s with it, the
same fingerprints.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import defaultdict

from dpsynth.bench.spec import parse_spec
from dpsynth.bench.worker import prepare_data
from dpsynth.marginals.graphical_model import MarkovRandomField
from dpsynth.models import aim as aim_module
from dpsynth.models import get_model_class


def _timed(seconds: dict, name: str, function):
    """``function`` that adds its wall time to ``seconds[name]`` (outermost call only, so recursion counts once)."""
    depth = [0]

    def wrapper(*args, **kwargs):
        depth[0] += 1
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                seconds[name] += time.perf_counter() - start

    return wrapper


def profile(model: str, name: str, epsilon: float, seed: int) -> dict:
    # exactly the bench's train split and public schema, from the bench's own loader
    spec = parse_spec({"name": "fit-profile", "models": [model], "datasets": [name], "epsilons": [epsilon],
                       "seeds": [seed], "schema": "public"})
    train, _, schema, _ = prepare_data(spec.runs[0])
    seconds: dict[str, float] = defaultdict(float)
    patched = [(MarkovRandomField, "estimate"), (MarkovRandomField, "project"), (aim_module, "tree_size")]
    originals = [getattr(owner, attr) for owner, attr in patched]
    for (owner, attr), original in zip(patched, originals):
        setattr(owner, attr, _timed(seconds, attr, original))
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        fitted = get_model_class(model)().fit(train, epsilon=epsilon, delta=1e-5, schema=schema, seed=seed)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        for (owner, attr), original in zip(patched, originals):
            setattr(owner, attr, original)
    phases = list(fitted.budget_["phases"].values())
    phase = next((p for p in phases if isinstance(p, dict) and "selected" in p), phases[-1])
    sample = fitted.sample(2000, seed=1)
    return {"model": model, "dataset": name, "epsilon": epsilon, "seed": seed, "fit_s": round(wall, 1),
            "cpu_s": round(cpu, 1), "rounds": phase.get("rounds"), "model_cells": phase.get("model_cells"),
            **{f"{k}_s": round(v, 1) for k, v in sorted(seconds.items())},
            "selected": hashlib.md5(json.dumps(phase.get("selected"), default=str).encode()).hexdigest()[:10],
            "sample": hashlib.md5(sample.to_csv().encode()).hexdigest()[:10]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="batch-aim")
    parser.add_argument("--dataset", default="king")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    row = profile(args.model, args.dataset, args.epsilon, args.seed)
    width = max(len(k) for k in row)
    for key, value in row.items():
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
