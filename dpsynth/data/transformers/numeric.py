"""Reversible encoder of numeric columns (continuous, integer, mixed, long-tail; CTAB-GAN+, seed 000 §4.2).

Pipeline of :class:`NumericTransformer`, in order:

1. **Missing values** (nullable columns) get their own slot; NaN in a non-nullable column raises
   :class:`~dpsynth.errors.SchemaError`, as do infinite and non-numeric values.
2. **Special values** of a mixed column (exact matches, e.g. 0 in Adult's capital-gain) get one slot each.
3. **Bounds**: every other value is clipped to the schema's public ``[lower, upper]`` — the documented
   handling of out-of-bound values, required for DP.
4. **Long tail**: a long_tail column is mapped to ``log(x - lower + 1)`` (bounds mapped likewise).
5. The continuous part is encoded by a :class:`~dpsynth.data.transformers.scalers.ContinuousEncoder`
   (``mode_specific`` — the default —, ``minmax``, ``standard`` or ``quantile``) as ``(alpha, mode)``.

Output: a ``value`` span holding ``alpha`` (0 for special / missing rows), then one ``softmax`` span with slots
``[mode_1 .. mode_K, special_1 .. special_S, missing]`` (role ``mode``; for a scaler with no special value it
is just ``[observed, missing]``, role ``missing``, and absent for a non-nullable column).

``inverse_transform`` takes the argmax slot (or samples it), decodes ``alpha`` with that mode, inverts the log,
clips to the bounds, and rounds integer columns (kind ``integer`` or ``integer_valued``) to ints within the
bounds; the special value or NaN is returned where such a slot wins.

Guarantees: fitted only from the public column and a DP :class:`~dpsynth.data.metadata.NumericHistogram`
(whose bins are clipped to the bounds); without one, from a uniform histogram over the bounds (a schema-only
proxy: equal weights for special values and the missing slot).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dpsynth.data.metadata import NumericHistogram
from dpsynth.data.schema import Column
from dpsynth.data.transformers.base import (
    ColumnTransformer,
    Span,
    check_hist,
    choose_slots,
    one_hot_into,
    restore_dtype,
)
from dpsynth.data.transformers.mode_specific import ModeSpecificEncoder
from dpsynth.data.transformers.scalers import (
    ContinuousEncoder,
    MinMaxEncoder,
    QuantileEncoder,
    StandardEncoder,
    clean_hist,
)
from dpsynth.errors import InputError, SchemaError

__all__ = ["NumericTransformer", "NUMERIC_METHODS"]

NUMERIC_METHODS = ("mode_specific", "minmax", "standard", "quantile")
_PROXY_BINS = 32


class NumericTransformer(ColumnTransformer):
    """Encoder of one numeric column; see the module docstring."""

    type_name = "numeric"

    def __init__(self, column: Column, *, method: str = "mode_specific", max_modes: int = 10) -> None:
        if method not in NUMERIC_METHODS:
            raise InputError(f"numeric method must be one of {NUMERIC_METHODS}. Found {method!r}.")
        if not column.is_numeric:
            raise SchemaError(f"Column '{column.name}' is {column.kind}, not numeric.")
        if int(max_modes) < 1:
            raise InputError(f"max_modes must be >= 1. Found {max_modes}.")
        super().__init__(column)
        self.method = method
        self.log = column.kind == "long_tail"
        self.specials = np.asarray(column.special_values, dtype=float)
        self.lo, self.hi = self._to_space(np.array([column.lower, column.upper]))
        self.encoder: ContinuousEncoder = _make_encoder(method, self.lo, self.hi, int(max_modes))
        self.counts_ = np.ones(self.n_slots)

    # ------------------------------------------------------------------ layout
    @property
    def n_modes(self) -> int:
        return self.encoder.n_modes

    @property
    def n_slots(self) -> int:
        """Slots of the softmax span: modes, special values, missing."""
        return self.n_modes + len(self.specials) + int(self.column.nullable)

    @property
    def spans(self) -> list[Span]:
        name = self.column.name
        spans = [Span(0, 1, self.encoder.activation, name, "value")]
        is_mode = self.method == "mode_specific" or self.n_modes + len(self.specials) > 1
        if is_mode or self.n_slots > 1:
            spans.append(Span(1, 1 + self.n_slots, "softmax", name, "mode" if is_mode else "missing"))
        return spans

    @property
    def missing_slot(self) -> int | None:
        return self.n_slots if self.column.nullable else None

    # ------------------------------------------------------------------ space
    def _to_space(self, x: np.ndarray) -> np.ndarray:
        return np.log(x - self.column.lower + 1.0) if self.log else x

    def _from_space(self, y: np.ndarray) -> np.ndarray:
        return np.exp(y) - 1.0 + self.column.lower if self.log else y

    # ------------------------------------------------------------------ fit
    def fit(self, hist: NumericHistogram | None, *, rng: np.random.Generator) -> NumericTransformer:
        check_hist(hist, NumericHistogram, self.column)
        col = self.column
        if hist is None:
            edges, counts = np.linspace(col.lower, col.upper, _PROXY_BINS + 1), np.ones(_PROXY_BINS)
            special, missing = np.ones(len(self.specials)), 1.0
        else:
            edges, counts = np.asarray(hist.edges, dtype=float), np.asarray(hist.counts, dtype=float)
            if len(edges) != len(counts) + 1:
                raise SchemaError(
                    f"Column '{col.name}': histogram needs len(edges) == len(counts) + 1. "
                    f"Found {len(edges)} edges and {len(counts)} counts."
                )
            lookup = {float(k): float(v) for k, v in hist.special_counts.items()}
            special = np.array([lookup.get(float(s), 0.0) for s in self.specials])
            missing = float(hist.missing)
        edges, counts = clean_hist(edges, counts, col.lower, col.upper)
        self.encoder.fit_hist(self._to_space(edges), counts, rng=rng)
        self._set_counts(counts.sum(), special, missing)
        return self

    def fit_exact(self, values: pd.Series, *, rng: np.random.Generator) -> NumericTransformer:
        x = self._numeric(values)
        isna, special_idx = np.isnan(x), self._special_index(x)
        cont = ~isna & (special_idx < 0)
        self.encoder.fit_values(self._to_space(np.clip(x[cont], self.column.lower, self.column.upper)), rng=rng)
        special = np.bincount(special_idx[special_idx >= 0], minlength=len(self.specials)).astype(float)
        self._set_counts(float(cont.sum()), special, float(isna.sum()))
        return self

    def _set_counts(self, continuous: float, special: np.ndarray, missing: float) -> None:
        parts = [self.encoder.mode_weights() * continuous, special]
        if self.column.nullable:
            parts.append([missing])
        counts = np.concatenate(parts).astype(float)
        self.counts_ = np.where(np.isfinite(counts), np.clip(counts, 0.0, None), 0.0)

    # ------------------------------------------------------------------ encode
    def _numeric(self, series: pd.Series) -> np.ndarray:
        if pd.api.types.is_numeric_dtype(series.dtype):
            x = series.to_numpy(dtype=float, na_value=np.nan)
        else:
            coerced = pd.to_numeric(series, errors="coerce")
            bad = coerced.isna().to_numpy() & ~series.isna().to_numpy()
            if bad.any():
                raise SchemaError(
                    f"Column '{self.column.name}' is {self.column.kind} but holds non-numeric values, "
                    f"e.g. {series[bad].iloc[0]!r}."
                )
            x = coerced.to_numpy(dtype=float, na_value=np.nan)
        if np.isinf(x).any():
            raise SchemaError(f"Column '{self.column.name}' holds infinite values; replace them or mark them missing.")
        return x

    def _special_index(self, x: np.ndarray) -> np.ndarray:
        """Index of the special value each row equals, or -1."""
        if not len(self.specials):
            return np.full(len(x), -1, dtype=np.intp)
        match = x[:, None] == self.specials[None, :]
        return np.where(match.any(axis=1), np.argmax(match, axis=1), -1)

    def transform_into(self, series: pd.Series, out: np.ndarray, *, rng: np.random.Generator | None) -> None:
        x = self._numeric(series)
        isna = np.isnan(x)
        if isna.any() and not self.column.nullable:
            raise SchemaError(f"Column '{self.column.name}' has {int(isna.sum())} missing values but is not nullable.")
        special_idx = self._special_index(x)
        cont = ~isna & (special_idx < 0)
        slot = np.empty(len(x), dtype=np.intp)
        y = self._to_space(np.clip(x[cont], self.column.lower, self.column.upper))
        alpha, slot[cont] = self.encoder.encode(y, rng=rng)
        out[cont, 0] = alpha
        is_special = special_idx >= 0
        slot[is_special] = self.n_modes + special_idx[is_special]
        slot[isna] = self.n_slots - 1
        if len(self.spans) > 1:
            one_hot_into(out[:, 1:], slot)

    # ------------------------------------------------------------------ decode
    def inverse_transform(self, block: np.ndarray, *, softmax: str, rng: np.random.Generator | None) -> pd.Series:
        n, col = len(block), self.column
        if len(self.spans) > 1:
            slot = choose_slots(block[:, 1:], softmax=softmax, rng=rng)
        else:
            slot = np.zeros(n, dtype=np.intp)
        cont = slot < self.n_modes
        x = np.empty(n)
        y = np.clip(self.encoder.decode(block[cont, 0].astype(float), slot[cont]), self.lo, self.hi)
        x[cont] = np.clip(self._from_space(y), col.lower, col.upper)
        is_special = ~cont & (slot < self.n_modes + len(self.specials))
        x[is_special] = self.specials[slot[is_special] - self.n_modes]
        missing = slot == self.n_slots - 1 if col.nullable else np.zeros(n, dtype=bool)
        if col.rounds:
            lo, hi = math.ceil(col.lower), math.floor(col.upper)
            x = np.rint(x)
            x[cont] = np.clip(x[cont], lo, hi) if lo <= hi else x[cont]
            x[missing] = 0.0
            return restore_dtype(x.astype(np.int64), missing, col, "Int64" if col.nullable else "int64")
        return restore_dtype(x, missing, col, "float64")

    # ------------------------------------------------------------------ conditions and state
    def slot_counts(self) -> dict[int, np.ndarray]:
        return {1: self.counts_.copy()} if len(self.spans) > 1 else {}

    def get_state(self) -> dict[str, Any]:
        return {"method": self.method, "encoder": self.encoder.get_state(), "counts": [float(c) for c in self.counts_]}

    def set_state(self, state: dict[str, Any]) -> None:
        self.encoder.set_state(state["encoder"])
        counts = np.asarray(state["counts"], dtype=float)
        if len(counts) != self.n_slots:
            raise SchemaError(
                f"Column '{self.column.name}': encoder state has {len(counts)} slots, the layout needs {self.n_slots}."
            )
        self.counts_ = counts


def _make_encoder(method: str, lo: float, hi: float, max_modes: int) -> ContinuousEncoder:
    if method == "mode_specific":
        return ModeSpecificEncoder(lo, hi, max_modes=max_modes)
    return {"minmax": MinMaxEncoder, "standard": StandardEncoder, "quantile": QuantileEncoder}[method](lo, hi)
