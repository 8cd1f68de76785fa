"""DP releases of a graph's node-degree distribution (issue 21), each with its neighbouring relation in its name.

**Edge-DP** (``edge-dp-*``): neighbouring graphs have the same node set (public) and differ in one edge. Adding
or removing the edge ``{u, v}`` moves ``deg(u)`` and ``deg(v)`` by one each.

* ``edge-dp-sequence`` (Hay, Li, Miklau, Jensen, ICDM 2009): the degree sequence sorted ascending,
  ``S = (d_(1) <= ... <= d_(n))``, has L1 sensitivity **2**: the two changed degrees each move one position of
  the sorted sequence by one (ties re-sort without moving more mass). Release ``S + Lap(2 / epsilon)^n``, then
  *constrained inference*: the closest non-decreasing sequence in L2 (isotonic regression, scikit-learn's pool
  adjacent violators), clipped to ``[0, n - 1]`` and rounded — post-processing of the Laplace output.
  (The noisy histogram ``h + Lap(4 / epsilon)`` over ``d = 0 .. n - 1``, of sensitivity 4, is not offered: its
  ``n`` noisy bins spread phantom nodes over every degree up to ``n - 1``, which the sorted sequence avoids.)

**Node-DP** (``node-dp-projection``; Day, Li, Lyu, SIGMOD 2016): neighbouring graphs differ in one node *and all
its edges*, so the node count itself is private and one node can change ``n - 1`` degrees. The graph is first
projected to maximum degree ``theta`` by **edge addition** in a stable order: edges are visited in an order fixed
by the node labels alone (lexicographic in the label ranks, so adding a node never reorders the others' edges) and
kept when both ends still have degree < ``theta``. The degree histogram of the projection (``d = 0 .. theta``)
has L1 sensitivity ``2 theta + 1`` under node neighbours (Day et al., the edge-addition lemma: the new node lands
in one bin and its at most ``theta`` kept edges move at most ``2 theta`` other nodes by one bin each, after the
cascade of displaced edges; tests/graphs/test_degrees.py searches random small graphs for a larger change and
finds the bound attained, never exceeded). Release ``h_theta + Lap((2 theta + 1) / epsilon)``, clip at 0, round.
``theta`` is public (a degree cap chosen without looking at the graph); degrees above it are lost to the release.
``node-dp-cumulative`` (Day et al.'s better estimator) releases the *cumulative* histogram of the projection,
``C[k] = #{nodes of projected degree <= k}``, whose L1 sensitivity is ``theta + 1`` (the new node adds one to at
most ``theta + 1`` entries; a node moved by one bin changes one entry; the search in the tests finds ``theta + 1``
attained, never exceeded), adds ``Lap((theta + 1) / epsilon)`` and fits the closest non-decreasing, non-negative
sequence (isotonic regression) before differencing: about half the noise scale and the monotone constraint.

**Choosing theta with DP** (``theta="auto"``, either node-DP histogram). The best cap trades the projection's bias
(edges lost above ``theta``) against the noise (which grows with ``theta``); picking it by looking at the graph
is itself a release. dpsynth spends ``theta_share`` (default 0.2) of epsilon on the vector of projected edge counts
``(|E(G^t)|)_{t in T}`` over public candidates ``T`` (default 1, 2, 4, ..., 32): adding a node changes each
``|E(G^t)|`` by between 0 and ``t`` (the new node keeps at most ``t`` edges, each starting one alternating chain of
displaced and re-admitted edges whose net count is 0 or +1; the tests search random graphs for more and find
``t`` attained, never exceeded), so the vector's L1 sensitivity is ``sum(T)`` and ``Lap(sum(T) / epsilon_1)`` per
entry makes it epsilon_1-DP. The rest, ``epsilon_2``, releases the histogram at the ``t`` that maximises
``1.5 |E(G^t)|~ - noise(t)``, post-processing of the noisy counts: a lost edge moved about 1.5 units of histogram
L1 on the three bundled graphs (measured: 1.2-1.8), and ``noise(t)`` is the expected L1 of the histogram's noise
without constrained inference, ``1.5 (t + 1)^2 / epsilon_2`` for the cumulative histogram (each bin a difference of
two Laplace variables) and ``(t + 1)(2 t + 1) / epsilon_2`` for the projected one. The two Laplace events compose in
the ledger (PLD), so the total stays within epsilon. (A Laplace vector rather than the exponential mechanism:
the same sensitivity here, and its privacy-loss distribution composes exactly with the release's Laplace event.)

**Seed 001's DP-GAN** (``node-dp-poster-gan``; :mod:`dpsynth.graphs.poster_gan`): a GAN over permuted adjacency
matrices, accounted as its construction requires (every training row changes with one node: batch clipping,
sensitivity ``2 C`` per step, no subsampling amplification), under node *replacement* (the node count public).

Every other release records one Laplace event of noise multiplier ``scale / sensitivity`` in its ledger (pure
epsilon-DP; ``epsilon = inf`` releases the exact statistic and records a non-private event). With
``noise="secure"`` (:mod:`dpsynth.privacy.secure_noise`) every statistic here is an integer vector of integer L1
sensitivity, and gets **discrete Laplace** noise ``P(x) ~ exp(-|x| / scale)`` drawn by OpenDP from the system's
cryptographic generator (the same ``sensitivity / scale`` pure DP), recorded as ``DiscreteLaplaceDpEvent(1 / scale,
sensitivity)`` and composed by PLD; ``node-dp-poster-gan`` then draws its DP-SGD noise from the cryptographic
generator (:func:`dpsynth.privacy.secure_noise.secure_normal`; continuous Gaussians, which PLD composes exactly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from dp_accounting import dp_event

from dpsynth.errors import InputError
from dpsynth.graphs.methods import DEFAULT_THETA, METHODS
from dpsynth.privacy.ledger import PrivacyLedger
from dpsynth.privacy.secure_noise import check_noise, discrete_laplace, use_noise

__all__ = ["METHODS", "DegreeRelease", "release_degrees", "project_max_degree", "degree_array", "node_order"]

THETA_CANDIDATES = (1, 2, 4, 8, 16, 32)  # public candidates of theta="auto"
THETA_SHARE = 0.2  # share of epsilon spent choosing theta
BIAS_PER_LOST_EDGE = 1.5  # histogram L1 moved by one edge lost to the projection (measured on the bundled graphs)


@dataclass
class DegreeRelease:
    """A released degree distribution: ``histogram[d]`` = number of nodes of degree ``d`` (integers; its sum is
    the released node count, public under edge-DP and a DP estimate under node-DP)."""

    method: str
    neighbouring: str
    epsilon: float
    delta: float
    histogram: np.ndarray
    params: dict[str, Any] = field(default_factory=dict)
    ledger: PrivacyLedger | None = None

    @property
    def n_nodes(self) -> int:
        return int(self.histogram.sum())

    def degree_sequence(self) -> np.ndarray:
        """One degree per released node, ascending."""
        return np.repeat(np.arange(len(self.histogram)), self.histogram.astype(int))

    def distribution(self) -> np.ndarray:
        """``P[d]``: the fraction of released nodes of degree ``d`` (zeros when no node was released)."""
        total = self.histogram.sum()
        return self.histogram / total if total > 0 else np.zeros(len(self.histogram))

    def synthetic_graph(self, *, model: str = "configuration", seed: int | None = None):
        """A networkx graph with (about) the released degrees: post-processing of the release, never of the graph.

        ``configuration``: the configuration model made simple (self-loops and parallel edges dropped, so a few
        degrees come out lower); ``chung-lu``: Chung & Lu's expected-degree graph (each edge independent with
        probability ``d_u d_v / sum d``)."""
        import networkx as nx

        degrees = self.degree_sequence()
        if model == "chung-lu":
            return nx.expected_degree_graph(degrees.tolist(), seed=seed, selfloops=False)
        if model != "configuration":
            raise InputError(f"model must be 'configuration' or 'chung-lu'. Found {model!r}.")
        if degrees.sum() % 2:  # a configuration needs an even number of edge ends: drop one from the largest
            degrees = degrees.copy()
            degrees[-1] -= 1
        multigraph = nx.configuration_model(degrees.tolist(), seed=seed)
        graph = nx.Graph(multigraph)
        graph.remove_edges_from(nx.selfloop_edges(graph))
        return graph

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "neighbouring": self.neighbouring, "epsilon": self.epsilon,
                "delta": self.delta, "histogram": self.histogram.astype(int).tolist(), "params": self.params,
                "ledger": None if self.ledger is None else self.ledger.to_dict()}


def degree_array(graph) -> np.ndarray:
    """The degrees of a networkx graph (simple, undirected; one per node)."""
    return np.array([d for _, d in graph.degree()], dtype=np.int64)


def node_order(graph) -> dict[Any, int]:
    """Rank of each node label in a data-independent order (by ``repr`` of the label: ints and strings keep a
    unique, stable order, and adding a node never reorders the others)."""
    return {v: i for i, v in enumerate(sorted(graph.nodes, key=repr))}


def project_max_degree(graph, theta: int) -> np.ndarray:
    """Degrees of the edge-addition projection of ``graph`` to maximum degree ``theta`` (module docstring)."""
    rank = node_order(graph)
    edges = sorted(tuple(sorted((rank[u], rank[v]))) for u, v in graph.edges if u != v)
    degree = np.zeros(len(rank), dtype=np.int64)
    for a, b in edges:
        if degree[a] < theta and degree[b] < theta:
            degree[a] += 1
            degree[b] += 1
    return degree


def _check(graph) -> None:
    if not (hasattr(graph, "degree") and hasattr(graph, "nodes")):
        raise InputError(f"A graph must be a networkx graph. Found {type(graph).__name__}.")
    if graph.is_directed() or graph.is_multigraph():
        raise InputError("A degree release needs a simple undirected graph; convert it with networkx.Graph(g) "
                         "first (this drops edge directions and parallel edges).")
    if graph.number_of_nodes() == 0:
        raise InputError("A graph needs at least one node. Found 0.")


def release_degrees(graph, *, epsilon: float, method: str = "node-dp-cumulative", delta: float = 1e-6,
                    theta: int | str = DEFAULT_THETA, seed: int | np.random.Generator | None = None,
                    gan_params: dict[str, Any] | None = None, theta_candidates: tuple[int, ...] = THETA_CANDIDATES,
                    theta_share: float = THETA_SHARE, noise: str = "numpy") -> DegreeRelease:
    """Release ``graph``'s degree distribution with ``method`` (module docstring) at ``epsilon``.

    ``delta`` is only the level the ledger reports epsilon at (every method here is pure epsilon-DP); ``theta``
    is the public degree cap of the ``node-dp-*`` histograms, or ``"auto"``: chosen with ``theta_share`` of epsilon
    among the public ``theta_candidates`` (module docstring); ``gan_params`` override
    :data:`~dpsynth.graphs.poster_gan.POSTER_GAN_DEFAULTS` for ``node-dp-poster-gan``; ``noise``: ``"numpy"`` or
    ``"secure"`` (OpenDP's discrete Laplace; module docstring)."""
    _check(graph)
    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}. Found {method!r}.")
    check_noise(noise)
    if not (epsilon > 0):
        raise InputError(f"epsilon must be > 0. Found {epsilon}.")
    histogram_method = method in ("node-dp-projection", "node-dp-cumulative")
    auto = histogram_method and theta == "auto"
    if histogram_method and not auto and (isinstance(theta, str) or int(theta) != theta or theta < 1):
        raise InputError(f"theta must be an integer >= 1 or 'auto'. Found {theta!r}.")
    if auto:
        _check_auto(theta_candidates, theta_share)
    rng = np.random.default_rng(seed)
    # the discrete Laplace's event is one dp-accounting's RDP accountant does not take: PLD composes it
    ledger = PrivacyLedger(target_epsilon=epsilon, target_delta=delta,
                           accountant="pld" if noise == "secure" else "best")
    selection: dict[str, Any] = {}
    if auto:
        theta, selection = _choose_theta(graph, method, epsilon, theta_candidates, theta_share, ledger, rng, noise)
        epsilon_release = epsilon * (1.0 - theta_share)
    else:
        epsilon_release = epsilon
    n = graph.number_of_nodes()
    if method == "node-dp-poster-gan":
        import networkx as nx

        from dpsynth.graphs.poster_gan import poster_gan_histogram

        order = sorted(node_order(graph), key=node_order(graph).get)
        adjacency = nx.to_numpy_array(graph, nodelist=order, weight=None)
        with use_noise(noise):  # secure: the DP-SGD noise from the cryptographic generator (PLD: continuous)
            histogram, used = poster_gan_histogram(adjacency, ledger, rng, **(gan_params or {}))
        return DegreeRelease(method, METHODS[method], float(epsilon), float(delta), _trim(histogram), used, ledger)
    if gan_params:
        raise InputError(f"gan_params apply to node-dp-poster-gan only. Found method {method!r}.")
    if method == "edge-dp-sequence":
        statistic, sensitivity = np.sort(degree_array(graph)).astype(float), 2.0
    else:
        theta = int(theta)
        statistic = np.bincount(project_max_degree(graph, theta), minlength=theta + 1).astype(float)
        sensitivity = 2.0 * theta + 1.0
        if method == "node-dp-cumulative":
            statistic, sensitivity = np.cumsum(statistic), theta + 1.0
    scale = 0.0 if math.isinf(epsilon) else sensitivity / epsilon_release
    noisy = _laplace(statistic, scale, sensitivity, ledger, rng, noise, phase="degrees", mechanism=method,
                     neighbouring=METHODS[method])
    histogram = _post_process(method, noisy, n)
    params = {"sensitivity": sensitivity, "laplace_scale": scale}
    if histogram_method:
        params["theta"] = theta
        params.update(selection)
    return DegreeRelease(method, METHODS[method], float(epsilon), float(delta), histogram, params, ledger)


def _check_auto(candidates, share) -> None:
    if not candidates or any(isinstance(t, bool) or int(t) != t or t < 1 for t in candidates):
        raise InputError(f"theta_candidates must be integers >= 1. Found {candidates!r}.")
    if not (0.0 < share < 1.0):
        raise InputError(f"theta_share must be in (0, 1). Found {share!r}.")


def _laplace(statistic: np.ndarray, scale: float, sensitivity: float, ledger: PrivacyLedger, rng, noise: str, *,
             phase: str, mechanism: str, **params: Any) -> np.ndarray:
    """``statistic`` plus Laplace noise of ``scale`` (L1 ``sensitivity``), recorded in ``ledger`` first: NumPy's
    continuous Laplace, or under ``noise="secure"`` OpenDP's discrete Laplace (integer statistic and sensitivity);
    the exact statistic and a non-private event at ``scale == 0`` (epsilon = inf)."""
    if scale == 0:
        ledger.spend(dp_event.NonPrivateDpEvent(), phase=phase, mechanism=f"{mechanism} (Laplace)",
                     sensitivity=sensitivity, **params)
        return statistic.copy()
    if noise == "secure":
        ledger.spend(dp_event.DiscreteLaplaceDpEvent(1.0 / scale, int(sensitivity)), phase=phase,
                     mechanism=f"{mechanism} (discrete Laplace, OpenDP)", sensitivity=sensitivity, **params)
        return discrete_laplace(statistic, scale, int(sensitivity))
    ledger.spend(dp_event.LaplaceDpEvent(scale / sensitivity), phase=phase, mechanism=f"{mechanism} (Laplace)",
                 sensitivity=sensitivity, **params)
    return statistic + rng.laplace(0.0, scale, size=statistic.shape)


def _choose_theta(graph, method: str, epsilon: float, candidates, share: float, ledger: PrivacyLedger,
                  rng: np.random.Generator, noise: str = "numpy") -> tuple[int, dict[str, Any]]:
    """``theta="auto"``: noisy projected edge counts, then the candidate of best estimated error (module
    docstring). Spends one Laplace event of L1 sensitivity ``sum(candidates)`` in phase ``theta``."""
    candidates = sorted({int(t) for t in candidates})
    sensitivity = float(sum(candidates))
    edges = np.array([project_max_degree(graph, t).sum() // 2 for t in candidates], dtype=float)
    epsilon_select, epsilon_release = epsilon * share, epsilon * (1.0 - share)
    scale = 0.0 if math.isinf(epsilon) else sensitivity / epsilon_select
    noisy = _laplace(edges, scale, sensitivity, ledger, rng, noise, phase="theta", mechanism="projected edge counts",
                     neighbouring="node", candidates=candidates)
    t = np.array(candidates, dtype=float)
    if math.isinf(epsilon):
        noise = np.zeros_like(t)
    elif method == "node-dp-cumulative":
        noise = 1.5 * (t + 1.0) ** 2 / epsilon_release
    else:
        noise = (t + 1.0) * (2.0 * t + 1.0) / epsilon_release
    score = BIAS_PER_LOST_EDGE * noisy - noise
    chosen = candidates[int(np.flatnonzero(score >= score.max())[0])]  # ties: the smallest cap (least noise)
    return chosen, {"theta_selection": {"candidates": candidates, "share": share,
                                        "noisy_edge_counts": noisy.round(3).tolist(), "chosen": chosen}}


def _post_process(method: str, noisy: np.ndarray, n: int) -> np.ndarray:
    """Integer degree counts from a noisy statistic; ``n`` (the node count) is read only under edge-DP, where the
    node set is public."""
    if method == "edge-dp-sequence":
        from sklearn.isotonic import IsotonicRegression

        fitted = IsotonicRegression(increasing=True).fit_transform(np.arange(len(noisy)), noisy)
        sequence = np.clip(np.rint(fitted), 0, max(n - 1, 0)).astype(np.int64)
        return np.bincount(sequence, minlength=1)
    if method == "node-dp-cumulative":
        from sklearn.isotonic import IsotonicRegression

        fitted = IsotonicRegression(increasing=True, y_min=0.0).fit_transform(np.arange(len(noisy)), noisy)
        cumulative = np.rint(fitted).astype(np.int64)
        return _trim(np.diff(cumulative, prepend=0))
    return _trim(np.rint(np.clip(noisy, 0.0, None)).astype(np.int64))


def _trim(histogram: np.ndarray) -> np.ndarray:
    """Drop empty bins above the largest released degree (at least one bin stays)."""
    nonzero = np.flatnonzero(histogram)
    return histogram[: (nonzero[-1] + 1) if len(nonzero) else 1]
