"""DP degree releases (issue 21): the sensitivities each mechanism is calibrated to (searched for a larger change
on random small graphs), the noise it adds (a statistical test that fails without it), the ledger, the
post-processing and the synthetic graph."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from dp_accounting import dp_event

from dpsynth.errors import InputError
from dpsynth.graphs import METHODS, read_edge_list, release_degrees, write_edge_list
from dpsynth.graphs.degrees import degree_array, project_max_degree


def _random_graph(rng, n, p, labels=None):
    g = nx.Graph()
    labels = list(range(n)) if labels is None else labels
    g.add_nodes_from(labels)
    g.add_edges_from((labels[i], labels[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < p)
    return g


def _histogram(degrees, size):
    return np.bincount(degrees, minlength=size)[:size] if len(degrees) else np.zeros(size)


def test_node_projection_histograms_move_by_their_sensitivity_under_one_node():
    """Day et al.'s bounds for edge-addition projection, searched: a new node (any label, any neighbours) never
    changes the projected histogram by more than 2 theta + 1 in L1, nor its cumulative histogram by more than
    theta + 1, and both bounds are reached."""
    rng = np.random.default_rng(0)
    worst, worst_cumulative = {}, {}
    for _ in range(3000):
        n, theta = int(rng.integers(3, 10)), int(rng.integers(1, 4))
        g = _random_graph(rng, n, rng.uniform(0.2, 0.9), labels=[2 * i for i in range(n)])
        new = 2 * int(rng.integers(0, n + 1)) - 1  # odd: lands anywhere in the label order
        h = project_max_degree(g, theta)
        bigger = g.copy()
        bigger.add_node(new)
        bigger.add_edges_from((new, v) for v in g.nodes if rng.random() < rng.uniform(0.2, 1.0))
        h2 = project_max_degree(bigger, theta)
        a, b = _histogram(h, theta + 1), _histogram(h2, theta + 1)
        l1, l1_cumulative = np.abs(a - b).sum(), np.abs(np.cumsum(a) - np.cumsum(b)).sum()
        worst[theta] = max(worst.get(theta, 0), l1)
        worst_cumulative[theta] = max(worst_cumulative.get(theta, 0), l1_cumulative)
        assert l1 <= 2 * theta + 1 and l1_cumulative <= theta + 1
    assert worst == {1: 3, 2: 5, 3: 7} and worst_cumulative == {1: 2, 2: 3, 3: 4}


def test_projected_edge_counts_move_by_0_to_theta_under_one_node():
    """The sensitivity theta="auto" is calibrated to: adding a node changes |E(G^theta)| by between 0 and theta
    (searched on random small graphs; the bound is reached), so the vector over candidates T moves by at most
    sum(T) in L1."""
    rng = np.random.default_rng(5)
    worst = {}
    for _ in range(3000):
        n, theta = int(rng.integers(3, 10)), int(rng.integers(1, 4))
        g = _random_graph(rng, n, rng.uniform(0.2, 0.9), labels=[2 * i for i in range(n)])
        bigger = g.copy()
        new = 2 * int(rng.integers(0, n + 1)) - 1
        bigger.add_node(new)
        bigger.add_edges_from((new, v) for v in g.nodes if rng.random() < rng.uniform(0.2, 1.0))
        change = project_max_degree(bigger, theta).sum() // 2 - project_max_degree(g, theta).sum() // 2
        assert 0 <= change <= theta
        worst[theta] = max(worst.get(theta, 0), change)
    assert worst == {1: 1, 2: 2, 3: 3}


def test_auto_theta_spends_a_share_on_noisy_edge_counts_and_the_rest_on_the_histogram():
    release = release_degrees(nx.les_miserables_graph(), epsilon=1.0, theta="auto", seed=0)
    selection, release_entry = release.ledger.entries
    assert selection.phase == "theta" and release_entry.phase == "degrees"
    assert selection.params["sensitivity"] == 63.0 and selection.event == dp_event.LaplaceDpEvent(1 / 0.2)
    theta = release.params["theta"]
    assert theta in (1, 2, 4, 8, 16, 32) and release.params["theta_selection"]["chosen"] == theta
    assert release_entry.params["sensitivity"] == theta + 1 and release_entry.event == dp_event.LaplaceDpEvent(1 / 0.8)
    assert release.ledger.epsilon() == pytest.approx(1.0, abs=1e-3)
    assert len(release.histogram) <= theta + 1


@pytest.mark.parametrize("graph,expected", [(nx.star_graph(5), 8), (nx.karate_club_graph(), 32),
                                            (nx.path_graph(6), 2)])
def test_auto_theta_without_noise_picks_the_smallest_cap_that_loses_no_edge(graph, expected):
    release = release_degrees(graph, epsilon=float("inf"), theta="auto")
    assert release.params["theta"] == expected
    assert release.histogram.tolist() == np.bincount(degree_array(graph)).tolist()


def test_auto_theta_edge_counts_carry_laplace_noise_of_scale_sum_t_over_epsilon_1():
    """The noisy edge count of candidate 1 on a perfect matching of 40 nodes is 20 + Lap(63 / (0.2 * 2)); over
    400 draws its variance lies within 25% of 2 * 157.5^2 (without noise it is 0)."""
    g = nx.Graph([(2 * i, 2 * i + 1) for i in range(20)])
    rng = np.random.default_rng(7)
    counts = np.array([release_degrees(g, epsilon=2.0, theta="auto", seed=rng).params["theta_selection"][
        "noisy_edge_counts"][0] for _ in range(400)])
    scale = 63 / (0.2 * 2.0)
    assert abs(counts.mean() - 20) < 5 * np.sqrt(2 * scale ** 2 / 400)
    assert counts.var(ddof=1) == pytest.approx(2 * scale ** 2, rel=0.25)


def test_sorted_degree_sequence_moves_by_2_under_one_edge():
    rng = np.random.default_rng(1)
    worst = 0
    for _ in range(500):
        n = int(rng.integers(3, 12))
        g = _random_graph(rng, n, rng.uniform(0.1, 0.9))
        missing = [(u, v) for u in range(n) for v in range(u + 1, n) if not g.has_edge(u, v)]
        if not missing:
            continue
        h = g.copy()
        h.add_edge(*missing[int(rng.integers(len(missing)))])
        a, b = degree_array(g), degree_array(h)
        worst = max(worst, np.abs(np.sort(a) - np.sort(b)).sum())
    assert worst == 2


def test_projection_keeps_edges_in_label_order_until_a_cap_is_hit():
    star = nx.star_graph(5)  # centre 0, leaves 1..5: theta 2 keeps edges (0,1) and (0,2) only
    assert project_max_degree(star, 2).tolist() == [2, 1, 1, 0, 0, 0]
    assert project_max_degree(star, 10).tolist() == degree_array(star).tolist()


@pytest.mark.parametrize("method", sorted(METHODS))
def test_epsilon_inf_releases_the_exact_statistic(method):
    g = nx.karate_club_graph()
    release = release_degrees(g, epsilon=float("inf"), method=method, theta=20, gan_params=(
        {"steps": 1} if "gan" in method else None))
    if "gan" in method:  # a GAN's release is a model's output, not the statistic
        assert release.n_nodes == g.number_of_nodes() and release.params["noise_multiplier"] == 0.0
        return
    assert release.histogram.tolist() == np.bincount(degree_array(g)).tolist()  # karate's max degree is 17
    assert release.neighbouring == METHODS[method] and release.ledger.epsilon() == float("inf")  # non-private


@pytest.mark.parametrize("method,theta,sensitivity", [("edge-dp-sequence", 10, 2.0), ("node-dp-projection", 3, 7.0),
                                                      ("node-dp-cumulative", 3, 4.0)])
def test_each_release_records_one_laplace_event_at_its_sensitivity(method, theta, sensitivity):
    release = release_degrees(nx.karate_club_graph(), epsilon=0.5, method=method, theta=theta, seed=0)
    (entry,) = release.ledger.entries
    assert entry.event == dp_event.LaplaceDpEvent(1 / 0.5)  # scale / sensitivity = 1 / epsilon
    assert entry.params["sensitivity"] == sensitivity and release.params["laplace_scale"] == sensitivity / 0.5
    assert release.ledger.epsilon() == pytest.approx(0.5, abs=1e-4)


def test_node_release_noise_has_the_laplace_variance_of_its_sensitivity():
    """A perfect matching of 2,000 nodes projected at theta = 1 is h = [0, 2000]; the released h[1] is
    2000 + Lap(3 / epsilon) rounded, of variance 2 (3 / epsilon)^2 + 1/12. Over 600 releases the sample variance
    lies within 25% of it (its relative sd is about sqrt((kurtosis - 1) / 600) = 0.1); without noise it is 0,
    with the edge-DP scale it is 4 / 9 of it."""
    g = nx.Graph([(2 * i, 2 * i + 1) for i in range(1000)])
    epsilon = 2.0
    rng = np.random.default_rng(3)
    ones = np.array([release_degrees(g, epsilon=epsilon, method="node-dp-projection", theta=1, seed=rng).histogram[1]
                     for _ in range(600)])
    expected = 2 * (3 / epsilon) ** 2 + 1 / 12
    assert abs(ones.mean() - 2000) < 5 * np.sqrt(expected / 600)
    assert ones.var(ddof=1) == pytest.approx(expected, rel=0.25)


def test_edge_dp_sequence_is_sorted_bounded_and_keeps_the_public_node_count():
    g = nx.les_miserables_graph()
    release = release_degrees(g, epsilon=0.1, method="edge-dp-sequence", seed=0)
    seq = release.degree_sequence()
    assert len(seq) == g.number_of_nodes() and (np.diff(seq) >= 0).all() and seq.min() >= 0
    assert seq.max() <= g.number_of_nodes() - 1
    cumulative = release_degrees(g, epsilon=0.1, method="node-dp-cumulative", theta=8, seed=0)
    assert (cumulative.histogram >= 0).all() and len(cumulative.histogram) <= 9  # a histogram of degrees 0..theta


def test_synthetic_graph_follows_the_release():
    release = release_degrees(nx.les_miserables_graph(), epsilon=float("inf"), method="edge-dp-sequence")
    synthetic = release.synthetic_graph(seed=0)
    assert synthetic.number_of_nodes() == release.n_nodes
    # the simple configuration graph loses only the self-loops and parallel edges of the random pairing
    edges = release.degree_sequence().sum() / 2
    assert 0.85 * edges <= synthetic.number_of_edges() <= edges
    chung_lu = release.synthetic_graph(model="chung-lu", seed=0)
    assert chung_lu.number_of_nodes() == release.n_nodes
    with pytest.raises(InputError, match="configuration"):
        release.synthetic_graph(model="erdos")


def test_bad_inputs_get_one_line_errors():
    with pytest.raises(InputError, match="method must be one of"):
        release_degrees(nx.path_graph(3), epsilon=1.0, method="node-dp")
    with pytest.raises(InputError, match="theta"):
        release_degrees(nx.path_graph(3), epsilon=1.0, theta=0)
    with pytest.raises(InputError, match="theta must be an integer >= 1 or 'auto'"):
        release_degrees(nx.path_graph(3), epsilon=1.0, theta="best")
    with pytest.raises(InputError, match="theta_share"):
        release_degrees(nx.path_graph(3), epsilon=1.0, theta="auto", theta_share=1.0)
    with pytest.raises(InputError, match="theta_candidates"):
        release_degrees(nx.path_graph(3), epsilon=1.0, theta="auto", theta_candidates=(0, 2))
    with pytest.raises(InputError, match="simple undirected"):
        release_degrees(nx.DiGraph([(0, 1)]), epsilon=1.0)
    with pytest.raises(InputError, match="networkx graph"):
        release_degrees([1, 2], epsilon=1.0)
    with pytest.raises(InputError, match="epsilon"):
        release_degrees(nx.path_graph(3), epsilon=0.0)


def test_edge_lists_round_trip_and_refuse_self_loops(tmp_path):
    path = tmp_path / "edges.csv"
    path.write_text("a,b\nx,y\ny,x\ny,z\n")  # (x, y) twice, once per direction: one edge
    g = read_edge_list(path)
    assert sorted(g.nodes) == ["x", "y", "z"] and g.number_of_edges() == 2
    out = write_edge_list(g, tmp_path / "out.csv")
    assert nx.utils.graphs_equal(read_edge_list(out), g)
    (tmp_path / "loop.csv").write_text("a,b\nx,x\n")
    with pytest.raises(InputError, match="row 1 is a self-loop"):
        read_edge_list(tmp_path / "loop.csv")
    (tmp_path / "one.csv").write_text("a\nx\n")
    with pytest.raises(InputError, match="two columns"):
        read_edge_list(tmp_path / "one.csv")


def test_poster_gan_rows_all_change_with_one_node_and_steps_are_accounted_without_amplification():
    """The premise of the poster's accounting: rewiring one node changes every permuted row. The ledger holds
    ``steps`` Gaussian events of the calibrated multiplier (no sampling rate), at sensitivity 2C."""
    from dpsynth.graphs.poster_gan import permuted_adjacency_rows

    g = nx.karate_club_graph()
    a = nx.to_numpy_array(g, weight=None)
    b = a.copy()
    b[0, :], b[:, 0] = 0, 0  # node 0 rewired: all its edges removed
    b[0, 5] = b[5, 0] = 1
    rows_a = permuted_adjacency_rows(a, 200, np.random.default_rng(0))
    rows_b = permuted_adjacency_rows(b, 200, np.random.default_rng(0))  # the same permutations
    assert (rows_a != rows_b).any(axis=1).all()
    release = release_degrees(g, epsilon=1.0, method="node-dp-poster-gan", seed=0,
                              gan_params={"steps": 20, "rows": 50, "n_samples": 5, "clip": 0.5})
    (entry,) = release.ledger.entries
    z = release.params["noise_multiplier"]
    assert entry.event == dp_event.GaussianDpEvent(z) and entry.count == 20
    assert entry.params == {"sensitivity": 1.0, "neighbouring": "node replacement"}
    assert release.ledger.epsilon() == pytest.approx(1.0, rel=2e-3)
    assert release.n_nodes == 34 and release.params["noise_std"] == pytest.approx(2 * 0.5 * z)


def test_batch_gradient_is_clipped_as_one_vector_and_gets_noise_of_sensitivity_2c():
    import torch

    from dpsynth.graphs.poster_gan import privatize_batch_gradient

    gen = torch.Generator().manual_seed(0)
    g1, g2 = torch.full((3,), 4.0), torch.full((4,), 3.0)  # joint norm sqrt(48 + 36) > clip
    privatize_batch_gradient([g1, g2], 2.0, 0.0, gen)
    assert float(torch.sqrt((g1 ** 2).sum() + (g2 ** 2).sum())) == pytest.approx(2.0)
    draws = torch.zeros(20_000)
    privatize_batch_gradient([draws], 1.0, 3.0, gen)  # a zero gradient: the noise alone, std 2 * 1 * 3
    assert float(draws.std()) == pytest.approx(6.0, rel=0.03)  # 5 sd of a sample std over 20,000 is 2.5%
    assert abs(float(draws.mean())) < 5 * 6.0 / np.sqrt(20_000)


def test_poster_gan_refuses_graphs_too_large_for_its_rows():
    g = nx.empty_graph(3000)
    g.add_edge(0, 1)
    with pytest.raises(InputError, match="made for small graphs"):
        release_degrees(g, epsilon=1.0, method="node-dp-poster-gan")


@pytest.mark.parametrize("method,theta,sensitivity", [("edge-dp-sequence", 10, 2), ("node-dp-projection", 3, 7),
                                                      ("node-dp-cumulative", "auto", None)])
def test_secure_releases_record_discrete_laplace_events_composed_by_pld(method, theta, sensitivity, tmp_path):
    """``noise="secure"``: OpenDP's discrete Laplace at the same sensitivity / scale, one event per noisy vector
    (the auto theta's edge counts too), a PLD ledger within epsilon that survives the JSON round trip."""
    pytest.importorskip("opendp")
    from dpsynth.privacy import PrivacyLedger

    release = release_degrees(nx.les_miserables_graph(), epsilon=0.5, method=method, theta=theta, noise="secure")
    events = [entry.event for entry in release.ledger.entries]
    assert all(isinstance(e, dp_event.DiscreteLaplaceDpEvent) for e in events)
    assert len(events) == (2 if theta == "auto" else 1)
    if sensitivity is not None:
        assert events[0] == dp_event.DiscreteLaplaceDpEvent(0.5 / sensitivity, sensitivity)  # 1 / scale
    assert release.ledger.accountant == "pld" and release.ledger.epsilon() == pytest.approx(0.5, abs=1e-4)
    again = PrivacyLedger.from_dict(release.to_dict()["ledger"])
    assert again.epsilon() == pytest.approx(release.ledger.epsilon()) and again.accountant == "pld"
    assert np.array_equal(release.histogram, np.round(release.histogram)) and release.histogram.min() >= 0


def test_secure_noise_has_the_discrete_laplaces_law_in_the_release():
    """OpenDP's discrete Laplace of scale 1 (20,000 draws): a chi-square test against its probabilities accepts it
    and rejects NumPy's Laplace rounded to integers (what the default path gives after rounding) and no noise. In
    the release, the perfect matching's h[1] (600 releases) is 2000 plus integer noise of the discrete Laplace's
    variance ``2 e^-a / (1 - e^-a)^2`` at ``a = epsilon / 3`` (within 45%, about 5 sds of the sample variance:
    OpenDP's draws take no seed; 0 without noise, twice it at a scale sqrt(2) too large)."""
    pytest.importorskip("opendp")
    from scipy import stats

    from dpsynth.privacy.secure_noise import discrete_laplace

    xs = np.arange(-4, 5)
    p = (1 - np.exp(-1)) / (1 + np.exp(-1)) * np.exp(-np.abs(xs))

    def chi2_p(sample):
        observed = np.array([(sample == x).sum() for x in xs] + [(np.abs(sample) > 4).sum()], float)
        return stats.chisquare(observed, np.append(p, 1 - p.sum()) * len(sample)).pvalue

    assert chi2_p(discrete_laplace(np.zeros(20_000), 1.0, 1)) > 1e-6  # unseeded: a false alarm 1 run in a million
    assert chi2_p(np.round(np.random.default_rng(0).laplace(0, 1.0, 20_000))) < 1e-12
    assert chi2_p(np.zeros(20_000)) < 1e-12
    g = nx.Graph([(2 * i, 2 * i + 1) for i in range(1000)])
    epsilon = 2.0
    noise = np.array([release_degrees(g, epsilon=epsilon, method="node-dp-projection", theta=1,
                                      noise="secure").histogram[1] for _ in range(600)]) - 2000
    a = epsilon / 3
    assert np.array_equal(noise, np.round(noise))
    assert noise.var(ddof=1) == pytest.approx(2 * np.exp(-a) / (1 - np.exp(-a)) ** 2, rel=0.45)


def test_secure_noise_is_checked_and_named_in_the_cli(tmp_path, capsys):
    """(The poster DP-GAN's secure DP-SGD noise: tests/privacy/test_secure_training_noise.py.)"""
    pytest.importorskip("opendp")
    from dpsynth.cli import main

    with pytest.raises(InputError, match="noise must be one of numpy, secure"):
        release_degrees(nx.karate_club_graph(), epsilon=1.0, noise="opendp")
    out = tmp_path / "release.json"
    assert main(["fit-graph", "karate", "--epsilon", "1", "--noise", "secure", "--out", str(out)]) == 0
    assert "DiscreteLaplaceDpEvent" in out.read_text()
