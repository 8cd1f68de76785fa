"""Batched, target-weighted AIM (``batch-aim``): dpsynth's faster member of the select-measure-generate family.

It is AIM (:mod:`dpsynth.models.aim`: same quality score, exponential mechanism, Gaussian measurements, sigma
halving, model-size filter, privacy accounting) with these changes, all choices about *which* public workload to
serve, *when* to refit and *how* the budget is scheduled, none touching the mechanisms:

- **Target-weighted workload.** Every pair of columns, those containing the target at weight ``target_weight``
  (2) and the others at 1, so the selection serves the joint distribution (2-way marginals) first and the
  prediction of the target next. With ``triples`` on, every triple containing the target joins the pairs at
  ``target_weight`` (the pairs then all weigh 1; the triples are the workload AIM's paper uses for prediction):
  larger marginals, each measured for the same cost. ``triples="auto"`` (default) turns them on whenever there
  is a target, as measured (README "The target's triples by default"; 3-5 seeds, XGBoost, against triples off):
  King County (price) R2 0.40 -> 0.47 and 0.43 -> 0.60 at epsilon 1 and 3; the bank-loan table AUC +0.061 /
  +0.025 / +0.014 at epsilon 0.3 / 1 / 3; Cardio +0.001 / +0.002 / +0.004 at 0.3 / 1 / 3; all with the joint
  level. Adult is the exception: AUC +0.002 / -0.002 / +0.003 at 0.3 / 1 / 3 for a 2-way TVD 0.001-0.003 worse
  (the selection then measures fewer pairs of other columns, and a triple's noise spreads over more cells than
  the pair it stands in for); ``triples=off`` serves the joint first. ``triples="alternate"`` is between the two:
  the picks take turns, one chosen with the joint's workload (the pairs, as ``off``), the next with the target's
  (pairs and triples, as ``on``), each selection with its own workload's weights and sensitivity (README
  "Alternating workloads": a lower joint on Adult, King County and Digits, scores lower on loan and on Cardio at
  epsilon 1). The target is the schema's declared one (``target="auto"``), a named column, or none (then the
  workload is AIM's: all pairs, equally weighted).
- **Columns of one cell.** A column that the schema or the DP metadata left one bin or category (Digits' blank
  pixels, the fertility table's indicator name and code) is the same in every row of the model's domain, so a
  marginal with it is the marginal without it. It stays out of the workload: there it would lend a triple's or a
  pair's weight to what measures a pair or a single column (Digits at epsilon 1, seed 0: 6 of 17 picks were such
  copies, the target's 1-way measured through two blank pixels). Its values are still drawn from its DP histogram.
  A choice from the public domain (post-processing).
- **Flat weights** (``weighting``: ``"overlap"``, AIM's and the default, or ``"flat"``). AIM weighs each candidate by
  its overlaps with the workload's marginals, summed. With the target's triples the target sits in 91 of Adult's 196
  workload marginals, so every candidate holding it inherits their weight: a pair of two other columns weighs 0.29 of
  a triple with the target, in the ranking and in the exponential mechanism's scale alike. With ``weighting="flat"``
  each candidate weighs its own workload weight (1 for one outside the workload, such as a single column), the
  selection's sensitivity is the largest of those, and pairs and triples compete on their own errors. With
  ``target_weight=1`` that serves the joint first while keeping the triples (README "Flat weights": Adult at epsilon
  1 in the issue's protocol, 2-way TVD 0.0195 and AUC 0.900; lower joints at epsilon 0.3 and 1 on Adult, King
  County, Cardio, the bank-loan table and Digits, but King County's R2 lower at every budget and the AUC of Cardio,
  the bank-loan table and Digits lower at 1). A choice of the public workload's weights; each score's sensitivity is
  its weight.
- **Batches.** Each round selects ``batch`` marginals (one exponential mechanism each, among the candidates not
  yet picked this round, all scored against the same model) and measures them, then refits the graphical model
  once. The number of refits - where AIM spends its time - drops by about ``batch``; each selection and
  measurement costs what it costs in AIM, so the rounds' budget schedule is AIM's. Batches shrink to one pick
  once the budget left pays for fewer than 8 full batches at the current noise (``picks_left // 8``): the last,
  dearest picks - and at small epsilon nearly all of them - stay as adaptive as AIM's.
- **The opening 1-way measurements** (``opening_noise``, 0 = AIM's). AIM measures every column at the rounds'
  opening sigma, set for 16 rounds a column: on a wide table of few rows that noise hides each column's histogram
  (Digits: 65 columns, 1,438 rows, sd 139 a cell at epsilon 1), and the picks that follow reach few columns. With
  ``opening_noise=r`` the opening measurements are made less noisy when needed, so that a column of the mean cell
  count carries an expected L1 noise ``sqrt(2 / pi) sigma cells`` of at most ``r`` times the DP row count, paying
  at most a quarter of the budget for them; the rounds then share what is left. A choice from the DP row count and
  the public domain (post-processing), recorded in the ledger as the measurements' own sigma.
- **Halving with picks to follow** (``halving_picks``: None, the automatic floor below; or a fixed floor; 0 = AIM's
  rule). AIM halves sigma whenever a round's picks moved the model by less than their noise, however little budget is
  left. A halving that leaves the budget for one or two picks at the halved noise puts much of it into one marginal
  (Adult at epsilon 1, seed 0: after three halvings, 42% of the rounds' rho went to one last measurement of
  education-num x occupation x income at sigma 6.3): the one clique is served, the rest of the workload is not. Here
  sigma halves only when the budget left pays for at least ``halving_picks`` picks at the halved noise; otherwise the
  rounds go on at the current noise, and the last one spends the rest as in AIM. The automatic floor (default) is 2
  picks, or 4 where the DP row count is at least 500 times the halved sigma: on a large table the picks at the rounds'
  noise serve the joint (King County, 17,000 rows: decile 2-way TVD -0.004 with 4 instead of 2), on a small one a dear
  last pick of the target's triples is what the classifier needs (Digits, 1,438 rows: AUC -0.11 with 4; its refused
  halving is at ~170 rows a halved sigma, King County's at ~1,700). A choice from the public schedule (the budget left
  and the mechanisms' costs) and the DP row count, as AIM's halving test is from its refitted model. Measured in
  README "Halving with picks to follow" and "The automatic halving floor".
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpsynth.errors import InputError
from dpsynth.marginals.domain import DEFAULT_MAX_BINS
from dpsynth.models import register
from dpsynth.models.aim import AIM

__all__ = ["BatchAIM"]

_BATCHES_LEFT = 8
# mirror-descent steps of the final estimate: 300, not AIM's 1,000. Stopping earlier keeps the estimate nearer the
# maximum-entropy start, which regularises against the noise (measured 2026-12-05, 3 seeds, epsilon 1: Adult 2-way
# TVD 0.0202 -> 0.0200, Cardio and King County level; epsilon 0.3 level; fits 30-50% shorter).
_FINAL_STEPS = 300
#: the most of the budget the opening 1-way measurements may take with ``opening_noise`` (module docstring)
_OPENING_CAP = 0.25
#: sigma halves only when the budget left pays for at least this many picks at the halved noise; with the automatic
#: floor (``halving_picks=None``) the second where the DP row count is at least _LARGE_TABLE halved noise sds
#: (module docstring)
_HALVING_PICKS, _HALVING_PICKS_LARGE = 2, 4
_LARGE_TABLE = 500


@register
class BatchAIM(AIM):
    """AIM with a target-weighted workload and ``batch`` selections per refit (see the module docstring)."""

    name = "batch-aim"
    phases = ("metadata", "aim")
    fast_params = {"round_iterations": 20, "iterations": 50, "max_model_size": 1.0}
    zero_allowed = AIM.zero_allowed + ("opening_noise", "halving_picks")

    def __init__(self, *, target: str = "auto", target_weight: float = 2.0, triples: str = "auto", batch: int = 4,
                 max_model_size: float = 16.0, round_iterations: int = 100, iterations: int = _FINAL_STEPS,
                 max_bins: int = DEFAULT_MAX_BINS, reuse_metadata: bool = True, backend: str = "numpy",
                 coarse_bins: int = 0, coarse_categories: int = 0, rare_cells: float = 0.0,
                 opening_noise: float = 0.0, rounds_per_attribute: int = 16,
                 halving_picks: int | None = None, weighting: str = "overlap"):
        super().__init__(target=target, max_model_size=max_model_size, round_iterations=round_iterations,
                         iterations=iterations, max_bins=max_bins, reuse_metadata=reuse_metadata, backend=backend,
                         coarse_bins=coarse_bins, coarse_categories=coarse_categories, rare_cells=rare_cells,
                         rounds_per_attribute=rounds_per_attribute)
        self.target_weight = target_weight
        # true / false (the older boolean form, and what ``--param triples=true`` parses to) are "on" / "off"
        self.triples = ("on" if triples else "off") if isinstance(triples, bool) else triples
        self.batch = batch
        self.opening_noise = opening_noise
        self.halving_picks = halving_picks
        self.weighting = weighting

    def _check_params(self) -> None:
        super()._check_params()
        if self.triples not in ("auto", "on", "off", "alternate"):
            raise InputError(f"hyper-parameter triples must be auto, on, off or alternate (or true / false). "
                             f"Found {self.triples!r}.")
        if self.weighting not in ("overlap", "flat"):
            raise InputError(f"hyper-parameter weighting must be overlap or flat. Found {self.weighting!r}.")

    def _opening_sigma(self, sigma: float, rho: float) -> float:
        # older model files have no opening_noise: AIM's opening
        ratio = float(getattr(self, "opening_noise", 0.0))  # mean |noise| over the mean count of a cell
        if not ratio:
            return sigma
        sizes = self.discretizer_.sizes
        wanted = ratio * max(float(self.metadata_.n_rows), 1.0) / (math.sqrt(2 / math.pi) * float(np.mean(sizes)))
        dearest = math.sqrt(len(sizes) / (2 * _OPENING_CAP * rho))  # d / (2 sigma^2) = _OPENING_CAP * rho
        return min(sigma, max(wanted, dearest))

    def _may_halve(self, picks_left: float, halved_sigma: float) -> bool:
        # a halving that leaves the budget for one or two picks would put much of it into one marginal (module
        # docstring); older model files have no halving_picks: AIM's rule
        floor = getattr(self, "halving_picks", 0)
        if floor is None:
            large = float(self.metadata_.n_rows) >= _LARGE_TABLE * halved_sigma
            floor = _HALVING_PICKS_LARGE if large else _HALVING_PICKS
        return picks_left >= floor

    def _per_round(self, picks_left: float) -> int:
        # batch only while the budget left pays for at least _BATCHES_LEFT full batches: the last picks (after sigma
        # halvings the dearest, and at small epsilon all of them) are chosen one at a time, each against the model
        # refitted to the one before
        return max(1, min(self.batch, int(picks_left // _BATCHES_LEFT))) if math.isfinite(picks_left) else self.batch

    def _candidates(self, workload: dict[tuple[int, ...], float]) -> dict[tuple[int, ...], float]:
        """The workload's downward closure, weighted as AIM's paper does (``weighting="overlap"``: a candidate's
        overlaps with the workload's marginals, summed) or by its own workload weight (``"flat"``; 1 for a candidate
        outside the workload, such as a single column): see the module docstring, "Flat weights"."""
        if getattr(self, "weighting", "overlap") == "overlap":  # older model files: the paper's weights
            return AIM._candidates(workload)
        return {r: float(workload.get(r, 1.0)) for r in AIM.closure(workload)}

    def _workloads(self) -> list[dict[tuple[int, ...], float]]:
        # "alternate": the picks take turns between the joint's workload (the pairs) and the target's (the pairs and
        # the target's triples); without a target both are the pairs: one workload
        if self.triples != "alternate":
            return [self._workload()]
        joint, target = self._workload("off"), self._workload("on")
        return [joint, target] if joint != target else [joint]

    def _workload(self, triples: str | None = None) -> dict[tuple[int, ...], float]:
        """The workload with the target's triples ``triples`` ("on", "off"; None: the model's choice, "auto" and
        "alternate" as "on")."""
        triples = self.triples if triples is None else triples
        names = self.discretizer_.names
        d = len(names)
        target = self.schema_.target if self.target == "auto" else self.target
        if target and target not in names:
            if self.target != "auto":
                raise InputError(f"target must be one of the columns kept. Found {target!r}.")
            target = None
        # a column of one cell (the schema or the DP metadata left it one bin or category) is the same in every row of
        # the model's domain: a marginal with it is the marginal without it, so it stays out of the workload, where it
        # would only lend its weight to copies of smaller marginals (module docstring, "Columns of one cell")
        live = [j for j in range(d) if self.discretizer_.sizes[j] > 1]
        workload: dict[tuple[int, ...], float] = {c: 1.0 for c in itertools.combinations(live, 2)} \
            if len(live) >= 2 else {(live[0] if live else 0,): 1.0}
        if target and len(live) >= 3 and names.index(target) in live:
            t = names.index(target)
            # "auto" is "on": measured to pay on every table with a target but Adult (module docstring)
            if triples != "off":
                others = [j for j in live if j != t]
                for a, b in itertools.combinations(others, 2):
                    workload[tuple(sorted((t, a, b)))] = float(self.target_weight)
            else:
                for clique in workload:
                    if t in clique:
                        workload[clique] = float(self.target_weight)
        return workload
