"""Graph release metrics (seed 001 §2.5, Fig. 5): degree-distribution L1 error and edge ratio.

* ``graph.degree_l1`` — the l1 distance ``sum_d |P(d) - P'(d)|`` between the node-degree distributions of the
  true graph G and the released graph G' (``P(d)`` = fraction of nodes with degree ``d``), in [0, 2]; 0 is
  perfect.
* ``graph.edge_ratio`` — ``|E'| / |E|``, the number of edges of G' over that of G (``|E| = sum of degrees / 2``);
  1 is perfect; undefined when G has no edges.
* ``graph.clustering_gap`` — ``|C(G') - C(G)|``, the gap between the average clustering coefficients (networkx's
  ``average_clustering``: the mean over nodes of the share of a node's neighbour pairs that are linked), in
  [0, 1]; 0 is perfect. Only when both are graphs (a degree sequence has no triangles).

A graph is a networkx graph or a degree sequence (one non-negative integer per node): a DP release of a
degree distribution need not be a graph.
"""

from __future__ import annotations

import numpy as np

from dpsynth.errors import InputError
from dpsynth.evaluation.result import EvaluationResult, row, undefined

__all__ = ["degree_distribution", "degree_l1_error", "edge_ratio", "clustering_gap", "evaluate_graph"]


def _degrees(graph) -> np.ndarray:
    if _is_graph(graph):
        return np.array([d for _, d in graph.degree()], dtype=float)
    degrees = np.asarray(graph, dtype=float).ravel()
    bad = ~np.isfinite(degrees) | (degrees < 0) | (degrees != np.round(degrees))
    if bad.any():
        raise InputError(f"A degree sequence must hold non-negative integers. Found {degrees[bad][0]}.")
    return degrees


def degree_distribution(graph) -> np.ndarray:
    """``P[d]`` = fraction of nodes with degree ``d``, for ``d = 0 .. max degree``."""
    degrees = _degrees(graph).astype(int)
    if degrees.size == 0:
        raise InputError("A graph needs at least one node. Found 0.")
    return np.bincount(degrees) / degrees.size


def degree_l1_error(true_graph, released_graph) -> float:
    """l1 distance between the two degree distributions (module docstring)."""
    p, q = degree_distribution(true_graph), degree_distribution(released_graph)
    size = max(len(p), len(q))
    return float(np.abs(np.pad(p, (0, size - len(p))) - np.pad(q, (0, size - len(q)))).sum())


def edge_ratio(true_graph, released_graph) -> float:
    """|E'| / |E|; NaN when the true graph has no edges."""
    e_true, e_rel = _degrees(true_graph).sum() / 2, _degrees(released_graph).sum() / 2
    return float(e_rel / e_true) if e_true > 0 else float("nan")


def _is_graph(graph) -> bool:
    return hasattr(graph, "degree") and hasattr(graph, "nodes")


def clustering_gap(true_graph, released_graph) -> float:
    """``|C(G') - C(G)|`` of the average clustering coefficients (module docstring); both must be graphs."""
    import networkx as nx

    if not (_is_graph(true_graph) and _is_graph(released_graph)):
        raise InputError("The clustering gap needs two graphs, not degree sequences.")
    return abs(nx.average_clustering(released_graph) - nx.average_clustering(true_graph))


def evaluate_graph(true_graph, released_graphs) -> EvaluationResult:
    """Both metrics for one released graph or a list of them (mean and spread over releases, e.g. seeds)."""
    releases = released_graphs if isinstance(released_graphs, (list, tuple)) else [released_graphs]
    l1 = [degree_l1_error(true_graph, g) for g in releases]
    ratios = [edge_ratio(true_graph, g) for g in releases]
    rows = [row("graph.degree_l1", "(all)", l1)]
    if np.all(np.isnan(ratios)):
        rows.append(undefined("graph.edge_ratio", "(all)", "the true graph has no edges: |E'|/|E| divides by 0",
                              n_seeds=len(ratios)))
    else:
        rows.append(row("graph.edge_ratio", "(all)", ratios))
    if _is_graph(true_graph) and all(_is_graph(g) for g in releases):
        rows.append(row("graph.clustering_gap", "(all)", [clustering_gap(true_graph, g) for g in releases]))
    else:
        rows.append(undefined("graph.clustering_gap", "(all)", "a degree sequence has no clustering coefficient",
                              n_seeds=len(releases)))
    p = degree_distribution(true_graph)
    figures = {"degree_distribution": {"true": p, "released": [degree_distribution(g) for g in releases]}}
    return EvaluationResult.from_rows(rows, figures, {"n_releases": len(releases)})
