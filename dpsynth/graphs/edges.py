"""Edge lists in and out: a CSV / Parquet table whose first two columns are an edge's end points (one row per
edge; any further columns are ignored, with their names in the error if the table has fewer than two)."""

from __future__ import annotations

import os
from pathlib import Path

from dpsynth.errors import InputError

__all__ = ["read_edge_list", "write_edge_list"]


def read_edge_list(path: str | os.PathLike):
    """An undirected simple networkx graph from an edge-list table. Labels are read as text. A self-loop is an
    error (a degree release has no meaning for it); an edge listed twice, in either direction, is one edge."""
    import networkx as nx

    from dpsynth._io import read_table

    table = read_table(path, as_text=True)
    if table.shape[1] < 2:
        raise InputError(f"An edge list needs two columns (source, target). Found {list(table.columns)} in {path}.")
    ends = table.iloc[:, :2]
    missing = ends.isna().any(axis=1)
    if missing.any():
        raise InputError(f"Edge list {path}: row {int(missing.to_numpy().argmax()) + 1} lacks an end point.")
    loops = (ends.iloc[:, 0] == ends.iloc[:, 1]).to_numpy()
    if loops.any():
        raise InputError(f"Edge list {path}: row {int(loops.argmax()) + 1} is a self-loop "
                         f"({ends.iloc[int(loops.argmax()), 0]!r}); remove it first.")
    graph = nx.Graph()
    graph.add_edges_from(ends.itertuples(index=False, name=None))
    return graph


def write_edge_list(graph, path: str | os.PathLike) -> Path:
    """Write ``graph``'s edges as a two-column CSV (source, target), atomically."""
    import pandas as pd

    from dpsynth._io import write_table

    return write_table(pd.DataFrame(list(graph.edges), columns=["source", "target"]), path)
