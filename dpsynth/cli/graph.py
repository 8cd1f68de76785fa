"""CLI subcommand ``dpsynth fit-graph`` (registered by :mod:`dpsynth.cli.main`): release a graph's degree
distribution with DP and draw a synthetic graph from it.

``dpsynth fit-graph GRAPH --epsilon E [--method node-dp-cumulative] [--theta 10|auto] --out release.json
[--graph-out edges.csv] [--graph-model configuration] [--evaluate] [--report report.html]``: GRAPH is a bundled
graph dataset (karate, les_miserables, power_grid_fr) or an edge-list CSV / Parquet (first two columns: the end
points). The release JSON holds only DP
outputs and the public parameters; ``--evaluate`` prints the owner-side metrics against the private graph, which
are for the owner's eyes, not for release, and ``--report`` writes them as the HTML report (degree distributions
true vs released, the ledger).
"""

from __future__ import annotations

import argparse
import json

from dpsynth.errors import InputError

__all__ = ["add_parsers", "run_fit_graph", "load_graph"]


def _theta(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"theta must be an integer or 'auto'. Found {text!r}.") from None


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    from dpsynth.graphs.methods import DEFAULT_THETA, METHODS

    p = subparsers.add_parser("fit-graph", help="release a graph's degree distribution with DP (+ a synthetic graph)")
    p.add_argument("graph", help="bundled graph dataset (karate, les_miserables) or edge-list CSV/Parquet")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=1e-6, help="level the ledger reports at (the methods are pure DP)")
    p.add_argument("--method", default="node-dp-cumulative", choices=sorted(METHODS),
                   help="the neighbouring relation is in the name (default node-dp-cumulative)")
    p.add_argument("--theta", type=_theta, default=DEFAULT_THETA,
                   help=f"public degree cap of the node-dp methods (default {DEFAULT_THETA}), or 'auto': chosen with "
                        f"DP among 1, 2, 4, ..., 32 for a fifth of epsilon")
    p.add_argument("--seed", type=int, help="random seed of the noise and of the synthetic graph")
    p.add_argument("--noise", choices=["numpy", "secure"], default="numpy",
                   help="'secure': discrete Laplace noise drawn by OpenDP from the system's cryptographic generator "
                   "(the Laplace methods; node-dp-poster-gan: its DP-SGD noise from that generator; pip install "
                   "'dpsynth[secure]'); 'numpy' (default): NumPy's and torch's seedable float samplers")
    p.add_argument("--out", required=True, metavar="RELEASE_JSON", help="where to write the release (JSON)")
    p.add_argument("--graph-out", metavar="EDGES", help="write a synthetic graph's edge list here (CSV/Parquet)")
    p.add_argument("--graph-model", default="configuration", choices=["configuration", "chung-lu"])
    p.add_argument("--evaluate", action="store_true",
                   help="print degree L1 error, |E'|/|E| and clustering gap against the private graph (owner only)")
    p.add_argument("--report", metavar="OUT_HTML",
                   help="write the owner-side evaluation and the ledger as an HTML report (reads the private graph)")
    p.set_defaults(func=run_fit_graph)


def load_graph(spec: str):
    """A bundled graph dataset by name, or an edge-list file."""
    from dpsynth.datasets import REGISTRY, load

    if spec in REGISTRY:
        if REGISTRY[spec].task != "graph":
            raise InputError(f"Dataset '{spec}' is a table, not a graph.")
        return load(spec).graph
    from dpsynth.graphs import read_edge_list

    return read_edge_list(spec)


def run_fit_graph(args) -> int:
    from dpsynth._io import atomic_write_text, check_distinct_paths, check_output_path, check_table_output
    from dpsynth.graphs import release_degrees, write_edge_list

    check_output_path(args.out)
    if args.graph_out:
        check_table_output(args.graph_out)
    if args.report:
        check_output_path(args.report)
    check_distinct_paths({"graph": args.graph}, {"--out": args.out, "--graph-out": args.graph_out,
                                                 "--report": args.report})
    graph = load_graph(args.graph)
    release = release_degrees(graph, epsilon=args.epsilon, delta=args.delta, method=args.method, theta=args.theta,
                              seed=args.seed, noise=args.noise)
    synthetic = release.synthetic_graph(model=args.graph_model, seed=args.seed) if (
        args.graph_out or args.evaluate or args.report) else None
    atomic_write_text(args.out, json.dumps(release.to_dict(), indent=2))
    print(f"released {release.method} ({release.neighbouring}-level DP) at epsilon={release.epsilon:g}: "
          f"{release.n_nodes} nodes, degrees 0..{len(release.histogram) - 1} -> {args.out}")
    if "theta_selection" in release.params:
        print(f"theta chosen with DP: {release.params['theta']} (candidates "
              f"{release.params['theta_selection']['candidates']})")
    if args.graph_out:
        write_edge_list(synthetic, args.graph_out)
        print(f"synthetic graph ({args.graph_model}): {synthetic.number_of_nodes()} nodes, "
              f"{synthetic.number_of_edges()} edges -> {args.graph_out}")
    if args.evaluate or args.report:
        from dpsynth.evaluation.graph import evaluate_graph

        evaluation = evaluate_graph(graph, synthetic)
        if args.evaluate:
            print("owner-side evaluation against the private graph (not for release):")
            print(evaluation.table[["metric", "value"]].to_string(index=False))
        if args.report:
            from dpsynth.evaluation.report import write_report

            write_report(args.report, evaluation, ledger=release.ledger.to_dict(),
                         title=f"dpsynth graph release: {release.method} at epsilon {release.epsilon:g}")
            print(f"report (owner-side: reads the private graph) -> {args.report}")
    return 0
