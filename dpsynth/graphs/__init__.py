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

import importlib
from typing import Any

from dpsynth.graphs.methods import METHODS

# Names are imported on first use (PEP 562): `dpsynth --help` reads the method names, not NumPy.
_WHERE = {"DegreeRelease": "degrees", "release_degrees": "degrees", "read_edge_list": "edges",
          "write_edge_list": "edges"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"dpsynth.graphs.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpsynth.graphs' has no attribute {name!r}")


__all__ = ["METHODS", "DegreeRelease", "release_degrees", "read_edge_list", "write_edge_list"]
