"""Graph release benchmark (issue 21, seed 001 §2.5 / Fig. 5): DP degree-distribution releases on real graphs.

For each graph and epsilon, every method of :mod:`dpsynth.graphs` — edge-DP (Hay et al.'s sorted sequence with
constrained inference; the noisy histogram), node-DP (Day et al.'s edge-addition projection at each public
``theta`` of the grid) and the poster's DP-GAN over permuted adjacency matrices, honestly accounted (node
replacement, no amplification) — is run ``--reps`` times; the table gives mean and std of:

- ``l1``: seed 001's degree-distribution L1 error of the *release* against the true graph (0 is perfect, 2 the
  worst);
- ``edges``: seed 001's |E'|/|E| of the release (half the released degree sum over the true edge count);
- ``graph_l1`` / ``clust``: the L1 error and the average-clustering gap of a synthetic graph drawn from the
  release (configuration model, post-processing);
- ``s``: seconds per release;

with NumPy's Laplace noise, or with ``--noise secure`` OpenDP's discrete Laplace (``--noise numpy,secure``: both,
one row each; the DP-GAN's secure noise is its DP-SGD noise from the cryptographic generator).

Methods are grouped by neighbouring relation: compare within a group. Picking the best ``theta`` by its error on
the private graph is itself a data-dependent choice (not DP); the grid is printed whole for that reason, beside
``theta = auto``, dpsynth's DP choice (a fifth of epsilon spent on it); ``chosen`` lists the caps it picked.

Examples::

    python benchmarks/graph_release.py                              # karate and les_miserables, eps 0.1 1 10
    python benchmarks/graph_release.py --graphs karate --epsilons 1 --reps 10 --methods node-dp-poster-gan
    python benchmarks/graph_release.py --epsilons 1 --methods edge-dp-sequence,node-dp-cumulative --thetas 8,auto \
        --reps 20 --noise numpy,secure                             # what OpenDP's discrete Laplace costs
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

THETAS = ("2", "4", "8", "16", "auto")
THETA_METHODS = ("node-dp-projection", "node-dp-cumulative")


def run(graph, method: str, epsilon: float, theta: int | str | None, reps: int, gan_steps: int | None,
        noise: str = "numpy") -> dict:
    from dpsynth.evaluation.graph import clustering_gap, degree_l1_error, edge_ratio
    from dpsynth.graphs import release_degrees

    out = {"l1": [], "edges": [], "graph_l1": [], "clust": [], "s": [], "chosen": []}
    for rep in range(reps):
        t0 = time.perf_counter()
        release = release_degrees(graph, epsilon=epsilon, method=method, theta=theta or 10, seed=rep,
                                  gan_params={"steps": gan_steps} if gan_steps and "gan" in method else None,
                                  noise=noise)
        out["s"].append(time.perf_counter() - t0)
        out["chosen"].append(release.params.get("theta"))
        sequence = release.degree_sequence()
        out["l1"].append(degree_l1_error(graph, sequence))
        out["edges"].append(edge_ratio(graph, sequence))
        synthetic = release.synthetic_graph(seed=rep)
        out["graph_l1"].append(degree_l1_error(graph, synthetic))
        out["clust"].append(clustering_gap(graph, synthetic))
    return out


def main() -> None:
    from dpsynth import datasets
    from dpsynth.errors import InputError
    from dpsynth.graphs import METHODS

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", default="karate,les_miserables")
    ap.add_argument("--epsilons", default="0.1,1,10")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--thetas", default=",".join(THETAS),
                    help="public degree caps of the node-dp methods ('auto': chosen with DP)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--gan-steps", type=int, help="steps of the poster's DP-GAN (default: its own)")
    ap.add_argument("--noise", default="numpy", help="comma-separated: numpy (NumPy's Laplace), secure (OpenDP's "
                    "discrete Laplace)")
    ap.add_argument("--out", help="also write the table as CSV")
    args = ap.parse_args()
    rows = []
    for name in args.graphs.split(","):
        graph = datasets.load(name).graph
        print(f"# {name}: {graph.number_of_nodes()} nodes, {graph.number_of_edges()} edges, max degree "
              f"{max(d for _, d in graph.degree())}", flush=True)
        for epsilon in (float(e) for e in args.epsilons.split(",")):
            for method in args.methods.split(","):
                thetas = ([t if t == "auto" else int(t) for t in args.thetas.split(",")] if method in THETA_METHODS
                          else [None])
                for theta, noise in ((t, n) for t in thetas for n in args.noise.split(",")):
                    row = {"graph": name, "epsilon": epsilon, "neighbours": METHODS[method], "method": method,
                           "theta": "-" if theta is None else theta, "noise": noise, "reps": args.reps}
                    try:
                        res = run(graph, method, epsilon, theta, args.reps, args.gan_steps, noise)
                    except InputError as exc:  # a method that refuses the graph is listed with its reason
                        row["l1"] = f"refused: {exc}"
                    else:
                        chosen = res.pop("chosen")
                        for key, values in res.items():
                            row[key] = f"{np.mean(values):.3f}" + (f" ± {np.std(values):.3f}" if key != "s" else "")
                        if theta == "auto":
                            row["chosen"] = "/".join(f"{t}:{chosen.count(t)}" for t in sorted(set(chosen)))
                    rows.append(row)
                    print(" ".join(str(v) for v in row.values()), flush=True)
    table = pd.DataFrame(rows).fillna("")
    print()
    print(table.to_string(index=False))
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
