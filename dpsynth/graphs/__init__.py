"""Graph statistics released with DP (issue 21): a graph's node-degree distribution under edge- or node-level
neighbours, and a synthetic graph drawn from the release.

    import networkx as nx
    from dpsynth import graphs
    release = graphs.release_degrees(nx.karate_club_graph(), epsilon=1.0, method="node-dp-cumulative", theta=4)
    synthetic = release.synthetic_graph(seed=0)

Graphs come from a networkx graph or an edge-list file (:func:`read_edge_list`); ``dpsynth fit-graph`` is the
command line. Metrics live in :mod:`dpsynth.evaluation.graph`.
"""

from __future__ import annotations

from dpsynth.graphs.degrees import METHODS, DegreeRelease, release_degrees
from dpsynth.graphs.edges import read_edge_list, write_edge_list

__all__ = ["METHODS", "DegreeRelease", "release_degrees", "read_edge_list", "write_edge_list"]
