"""MST (McKenna, Miklau, Sheldon, "Winning the NIST Contest", JPC 2021): a maximum spanning tree of 2-way
marginals, selected with the exponential mechanism, measured with Gaussian noise, fitted by a graphical model.

The budget left after the metadata phase is converted to rho-zCDP (:func:`~dpsynth.marginals.mechanisms.zcdp_budget`)
and split in thirds, as in the paper:

1. **1-way marginals** of every attribute, Gaussian, sigma = sqrt(d / (2 rho/3)) (d attributes). The metadata
   phase's histograms are added as further measurements of the same marginals (``reuse_metadata``; free).
2. **Selection**: a graphical model fitted to the 1-way measurements gives every pair's "independent" table; the
   score of pair (i, j) is the L1 distance between its exact 2-way table and that estimate. Add/remove one row moves
   one cell of the exact table by 1, so the score's sensitivity is 1. Kruskal's algorithm picks d - 1 edges, each
   by the exponential mechanism among the pairs that join two components (epsilon = sqrt(8 (rho/3) / (d - 1))
   each).
3. **2-way marginals** of the d - 1 tree edges, Gaussian, sigma = sqrt((d - 1) / (2 rho/3)).

Generation fits a :class:`~dpsynth.marginals.graphical_model.MarkovRandomField` to all measurements (its junction
tree is the selected tree) and samples it (stratified draws). Departures from the paper, all post-processing or
domain choices made from DP outputs: numbers are cut into at most ``max_bins`` equal-DP-mass bins of the metadata
histogram, and rare categories were already merged into ``"__other__"`` by DP discovery (a public schema's
categories are kept), in place of MST's compression of noisy 1-way counts below 3 sigma.
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np

from dpsynth.marginals.domain import DEFAULT_MAX_BINS
from dpsynth.marginals.graphical_model import MarkovRandomField
from dpsynth.marginals.mechanisms import measure, select, zcdp_budget
from dpsynth.models import register
from dpsynth.models._select_measure import SelectMeasureGenerate
from dpsynth.models.phase import budget_summary, json_number

__all__ = ["MST"]

PHASE = "mst"


@register
class MST(SelectMeasureGenerate):
    """Maximum-spanning-tree marginals (see the module docstring). ``iterations``: mirror-descent steps of the
    final estimation; ``max_bins``: bins per numeric column; ``backend``: "numpy" (in memory), "duckdb" or
    "spark"; ``rare_cells``: 0 (one cell per category), or r > 0: categories whose DP metadata count is below r
    noise sds share one cell (:mod:`dpsynth.marginals.domain`)."""

    name = "mst"
    phases = ("metadata", PHASE)
    fast_params = {"iterations": 50}
    zero_allowed = ("rare_cells",)  # 0: one cell per category

    def __init__(self, *, max_bins: int = DEFAULT_MAX_BINS, iterations: int = 1000, reuse_metadata: bool = True,
                 backend: str = "numpy", rare_cells: float = 0.0):
        self.rare_cells = rare_cells
        self.max_bins = max_bins
        self.iterations = iterations
        self.reuse_metadata = reuse_metadata
        self.backend = backend

    def _select_and_measure(self, *, rng: np.random.Generator, progress: bool) -> None:
        ledger, names, sizes = self.ledger_, self.discretizer_.names, self.discretizer_.sizes
        d = len(sizes)
        spent_before = ledger.epsilon()
        rho = zcdp_budget(ledger) * (1 - 1e-6)
        third = rho / 3
        sigma_1 = math.sqrt(d / (2 * third)) if math.isfinite(rho) else 1.0
        one_way = [measure(self._counts, (j,), sigma_1, ledger=ledger, phase=PHASE, names=names, rng=rng)
                   for j in range(d)]
        own = list(one_way)  # the model's own count tables: their sums count every row
        one_way += self._metadata_measurements()
        edges: list[tuple[int, int]] = []
        eps_select = math.sqrt(8 * third / max(d - 1, 1)) if math.isfinite(rho) else math.inf
        if d > 1:
            independent = MarkovRandomField(sizes, [(j,) for j in range(d)], self._total(own))
            independent.estimate(one_way, iterations=self.iterations)
            edges = self._spanning_tree(independent, eps_select, rng)
        sigma_2 = math.sqrt(max(d - 1, 1) / (2 * third)) if math.isfinite(rho) else 1.0
        two_way = [measure(self._counts, e, sigma_2, ledger=ledger, phase=PHASE, names=names, rng=rng) for e in edges]
        self.model_ = MarkovRandomField(sizes, [(j,) for j in range(d)] + edges, self._total(own + two_way))
        self.model_.estimate(one_way + two_way, iterations=self.iterations)
        self._empty_range_at_pooled_counts(self.model_, one_way + two_way)
        self.selected_ = edges
        settings = {"mechanism": "mst", "rho": json_number(rho), "sigma_one_way": json_number(sigma_1),
                    "epsilon_select": json_number(eps_select), "sigma_two_way": json_number(sigma_2),
                    "edges": [[names[a], names[b]] for a, b in edges], "max_bins": self.max_bins,
                    "epsilon_after": json_number(ledger.epsilon())}
        self.budget_ = budget_summary(ledger, n_dp=self.model_.total, metadata_epsilon=spent_before,
                                      phases=[(PHASE, settings)], shares={PHASE: 1.0})

    def _spanning_tree(self, estimate: MarkovRandomField, epsilon: float, rng) -> list[tuple[int, int]]:
        """Kruskal's algorithm with every edge chosen by the exponential mechanism (sensitivity-1 L1 scores)."""
        d = len(estimate.sizes)
        pairs = list(itertools.combinations(range(d), 2))
        scores = {p: float(np.abs(self._counts.counts(p) - estimate.project(p)).sum()) for p in pairs}
        components = nx.utils.UnionFind(range(d))
        chosen: list[tuple[int, int]] = []
        for _ in range(d - 1):
            candidates = [p for p in pairs if components[p[0]] != components[p[1]]]
            k = select(np.array([scores[p] for p in candidates]), epsilon, 1.0, ledger=self.ledger_, phase=PHASE,
                       label="a tree edge", rng=rng)
            a, b = candidates[k]
            components.union(a, b)
            chosen.append((a, b))
        return sorted(chosen)
