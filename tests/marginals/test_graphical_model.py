"""Known answers for the NumPy graphical model: exact inference against brute force, estimation from exact
marginals recovers a tree-structured distribution, i.i.d. sampling matches the model, storage round trip."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpsynth.errors import InputError
from dpsynth.marginals.graphical_model import (
    MarkovRandomField,
    Measurement,
    junction_tree,
    pooled_sums,
    pooled_total,
    tree_size,
)


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


def test_projection_across_a_branching_tree_matches_brute_force_and_stays_small():
    """Attribute sets spread over several cliques of a branching junction tree: exact against brute force, and the
    walk never builds a table spanning a whole clique times the query (tracemalloc sees numpy's buffers)."""
    import tracemalloc

    rng = np.random.default_rng(1)
    sizes = [2, 3, 2, 3, 2, 3, 2]
    model = MarkovRandomField(sizes, [(0, 1, 2), (2, 3, 4), (2, 5), (4, 6)], total=50.0)
    model.potentials = [rng.normal(size=p.shape) for p in model.potentials]
    model.calibrate()
    joint = _brute_force(model)
    for keep in itertools.chain(itertools.combinations(range(7), 2), itertools.combinations(range(7), 3)):
        np.testing.assert_allclose(model.project(keep), _marginal(joint, keep), rtol=1e-9, atol=1e-9)
    # two 4-attribute cliques of 12-cell attributes (20,736 cells each) joined by one attribute: a pair across them
    # needs 12^3 cells; the whole second clique times the first attribute would be 12^5 (2 MB)
    big = MarkovRandomField([12] * 7, [(0, 1, 2, 3), (3, 4, 5, 6)], total=1.0)
    tracemalloc.start()
    table = big.project((0, 6))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_allclose(table, np.full((12, 12), 1 / 144))
    assert peak < 12 ** 4 * 8 * 4, peak


def test_projection_keeps_each_branch_apart():
    """A query with attributes down two branches of its root clique: each branch is summed to its message before
    the two meet, so no table carries one branch's separator through the other's cliques (12^5 cells here; a walk
    that did asked 9.7 GB for a 3-way query of a King County model). Exact on a small copy of the same tree."""
    import tracemalloc

    cliques = [(0, 1, 2), (1, 3, 4), (3, 4, 5), (2, 6, 7), (6, 7, 8)]
    rng = np.random.default_rng(2)
    small = MarkovRandomField([2, 3, 2, 2, 3, 2, 2, 3, 2], cliques, total=10.0)
    small.potentials = [rng.normal(size=p.shape) for p in small.potentials]
    small.calibrate()
    np.testing.assert_allclose(small.project((0, 5, 8)), _marginal(_brute_force(small), (0, 5, 8)), rtol=1e-9,
                               atol=1e-12)
    big = MarkovRandomField([12] * 9, cliques, total=1.0)
    tracemalloc.start()
    table = big.project((0, 5, 8))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_allclose(table, np.full((12, 12, 12), 1 / 12 ** 3))
    assert peak < 12 ** 4 * 8 * 4, peak


def test_projection_walks_the_smallest_subtree_covering_the_query():
    """The subtree a projection multiplies along has the fewest cells of all connected sets of cliques covering the
    query (brute force over every set of cliques of random models), and the projection stays exact. On a chain
    (0,1)-(1,2)-(2,3) with a 40-cell attribute 0, the pair (1, 3) is read from (1,2) and (2,3) alone: taking the
    first clique that holds attribute 1 walked through the big one."""
    import networkx as nx

    chain = MarkovRandomField([40, 2, 2, 2], [(0, 1), (1, 2), (2, 3)], total=1.0)
    root, nodes = chain._cover((1, 3))
    assert {chain.cliques[k] for k in nodes} == {(1, 2), (2, 3)} and chain.cliques[root] == (1, 2)
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(40):
        sizes = [int(x) for x in rng.integers(2, 5, size=7)]
        cliques = [tuple(sorted(rng.choice(7, size=int(rng.integers(2, 4)), replace=False))) for _ in range(5)]
        model = MarkovRandomField(sizes, cliques, total=100.0)
        model.potentials = [rng.normal(size=p.shape) for p in model.potentials]
        model.calibrate()
        joint = _brute_force(model)
        tree = nx.Graph(model.edges)
        tree.add_nodes_from(range(len(model.cliques)))
        cells = [math.prod(sizes[a] for a in c) for c in model.cliques]
        for query in itertools.combinations(range(7), 3):
            if model.home(query) is not None:
                continue
            root, nodes = model._cover(query)
            covering = [set(ks) for r in range(1, len(model.cliques) + 1)
                        for ks in itertools.combinations(range(len(model.cliques)), r)
                        if nx.is_connected(tree.subgraph(ks)) and set(query) <= set().union(*(model.cliques[k]
                                                                                                  for k in ks))]
            assert nodes in covering and query[0] in model.cliques[root]
            assert sum(cells[k] for k in nodes) == min(sum(cells[k] for k in ks) for ks in covering)
            np.testing.assert_allclose(model.project(query), _marginal(joint, query), rtol=1e-9, atol=1e-9)
            checked += 1
        # the walk's clique tables are kept between projections: new marginals must not be read from old ones
        model.potentials = [rng.normal(size=p.shape) for p in model.potentials]
        model.calibrate()
        joint = _brute_force(model)
        for query in itertools.combinations(range(7), 3):
            np.testing.assert_allclose(model.project(query), _marginal(joint, query), rtol=1e-9, atol=1e-9)
    assert checked > 100


def test_projection_of_attributes_numbered_past_52():
    """The walk contracts tables with einsum, whose subscripts must be below 52: a 60-attribute model's chain over
    attributes 55-58 projects as the same chain numbered 0-3 (the other attributes are independent of it)."""
    rng = np.random.default_rng(4)
    chain = [(0, 1), (1, 2), (2, 3)]
    small = MarkovRandomField([2, 3, 2, 3], chain, total=10.0)
    small.potentials = [rng.normal(size=p.shape) for p in small.potentials]
    small.calibrate()
    wide = MarkovRandomField([2] * 55 + [2, 3, 2, 3] + [2], [(a,) for a in range(60)]
                             + [(a + 55, b + 55) for a, b in chain], total=10.0)
    by_clique = dict(zip(small.cliques, small.potentials))
    wide.potentials = [by_clique.get(tuple(a - 55 for a in c), np.zeros(p.shape)) for c, p in
                       zip(wide.cliques, wide.potentials)]
    wide.calibrate()
    for keep in [(0, 2, 3), (0, 3), (0, 1, 3)]:
        np.testing.assert_allclose(wide.project(tuple(a + 55 for a in keep)), small.project(keep), rtol=1e-9)


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


@pytest.mark.parametrize("stratified", [False, True])
def test_sampling_matches_the_model(stratified):
    rng = np.random.default_rng(2)
    sizes = [3, 4, 2, 3]
    model = MarkovRandomField(sizes, [(0, 1), (1, 2), (0, 2), (2, 3)], total=1.0)
    model.potentials = [rng.normal(size=p.shape) for p in model.potentials]
    model.calibrate()
    n = 200_000
    rows = model.sample(n, np.random.default_rng(3), stratified=stratified)
    assert rows.shape == (n, 4)
    for keep in [(0, 1), (1, 3), (0, 2, 3)]:
        expected = model.project(keep).ravel()
        dims = [sizes[a] for a in keep]
        observed = np.bincount(np.ravel_multi_index(tuple(rows[:, a] for a in keep), dims),
                               minlength=math.prod(dims)) / n
        # binomial sd of each cell; 5 sd everywhere
        sd = np.sqrt(expected * (1 - expected) / n)
        assert np.all(np.abs(observed - expected) <= 5 * sd + 1e-4), keep


def _conditional_chi2(rows: np.ndarray, a: int, c: int, given: int) -> tuple[float, int]:
    """Pearson chi-square of independence of columns a and c within each value of column ``given``, summed."""
    stat, dof = 0.0, 0
    for g in np.unique(rows[:, given]):
        sub = rows[rows[:, given] == g]
        table = np.zeros((sub[:, a].max() + 1, sub[:, c].max() + 1))
        np.add.at(table, (sub[:, a], sub[:, c]), 1)
        table = table[table.sum(1) > 0][:, table.sum(0) > 0]
        expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
        stat += float(((table - expected) ** 2 / expected).sum())
        dof += (table.shape[0] - 1) * (table.shape[1] - 1)
    return stat, dof


def test_stratified_sampling_has_exact_counts_and_links_nothing_the_model_leaves_independent():
    """A chain 0 - 1 - 2: columns 0 and 2 are independent given 1 in the model. Stratified sampling must give the
    root clique's counts to within one row of the model's (i.i.d. sampling: binomial noise, ~sqrt(n p) rows), and
    must not link 0 and 2 given 1 (the row-ordering "round" sampler does: sorted groups line up)."""
    from scipy.stats import chi2

    rng = np.random.default_rng(4)
    sizes = [3, 4, 5]
    model = MarkovRandomField(sizes, [(0, 1), (1, 2)], total=1.0)
    model.potentials = [rng.normal(size=p.shape) for p in model.potentials]
    model.calibrate()
    n = 20_000
    rows = model.sample(n, np.random.default_rng(5))
    root = model.cliques[model._order[0]]
    counts = np.zeros([sizes[a] for a in root])
    np.add.at(counts, tuple(rows[:, a] for a in root), 1)
    np.testing.assert_array_less(np.abs(counts - n * model.project(root)), 1.0 + 1e-9)
    iid = model.sample(n, np.random.default_rng(5), stratified=False)
    iid_counts = np.zeros_like(counts)
    np.add.at(iid_counts, tuple(iid[:, a] for a in root), 1)
    assert np.abs(iid_counts - n * model.project(root)).max() > 5  # the test can tell the two apart
    stat, dof = _conditional_chi2(rows, 0, 2, given=1)
    assert chi2.sf(stat, dof) > 1e-3, (stat, dof)
    # the ordered sampler this rules out: within each group of column 1, column 2 assigned in the order of column 0
    ordered = rows.copy()
    for g in range(sizes[1]):
        idx = np.flatnonzero(rows[:, 1] == g)
        ordered[idx[np.argsort(rows[idx, 0], kind="stable")], 2] = np.sort(rows[idx, 2])
    stat, dof = _conditional_chi2(ordered, 0, 2, given=1)
    assert chi2.sf(stat, dof) < 1e-6


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


@pytest.mark.parametrize("spread", [3.0, 900.0])
def test_log_domain_sums_match_logsumexp_even_where_a_slice_underflows(spread):
    """Messages are log-sum-exps shifted by the table's one maximum; a slice ~700 below it would underflow to
    log(0), so such tables are recomputed with a maximum per slice (spread 900 exercises that path)."""
    from scipy.special import logsumexp

    from dpsynth.marginals.graphical_model import _sum_to

    rng = np.random.default_rng(0)
    table = rng.normal(size=(4, 5, 6))
    table[1] -= spread  # one slice of attribute 0 far below the rest
    for keep in [(0,), (0, 2), (1,)]:
        axes = tuple(i for i in range(3) if i not in keep)
        got = _sum_to(table, (0, 1, 2), keep, log=True)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, logsumexp(table, axis=axes), rtol=1e-12, atol=1e-9)


def test_a_coarse_measurement_is_a_linear_query_the_estimate_meets():
    """Exact 1-way tables of two attributes (6 and 4 cells) and their 2-way table with the first attribute's cells
    merged in pairs: the estimate meets all three (coarse cells of the model's joint = the measured ones), and
    within a merged pair the second attribute's conditional is the same (nothing measured tells them apart: the
    maximum-entropy answer mirror descent converges to)."""
    rng = np.random.default_rng(3)
    joint = rng.dirichlet(np.ones(24)).reshape(6, 4) * 10_000
    groups = np.array([0, 0, 1, 1, 2, 2])
    coarse = Measurement((0, 1), np.zeros((3, 4)), 1.0, groups=(groups, None)).coarsen(joint)
    np.testing.assert_allclose(coarse, joint.reshape(3, 2, 4).sum(axis=1))
    measurements = [Measurement((0,), joint.sum(axis=1), 1.0), Measurement((1,), joint.sum(axis=0), 1.0),
                    Measurement((0, 1), coarse, 1.0, groups=(groups, None))]
    model = MarkovRandomField([6, 4], [(0, 1)], joint.sum())
    model.estimate(measurements, iterations=3000, tol=1e-14)
    fit = model.project((0, 1))
    np.testing.assert_allclose(measurements[2].coarsen(fit), coarse, rtol=1e-3)
    np.testing.assert_allclose(fit.sum(axis=1), joint.sum(axis=1), rtol=1e-3)
    conditional = fit / fit.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(conditional[0::2], conditional[1::2], atol=1e-3)
    # the gradient of the coarse query is its transpose: <coarsen(t), c> == <t, spread(c)>
    t, c = rng.normal(size=(6, 4)), rng.normal(size=(3, 4))
    m = measurements[2]
    assert float(np.sum(m.coarsen(t) * c)) == pytest.approx(float(np.sum(t * m.spread(c))))
    with pytest.raises(InputError, match="coarse cell"):
        Measurement((0, 1), np.zeros((2, 4)), 1.0, groups=(groups, None))


def test_grouped_marginal_sums_equal_direct_sums_and_their_transpose_equals_broadcast_sums():
    """Estimation reads every measured subset of a clique through ``_marginals_of`` (subsets lacking a common
    attribute summed from one smaller table) and builds potentials through ``_table_of``: both must equal the
    plain per-subset sums and broadcasts they replace, for every subset of a 4-attribute clique."""
    from dpsynth.marginals.graphical_model import _expand, _marginals_of, _sum_to, _table_of

    rng = np.random.default_rng(11)
    sizes = [3, 5, 2, 4, 6]
    attrs = (0, 1, 3, 4)
    table = rng.random([sizes[a] for a in attrs])
    wanted = [c for r in range(1, 5) for c in itertools.combinations(attrs, r)]
    out: dict = {}
    _marginals_of(table, attrs, wanted, sizes, out)
    assert set(out) == set(wanted)
    for c in wanted:
        np.testing.assert_allclose(out[c], _sum_to(table, attrs, c), rtol=1e-12)
    parts = [(c, rng.normal(size=[sizes[a] for a in c])) for c in wanted]
    direct = np.zeros([sizes[a] for a in attrs])
    for c, t in parts:
        direct = direct + _expand(t, c, attrs, sizes)
    np.testing.assert_allclose(_table_of(attrs, parts, sizes), direct, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_calibration_survives_potentials_that_cancel_far_from_zero(sign):
    """Calibration exponentiates each clique's table once and reads the messages from shifted linear sums. Here one
    clique's potential is 900 above on a slice of a shared attribute and its neighbour's 900 below, so the joint is
    moderate but each table alone underflows there: the shifted sums hit the exact log-domain fallbacks on the way
    up or down (each sign puts the low slice in the other clique), and the marginals must still be the joint's."""
    rng = np.random.default_rng(5)
    sizes = [3, 4, 2, 3]
    model = MarkovRandomField(sizes, [(0, 1), (1, 2), (2, 3)], total=1000.0)
    potentials = [rng.normal(size=p.shape) for p in model.potentials]
    holders = [k for k, c in enumerate(model.cliques) if 1 in c]
    for k, shift in zip(holders, [sign * 900.0, -sign * 900.0]):
        axis = model.cliques[k].index(1)
        index = [slice(None)] * potentials[k].ndim
        index[axis] = 2
        potentials[k][tuple(index)] += shift
    model.potentials = potentials
    model.calibrate()
    joint = _brute_force(model)
    assert _marginal(joint, (1,))[2] > 10  # the cancelled slice carries real mass
    for clique, marginal in zip(model.cliques, model.marginals):
        assert np.all(np.isfinite(marginal))
        np.testing.assert_allclose(marginal, _marginal(joint, clique), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("cliques", [[(0, 1), (1, 2), (2, 3), (0,)], [(0, 1), (1, 2), (0, 2), (3,)]])
def test_accelerated_and_mirror_descent_reach_the_same_estimate_and_the_accelerated_sooner(cliques, noisy_problem):
    """Both estimators minimise the same convex loss over the same marginal polytope: run long, they agree (the
    mirror descent is the one cross-checked against private-pgm). With 40 steps each, the accelerated method's loss
    is lower, and the model it ends on is consistent: its potentials give back its marginals."""
    sizes, measurements = noisy_problem(cliques)
    long = {}
    for method in ("mirror", "accelerated"):
        model = MarkovRandomField(sizes, cliques, 1000.0)
        model.estimate(measurements, iterations=3000, tol=1e-12, method=method)
        long[method] = model
    for c in cliques:
        np.testing.assert_allclose(long["accelerated"].project(c), long["mirror"].project(c), atol=0.05)
    short = {}
    for method in ("mirror", "accelerated"):
        model = MarkovRandomField(sizes, cliques, 1000.0)
        short[method] = model.estimate(measurements, iterations=40, tol=0.0, method=method)
        if method == "accelerated":
            kept = [m.copy() for m in model.marginals]
            for again, before in zip(model.calibrate(), kept):
                np.testing.assert_allclose(again, before, rtol=1e-9, atol=1e-9)
    assert short["accelerated"] < short["mirror"]


def test_an_unknown_estimation_method_is_refused(noisy_problem):
    sizes, measurements = noisy_problem([(0, 1)])
    with pytest.raises(InputError, match="method must be"):
        MarkovRandomField(sizes, [(0, 1)], 1000.0).estimate(measurements, method="newton")


def test_pooled_total_weighs_the_row_count_and_each_table_by_its_inverse_variance():
    """Known answers, then the law over many draws: unbiased, with the variance 1 / (sum of the weights), below the
    row count's alone (the total a graphical model fits on a small table, where the DP row count is far off)."""
    one = Measurement((0,), np.array([30.0, 40.0, 30.0, 30.0]), 5.0)  # sum 130, variance 4 * 25 = 100
    assert pooled_total(100.0, 10.0, [one]) == pytest.approx(115.0)
    per_cell = Measurement((0,), np.array([60.0, 60.0]), np.array([3.0, 4.0]))  # sum 120, variance 25
    assert pooled_total(100.0, 10.0, [one, per_cell]) == pytest.approx((1.0 + 1.3 + 4 * 1.2) / (1 + 1 + 4) * 100)
    assert pooled_total(100.0, 0.0, [one]) == 100.0  # exact counts: the row count
    assert pooled_total(5.0, 10.0, [Measurement((0,), np.array([-50.0, -50.0]), 5.0)]) == 1.0  # at least one row

    rng = np.random.default_rng(0)
    n, n_sd, cells, sd = 400.0, 120.0, np.array([200.0, 120.0, 60.0, 20.0]), 40.0
    draws = np.array([pooled_total(n + rng.normal(0, n_sd), n_sd,
                                   [Measurement((0,), cells + rng.normal(0, sd, 4), sd) for _ in range(3)])
                      for _ in range(4000)])
    expected_sd = 1.0 / math.sqrt(1 / n_sd ** 2 + 3 / (4 * sd ** 2))  # 44.7 against the row count's 120
    assert abs(draws.mean() - n) < 4 * expected_sd / math.sqrt(len(draws))
    assert draws.std() == pytest.approx(expected_sd, rel=0.06)


@pytest.mark.parametrize("attribute", [0, 1, 3])
def test_reweight_sets_one_attributes_marginal_and_keeps_every_conditional(attribute):
    """``p'(x) = p(x) f(x_a) / Z``, brute force: the attribute's 1-way is ``p(a) f(a)`` rescaled to the total, every
    clique marginal is the reweighted joint's (so every conditional given the attribute is kept), the total is kept;
    factors of the wrong length, negative or all 0 are refused."""
    rng = np.random.default_rng(3)
    sizes = [3, 2, 4, 3]
    model = MarkovRandomField(sizes, [(0, 1), (1, 2), (2, 3)], total=500.0)
    model.potentials = [rng.normal(size=p.shape) for p in model.potentials]
    model.calibrate()
    joint = _brute_force(model)
    factors = rng.uniform(0.0, 2.0, sizes[attribute])
    factors[0] = 0.0  # a cell emptied
    model.reweight(attribute, factors)
    shape = [sizes[a] if a == attribute else 1 for a in range(4)]
    expected = joint * factors.reshape(shape)
    expected *= 500.0 / expected.sum()
    for clique, marginal in zip(model.cliques, model.marginals):
        np.testing.assert_allclose(marginal, _marginal(expected, clique), rtol=1e-9, atol=1e-9)
    one = model.project((attribute,))
    np.testing.assert_allclose(one, _marginal(joint, (attribute,)) * factors * 500.0
                               / float((_marginal(joint, (attribute,)) * factors).sum()), rtol=1e-9, atol=1e-9)
    assert one[0] == pytest.approx(0.0, abs=1e-9) and one.sum() == pytest.approx(500.0)
    for bad in (np.ones(sizes[attribute] + 1), -np.ones(sizes[attribute]), np.zeros(sizes[attribute])):
        with pytest.raises(InputError, match="factors"):
            model.reweight(attribute, bad)


def test_pooled_sums_pool_every_table_holding_the_attribute_by_inverse_variance():
    """Known answers: a 1-way table and a pair (per-cell noise) pooled over a mask of the attribute's cells, the other
    attributes summed out unclipped; a table that merges the attribute's cells is left out, one merging another
    attribute's is kept; no table holding the attribute gives None."""
    one = Measurement((1,), np.array([10.0, -4.0, 50.0]), 2.0)  # mask [1, 1, 0]: 6, variance 8
    pair = Measurement((0, 1), np.array([[1.0, 2.0, 9.0], [3.0, -1.0, 9.0]]),
                       np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]))
    # mask sums: 1 + 2 + 3 - 1 = 5, variance 1 + 1 + 4 + 4 = 10
    coarse_own = Measurement((1,), np.array([6.0, 50.0]), 1.0, (np.array([0, 0, 1]),))  # merges the attribute: out
    coarse_other = Measurement((0, 1), np.array([[4.0, 1.0, 18.0]]), 1.0, (np.array([0, 0]), None))  # 5, variance 2
    mask, empty = np.array([True, True, False]), np.array([False, False, False])
    (value, sd), nothing = pooled_sums([one, pair, coarse_own, coarse_other], 1, [mask, empty])
    weights = np.array([1 / 8, 1 / 10, 1 / 2])
    assert value == pytest.approx(float(np.dot(weights, [6.0, 5.0, 5.0]) / weights.sum()))
    assert sd == pytest.approx(1 / math.sqrt(weights.sum()))
    assert nothing[0] == pytest.approx(0.0)
    assert pooled_sums([pair], 2, [mask]) == [None]
