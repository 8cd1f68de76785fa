"""Known answers for the NumPy graphical model: exact inference against brute force, estimation from exact
marginals recovers a tree-structured distribution, i.i.d. sampling matches the model, storage round trip."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpsynth.errors import InputError
from dpsynth.marginals.graphical_model import MarkovRandomField, Measurement, junction_tree, tree_size


def _brute_force(model: MarkovRandomField) -> np.ndarray:
    """The model's joint table over all attributes, from its potentials."""
    sizes = model.sizes
    log_joint = np.zeros(sizes)
    all_attrs = tuple(range(len(sizes)))
    for clique, pot in zip(model.cliques, model.potentials):
        log_joint = log_joint + pot.reshape([sizes[a] if a in clique else 1 for a in all_attrs])
    joint = np.exp(log_joint - log_joint.max())
    return model.total * joint / joint.sum()


def _marginal(joint: np.ndarray, keep: tuple[int, ...]) -> np.ndarray:
    return joint.sum(axis=tuple(a for a in range(joint.ndim) if a not in keep))


def test_junction_tree_covers_cliques_and_has_running_intersection():
    sizes = [3, 4, 2, 5, 3]
    cliques = [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4)]  # a 4-cycle needs a fill edge
    maximal, edges = junction_tree(sizes, cliques)
    for c in cliques:
        assert any(set(c) <= set(m) for m in maximal)
    assert len(edges) == len(maximal) - 1
    # running intersection: the cliques holding any attribute form a connected subtree
    import networkx as nx

    tree = nx.Graph(edges)
    tree.add_nodes_from(range(len(maximal)))
    assert nx.is_tree(tree)
    for a in range(len(sizes)):
        holders = [k for k, m in enumerate(maximal) if a in m]
        assert nx.is_connected(tree.subgraph(holders))
    assert tree_size(sizes, cliques) == sum(math.prod(sizes[a] for a in m) for m in maximal)


@pytest.mark.parametrize("cliques", [[(0, 1), (1, 2), (2, 3)], [(0, 1), (1, 2), (0, 2), (2, 3)], [(0,), (1,), (2, 3)]])
def test_inference_matches_brute_force(cliques):
    rng = np.random.default_rng(0)
    sizes = [3, 2, 4, 3]
    model = MarkovRandomField(sizes, cliques, total=1000.0)
    model.potentials = [rng.normal(size=p.shape) for p in model.potentials]
    model.calibrate()
    joint = _brute_force(model)
    for clique, marginal in zip(model.cliques, model.marginals):
        np.testing.assert_allclose(marginal, _marginal(joint, clique), rtol=1e-9)
    # any attribute set, also one no clique holds
    for keep in itertools.chain(itertools.combinations(range(4), 2), itertools.combinations(range(4), 3)):
        np.testing.assert_allclose(model.project(keep), _marginal(joint, keep), rtol=1e-9, atol=1e-9)


def test_estimation_recovers_a_tree_distribution_from_exact_marginals():
    """Exact (noise-free) 1- and 2-way marginals of a chain-structured distribution: the estimate reproduces them
    and, the structure being a tree, the whole joint (the max-entropy distribution with those marginals)."""
    rng = np.random.default_rng(1)
    sizes = [3, 4, 2, 3]
    p0 = rng.dirichlet(np.ones(3))
    t01 = rng.dirichlet(np.ones(4), size=3)
    t12 = rng.dirichlet(np.ones(2), size=4)
    t23 = rng.dirichlet(np.ones(3), size=2)
    joint = np.einsum("a,ab,bc,cd->abcd", p0, t01, t12, t23) * 5000.0
    cliques = [(0, 1), (1, 2), (2, 3)]
    measurements = [Measurement(c, _marginal(joint, c), 1.0) for c in cliques]
    model = MarkovRandomField(sizes, cliques, total=5000.0)
    model.estimate(measurements, iterations=3000, tol=1e-12)
    for c in cliques:
        np.testing.assert_allclose(model.project(c), _marginal(joint, c), atol=0.5)
    np.testing.assert_allclose(_brute_force(model), joint, atol=0.5)


def test_estimation_of_one_noisy_table_is_its_projection_on_the_simplex():
    """One measured clique, noise sd 1: the Gaussian MLE over tables with the model's total is the Euclidean
    projection of y onto {x >= 0, sum x = total} (known answer: sort-based projection)."""
    y = np.array([40.0, -5.0, 30.0, 10.0, 30.0])
    total = 100.0

    def project(v, s):
        u = np.sort(v)[::-1]
        css = np.cumsum(u) - s
        k = np.nonzero(u - css / np.arange(1, len(v) + 1) > 0)[0][-1]
        return np.maximum(v - css[k] / (k + 1), 0)

    model = MarkovRandomField([5], [(0,)], total=total)
    model.estimate([Measurement((0,), y, 1.0)], iterations=5000, tol=1e-14)
    np.testing.assert_allclose(model.marginals[0], project(y, total), atol=0.05)


def test_iid_sampling_matches_the_model():
    rng = np.random.default_rng(2)
    sizes = [3, 4, 2, 3]
    model = MarkovRandomField(sizes, [(0, 1), (1, 2), (0, 2), (2, 3)], total=1.0)
    model.potentials = [rng.normal(size=p.shape) for p in model.potentials]
    model.calibrate()
    n = 200_000
    rows = model.sample(n, np.random.default_rng(3))
    assert rows.shape == (n, 4)
    for keep in [(0, 1), (1, 3), (0, 2, 3)]:
        expected = model.project(keep).ravel()
        dims = [sizes[a] for a in keep]
        observed = np.bincount(np.ravel_multi_index(tuple(rows[:, a] for a in keep), dims),
                               minlength=math.prod(dims)) / n
        # binomial sd of each cell; 5 sd everywhere
        sd = np.sqrt(expected * (1 - expected) / n)
        assert np.all(np.abs(observed - expected) <= 5 * sd + 1e-4), keep


def test_stored_marginals_rebuild_the_same_distribution():
    rng = np.random.default_rng(4)
    model = MarkovRandomField([3, 4, 2], [(0, 1), (1, 2)], total=700.0)
    model.potentials = [rng.normal(size=p.shape) for p in model.potentials]
    model.calibrate()
    again = MarkovRandomField.from_marginals(model.sizes, model.cliques, model.edges, model.marginals, model.total)
    for a, b in zip(again.calibrate(), model.marginals):
        np.testing.assert_allclose(a, b, rtol=1e-9)
    np.testing.assert_array_equal(again.sample(50, np.random.default_rng(5)),
                                  model.sample(50, np.random.default_rng(5)))


def test_bad_inputs_are_refused():
    with pytest.raises(InputError):
        Measurement((1, 0), np.zeros((2, 2)), 1.0)
    with pytest.raises(InputError):
        Measurement((0,), np.zeros(2), 0.0)
    with pytest.raises(InputError):
        MarkovRandomField([2, 2], [(0, 1)], total=0.0)
    model = MarkovRandomField([2, 2, 2], [(0, 1), (2,)], total=10.0)
    with pytest.raises(InputError, match="not in the model"):
        model.estimate([Measurement((1, 2), np.ones((2, 2)), 1.0)])
