"""What the select-measure-generate models share: the discrete domain, the counting backend, the graphical model
they fit and sample, and its storage in a model file. The models (:mod:`dpsynth.models.mst`,
:mod:`dpsynth.models.aim`) differ only in which marginals they select and how they spend the budget."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from dpsynth.errors import InputError
from dpsynth.marginals.backends import BACKENDS, DuckDBBackend, NumPyBackend, SparkBackend
from dpsynth.marginals.domain import SUPPORT_RUN_SD, Discretizer
from dpsynth.marginals.graphical_model import MarkovRandomField, Measurement, pooled_sums, pooled_total
from dpsynth.models.base import Synthesizer

__all__ = ["SelectMeasureGenerate"]


class SelectMeasureGenerate(Synthesizer):
    """Base of MST and AIM: subclasses implement ``_select_and_measure`` and set ``self.model_`` (a fitted
    :class:`~dpsynth.marginals.graphical_model.MarkovRandomField`) in it. ``fit`` also takes a file path or a
    Spark DataFrame (with ``backend="duckdb"`` / ``"spark"`` and a public schema), counted where the rows live."""

    reads_tables = True

    def _check_params(self) -> None:
        if self.backend not in BACKENDS:
            raise InputError(f"hyper-parameter backend must be one of {', '.join(BACKENDS)}. Found {self.backend!r}.")
        if self.max_bins < 2:
            raise InputError(f"hyper-parameter max_bins must be an integer >= 2. Found {self.max_bins!r}.")

    def _prepare(self, source) -> None:
        """The counting backend on ``source``: a conformed pandas frame, or an engine-held table
        (:mod:`dpsynth.marginals.tables`) of the backend's engine."""
        self.discretizer_ = Discretizer.build(self.schema_, self.metadata_, self.max_bins,
                                              rare=float(getattr(self, "rare_cells", 0.0)))  # older files: none
        sizes = self.discretizer_.sizes
        if self.backend == "duckdb":
            self._counts = DuckDBBackend(source, self.discretizer_)
        elif self.backend == "spark":
            self._counts = SparkBackend(source, self.discretizer_)
        else:
            self._counts = NumPyBackend(self.discretizer_.encode(source), sizes)

    def _metadata_measurements(self) -> list[Measurement]:
        """The metadata phase's histograms as 1-way measurements (post-processing of DP releases; none when the
        model is told not to reuse them or the metadata is exact)."""
        if not self.reuse_metadata:
            return []
        out = []
        for j in range(len(self.discretizer_.columns)):
            m = self.discretizer_.metadata_measurement(j, self.metadata_)
            if m is not None:
                out.append(Measurement((j,), m[0], m[1]))
        return out

    def _empty_range_at_pooled_counts(self, model: MarkovRandomField, measurements: list[Measurement]) -> None:
        """Lower the model's mass in each numeric column's empty range to what the measurements show there.

        The empty range: the cells wholly beyond the rows' support in the DP histogram, past the narrow tail bins next
        to the rows (:meth:`~dpsynth.marginals.domain.Discretizer.beyond_support`; bounds from DP discovery only,
        declared ones are the user's). On each side, its mass becomes at most the inverse-variance pool of every
        measurement's unclipped count of rows there (:func:`~dpsynth.marginals.graphical_model.pooled_sums`, clipped
        at 0), unless that pool shows rows (beyond ``SUPPORT_RUN_SD`` of its sds: a thin real tail, left to the
        estimate). The column's other cells take what is removed, in proportion, and every conditional given the
        column is kept (:meth:`~dpsynth.marginals.graphical_model.MarkovRandomField.reweight`).

        Why: the estimate fits each noisy table on the simplex cell by cell, so an empty cell keeps part of its
        positive noise from every table that holds it: ``batch-aim`` on King County without a schema (epsilon 1, seed
        0) held 204 rows at latitudes 10-43.75 and 208 at 50.8-100, none real, where the pooled counts are 142 and 160
        (sd 91 each), and drew its rows there. The pool is unbiased; lowering only (never raising a mass the estimate
        left out) keeps what the estimate knows from the pairs. Post-processing: it reads the DP measurements, their
        recorded noise and the DP histogram; the model's total is unchanged."""
        if self.schema_.provenance != "dp" or self.metadata_.non_private:
            return
        for j in range(len(self.discretizer_.columns)):
            sides = self.discretizer_.beyond_support(j, self.metadata_)
            if sides is None:
                continue
            marginal = model.project((j,))
            factors, removed = np.ones(len(marginal)), 0.0
            for mask, pooled in zip(sides, pooled_sums(measurements, j, sides)):
                held = float(marginal[mask].sum())
                if pooled is None or held <= 0 or pooled[0] > SUPPORT_RUN_SD * pooled[1]:
                    continue
                target = min(max(pooled[0], 0.0), held)
                factors[mask] = target / held
                removed += held - target
            kept = float(marginal[~(sides[0] | sides[1])].sum())
            if removed > 0 and kept > 0:
                factors[~(sides[0] | sides[1])] = (kept + removed) / kept
                model.reweight(j, factors)

    def _total(self, own: list[Measurement]) -> float:
        """The row count the graphical model's counts sum to: the metadata's DP row count (already pooled with the
        metadata histograms' row totals) pooled with the sums of the model's ``own`` count tables
        (:func:`~dpsynth.marginals.graphical_model.pooled_total`). Post-processing of DP outputs; the exact count in
        the non-private mode."""
        if self.metadata_.non_private:
            return float(self.metadata_.n_rows)
        return pooled_total(self.metadata_.n_rows, self._row_count_sd(), own)

    @property
    def row_count_(self) -> int:
        """The DP row count the model publishes and samples by default: its graphical model's total (the metadata's
        row count pooled with every measurement, :meth:`_total`)."""
        self._check_fitted()
        return max(1, int(round(float(self.model_.total))))

    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        self._fit_table(frame, rng=rng, progress=progress)

    def _fit_table(self, table, *, rng: np.random.Generator, progress: bool) -> None:
        self._prepare(table)
        try:
            self._select_and_measure(rng=rng, progress=progress)
        finally:
            close = getattr(self._counts, "close", None)
            if close is not None:
                close()
            self._counts = None  # the exact tables never outlive the fit

    def _sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        codes = self.model_.sample(n, rng)
        return self.discretizer_.decode(codes, rng)

    # ------------------------------------------------------------------ storage
    def _get_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        tensors = {f"marginal_{k}": torch.from_numpy(np.ascontiguousarray(m, dtype=np.float64))
                   for k, m in enumerate(self.model_.marginals)}
        state = {"discretizer": self.discretizer_.to_dict(), "cliques": [list(c) for c in self.model_.cliques],
                 "edges": [list(e) for e in self.model_.edges], "total": self.model_.total,
                 "budget": self.budget_, "selected": [list(c) for c in self.selected_]}
        return tensors, state

    def _set_state(self, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> None:
        self.discretizer_ = Discretizer.from_dict(state["discretizer"])
        cliques = [tuple(int(a) for a in c) for c in state["cliques"]]
        marginals = [tensors[f"marginal_{k}"].numpy().astype(np.float64) for k in range(len(cliques))]
        self.model_ = MarkovRandomField.from_marginals(self.discretizer_.sizes, cliques,
                                                       [tuple(e) for e in state["edges"]], marginals,
                                                       float(state["total"]))
        self.budget_ = state.get("budget", {})
        self.selected_ = [tuple(c) for c in state.get("selected", [])]
