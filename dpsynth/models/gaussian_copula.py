"""Gaussian copula, non-private (``epsilon=inf`` only): the classical baseline of seeds 000, 002 and 004 (SDV's
``GaussianCopulaSynthesizer``).

Every column becomes one or two standard-normal variables, their correlation matrix is estimated, and sampling
draws correlated normals and maps each back through its column's marginal:

- a numeric column: normal scores of its ranks (``Phi^-1((rank - 1/2) / m)`` over its ``m`` present values, ties
  averaged); back through ``quantiles`` empirical quantiles (linear between them, so point masses such as
  capital-gain's 0 survive as flat stretches of the quantile function). A nullable numeric column adds a
  missing / present variable; the numeric variable's correlations are taken over the rows where it is present
  (pairwise complete), and made positive definite;
- a categorical column (missing is one more slot when nullable): slots ordered by frequency, each owning an
  interval of [0, 1] as wide as its frequency; a row's value is a uniform draw inside its slot's interval, mapped
  by ``Phi^-1`` (SDV's frequency encoding). Back: the slot whose interval holds ``Phi(z)``.

Privacy: none. Every statistic is exact (``NonPrivateDpEvent`` in the ledger's ``"copula"`` phase) and the model
file holds each numeric column's empirical quantiles: a non-private reference for comparisons, never a release.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch
from dp_accounting import dp_event
from scipy import stats

from dpsynth.data.frame import categorical_codes
from dpsynth.models import register
from dpsynth.models.base import Synthesizer
from dpsynth.models.phase import budget_summary, json_number

__all__ = ["GaussianCopula"]

#: smallest eigenvalue kept in the correlation matrix (constant or duplicated columns make it singular)
_MIN_EIGENVALUE = 1e-6


@register
class GaussianCopula(Synthesizer):
    """Non-private Gaussian copula (module docstring). ``quantiles``: how many empirical quantiles describe each
    numeric column (resolution of its marginal; 1,001 keeps Adult's marginals within 0.001 TVD)."""

    name = "gaussian-copula"
    supports_dp = False
    phases = ("metadata", "copula")
    fast_params: dict[str, Any] = {"quantiles": 101}

    def __init__(self, *, quantiles: int = 1001):
        self.quantiles = quantiles

    def _check_params(self) -> None:
        from dpsynth.errors import InputError

        if self.quantiles < 2:
            raise InputError(f"hyper-parameter quantiles must be at least 2. Found {self.quantiles}.")

    # ------------------------------------------------------------------ fit
    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        self.ledger_.spend(dp_event.NonPrivateDpEvent(), phase="copula", mechanism="exact copula")
        grid = np.linspace(0.0, 1.0, self.quantiles)
        scores, variables, quantiles = [], [], []
        for col in self.schema_.columns:
            values = frame[col.name]
            if col.is_numeric:
                x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
                present = ~np.isnan(x)
                if col.nullable:
                    slots = (~present).astype(np.int64)  # slot 0: present, 1: missing
                    variables.append(_slot_variable(col.name, "missing", slots, 2))
                    scores.append(_slot_scores(slots, variables[-1], rng))
                z = np.full(len(x), np.nan)  # missing rows: left out of this variable's correlations
                if present.any():
                    ranks = stats.rankdata(x[present])
                    z[present] = stats.norm.ppf((ranks - 0.5) / present.sum())
                    quantiles.append(np.quantile(x[present], grid))
                else:  # never present: any value will be masked by the missing variable
                    quantiles.append(np.full(len(grid), float(col.lower)))
                variables.append({"column": col.name, "kind": "numeric", "index": len(quantiles) - 1})
                scores.append(z)
            else:
                codes = categorical_codes(values, col.categories, col.other)
                k = len(col.categories)
                slots = np.where(codes < 0, k, codes)  # missing: the last slot
                variables.append(_slot_variable(col.name, "categorical", slots, k + 1))
                scores.append(_slot_scores(slots, variables[-1], rng))
        # pairwise-complete correlations: each pair over the rows where both are present (imputing the mean for
        # missing values would shrink a column's correlations by its missing share)
        correlation = pd.DataFrame(np.column_stack(scores)).corr().to_numpy()
        correlation = np.nan_to_num(correlation, nan=0.0)  # a constant or never-present variable: independent
        np.fill_diagonal(correlation, 1.0)
        self.correlation_ = _positive_definite(correlation)
        self.quantiles_ = np.vstack(quantiles) if quantiles else np.zeros((0, len(grid)))
        self.variables_ = variables
        self.budget_ = budget_summary(self.ledger_, n_dp=float(self.metadata_.n_rows),
                                      metadata_epsilon=self.ledger_.phases().get("metadata", 0.0),
                                      phases=[("copula", {"mechanism": "exact (non-private)",
                                                          "variables": len(variables),
                                                          "epsilon_after": json_number(self.ledger_.epsilon())})])

    # ------------------------------------------------------------------ sample
    def _sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        chol = np.linalg.cholesky(self.correlation_)
        u = stats.norm.cdf(rng.standard_normal((n, len(self.variables_))) @ chol.T)
        grid = np.linspace(0.0, 1.0, self.quantiles_.shape[1])
        out: dict[str, Any] = {}
        missing: dict[str, np.ndarray] = {}
        for j, var in enumerate(self.variables_):
            name = var["column"]
            if var["kind"] == "numeric":
                out[name] = np.interp(u[:, j], grid, self.quantiles_[var["index"]])
                continue
            slot = np.asarray(var["order"])[np.searchsorted(np.asarray(var["upper"]), u[:, j], side="right")
                                            .clip(0, len(var["order"]) - 1)]
            if var["kind"] == "missing":
                missing[name] = slot == 1
            else:
                col = self.schema_[name]
                cats = np.asarray(list(col.categories) + [np.nan], dtype=object)
                out[name] = cats[slot]
        for name, mask in missing.items():
            out[name] = np.where(mask, np.nan, out[name])
        return pd.DataFrame(out, columns=self.schema_.names)

    # ------------------------------------------------------------------ state
    def _get_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        tensors = {"correlation": torch.from_numpy(np.ascontiguousarray(self.correlation_)),
                   "quantiles": torch.from_numpy(np.ascontiguousarray(self.quantiles_))}
        return tensors, {"variables": self.variables_, "budget": self.budget_}

    def _set_state(self, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> None:
        self.correlation_ = tensors["correlation"].numpy().astype(float)
        self.quantiles_ = tensors["quantiles"].numpy().astype(float)
        self.variables_, self.budget_ = state["variables"], state["budget"]


def _slot_variable(column: str, kind: str, slots: np.ndarray, n_slots: int) -> dict[str, Any]:
    """Frequency encoding of a discrete variable: slots in descending frequency (ties by index), each owning an
    interval of [0, 1] as wide as its share of the rows; ``upper`` holds the intervals' right ends."""
    counts = np.bincount(slots, minlength=n_slots).astype(float)
    order = sorted(range(n_slots), key=lambda s: (-counts[s], s))
    upper = np.cumsum(counts[order]) / max(counts.sum(), 1.0)
    upper[-1] = 1.0
    return {"column": column, "kind": kind, "order": [int(s) for s in order], "upper": [float(v) for v in upper]}


def _slot_scores(slots: np.ndarray, variable: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """Normal scores of discrete values: a uniform draw inside each slot's interval, through ``Phi^-1``."""
    order, upper = np.asarray(variable["order"]), np.asarray(variable["upper"])
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    hi = upper[position[slots]]
    lo = np.concatenate([[0.0], upper[:-1]])[position[slots]]
    u = lo + (hi - lo) * rng.uniform(size=len(slots))
    return stats.norm.ppf(np.clip(u, 1e-9, 1 - 1e-9))


def _positive_definite(correlation: np.ndarray) -> np.ndarray:
    """The nearest correlation matrix with eigenvalues >= _MIN_EIGENVALUE (clip, then rescale to a unit diagonal)."""
    values, vectors = np.linalg.eigh((correlation + correlation.T) / 2)
    fixed = (vectors * np.maximum(values, _MIN_EIGENVALUE)) @ vectors.T
    d = np.sqrt(np.diag(fixed))
    return fixed / np.outer(d, d)
