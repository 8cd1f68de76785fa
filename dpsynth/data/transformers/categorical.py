"""Reversible encoders of categorical and binary columns: one-hot and ordinal.

- **one-hot** (CTGAN, CTAB-GAN+ seed 000 §4.2): one ``softmax`` span with one slot per schema category, in
  schema order, then one slot for missing values if the column is nullable (CTGAN treats NaN as a category).
- **ordinal**: one ``tanh`` value ``2 * code / (K - 1) - 1``; a nullable column adds a ``missing`` span
  ``[observed, missing]``.

Unseen categories (values not among the schema's categories, compared as-is and then as strings, the rule of
:meth:`Schema.validate`) are encoded as the column's ``other`` category when it declares one (the rule of
:func:`dpsynth.data.frame.conform`), else as missing when the column is nullable, otherwise ``transform``
raises :class:`~dpsynth.errors.SchemaError` naming the column and the values. NaN in a non-nullable column also
raises. ``inverse_transform`` is exact: it returns the schema's category objects themselves.

Guarantees: the only fitted state is the slot counts used for condition vectors, taken from the DP
:class:`~dpsynth.data.metadata.CategoricalHistogram` (or uniform proxies without metadata); the category list
is the public schema's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpsynth.data.metadata import CategoricalHistogram
from dpsynth.data.schema import Column
from dpsynth.data.transformers.base import (
    ColumnTransformer,
    Span,
    check_hist,
    choose_slots,
    one_hot_into,
    restore_dtype,
)
from dpsynth.errors import InputError, SchemaError

__all__ = ["CategoricalTransformer", "CATEGORICAL_METHODS"]

CATEGORICAL_METHODS = ("onehot", "ordinal")


class CategoricalTransformer(ColumnTransformer):
    """One-hot or ordinal encoding of a categorical / binary column; see the module docstring."""

    type_name = "categorical"

    def __init__(self, column: Column, *, method: str = "onehot") -> None:
        if method not in CATEGORICAL_METHODS:
            raise InputError(f"categorical method must be one of {CATEGORICAL_METHODS}. Found {method!r}.")
        if not column.is_discrete:
            raise SchemaError(f"Column '{column.name}' is {column.kind}, not categorical or binary.")
        super().__init__(column)
        self.method = method
        self.categories = tuple(column.categories)
        self._index = pd.Index(list(self.categories), dtype=object)
        self._by_str = {str(c): i for i, c in enumerate(self.categories)}
        self._cat_array = np.empty(len(self.categories), dtype=object)
        self._text_slots = None  # the categories and a missing slot in the column's string dtype (decode cache)
        self._cat_array[:] = list(self.categories)
        self.counts_ = np.ones(self.n_slots)

    # ------------------------------------------------------------------ layout
    @property
    def n_slots(self) -> int:
        """Categories plus the missing slot (if nullable)."""
        return len(self.categories) + int(self.column.nullable)

    @property
    def spans(self) -> list[Span]:
        name = self.column.name
        if self.method == "onehot":
            return [Span(0, self.n_slots, "softmax", name, "category")]
        spans = [Span(0, 1, "tanh", name, "value")]
        if self.column.nullable:
            spans.append(Span(1, 3, "softmax", name, "missing"))
        return spans

    @property
    def missing_slot(self) -> int | None:
        if not self.column.nullable:
            return None
        return len(self.categories) if self.method == "onehot" else 2

    # ------------------------------------------------------------------ fit
    def fit(self, hist: CategoricalHistogram | None, *, rng: np.random.Generator) -> CategoricalTransformer:
        check_hist(hist, CategoricalHistogram, self.column)
        if hist is None:
            self.counts_ = np.ones(self.n_slots)
            return self
        pos = {c: i for i, c in enumerate(hist.categories)}
        pos_str = {str(c): i for i, c in enumerate(hist.categories)}
        raw = np.asarray(hist.counts, dtype=float)
        counts = np.zeros(self.n_slots)
        for i, c in enumerate(self.categories):
            j = pos.get(c, pos_str.get(str(c)))
            counts[i] = raw[j] if j is not None else 0.0
        if self.column.nullable:
            counts[-1] = hist.missing
        self.counts_ = np.where(np.isfinite(counts), np.clip(counts, 0.0, None), 0.0)
        return self

    def fit_exact(self, values: pd.Series, *, rng: np.random.Generator) -> CategoricalTransformer:
        codes = self.codes(values)
        self.counts_ = np.bincount(codes, minlength=self.n_slots).astype(float)
        return self

    # ------------------------------------------------------------------ encode
    def codes(self, series: pd.Series) -> np.ndarray:
        """Slot index per row: the category's position, or ``len(categories)`` for missing / unseen values."""
        values = series.to_numpy(dtype=object, na_value=None) if not isinstance(series, np.ndarray) else series
        codes = self._index.get_indexer(values)
        unmatched = codes < 0
        if unmatched.any():
            isna = pd.isna(values)
            lookup = unmatched & ~isna
            if lookup.any():
                codes[lookup] = self._match_as_str(values[lookup])
            unseen = codes < 0
            if isna.any() and not self.column.nullable:
                raise SchemaError(
                    f"Column '{self.column.name}' has {int(isna.sum())} missing values but is not nullable."
                )
            unseen &= ~isna
            if unseen.any() and self.column.other is not None:
                codes[unseen] = self.categories.index(self.column.other)
                unseen[:] = False
            if unseen.any() and not self.column.nullable:
                bad = pd.unique(pd.Series(values[unseen], dtype=object))
                shown = ", ".join(repr(v) for v in bad[:5]) + (" ..." if len(bad) > 5 else "")
                raise SchemaError(
                    f"Column '{self.column.name}' has {len(bad)} unseen value(s) outside the schema's categories "
                    f"and is not nullable: {shown}."
                )
            codes[codes < 0] = len(self.categories)
        return codes

    def _match_as_str(self, values: np.ndarray) -> np.ndarray:
        """Category index by string form (-1 if none), computed once per distinct value."""
        codes, uniques = pd.factorize(pd.Series(values, dtype=object))
        mapped = np.array([self._by_str.get(str(u), -1) for u in uniques], dtype=np.intp)
        return mapped[codes]

    def transform_into(self, series: pd.Series, out: np.ndarray, *, rng: np.random.Generator | None) -> None:
        codes = self.codes(series)
        if self.method == "onehot":
            one_hot_into(out, codes)
            return
        k = len(self.categories)
        present = codes < k
        out[:, 0] = np.where(present, 2.0 * codes / max(k - 1, 1) - 1.0, 0.0) if k > 1 else 0.0
        if self.column.nullable:
            one_hot_into(out[:, 1:3], (~present).astype(np.intp))

    # ------------------------------------------------------------------ decode
    def inverse_transform(self, block: np.ndarray, *, softmax: str, rng: np.random.Generator | None) -> pd.Series:
        k = len(self.categories)
        if self.method == "onehot":
            codes = choose_slots(block, softmax=softmax, rng=rng)
            missing = codes >= k
        else:
            v = np.clip(block[:, 0], -1.0, 1.0)
            codes = np.rint((v + 1.0) / 2.0 * (k - 1)).astype(np.intp) if k > 1 else np.zeros(len(v), np.intp)
            if self.column.nullable:
                missing = choose_slots(block[:, 1:3], softmax=softmax, rng=rng) == 1
            else:
                missing = np.zeros(len(v), dtype=bool)
        dtype = self.column.dtype or self._natural_dtype()
        if dtype in ("str", "string"):
            # a take from the k categories (and a missing slot) already in the string dtype: 4x faster than
            # converting n Python strings
            if self._text_slots is None:
                self._text_slots = pd.array([str(c) for c in self.categories] + [None], dtype=dtype)
            return pd.Series(self._text_slots.take(np.where(missing, k, np.minimum(codes, k - 1))))
        values = self._cat_array[np.minimum(codes, k - 1)]
        if (self.column.dtype or "") == "category":
            cat = pd.Categorical(np.where(missing, None, values), categories=list(self.categories))
            return pd.Series(cat)
        return restore_dtype(values, missing, self.column, self._natural_dtype())

    def _natural_dtype(self) -> str:
        cats = self.categories
        if all(isinstance(c, (bool, np.bool_)) for c in cats):
            return "boolean" if self.column.nullable else "bool"
        if all(isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)) for c in cats):
            return "Int64" if self.column.nullable else "int64"
        if all(isinstance(c, (float, np.floating)) for c in cats):
            return "float64"
        if all(isinstance(c, str) for c in cats):
            return "str"
        return "object"

    # ------------------------------------------------------------------ conditions and state
    def slot_counts(self) -> dict[int, np.ndarray]:
        if self.method == "onehot":
            return {0: self.counts_.copy()}
        if self.column.nullable:
            observed = float(self.counts_[: len(self.categories)].sum())
            return {1: np.array([observed, float(self.counts_[-1])])}
        return {}

    def get_state(self) -> dict[str, Any]:
        return {"method": self.method, "counts": [float(c) for c in self.counts_]}

    def set_state(self, state: dict[str, Any]) -> None:
        counts = np.asarray(state["counts"], dtype=float)
        if len(counts) != self.n_slots:
            raise SchemaError(
                f"Column '{self.column.name}': encoder state has {len(counts)} slots, the schema needs {self.n_slots}."
            )
        self.counts_ = counts
