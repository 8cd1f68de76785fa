"""DP independent marginals: the honest floor model (and the contract suite's reference synthesizer).

Each column is sampled independently from a noisy histogram. The model spends the whole budget left after
the metadata phase on one Gaussian histogram per column (sensitivity 1 under add/remove: a record falls in
one cell of each column's histogram; sigma calibrated so the composed ledger epsilon stays within target),
then combines it with the metadata phase's histogram of the same cells by inverse-variance weighting
(post-processing of two DP releases). Sampling draws a cell by its (clipped) noisy count, then a value
uniformly inside a numeric bin; with bounds from DP discovery (whole decades), the stretches beyond the rows'
support are drawn at their unclipped sums (:func:`_stretches_at_their_sums`). It keeps every 1-way marginal and
none of the dependencies between columns: any model worth using must beat it on 2-way marginals and ML efficacy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from dpsynth.data.discovery import (
    categorical_cells,
    noisy_categorical_histogram,
    noisy_numeric_histogram,
    numeric_cells,
)
from dpsynth.data.metadata import CategoricalHistogram, NumericHistogram, pooled_count
from dpsynth.marginals.domain import stretches_at_their_sums
from dpsynth.models import register
from dpsynth.models.base import Synthesizer
from dpsynth.models.phase import budget_summary, json_number
from dpsynth.privacy.mechanisms import calibrate_gaussian_queries, discrete_counts

__all__ = ["Marginals"]


@register
class Marginals(Synthesizer):
    """Independent DP marginals. Hyper-parameters: ``reuse_metadata`` (combine with the metadata's histograms) and
    ``backend`` (``"numpy"``: a pandas frame; ``"duckdb"`` / ``"spark"``: a Parquet / CSV path or a Spark DataFrame,
    each histogram counted by the engine, the rows never loaded)."""

    name = "marginals"
    reads_tables = True  # fit(path, backend="duckdb"): the histograms are counted where the rows live
    phases = ("metadata", "marginals")

    def __init__(self, *, reuse_metadata: bool = True, backend: str = "numpy"):
        self.reuse_metadata = reuse_metadata
        self.backend = backend

    def _check_params(self) -> None:
        from dpsynth.data.row_store import check_row_backend

        check_row_backend(self)

    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        def cells(col):  # the exact cells of one column's histogram (public or DP edges: no private read)
            if col.is_discrete:
                return categorical_cells(frame[col.name], col)
            return numeric_cells(frame[col.name], col, self.metadata_.histograms[col.name].edges)

        self._release(cells, rng)

    def _fit_table(self, table, *, rng: np.random.Generator, progress: bool) -> None:
        """Fit on a file (or a Spark DataFrame) held by an engine: the same cells counted by one GROUP BY per
        column (:func:`dpsynth.marginals.tables.count_metadata_cells`), the same release. The engine reads the raw
        values, so a row outside a column's bounds is counted in an out-of-range cell: it is moved into the edge bin
        before the noise, where the frame path's conformed (clipped) value lies (still one cell per row)."""
        from dpsynth.marginals.tables import count_metadata_cells

        edges = {col.name: np.asarray(self.metadata_.histograms[col.name].edges, float)
                 for col in self.schema_.columns if not col.is_discrete}
        _, counted = count_metadata_cells(table, self.schema_, edges)
        for name, bins in edges.items():
            cells = counted[name]  # bins, special values, missing, below, above
            cells[0] += cells[-2]
            cells[len(bins) - 2] += cells[-1]
            cells[-2:] = 0
        self._release(lambda col: counted[col.name], rng)

    def _release(self, cells, rng: np.random.Generator) -> None:
        """One Gaussian histogram per column of the exact ``cells(column)``, combined with the metadata's."""
        ledger = self.ledger_
        spent = ledger.epsilon()
        sigma = calibrate_gaussian_queries(ledger, len(self.schema_), discrete=discrete_counts())
        self.histograms_: dict[str, NumericHistogram | CategoricalHistogram] = {}
        totals = [(self.metadata_.n_rows, self._row_count_sd())]
        for col in self.schema_.columns:
            old = self.metadata_.histograms[col.name]
            if col.is_discrete:
                new = noisy_categorical_histogram(cells(col), col, _Phase(ledger), sigma, rng)
            else:
                new = noisy_numeric_histogram(cells(col), col, old.edges, _Phase(ledger), sigma, rng)
            if new.row_total is not None:
                totals.append((new.row_total, new.row_total_sd))
            # the metadata histogram's own noise sd (a declared target's may differ from the phase's)
            meta_sigma = self.metadata_.sigma_of(col.name)
            self.histograms_[col.name] = _combine(old, new, meta_sigma, sigma) if self.reuse_metadata else new
        # the released row count: the metadata's pooled with every histogram's row total (post-processing)
        self.total_ = max(1.0, pooled_count(totals)[0])
        settings = {"mechanism": "gaussian histograms", "queries": len(self.schema_), "noise_multiplier": sigma,
                    "epsilon_after": json_number(ledger.epsilon())}
        self.budget_ = budget_summary(ledger, n_dp=self.total_, metadata_epsilon=spent,
                                      phases=[("marginals", settings)], shares={"marginals": 1.0})

    @property
    def row_count_(self) -> int:
        """The DP row count the model publishes and samples by default: the metadata's row count pooled with the row
        total of each of the model's own histograms (at the whole budget left, they are the best estimates)."""
        self._check_fitted()
        return max(1, int(round(self.total_)))

    def _sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        out = {}
        for col in self.schema_.columns:
            hist = self.histograms_[col.name]
            if isinstance(hist, CategoricalHistogram):
                out[col.name] = _sample_categorical(hist, n, rng)
            else:
                out[col.name] = _sample_numeric(hist, n, rng, decade_bounds=self.schema_.provenance == "dp")
        return pd.DataFrame(out)

    def _get_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        return {}, {"histograms": {k: v.to_dict() for k, v in self.histograms_.items()}, "budget": self.budget_,
                    "total": self.total_}

    def _set_state(self, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> None:
        self.budget_ = state.get("budget", {})  # files before 0.2 have none
        self.total_ = float(state.get("total", self.metadata_.n_rows))  # files before the pooled count: the metadata's
        self.histograms_ = {}
        for k, v in state["histograms"].items():
            cls = NumericHistogram if v["type"] == "numeric" else CategoricalHistogram
            self.histograms_[k] = cls.from_dict(v)


class _Phase:
    """Ledger view that records the model's own histograms under phase "marginals"."""

    def __init__(self, ledger):
        self._ledger = ledger

    def spend(self, event, *, phase, **kw):
        self._ledger.spend(event, phase="marginals", **kw)


def _combine(old, new, sigma_old: float, sigma_new: float):
    """Inverse-variance weighted average of two noisy histograms of the same cells, bin by bin (a zoom's sub-bins
    in the metadata are noisier than its grid bins), of the unclipped counts where both have them, then clipped."""
    if sigma_new == 0 or sigma_old == 0:
        return new
    w_old, w_new = 1 / sigma_old**2, 1 / sigma_new**2
    a, b = w_old / (w_old + w_new), w_new / (w_old + w_new)
    if isinstance(new, CategoricalHistogram):
        mean = a * old.unclipped() + b * new.unclipped()
        return CategoricalHistogram(new.categories, np.clip(mean, 0, None), a * old.missing + b * new.missing,
                                    noisy=mean)
    (y_old, sd_old), (y_new, sd_new) = old.bin_noise(sigma_old), new.bin_noise(sigma_new)
    w_bin_old, w_bin_new = 1 / sd_old**2, 1 / sd_new**2
    mean = (w_bin_old * y_old + w_bin_new * y_new) / (w_bin_old + w_bin_new)
    specials = {k: a * old.special_counts.get(k, 0.0) + b * v for k, v in new.special_counts.items()}
    return NumericHistogram(new.edges, np.clip(mean, 0, None), specials, a * old.missing + b * new.missing,
                            noisy=mean, bin_sd=1 / np.sqrt(w_bin_old + w_bin_new))


def _probabilities(weights: np.ndarray) -> np.ndarray:
    weights = np.clip(np.asarray(weights, dtype=float), 0, None)
    total = weights.sum()
    return weights / total if total > 0 else np.full(len(weights), 1.0 / len(weights))


def _stretches_at_their_sums(hist: NumericHistogram) -> np.ndarray:
    """The clipped counts with each stretch of range beyond the rows' support (DP discovery's bounds are whole
    decades; a zoom's empty slices too) scaled to its unclipped sum, clipped at 0
    (:func:`~dpsynth.marginals.domain.stretches_at_their_sums`): 41 empty bins' clipped noise sums to about 16
    noise sds of rows out there (California's latitudes down to 10). Histograms without their unclipped counts are
    left as they are."""
    counts = np.asarray(hist.counts, dtype=float)
    if hist.noisy is None or hist.bin_sd is None:
        return counts
    return stretches_at_their_sums(counts, hist.noisy, np.asarray(hist.bin_sd, dtype=float), hist.edges)


def _sample_categorical(hist: CategoricalHistogram, n: int, rng) -> np.ndarray:
    cats = np.asarray(list(hist.categories) + [np.nan], dtype=object)
    p = _probabilities(np.append(hist.counts, hist.missing))
    return cats[rng.choice(len(cats), size=n, p=p)]


def _sample_numeric(hist: NumericHistogram, n: int, rng, *, decade_bounds: bool = False) -> np.ndarray:
    specials = list(hist.special_counts)
    k = len(hist.counts)
    counts = _stretches_at_their_sums(hist) if decade_bounds else hist.counts
    p = _probabilities(np.concatenate([counts, list(hist.special_counts.values()), [hist.missing]]))
    cell = rng.choice(len(p), size=n, p=p)
    out = np.full(n, np.nan)
    in_bin = cell < k
    lo, hi = hist.edges[cell[in_bin]], hist.edges[cell[in_bin] + 1]
    out[in_bin] = lo + (hi - lo) * rng.random(int(in_bin.sum()))
    for j, value in enumerate(specials):
        out[cell == k + j] = value
    return out
