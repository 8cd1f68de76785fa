"""AIM (McKenna, Mullins, Sheldon, Miklau, "AIM: An Adaptive and Iterative Mechanism for Differentially Private
Synthetic Data", VLDB 2022): marginals chosen round by round where the current model is worst, measured with
Gaussian noise, and fitted by a graphical model.

Budget: what is left after the metadata phase, as rho-zCDP (:func:`~dpsynth.marginals.mechanisms.zcdp_budget`).
With d attributes and T = 16 d nominal rounds, as in the paper (Algorithm 1; ``rounds_per_attribute`` sets the 16):

1. every 1-way marginal is measured at sigma = sqrt(T / (2 * 0.9 rho)) (the metadata phase's histograms are
   added as free measurements of the same marginals, ``reuse_metadata``);
2. each round spends 1 / (2 sigma^2) + epsilon^2 / 8 (epsilon = sqrt(8 * 0.1 rho / T) to start): the exponential
   mechanism picks a marginal r among the *candidates* - the workload's cliques and their subsets (the
   downward closure), each weighted by its overlap with the workload cliques - with quality
   ``w_r * (||M_r(D) - M_r(model)||_1 - sqrt(2 / pi) * sigma * n_r)`` (n_r cells; sensitivity max_r w_r: one row
   moves one cell of M_r(D) by 1), restricted to candidates that keep the model's junction tree within
   ``max_model_size * rho_used / rho`` megabytes; r is measured at sigma and the model refitted (warm start);
3. when the refitted marginal of r moved by less than the noise it was measured with (L1 change <= sqrt(2/pi)
   sigma n_r), sigma is halved and epsilon doubled (each round then costs four times as much);
4. when what is left is less than two rounds' cost, the last round spends exactly the rest.

Departures from the paper, for 2 CPU cores: the model-size cap defaults to 16 MB (the paper: 80 MB, with JAX), and
each round's refit stops early once an iteration lowers the loss by less than 1e-4 of it (the final refit: 1e-6);
``max_model_size=80`` restores the paper's cap.

``coarse_bins`` (dpsynth's option, 0 = the paper's AIM): each candidate holding a numeric column of more bins is also
offered as a coarse query, those bins merged into ``coarse_bins`` runs of neighbours (:class:`Query`); it is scored and
measured like any marginal (its table has fewer cells, so less noise in total and a smaller noise allowance in the
score; sensitivity 1) and enters the graphical model as a linear query of the clique's marginal.
``coarse_categories`` (0 = the paper's AIM) does the same for a categorical column of more cells: the query keeps its
``coarse_categories - 1`` cells of largest DP metadata count and merges the others into one (Adult's native-country:
the United States, six more countries and the rest), so a wide column's link to the others can be measured at a
noise allowance it affords, while the model keeps every category (unlike ``rare_cells``, which merges them in the
domain and then draws them apart from every other column).

Workload: every pair of attributes (default), or, with ``target`` (a column name; ``target="auto"`` takes the
schema's declared target), every triple that contains the target - the workload the paper uses when one column is
to be predicted.

Every selection (``ZCDpEvent(epsilon^2 / 8)``) and measurement (``GaussianDpEvent(sigma)``) is a ledger event; the
ledger's RDP accountant composes them with the metadata phase into the (epsilon, delta) reported. Generation samples
the final graphical model (exact draws, stratified within groups: :mod:`dpsynth.marginals.graphical_model`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from dpsynth.errors import InputError
from dpsynth.marginals.domain import DEFAULT_MAX_BINS
from dpsynth.marginals.graphical_model import MarkovRandomField, Measurement, merge_cells, tree_size
from dpsynth.marginals.mechanisms import exponential_rho, gaussian_rho, measure, select, zcdp_budget
from dpsynth.models import register
from dpsynth.models._select_measure import SelectMeasureGenerate
from dpsynth.models.phase import budget_summary, json_number

__all__ = ["AIM"]

PHASE = "aim"
_ROUNDS_PER_ATTRIBUTE = 16
_MEASURE_SHARE = 0.9  # of each round's rho, as in the paper; the rest selects
_NOISE_SCALE = math.sqrt(2.0 / math.pi)  # expected |N(0, 1)|
#: a round's refit stops when an iteration lowers the loss by less than this fraction (warm starts converge fast)
_ROUND_TOL = 1e-4
_FINAL_TOL = 1e-6


@register
class AIM(SelectMeasureGenerate):
    """Adaptive and iterative marginal selection (see the module docstring).

    ``target``: None (all 2-way marginals), a column name or "auto" (all 3-way marginals containing it);
    ``max_model_size``: megabytes of the graphical model (float64 cells) at the end; ``round_iterations`` /
    ``iterations``: mirror-descent steps per round / at the end; ``max_bins``: bins per numeric column;
    ``backend``: "numpy", "duckdb" or "spark"; ``rounds_per_attribute``: the nominal rounds T per attribute that set
    the opening noise (16, the paper's; fewer: fewer, less noisy measurements to start with); ``coarse_bins`` /
    ``coarse_categories``: 0, or the bins / the category groups of coarse queries (module docstring); ``rare_cells``:
    0 (one cell per category), or r > 0: categories whose DP metadata count is below r noise sds share one cell
    (:mod:`dpsynth.marginals.domain`)."""

    name = "aim"
    phases = ("metadata", PHASE)
    fast_params = {"round_iterations": 20, "iterations": 50, "max_model_size": 1.0}
    zero_allowed = ("coarse_bins", "coarse_categories", "rare_cells")  # 0: no coarse queries; a cell per category

    def __init__(self, *, target: str = "", max_model_size: float = 16.0, round_iterations: int = 100,
                 iterations: int = 1000, max_bins: int = DEFAULT_MAX_BINS, reuse_metadata: bool = True,
                 backend: str = "numpy", coarse_bins: int = 0, coarse_categories: int = 0, rare_cells: float = 0.0,
                 rounds_per_attribute: int = _ROUNDS_PER_ATTRIBUTE):
        self.rare_cells = rare_cells
        self.rounds_per_attribute = rounds_per_attribute
        self.target = target
        self.coarse_bins = coarse_bins
        self.coarse_categories = coarse_categories
        self.max_model_size = max_model_size
        self.round_iterations = round_iterations
        self.iterations = iterations
        self.max_bins = max_bins
        self.reuse_metadata = reuse_metadata
        self.backend = backend

    def _check_params(self) -> None:
        super()._check_params()
        for name in ("coarse_bins", "coarse_categories"):
            if getattr(self, name) == 1:
                raise InputError(f"hyper-parameter {name} must be 0 (no coarse queries) or an integer >= 2. Found 1.")

    # ------------------------------------------------------------------ workload
    def _workload(self) -> dict[tuple[int, ...], float]:
        names = self.discretizer_.names
        d = len(names)
        target = self.target
        if target == "auto":
            target = self.schema_.target or ""
        if target and target not in names:
            raise InputError(f"target must be one of the columns kept. Found {target!r}.")
        if target and d >= 3:
            t = names.index(target)
            cliques = [tuple(sorted((t, a, b))) for a, b in itertools.combinations([j for j in range(d) if j != t], 2)]
        else:
            cliques = list(itertools.combinations(range(d), 2)) if d >= 2 else [(0,)]
        return {c: 1.0 for c in cliques}

    def _workloads(self) -> list[dict[tuple[int, ...], float]]:
        """The workloads the picks serve in turn (AIM: its one workload)."""
        return [self._workload()]

    @staticmethod
    def closure(workload: dict[tuple[int, ...], float]) -> list[tuple[int, ...]]:
        """The workload's downward closure: every non-empty subset of its marginals, sorted."""
        return sorted({sub for clique in workload for k in range(1, len(clique) + 1)
                       for sub in itertools.combinations(clique, k)})

    @staticmethod
    def _candidates(workload: dict[tuple[int, ...], float]) -> dict[tuple[int, ...], float]:
        """The downward closure of the workload (non-empty subsets), each weighted as in the paper's code by its
        overlap with the workload: ``w_r = sum_s c_s |r & s|``, so a pair outweighs either of its attributes."""
        return {r: sum(c * len(set(r) & set(s)) for s, c in workload.items()) for r in AIM.closure(workload)}

    # ------------------------------------------------------------------ fit
    def _select_and_measure(self, *, rng: np.random.Generator, progress: bool) -> None:
        ledger, names, sizes = self.ledger_, self.discretizer_.names, self.discretizer_.sizes
        d = len(sizes)
        spent_before = ledger.epsilon()
        rho = zcdp_budget(ledger) * (1 - 1e-6)
        private = math.isfinite(rho)
        rounds = int(getattr(self, "rounds_per_attribute", _ROUNDS_PER_ATTRIBUTE)) * d  # older files: the paper's
        sigma = math.sqrt(rounds / (2 * _MEASURE_SHARE * rho)) if private else 1.0
        epsilon = math.sqrt(8 * (1 - _MEASURE_SHARE) * rho / rounds) if private else math.inf
        # one weighting of the candidates per workload; the picks take them in turn (AIM: one)
        weightings = [self._queries(self._candidates(w)) for w in self._workloads()]
        candidates = {q for weights in weightings for q in weights}
        n_picks = 0
        max_cells = self.max_model_size * 2 ** 20 / 8
        opening = self._opening_sigma(sigma, rho) if private else sigma
        measurements = [measure(self._counts, (j,), opening, ledger=ledger, phase=PHASE, names=names, rng=rng)
                        for j in range(d)]
        rho_used = d * gaussian_rho(opening) if private else 0.0
        own = list(measurements)  # the model's own count tables: their sums count every row
        measurements += self._metadata_measurements()
        model = MarkovRandomField(sizes, [(j,) for j in range(d)], self._total(own))
        model.estimate(measurements, iterations=self.round_iterations)
        selected: list[tuple[int, ...]] = []
        bar = _progress(progress)
        final = False
        round_no = 0
        while not final:
            round_no += 1
            if private:
                left = rho - rho_used
                picks_per_round = self._per_round(left / (gaussian_rho(sigma) + exponential_rho(epsilon)))
                cost = picks_per_round * (gaussian_rho(sigma) + exponential_rho(epsilon))
                if left < 2 * cost:
                    # the last round spends exactly the rest, in the paper's 90/10 split
                    sigma = math.sqrt(picks_per_round / (2 * _MEASURE_SHARE * left))
                    epsilon = math.sqrt(8 * (1 - _MEASURE_SHARE) * left / picks_per_round)
                    final = True
                rho_used += picks_per_round * (gaussian_rho(sigma) + exponential_rho(epsilon))
                limit = max_cells * rho_used / rho
            else:
                picks_per_round = self._per_round(math.inf)
                final = round_no >= rounds
                limit = max_cells
            measured = {m.clique for m in measurements}
            picks, before = [], []
            quality: dict[Query, float] = {}  # a round's picks are all scored against the same model and sigma
            for _ in range(picks_per_round):
                weights = weightings[n_picks % len(weightings)]
                fits = self._size_filter(model, measured | {p.clique for p in picks}, limit)
                small = [q for q in weights if q not in picks and fits(q.clique)]
                if not small:
                    break
                for q in small:
                    if q not in quality:
                        quality[q] = self._quality(model, q, 1.0, sigma)
                scores = np.array([weights[q] * quality[q] for q in small])
                if not private and scores.max() <= 0:
                    break  # exact measurements: nothing left that the model gets wrong
                sensitivity = max(weights[q] for q in small)
                n_picks += 1
                pick = small[select(scores, epsilon, sensitivity, ledger=ledger, phase=PHASE,
                                    label="a marginal", rng=rng)]
                picks.append(pick)
                before.append(pick.coarsen(model.project(pick.clique)))
                measurements.append(self._measure(pick, sigma, rng))
                own.append(measurements[-1])
            if not picks:
                break
            selected += picks
            model = MarkovRandomField(sizes, [m.clique for m in measurements], self._total(own), theta=model.theta)
            model.estimate(measurements, iterations=self.round_iterations, tol=_ROUND_TOL)
            change = sum(float(np.abs(p.coarsen(model.project(p.clique)) - b).sum()) for p, b in zip(picks, before))
            if private and change <= _NOISE_SCALE * sigma * sum(b.size for b in before) \
                    and self._may_halve((rho - rho_used) / (gaussian_rho(sigma / 2) + exponential_rho(epsilon * 2)),
                                        sigma / 2):
                sigma, epsilon = sigma / 2, epsilon * 2
            if bar is not None:
                bar.set_postfix_str(f"rho {rho_used:.3g}/{rho:.3g}" if private else f"round {round_no}")
                bar.update(1)
        if bar is not None:
            bar.close()
        model.estimate(measurements, iterations=self.iterations, tol=_FINAL_TOL)
        self._empty_range_at_pooled_counts(model, measurements)
        self.model_, self.selected_ = model, [q.clique for q in selected]
        settings = {"mechanism": "aim", "rho": json_number(rho), "rounds": round_no, "workload": len(candidates),
                    "target": self.target or None, "max_bins": self.max_bins, "coarse_bins": self.coarse_bins,
                    "coarse_categories": self.coarse_categories,
                    "selected": [q.labels(names) for q in selected],
                    "opening_sigma": json_number(opening), "final_sigma": json_number(sigma),
                    "model_cells": int(model.size()),
                    "epsilon_after": json_number(ledger.epsilon())}
        self.budget_ = budget_summary(ledger, n_dp=model.total, metadata_epsilon=spent_before,
                                      phases=[(PHASE, settings)], shares={PHASE: 1.0})

    def _opening_sigma(self, sigma: float, rho: float) -> float:
        """The noise sd of the opening 1-way measurements: the rounds' opening sigma, as in the paper."""
        return sigma

    def _may_halve(self, picks_left: float, halved_sigma: float) -> bool:
        """Whether sigma may halve to ``halved_sigma`` when the budget left pays for ``picks_left`` picks at that
        noise (AIM: always)."""
        return True

    def _per_round(self, picks_left: float) -> int:
        """Marginals selected and measured per round, between two refits (1 in AIM); ``picks_left``: how many
        more the budget left pays for at the current noise level (inf in non-private mode)."""
        return 1

    # ------------------------------------------------------------------ coarse queries
    def _queries(self, candidates: dict[tuple[int, ...], float]) -> dict[Query, float]:
        """The candidates as queries; with ``coarse_bins``, each candidate of two or more attributes that holds a
        numeric column of more bins also as a coarse query (those bins merged into ``coarse_bins``), at the same
        weight: the workload's marginal seen at a resolution whose noise is spread over fewer cells."""
        queries = {Query(c): w for c, w in candidates.items()}
        if self.coarse_bins >= 2 or self.coarse_categories >= 2:
            for c, w in candidates.items():
                groups = tuple(self._coarse_groups(a) for a in c)
                if len(c) >= 2 and any(g is not None for g in groups):
                    queries[Query(c, groups)] = w
        return queries

    def _coarse_groups(self, attribute: int) -> tuple[int, ...] | None:
        """An attribute's cells merged, or None to keep them. A numeric column of more than ``coarse_bins`` bins:
        its bins into ``coarse_bins`` runs of neighbours (equal counts of the equal-DP-mass bins). A categorical
        column of more than ``coarse_categories`` cells: the ``coarse_categories - 1`` cells of largest DP metadata
        count kept (in their order), the others merged into one. Special-value and missing cells are kept."""
        cells = self.discretizer_.columns[attribute]
        if cells.kind == "numeric":
            if not self.coarse_bins or cells.n_bins <= self.coarse_bins:
                return None
            bins = [b * self.coarse_bins // cells.n_bins for b in range(cells.n_bins)]
            rest = range(self.coarse_bins, self.coarse_bins + cells.size - cells.n_bins)
            return tuple(bins) + tuple(rest)
        k, n = self.coarse_categories, cells.n_category_cells
        if not k or n <= k:
            return None
        # a choice made from the DP metadata counts (post-processing): which categories are frequent enough to keep
        counts = np.bincount(cells.cell_of_category(), weights=cells.fine_weights, minlength=n)
        kept = np.zeros(n, dtype=bool)
        kept[np.argsort(-counts, kind="stable")[:k - 1]] = True
        body = np.where(kept, np.cumsum(kept) - 1, k - 1)
        return tuple(int(b) for b in body) + tuple(range(k, k + cells.size - n))

    def _measure(self, query: Query, sigma: float, rng: np.random.Generator) -> Measurement:
        """A Gaussian measurement of the query's (coarse) table: sensitivity 1, as for any count table."""
        names = list(self.discretizer_.names)
        for a, g in zip(query.clique, query.groups or ()):
            if g is not None:
                coarse = self.discretizer_.columns[a].kind == "numeric"
                names[a] = f"{names[a]} ({self.coarse_bins} bins)" if coarse else \
                    f"{names[a]} ({self.coarse_categories} groups)"
        m = measure(_CoarseCounts(self._counts, query), query.clique, sigma, ledger=self.ledger_, phase=PHASE,
                    names=names, rng=rng)
        return Measurement(m.clique, m.y, m.sigma, query.group_arrays())

    @staticmethod
    def _size_filter(model: MarkovRandomField, measured: set, limit: float) -> Callable[[tuple[int, ...]], bool]:
        """Whether adding a clique to ``measured`` keeps the model's junction tree within ``limit`` cells (the
        paper's filter), as a function of the clique.

        The junction tree is a function of the cliques' interaction graph alone, so two cliques that add the same
        edges to ``measured``'s graph give the same tree: its size is computed once per set of new edges, not once
        per candidate (a pair and a triple that add the same edge share it, and so do all cliques that add none)."""
        edges = {pair for c in measured for pair in itertools.combinations(c, 2)}
        sizes: dict[frozenset, int] = {}

        def fits(clique: tuple[int, ...]) -> bool:
            if model.home(clique) is not None:
                return model.size() <= limit
            new = frozenset(itertools.combinations(clique, 2)) - edges
            if new not in sizes:
                sizes[new] = tree_size(model.sizes, list(measured) + [clique])
            return sizes[new] <= limit

        return fits

    def _quality(self, model: MarkovRandomField, query: Query, weight: float, sigma: float) -> float:
        exact = query.coarsen(self._counts.counts(query.clique))
        error = float(np.abs(exact - query.coarsen(model.project(query.clique))).sum())
        return weight * (error - _NOISE_SCALE * sigma * exact.size)


class Query(NamedTuple):
    """A candidate marginal: an attribute set, and optionally its attributes' cells merged (``groups``, one entry
    per attribute: a cell -> coarse cell map, or None to keep that attribute's cells)."""

    clique: tuple[int, ...]
    groups: tuple[tuple[int, ...] | None, ...] | None = None

    def group_arrays(self) -> tuple[np.ndarray | None, ...] | None:
        return None if self.groups is None else tuple(None if g is None else np.asarray(g) for g in self.groups)

    def coarsen(self, table: np.ndarray) -> np.ndarray:
        for i, g in enumerate(self.groups or ()):
            if g is not None:
                table = merge_cells(table, np.asarray(g), i)
        return table

    def labels(self, names) -> list[str]:
        return [names[a] if self.groups is None or self.groups[i] is None else f"{names[a]} (coarse)"
                for i, a in enumerate(self.clique)]


class _CoarseCounts:
    """The exact count tables a query measures (its coarse table), for :func:`measure` (which adds the noise)."""

    def __init__(self, counts, query: Query):
        self._counts, self._query = counts, query

    def counts(self, clique: tuple[int, ...]) -> np.ndarray:
        return self._query.coarsen(self._counts.counts(clique))


def _progress(enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(desc="AIM rounds", unit="round", leave=False)
