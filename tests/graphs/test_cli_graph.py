"""``dpsynth fit-graph``: a bundled graph or an edge list in, a release JSON (DP outputs and public parameters
only) and a synthetic edge list out; the owner-side evaluation only when asked; one-line errors."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from dpsynth.cli import main
from dpsynth.graphs import read_edge_list


def test_fit_graph_writes_the_release_and_a_synthetic_graph(tmp_path, capsys):
    out, edges = tmp_path / "release.json", tmp_path / "synthetic.csv"
    assert main(["fit-graph", "karate", "--epsilon", "1", "--method", "node-dp-cumulative", "--theta", "6",
                 "--seed", "0", "--out", str(out), "--graph-out", str(edges)]) == 0
    release = json.loads(out.read_text())
    assert set(release) == {"method", "neighbouring", "epsilon", "delta", "histogram", "params", "ledger"}
    assert release["neighbouring"] == "node" and release["params"]["theta"] == 6
    assert len(release["histogram"]) <= 7 and release["ledger"]["entries"][0]["params"]["sensitivity"] == 7.0
    synthetic = read_edge_list(edges)
    assert synthetic.number_of_nodes() <= sum(release["histogram"])  # isolated nodes have no edge-list row
    printed = capsys.readouterr().out
    assert "node-level DP" in printed and "evaluation" not in printed  # nothing about the private graph


def test_fit_graph_reads_an_edge_list_and_evaluates_for_the_owner(tmp_path, capsys):
    path = tmp_path / "edges.csv"
    nx.to_pandas_edgelist(nx.les_miserables_graph())[["source", "target"]].to_csv(path, index=False)
    assert main(["fit-graph", str(path), "--epsilon", "2", "--method", "edge-dp-sequence", "--seed", "1",
                 "--out", str(tmp_path / "r.json"), "--evaluate", "--report", str(tmp_path / "r.html")]) == 0
    printed = capsys.readouterr().out
    assert "not for release" in printed and "graph.degree_l1" in printed and "graph.clustering_gap" in printed
    html = (tmp_path / "r.html").read_text()
    assert "edge-dp-sequence" in html and "graph.degree_l1" in html and "data:image/png;base64" in html


def test_fit_graph_chooses_theta_with_dp(tmp_path, capsys):
    out = tmp_path / "release.json"
    assert main(["fit-graph", "les_miserables", "--epsilon", "1", "--theta", "auto", "--seed", "0",
                 "--out", str(out)]) == 0
    release = json.loads(out.read_text())
    phases = [e["phase"] for e in release["ledger"]["entries"]]
    assert phases == ["theta", "degrees"] and release["params"]["theta"] in (1, 2, 4, 8, 16, 32)
    assert f"theta chosen with DP: {release['params']['theta']}" in capsys.readouterr().out


@pytest.mark.parametrize("args,message", [
    (["adult", "--epsilon", "1"], "is a table, not a graph"),
    (["karate", "--epsilon", "1", "--theta", "0"], "theta must be an integer >= 1"),
    (["karate", "--epsilon", "1", "--method", "node"], "invalid choice"),
    (["karate", "--epsilon", "1", "--theta", "best"], "theta must be an integer or 'auto'"),
])
def test_fit_graph_user_errors_exit_2_with_one_line(args, message, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["fit-graph", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and not out.exists()
