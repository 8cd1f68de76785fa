"""A discrete graphical model (Markov random field on a junction tree), fitted to noisy marginals, sampled.

This is the "generate" step of select-measure-generate (Private-PGM: McKenna, Sheldon, Miklau, ICML 2019), in
NumPy: no compilation, no accelerator. It never reads private rows: its inputs are DP measurements (noisy marginal
count tables) and the DP row count, so everything here is post-processing.

- **Structure.** The attributes' interaction graph (an edge between two attributes measured together) is
  triangulated by greedy elimination (each step removes the attribute whose neighbourhood has the smallest domain);
  the elimination cliques, kept when maximal, are joined into a junction tree by a maximum spanning tree over
  separator sizes (:func:`junction_tree`). Its size (cells over all cliques) is what AIM's model-size filter bounds.
- **Inference.** Log-space Shafer-Shenoy message passing on the tree gives every clique's marginal exactly
  (:meth:`MarkovRandomField.calibrate`); the marginal of any attribute set is then read off the smallest connected
  subtree holding it (product of clique marginals over separator marginals, :meth:`MarkovRandomField.project`).
- **Estimation.** The potentials minimise ``sum_m ||mu_m - y_m||^2 / (2 sigma_m^2)`` over the measured cliques m
  (the Gaussian log-likelihood of the measurements; ``sigma_m`` may differ per cell) by entropic mirror descent on
  the potentials with a backtracking (Armijo) step: the algorithm of Private-PGM, whose fixed points are the
  maximum-entropy distribution among those closest to the measurements. An accelerated method (``method=
  "accelerated"``) gets much closer to that optimum in the same steps, but on Adult the closer fit followed the
  noise (2-way TVD 0.0202 -> 0.0206): mirror descent from the maximum-entropy start, stopped early, regularises, and
  the models use it.
- **Sampling.** Ancestral sampling down the tree: the root clique's cells are drawn from its marginal, then each
  clique's new attributes from their conditional given the separator already drawn. Each row is an exact draw from
  the model and rows are exchangeable: no row ordering within groups, which would link columns that the model does
  not link (mbi's "round" sampler). By default the draws within a separator group are *stratified*
  (:func:`draw_rows`): the group's counts match the model's conditional to within one row instead of carrying
  binomial noise, so the released rows follow the model's marginals more closely than i.i.d. rows
  (``stratified=False`` in :meth:`MarkovRandomField.sample` gives i.i.d. rows).

Cliques are tuples of attribute indices in increasing order; a clique's table has one axis per attribute in that
order.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from dpsynth.data.metadata import pooled_count
from dpsynth.errors import InputError

__all__ = ["Measurement", "pooled_total", "junction_tree", "tree_size", "MarkovRandomField", "draw_rows", "merge_cells"]

Clique = tuple[int, ...]
_WINDOW = 50  # steps over which the accelerated method's progress is judged for its stopping rule


@dataclass(frozen=True)
class Measurement:
    """A noisy count table ``y`` of ``clique`` (shape: the clique's attribute sizes) with noise sd ``sigma`` (a
    number, or one per cell, e.g. for cells that sum several noisy cells).

    ``groups`` (optional, one entry per attribute of the clique): an attribute's cells merged into coarser ones
    (``groups[i][cell]`` = its coarse cell, or None to keep the attribute's cells), so ``y`` counts the coarse
    table - a linear query of the clique's marginal (:meth:`coarsen`), as private-pgm's measurements with a query
    matrix. A coarse table has fewer cells, so less noise in total, at the price of detail."""

    clique: Clique
    y: np.ndarray
    sigma: float | np.ndarray
    groups: tuple[np.ndarray | None, ...] | None = None

    def __post_init__(self) -> None:
        if tuple(sorted(set(self.clique))) != tuple(self.clique):
            raise InputError(f"a clique is a tuple of distinct increasing attribute indices. Found {self.clique}.")
        sigma = np.asarray(self.sigma, dtype=float)
        if not np.all(np.isfinite(sigma)) or np.any(sigma <= 0) or sigma.shape not in ((), np.shape(self.y)):
            raise InputError(f"sigma must be > 0, a number or one per cell. Found shape {sigma.shape}.")
        if self.groups is not None:
            if len(self.groups) != len(self.clique):
                raise InputError(f"groups needs one entry per attribute of the clique. Found {len(self.groups)}.")
            for i, g in enumerate(self.groups):
                if g is not None and (np.ndim(g) != 1 or int(np.max(g)) + 1 != np.shape(self.y)[i]
                                      or np.min(g) < 0):
                    raise InputError(f"groups[{i}] must map each cell to a coarse cell 0..{np.shape(self.y)[i] - 1}.")

    @property
    def weight(self) -> np.ndarray | float:
        return 1.0 / np.asarray(self.sigma, dtype=float) ** 2

    def coarsen(self, table: np.ndarray) -> np.ndarray:
        """The clique's marginal ``table`` summed into the measured (coarse) cells."""
        for i, g in enumerate(self.groups or ()):
            if g is not None:
                table = merge_cells(table, g, i)
        return table

    def spread(self, coarse: np.ndarray) -> np.ndarray:
        """The transpose of :meth:`coarsen`: each coarse cell's value given to every cell it merges (gradients)."""
        if self.groups is None:
            return coarse
        for i, g in enumerate(self.groups):
            if g is not None:
                coarse = np.take(coarse, np.asarray(g), axis=i)
        return coarse


def pooled_total(n_rows: float, n_sd: float, measurements: Sequence[Measurement]) -> float:
    """The number of rows the model's counts should sum to: the inverse-variance weighted mean of a noisy row count
    ``n_rows`` (noise sd ``n_sd``) and the sums of ``measurements``, each an unbiased noisy count of every row
    (variance: its cells' noise variances summed), at least 1 (:func:`~dpsynth.data.metadata.pooled_count`).
    Post-processing of DP outputs.

    Every measurement must count each row once, in a table over the whole domain (missing values in their cell): the
    models' own Gaussian count tables do. The metadata's histograms are not passed here: their row totals are pooled
    into the metadata's row count already (a text column's released counts are not such a table: its "other" count
    is the row count minus them). ``n_sd`` <= 0 (exact counts) returns ``n_rows``. Why: the graphical model fits
    counts that sum to its total, so a total off by ``e`` rows shifts every cell of a measured table by about ``e`` /
    cells (least squares on the simplex), emptying the rare cells of a small table whose DP row count is low: on 442
    rows at epsilon 1 the row-count query has noise sd 124."""
    if not n_sd > 0:
        return float(n_rows)
    estimates = [(float(n_rows), float(n_sd))]
    for m in measurements:
        var = float(np.sum(np.broadcast_to(np.asarray(m.sigma, dtype=float) ** 2, np.shape(m.y))))
        estimates.append((float(np.sum(m.y)), math.sqrt(var)))
    return max(1.0, pooled_count(estimates)[0])


def pooled_sums(measurements: Sequence[Measurement], attribute: int, masks: Sequence[np.ndarray]
                ) -> list[tuple[float, float] | None]:
    """For each mask over the cells of ``attribute``: the inverse-variance pool of the measurements' unclipped noisy
    counts of rows in those cells (each measurement holding the attribute at its own cells, the other attributes
    summed out), as (value, sd); None when no measurement holds the attribute. Post-processing of DP outputs."""
    out = []
    for mask in masks:
        mask = np.asarray(mask, dtype=bool)
        estimates = []
        for m in measurements:
            if attribute not in m.clique:
                continue
            i = m.clique.index(attribute)
            if m.groups is not None and m.groups[i] is not None:
                continue
            y = np.moveaxis(np.asarray(m.y, dtype=float), i, 0)
            var = np.moveaxis(np.broadcast_to(np.asarray(m.sigma, dtype=float) ** 2, np.shape(m.y)), i, 0)
            estimates.append((float(y[mask].sum()), math.sqrt(float(var[mask].sum()))))
        out.append(pooled_count(estimates) if estimates else None)
    return out


def merge_cells(table: np.ndarray, groups: np.ndarray, axis: int) -> np.ndarray:
    """``table`` with the cells of ``axis`` summed into groups (``groups[cell]`` = its group): one ``reduceat``
    when the groups are runs of neighbours (0, 0, 1, 1, 2, ...), else a product with the one-hot matrix."""
    groups = np.asarray(groups)
    if np.all(np.diff(groups) >= 0) and groups[0] == 0 and np.all(np.diff(groups) <= 1):
        return np.add.reduceat(table, np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]]), axis=axis)
    onehot = np.zeros((len(groups), int(groups.max()) + 1))
    onehot[np.arange(len(groups)), groups] = 1.0
    return np.moveaxis(np.tensordot(table, onehot, axes=([axis], [0])), -1, axis)


# ---------------------------------------------------------------------------------------------- structure
def junction_tree(sizes: Sequence[int], cliques: Sequence[Clique]) -> tuple[list[Clique], list[tuple[int, int]]]:
    """Maximal cliques of a triangulation of the cliques' interaction graph (every attribute in at least one) and
    the edges of a junction tree over them (indices into the clique list; a forest is joined with empty
    separators, so the result is always one tree)."""
    out = _maximal_cliques(sizes, cliques)
    clique_graph = nx.Graph()
    clique_graph.add_nodes_from(range(len(out)))
    for i, j in itertools.combinations(range(len(out)), 2):
        clique_graph.add_edge(i, j, weight=len(set(out[i]) & set(out[j])))
    tree = nx.maximum_spanning_tree(clique_graph, weight="weight", algorithm="kruskal")
    return out, sorted((min(a, b), max(a, b)) for a, b in tree.edges())


def _maximal_cliques(sizes: Sequence[int], cliques: Sequence[Clique]) -> list[Clique]:
    """The maximal cliques of :func:`junction_tree` (greedy elimination), in increasing order."""
    graph = nx.Graph()
    graph.add_nodes_from(range(len(sizes)))
    for cl in cliques:
        graph.add_edges_from(itertools.combinations(cl, 2))
    elimination_cliques: list[frozenset] = []
    work = graph.copy()
    while work.number_of_nodes():
        # greedy: eliminate the attribute whose clique (itself and its neighbours) has the smallest domain
        def cost(v):
            return math.prod(sizes[u] for u in work.neighbors(v)) * sizes[v]

        v = min(sorted(work.nodes), key=cost)
        neighbours = list(work.neighbors(v))
        elimination_cliques.append(frozenset([v, *neighbours]))
        work.add_edges_from(itertools.combinations(neighbours, 2))
        work.remove_node(v)
    maximal = [c for c in elimination_cliques if not any(c < other for other in elimination_cliques)]
    maximal = sorted(set(maximal), key=lambda c: tuple(sorted(c)))
    return [tuple(sorted(c)) for c in maximal]


def tree_size(sizes: Sequence[int], cliques: Sequence[Clique]) -> int:
    """Cells over all maximal cliques of the junction tree of ``cliques`` (what a model of them stores). The tree's
    edges do not change its size, so they are not built: the maximum spanning tree over the cliques' overlaps was
    half of AIM's model-size filter, which triangulates once per candidate."""
    return sum(math.prod(sizes[a] for a in c) for c in _maximal_cliques(sizes, cliques))


# ---------------------------------------------------------------------------------------------- factor helpers
def _expand(table: np.ndarray, attrs: Clique, target: Clique, sizes: Sequence[int]) -> np.ndarray:
    """``table`` over ``attrs`` as a broadcastable array over ``target`` (``attrs`` a subset, both increasing)."""
    return table.reshape([sizes[a] if a in attrs else 1 for a in target])


def _sum_to(table: np.ndarray, attrs: Clique, keep: Clique, log: bool = False) -> np.ndarray:
    axes = tuple(i for i, a in enumerate(attrs) if a not in keep)
    if not axes:
        return table
    if not log:
        return table.sum(axis=axes)
    # log-sum-exp without scipy's per-call overhead (this is the inner loop of estimation), shifted by the table's
    # one maximum (a scalar: 30% faster message passing than a maximum per output cell); exact unless a whole slice
    # lies ~700 below the maximum (its sum underflows), and then it is recomputed with a maximum per slice
    top = table.max()
    total = np.exp(table - top).sum(axis=axes)
    if total.min() > 1e-280:
        return np.log(total) + top
    top = table.max(axis=axes, keepdims=True)
    return np.log(np.exp(table - top).sum(axis=axes)) + np.squeeze(top, axis=axes)


def _shared_axis(attrs: Clique, subsets: Sequence[Clique], sizes: Sequence[int]) -> int | None:
    """The attribute of ``attrs`` that the most ``subsets`` lack (the larger on ties), when at least two lack it:
    summing it out once serves them all from a table ``sizes[a]`` times smaller (None: no such attribute)."""
    if len(attrs) < 2:
        return None
    best = max(attrs, key=lambda a: (sum(a not in c for c in subsets), sizes[a]))
    return best if sum(best not in c for c in subsets) >= 2 else None


def _marginals_of(table: np.ndarray, attrs: Clique, wanted: Sequence[Clique], sizes: Sequence[int],
                  out: dict[Clique, np.ndarray]) -> None:
    """``out[c]``: ``table`` (over ``attrs``) summed to each attribute set ``c`` of ``wanted`` (subsets of
    ``attrs``). Subsets that lack a common attribute are summed from one table without it (recursively), so a big
    clique is read about once per such group instead of once per subset: estimation reads every measured marginal
    from its clique every step (a 2-million-cell Cardio model: two thirds of a step's time went to those sums)."""
    rest = []
    for c in wanted:
        if c == attrs:
            out[c] = table
        else:
            rest.append(c)
    while rest:
        a = _shared_axis(attrs, rest, sizes)
        if a is None:
            for c in rest:
                out[c] = _sum_to(table, attrs, c)
            return
        sub = tuple(x for x in attrs if x != a)
        _marginals_of(_sum_to(table, attrs, sub), sub, [c for c in rest if a not in c], sizes, out)
        rest = [c for c in rest if a in c]


def _table_of(attrs: Clique, parts: Sequence[tuple[Clique, np.ndarray]], sizes: Sequence[int]) -> np.ndarray:
    """The sum of ``parts`` (tables over subsets of ``attrs``) broadcast over ``attrs``: the transpose of
    :func:`_marginals_of`, parts that lack a common attribute added up in a table without it first."""
    out = np.zeros([sizes[a] for a in attrs])
    rest = list(parts)
    while rest:
        a = _shared_axis(attrs, [c for c, _ in rest], sizes)
        if a is None:
            for c, t in rest:
                out += _expand(t, c, attrs, sizes)
            break
        sub = tuple(x for x in attrs if x != a)
        out += _expand(_table_of(sub, [(c, t) for c, t in rest if a not in c], sizes), sub, attrs, sizes)
        rest = [(c, t) for c, t in rest if a in c]
    return out


# ---------------------------------------------------------------------------------------------- the model
class MarkovRandomField:
    """Potentials on the maximal cliques of a junction tree over attributes of the given ``sizes``; ``total``
    is the number of rows the marginals count (the DP row count)."""

    def __init__(self, sizes: Sequence[int], cliques: Sequence[Clique], total: float,
                 theta: dict[Clique, np.ndarray] | None = None):
        """``theta``: log-potentials of attribute sets (a previous model's, for a warm start); each must lie in
        one of this model's cliques."""
        if not (math.isfinite(total) and total > 0):
            raise InputError(f"total must be a finite number > 0. Found {total!r}.")
        self.sizes = [int(s) for s in sizes]
        self.total = float(total)
        self.cliques, self.edges = junction_tree(self.sizes, list(cliques) + list(theta or {}))
        self.theta = {c: np.asarray(t, dtype=float) for c, t in (theta or {}).items()}
        self._order, self._parent = self._traversal()
        self._assemble()
        self.marginals: list[np.ndarray] = []
        self.calibrate()

    def _assemble(self) -> None:
        """Clique potentials from ``theta``: each attribute set's table added to the smallest clique holding it."""
        parts: list[list[tuple[Clique, np.ndarray]]] = [[] for _ in self.cliques]
        for c, t in self.theta.items():
            k = self.home(c)
            if k is None:
                raise InputError(f"attribute set {c} is not in the model; build it with that clique.")
            parts[k].append((c, t))
        self.potentials = [_table_of(c, p, self.sizes) for c, p in zip(self.cliques, parts)]

    @classmethod
    def from_marginals(cls, sizes: Sequence[int], cliques: Sequence[Clique], edges: Sequence[tuple[int, int]],
                       marginals: Sequence[np.ndarray], total: float) -> MarkovRandomField:
        """A model rebuilt from its stored junction tree and calibrated clique marginals (a model file): the
        potentials log(mu_C / mu_S), with S the separator to its parent, give back the same distribution."""
        self = cls.__new__(cls)
        self.sizes, self.total = [int(s) for s in sizes], float(total)
        self.cliques, self.edges = [tuple(c) for c in cliques], [tuple(e) for e in edges]
        for c, m in zip(self.cliques, marginals):
            if m.shape != tuple(self.sizes[a] for a in c):
                raise InputError(f"stored marginal of clique {c} has shape {m.shape}.")
        self._order, self._parent = self._traversal()
        self.theta = {}  # a stored model is sampled, not refitted
        self._set_marginals(marginals)
        return self

    # ------------------------------------------------------------------ structure helpers
    def _traversal(self) -> tuple[list[int], dict[int, int]]:
        self._homes: dict[Clique, int | None] = {}  # home() of each attribute set asked for (the cliques are fixed)
        tree = nx.Graph()
        tree.add_nodes_from(range(len(self.cliques)))
        tree.add_edges_from(self.edges)
        self._adjacency = {k: list(tree.neighbors(k)) for k in tree.nodes}
        self._paths: dict[int, dict[int, list[int]]] = {}  # the tree's paths from a clique, for project()
        self._conditionals_of: list[np.ndarray] | None = None  # the marginals that _conditionals were read from
        self._conditionals: dict[tuple, np.ndarray] = {}
        order = list(nx.bfs_tree(tree, 0)) if self.cliques else []
        parent = {child: par for par, child in nx.bfs_edges(tree, 0)} if self.cliques else {}
        return order, parent

    def _separator(self, i: int, j: int) -> Clique:
        return tuple(sorted(set(self.cliques[i]) & set(self.cliques[j])))

    def home(self, clique: Clique) -> int | None:
        """Index of the smallest maximal clique containing ``clique`` (None if none does)."""
        clique = tuple(clique)
        if clique in self._homes:
            return self._homes[clique]
        best = None
        for k, c in enumerate(self.cliques):
            if set(clique) <= set(c) and (best is None or len(c) < len(self.cliques[best])):
                best = k
        self._homes[clique] = best
        return best

    def size(self) -> int:
        return sum(p.size for p in self.potentials)

    # ------------------------------------------------------------------ inference
    def calibrate(self) -> list[np.ndarray]:
        """Every maximal clique's marginal (counts summing to ``total``), by two passes of message passing.

        Each clique's table is exponentiated once, on the way up; the way down multiplies it by the parent's message
        (a separator-sized exp) and reads every message to a child from one separator sum of that table, since a
        child's own upward message is constant along the axes summed out:
        ``logsumexp(belief - up) = logsumexp(belief) - up``. Where a shifted table or a separator slice underflows,
        the sums are redone from the log tables, so the result is exact wherever the old per-child log-sum-exp was."""
        children: dict[int, list[int]] = {k: [] for k in range(len(self.cliques))}
        for child, par in self._parent.items():
            children[par].append(child)
        up: dict[int, np.ndarray] = {}  # message child -> parent, over their separator (log)
        # per clique: log(potential x children's messages), its exp shifted by ``top``, and ``top``
        upward: dict[int, tuple[np.ndarray, np.ndarray, float]] = {}
        for k in reversed(self._order):
            belief = self.potentials[k].copy()
            for ch in children[k]:
                belief += _expand(up[ch], self._separator(ch, k), self.cliques[k], self.sizes)
            top = float(belief.max())
            shifted = np.exp(belief - top)
            upward[k] = (belief, shifted, top)
            if k in self._parent:
                sep = self._separator(k, self._parent[k])
                total = _sum_to(shifted, self.cliques[k], sep)
                up[k] = np.log(total) + top if total.min() > 1e-280 else _sum_to(belief, self.cliques[k], sep, log=True)
        down: dict[int, np.ndarray] = {}  # message parent -> child (log)

        def log_belief(k: int) -> np.ndarray:  # the whole log table, for the underflow fallbacks only
            belief = upward[k][0]
            if k not in self._parent:
                return belief
            return belief + _expand(down[k], self._separator(k, self._parent[k]), self.cliques[k], self.sizes)

        self.marginals = [np.empty(0)] * len(self.cliques)
        for k in self._order:
            _, shifted, top = upward[k]
            if k in self._parent:
                msg_top = float(down[k].max())
                sep = self._separator(k, self._parent[k])
                shifted *= _expand(np.exp(down[k] - msg_top), sep, self.cliques[k], self.sizes)
                top += msg_top
                if shifted.max() < 1e-250:  # the parent's message moved the mass where the table had underflowed
                    full = log_belief(k)
                    top = float(full.max())
                    shifted = np.exp(full - top)
            seps = [self._separator(ch, k) for ch in children[k]]
            sums: dict[Clique, np.ndarray] = {}
            _marginals_of(shifted, self.cliques[k], seps, self.sizes, sums)
            for ch, sep in zip(children[k], seps):
                total = sums[sep]
                ours = np.log(total) + top if total.min() > 1e-280 else _sum_to(log_belief(k), self.cliques[k], sep,
                                                                                  log=True)
                down[ch] = ours - up[ch]
            # normalised in NumPy: scipy's logsumexp costs ~0.3 ms a call in overhead (scipy 1.17), which made it half
            # of an MST fit's time (46,000 calls)
            self.marginals[k] = shifted * (self.total / shifted.sum())
        return self.marginals

    def _cover(self, clique: Clique) -> tuple[int, set[int]]:
        """A connected set of cliques covering ``clique``'s attributes with the fewest cells, and a clique of it
        holding the first attribute (the root of :meth:`project`'s walk).

        Exact: the cliques holding one attribute form a connected subtree (the running intersection property), so
        the smallest covering subtree through a clique ``r`` is the union of the paths from ``r`` to the nearest
        holder of each attribute, and the smallest of all contains a holder of the first attribute: trying each of
        those as ``r`` finds it. (Taking the first clique that holds each attribute could walk a long way round:
        most of a King County fit's scoring time went to such walks.)"""
        holders = [[k for k, c in enumerate(self.cliques) if a in c] for a in clique]
        cells = [math.prod(self.sizes[a] for a in c) for c in self.cliques]
        best: tuple[int, int, set[int]] | None = None
        for root in holders[0]:
            if root not in self._paths:
                self._paths[root] = nx.single_source_shortest_path(nx.Graph(self._adjacency), root)
            nodes = {root}
            for hs in holders[1:]:
                nodes.update(min((self._paths[root][h] for h in hs), key=len))
            cost = sum(cells[k] for k in nodes)
            if best is None or cost < best[0]:
                best = (cost, root, nodes)
        return best[1], best[2]

    def _conditional(self, k: int, parent: int | None, keep: Clique) -> np.ndarray:
        """Clique ``k``'s conditional given its separator with ``parent`` (its marginal over ``total`` at the root),
        summed to ``keep``: the first factor of :meth:`project`'s walk through ``k``. Kept until the marginals
        change, since the candidates AIM scores in a round walk the same cliques towards the same parents and mostly
        keep the same attributes (the same numbers, computed once). At most one clique-sized table per clique and
        neighbour; the others have an attribute summed out, so the kept tables stay within a few times the model."""
        if self._conditionals_of is not self.marginals:
            self._conditionals_of, self._conditionals = self.marginals, {}
        key = (k, parent, keep)
        if key not in self._conditionals:
            marginal, attrs = self.marginals[k], self.cliques[k]
            if parent is None:
                factor = marginal / self.total
            else:
                sep = self._separator(k, parent)
                factor = marginal / np.maximum(_expand(_sum_to(marginal, attrs, sep), sep, attrs, self.sizes), 1e-300)
            self._conditionals[key] = _sum_to(factor, attrs, keep)
        return self._conditionals[key]

    def project(self, clique: Clique) -> np.ndarray:
        """The model's marginal table of any attribute set: summed from a clique holding it, or else multiplied
        along the smallest subtree whose cliques cover it (the joint of a connected subtree of a junction tree is
        the product of its clique marginals over its separator marginals)."""
        clique = tuple(sorted(clique))
        k = self.home(clique)
        if k is not None:
            return _sum_to(self.marginals[k], self.cliques[k], clique)
        root, nodes = self._cover(clique)
        neighbours = {k: [c for c in self._adjacency[k] if c in nodes] for k in nodes}
        query = set(clique)

        def collect(k: int, parent: int | None) -> tuple[np.ndarray, Clique]:
            """The subtree hanging from clique ``k`` (away from ``parent``), summed to the query's attributes in it
            and its separator with ``parent``: ``k``'s conditional given that separator (its marginal at the root)
            times its children's messages, each attribute summed out as soon as nothing still to come needs it, so
            no table spans more than one clique's needed attributes and the query (a walk that carried every open
            branch's separator once asked 9.7 GB for a 3-way query of a 23-column King County model)."""
            children = [c for c in neighbours[k] if c != parent]
            out = set(query) if parent is None else query | set(self._separator(k, parent))
            seps = [set(self._separator(c, k)) for c in children]
            attrs = tuple(a for a in self.cliques[k] if a in out.union(*seps))
            factor = self._conditional(k, parent, attrs)
            for i, child in enumerate(children):
                message, message_attrs = collect(child, k)
                union = sorted(set(attrs) | set(message_attrs))
                keep = tuple(a for a in union if a in out.union(*seps[i + 1:]))
                # the product summed to what is still needed, as one contraction: it never builds the product
                # (that table and its sum were two thirds of the walk; 3x faster on a 0.9M-cell model)
                axis = {a: j for j, a in enumerate(union)}  # einsum's subscripts are numbered below 52: number anew
                factor = np.einsum(factor, [axis[a] for a in attrs], message, [axis[a] for a in message_attrs],
                                   [axis[a] for a in keep], optimize=True)
                attrs = keep
            return factor, attrs

        factor, attrs = collect(root, None)
        return self.total * _sum_to(np.asarray(factor), attrs, clique)

    # ------------------------------------------------------------------ estimation
    def _measured(self, tables: Sequence[np.ndarray], by_home: dict[int, list[Clique]]) -> dict[Clique, np.ndarray]:
        """Each measured attribute set's marginal, summed from its home clique's table in ``tables``."""
        mus: dict[Clique, np.ndarray] = {}
        for k, wanted in by_home.items():
            _marginals_of(tables[k], self.cliques[k], wanted, self.sizes, mus)
        return mus

    @staticmethod
    def _gaussian_loss(measurements: Sequence[Measurement], mus: dict[Clique, np.ndarray]
                       ) -> tuple[float, dict[Clique, np.ndarray]]:
        """Gaussian negative log-likelihood of the measurements given the measured marginals ``mus``, and its
        gradient on each measured attribute set's marginal."""
        grads: dict[Clique, np.ndarray] = {}
        value = 0.0
        for m in measurements:
            diff = m.coarsen(mus[m.clique]) - m.y
            value += 0.5 * float(np.sum(m.weight * diff ** 2))
            grads[m.clique] = grads.get(m.clique, 0.0) + m.spread(m.weight * diff)
        return value, grads

    def _prepare(self, measurements: Sequence[Measurement]) -> dict[int, list[Clique]]:
        """Check the measurements against the model, give each measured attribute set a log-potential, and group
        the sets by home clique."""
        by_home: dict[int, list[Clique]] = {}
        for m in measurements:
            k = self.home(m.clique)
            if k is None:
                raise InputError(f"clique {m.clique} is not in the model; build it with that clique.")
            if m.groups is not None and any(g is not None and len(g) != self.sizes[a]
                                            for a, g in zip(m.clique, m.groups)):
                raise InputError(f"the groups of the measurement of {m.clique} do not match its attributes' sizes.")
            if m.clique not in by_home.setdefault(k, []):
                by_home[k].append(m.clique)
            self.theta.setdefault(m.clique, np.zeros([self.sizes[a] for a in m.clique]))
        return by_home

    def estimate(self, measurements: Sequence[Measurement], iterations: int = 500, *, tol: float = 1e-7,
                 callback=None, method: str = "mirror") -> float:
        """Fit the model to ``measurements`` (warm start from the current ``theta``); returns the final loss. Every
        measured clique must lie in one of the model's cliques. The parameters are one log-potential per measured
        attribute set (``theta``), so a larger model can start from a smaller one's.

        ``method``: ``"mirror"`` (default: Private-PGM's mirror descent with an Armijo step, :meth:`_mirror_descent`)
        or ``"accelerated"`` (:meth:`_accelerated`). Both minimise the same convex loss over the same marginals; on
        AIM's models the accelerated method reaches in 300 steps a lower loss than mirror descent in 4,000."""
        if method not in ("accelerated", "mirror"):
            raise InputError(f"method must be 'accelerated' or 'mirror'. Found {method!r}.")
        by_home = self._prepare(measurements)
        if method == "mirror":
            return self._mirror_descent(measurements, by_home, iterations, tol, callback)
        return self._accelerated(measurements, by_home, iterations, tol, callback)

    def _mirror_descent(self, measurements, by_home, iterations, tol, callback) -> float:
        """Entropic mirror descent on the potentials with a backtracking (Armijo) step (Private-PGM's algorithm)."""
        self._assemble()
        mus = self._measured(self.calibrate(), by_home)
        loss, grads = self._gaussian_loss(measurements, mus)
        # a step of 1 / (total * max weight) moves the marginals by about one noise sd: start there
        step = 1.0 / (self.total * max(float(np.max(m.weight)) for m in measurements))
        for it in range(iterations):
            old_theta, old_marg, old_loss, old_mus = self.theta, self.marginals, loss, mus
            for _ in range(30):
                self.theta = {c: t - step * grads[c] if c in grads else t for c, t in old_theta.items()}
                self._assemble()
                new_mus = self._measured(self.calibrate(), by_home)
                new_loss, new_grads = self._gaussian_loss(measurements, new_mus)
                # Armijo: accept when the loss falls by at least half the linear prediction
                predicted = sum(float(np.sum(g * (old_mus[c] - new_mus[c]))) for c, g in grads.items())
                if old_loss - new_loss >= 0.5 * predicted:
                    break
                step *= 0.5
            else:
                self.theta, self.marginals = old_theta, old_marg
                self._assemble()
                break
            loss, grads, mus = new_loss, new_grads, new_mus
            step *= 1.5
            if callback is not None:
                callback(it, loss)
            if old_loss - loss <= tol * max(old_loss, 1.0):
                break
        return loss

    def _accelerated(self, measurements, by_home, iterations, tol, callback) -> float:
        """Accelerated mirror descent with a backtracking step: Nesterov's universal gradient method in the form of
        Roulet and d'Aspremont (2017, Algorithm 2), as private-pgm's ``universal_accelerated_method``.

        Three sequences: ``u`` (log-potentials; its model's marginals are ``z``), and ``x``, a running convex
        combination of the ``z``: ``y = (1 - t) x + t z``, ``u -= (step / t) grad f(y)``, ``z = marginals(u)``,
        ``x = (1 - t) x + t z``. A step is kept when ``f(x) <= f(y) + <grad f(y), x - y> + |x - y|_1^2 /
        (2 step total)``: the smoothness bound in the L1 norm, in which the entropy of counts summing to ``total``
        is ``1 / total``-strongly convex (Pinsker), read on the measured marginals (a lower bound of the joint's L1
        distance, so the test is never looser than the theory's). The loss is quadratic in the marginals, so it is
        read off linear combinations of measured marginals; one message passing per trial step, as mirror descent.

        ``x`` is a convex combination of calibrated junction-tree marginals, hence consistent: the model ends on it
        (its potentials ``log(mu_C / mu_S)``), with ``theta = u`` kept for the next warm start. Stops after
        ``iterations`` steps, when a step search fails, or when the last ``_WINDOW`` steps lowered the lowest loss
        by at most ``_WINDOW * tol`` of it (momentum makes the loss rise and fall over tens of steps)."""
        self._assemble()
        z_tables = self.calibrate()
        x_tables = list(z_tables)
        z_mus = self._measured(z_tables, by_home)
        x_mus = z_mus
        u = self.theta
        loss, _ = self._gaussian_loss(measurements, x_mus)
        step = prev_step = 1.0 / (self.total * max(float(np.max(m.weight)) for m in measurements))
        prev_t = 0.0  # no step yet: the first has t = 1
        best = [loss]  # the lowest loss after each step
        for it in range(iterations):
            for _ in range(30):
                t = 1.0 if prev_t == 0.0 else 2.0 / (1.0 + math.sqrt(1.0 + 4.0 * prev_step / (step * prev_t ** 2)))
                y_mus = {c: (1 - t) * x_mus[c] + t * z_mus[c] for c in x_mus}
                y_loss, grads = self._gaussian_loss(measurements, y_mus)
                self.theta = {c: v - (step / t) * grads[c] if c in grads else v for c, v in u.items()}
                self._assemble()
                new_z = self.calibrate()
                new_z_mus = self._measured(new_z, by_home)
                new_x_mus = {c: (1 - t) * x_mus[c] + t * new_z_mus[c] for c in x_mus}
                new_loss, _ = self._gaussian_loss(measurements, new_x_mus)
                diff = {c: new_x_mus[c] - y_mus[c] for c in x_mus}
                linear = sum(float(np.sum(grads[c] * diff[c])) for c in diff)
                l1 = max(float(np.abs(d).sum()) for d in diff.values())
                if new_loss <= y_loss + linear + l1 ** 2 / (2 * step * self.total):
                    break
                step *= 0.5
            else:
                break
            x_tables = [(1 - t) * x + t * z for x, z in zip(x_tables, new_z)]
            prev_t = t
            u, x_mus, z_mus, loss = self.theta, new_x_mus, new_z_mus, new_loss
            prev_step, step = step, step * 1.1
            best.append(min(best[-1], loss))
            if callback is not None:
                callback(it, loss)
            if len(best) > _WINDOW and best[-_WINDOW - 1] - best[-1] <= _WINDOW * tol * max(best[-_WINDOW - 1], 1.0):
                break
        self.theta = u
        self._set_marginals(x_tables)
        return loss

    def _set_marginals(self, tables: Sequence[np.ndarray]) -> None:
        """Make ``tables`` (consistent clique marginals) the model's: potentials ``log(mu_C / mu_S)`` (``S`` the
        separator to the parent clique) give back exactly that distribution."""
        self.marginals = [np.asarray(m, dtype=float) for m in tables]
        self.potentials = []
        for k, (c, m) in enumerate(zip(self.cliques, self.marginals)):
            log_m = np.log(np.maximum(m, 1e-300))
            if k in self._parent:
                sep = self._separator(k, self._parent[k])
                log_m = log_m - _expand(np.log(np.maximum(_sum_to(m, c, sep), 1e-300)), sep, c, self.sizes)
            self.potentials.append(log_m)

    def reweight(self, attribute: int, factors: np.ndarray) -> None:
        """Multiply the distribution by ``factors`` (one per cell of ``attribute``, >= 0, not all 0), keeping the
        total: ``p'(x) = p(x) f(x_a) / Z``. Conditionals given the attribute are unchanged; its 1-way marginal becomes
        ``p(a) f(a) / Z`` exactly. Post-processing of the model."""
        factors = np.asarray(factors, dtype=float)
        if factors.shape != (self.sizes[attribute],) or np.any(factors < 0) or not np.any(factors > 0):
            raise InputError(f"factors must be {self.sizes[attribute]} numbers >= 0, not all 0.")
        k = self.home((attribute,))
        log_f = _expand(np.log(np.maximum(factors, 1e-300)), (attribute,), self.cliques[k], self.sizes)
        self.potentials[k] = self.potentials[k] + log_f
        if self.theta:
            key = (attribute,)
            self.theta[key] = self.theta.get(key, np.zeros(self.sizes[attribute])) + np.log(np.maximum(factors, 1e-300))
        self.calibrate()

    # ------------------------------------------------------------------ sampling
    def sample(self, n: int, rng: np.random.Generator, *, stratified: bool = True) -> np.ndarray:
        """``n`` rows (attribute codes, shape (n, number of attributes)) drawn from the model: each an exact draw,
        rows exchangeable; stratified within separator groups (see :func:`draw_rows`) or, with
        ``stratified=False``, i.i.d."""
        out = np.zeros((n, len(self.sizes)), dtype=np.int64)
        if n == 0:
            return out
        for k in self._order:
            clique, table = self.cliques[k], np.clip(self.marginals[k], 0, None)
            sep = self._separator(k, self._parent[k]) if k in self._parent else ()
            new = tuple(a for a in clique if a not in sep)
            if not new:
                continue
            # table as (separator configuration, new-attribute configuration), rows normalised: p(new | sep)
            order = [clique.index(a) for a in sep] + [clique.index(a) for a in new]
            cond = np.transpose(table, order).reshape(math.prod(self.sizes[a] for a in sep), -1)
            cond = cond + 1e-300
            cond = cond / cond.sum(axis=1, keepdims=True)
            rows = np.ravel_multi_index(tuple(out[:, a] for a in sep), [self.sizes[a] for a in sep]) if sep \
                else np.zeros(n, dtype=np.int64)
            cells = draw_rows(cond, rows, rng, stratified=stratified)
            for a, codes in zip(new, np.unravel_index(cells, [self.sizes[a] for a in new])):
                out[:, a] = codes
        return out


def draw_rows(cond: np.ndarray, rows: np.ndarray, rng: np.random.Generator, *, stratified: bool = True
              ) -> np.ndarray:
    """For each entry of ``rows``, one draw from the categorical distribution ``cond[row]`` (non-negative weights,
    normalised per row here; inverse CDF, one sort of the rows).

    ``stratified`` (systematic sampling): the k entries that share a row get the uniforms ``(u + 0) / k, ...,
    (u + k - 1) / k`` (one ``u``) in a random order, instead of k independent ones. Each entry on its own is still
    an exact draw from ``cond[row]``, and which entry gets which uniform is a random permutation, independent of
    everything else - so no link is created between the drawn value and anything the caller knows about the
    entries (the false links of ordered "round" samplers) - but the group's count of each value is within one of
    its expectation instead of carrying binomial noise. ``stratified=False``: independent uniforms (i.i.d.)."""
    out = np.empty(len(rows), dtype=np.int64)
    u = rng.random(len(rows))
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    bounds = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:]):
        cdf = np.cumsum(cond[sorted_rows[a]])
        idx = order[a:b]
        q = (u[a] + rng.permutation(b - a)) / (b - a) if stratified else u[idx]
        out[idx] = np.minimum(np.searchsorted(cdf, q * cdf[-1], side="right"), cond.shape[1] - 1)
    return out
