"""How fast the graphical model's estimation converges: mirror descent against the accelerated method, on the
final estimate of a real ``batch-aim`` fit.

Fits ``batch-aim`` on ``--dataset`` at ``--epsilon`` (the bench's public schema and train split), keeps the inputs of
its last estimate (the model's cliques, the warm-start potentials, every DP measurement), and re-runs that estimate
with each method for ``--iterations`` steps from the same start. Prints, per method and checkpoint: seconds, the
Gaussian loss above the lowest loss any run reached, and the largest / mean TVD of the measured marginals from that
best run's. Everything it reads is DP output: the measurements and the DP row count.

Run: ``python benchmarks/estimation_speed.py --dataset cardio --epsilon 3 [--seed 0] [--iterations 1000]``
(file datasets need DPSYNTH_DATA).

Measured 2026-12-05 by this procedure in the scripts it was written from, seed 0, the other core busy::

    cardio eps 3 (543,974 cells, 62 measurements): mirror 1000 steps 48 s, loss +85 over the best (4,000 mirror
      steps: +35); accelerated 300 steps 12 s +24, 1000 steps 45 s: the best.
    adult eps 1 (1,303,068 cells, 74 measurements): mirror 1000 steps 117 s, loss +53 (3,000 steps: +19);
      accelerated 300 steps 27 s: +12, 1000 steps 131 s: the best.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpsynth import datasets
from dpsynth.data.inference import infer_schema
from dpsynth.marginals import graphical_model
from dpsynth.marginals.graphical_model import MarkovRandomField
from dpsynth.models import get_model_class


def final_problem(name: str, epsilon: float, seed: int) -> dict:
    """The inputs of the last estimate of a ``batch-aim`` fit (the one with the most iterations)."""
    captured: list[dict] = []
    original = MarkovRandomField.estimate

    def capture(self, measurements, iterations=500, **kwargs):
        captured.append(dict(sizes=list(self.sizes), cliques=list(self.cliques), total=self.total,
                             theta={c: t.copy() for c, t in self.theta.items()}, measurements=list(measurements),
                             iterations=iterations))
        return original(self, measurements, iterations, **kwargs)

    data = datasets.load(name)
    train, _ = data.split(seed=0)
    if data.info.task == "classification" and train[data.target].dtype.kind in "iuf":
        train = train.assign(**{data.target: train[data.target].map(lambda v: f"class_{v}")})
    # the bench's public schema: the one dpsynth ships, or the one `dpsynth schema infer` proposes, taken as public
    schema = data.schema if data.schema is not None else infer_schema(train, target=data.target, warn=False).reviewed()
    graphical_model.MarkovRandomField.estimate = capture
    try:
        get_model_class("batch-aim")().fit(train, epsilon=epsilon, delta=1e-5, schema=schema, seed=seed)
    finally:
        graphical_model.MarkovRandomField.estimate = original
    return max(captured, key=lambda p: (p["iterations"], len(p["measurements"])))


def run(problem: dict, method: str, iterations: int, checkpoints: list[int]) -> list[tuple[int, float, float, dict]]:
    model = MarkovRandomField(problem["sizes"], problem["cliques"], problem["total"],
                              theta={c: t.copy() for c, t in problem["theta"].items()})
    cliques = list(dict.fromkeys(m.clique for m in problem["measurements"]))
    rows: list[tuple[int, float, float, dict]] = []
    start = time.perf_counter()

    def note(step: int, loss: float) -> None:
        if step + 1 in checkpoints:
            # the marginals the method would end on if stopped here (the accelerated one ends on its average)
            rows.append((step + 1, time.perf_counter() - start, loss, None))

    model.estimate(problem["measurements"], iterations=iterations, tol=0.0, method=method, callback=note)
    rows[-1] = (*rows[-1][:3], {c: model.project(c) for c in cliques})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="cardio")
    parser.add_argument("--epsilon", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=1000)
    args = parser.parse_args()
    problem = final_problem(args.dataset, args.epsilon, args.seed)
    size = MarkovRandomField(problem["sizes"], problem["cliques"], problem["total"]).size()
    print(f"{args.dataset} eps {args.epsilon:g} seed {args.seed}: {size:,} cells, "
          f"{len(problem['measurements'])} measurements, the fit ran {problem['iterations']} steps")
    checkpoints = [c for c in (30, 100, 300, 1000, 3000) if c < args.iterations] + [args.iterations]
    results = {method: run(problem, method, args.iterations, checkpoints) for method in ("mirror", "accelerated")}
    best_method = min(results, key=lambda m: results[m][-1][2])
    best_loss, best = results[best_method][-1][2], results[best_method][-1][3]
    total = problem["total"]
    print("| method | steps | seconds | ms/step | loss above the best | max / mean TVD to the best (final) |")
    print("|---|---|---|---|---|---|")
    for method, rows in results.items():
        for steps, secs, loss, marginals in rows:
            tvd = ""
            if marginals is not None:
                gaps = [0.5 * np.abs(marginals[c] - best[c]).sum() / total for c in best]
                tvd = f"{max(gaps):.5f} / {np.mean(gaps):.6f}"
            print(f"| {method} | {steps} | {secs:.1f} | {1e3 * secs / steps:.1f} | {loss - best_loss:.2f} | {tvd} |")


if __name__ == "__main__":
    main()
