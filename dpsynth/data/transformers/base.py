"""Shared pieces of the reversible column transformers: output spans, the per-column contract, helpers.

Every column transformer maps one column to a block of float columns made of *spans*. A span is a run of
output columns a generator treats as one unit: a ``tanh`` span holds one normalised value in [-1, 1], a
``softmax`` span holds a one-hot vector (a category, a mixture mode, or a missing-value indicator), a
``linear`` span (standard scaling only) holds an unbounded value.

Privacy: a column transformer learns its state only from the public :class:`~dpsynth.data.schema.Column`
and a DP histogram (:mod:`dpsynth.data.metadata`) — both public or paid for (DESIGN.md §1 rule 2), so
fitting is post-processing. ``fit_exact`` reads private values and is reachable only through
:meth:`dpsynth.data.transformers.TableTransformer.fit_exact` in non-private mode.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pandas as pd

from dpsynth.data.metadata import CategoricalHistogram, NumericHistogram
from dpsynth.data.schema import Column
from dpsynth.errors import InputError, SchemaError

__all__ = ["ACTIVATIONS", "ROLES", "SOFTMAX_MODES", "Span", "ColumnTransformer", "as_rng", "choose_slots"]

ACTIVATIONS = ("tanh", "softmax", "linear")
ROLES = ("value", "mode", "category", "missing")
SOFTMAX_MODES = ("argmax", "probs", "logits")


class Span(NamedTuple):
    """Output columns ``[start, end)`` of one unit of one column.

    ``activation``: ``"tanh"`` (a value in [-1, 1]), ``"softmax"`` (one-hot) or ``"linear"`` (unbounded,
    standard scaling only). ``role``: ``"value"`` (a normalised number: continuous value, mode-specific
    alpha, or ordinal code), ``"mode"`` (one-hot over mixture modes, then special values, then missing),
    ``"category"`` (one-hot over the schema's categories, then missing if nullable) or ``"missing"``
    (a two-slot ``[observed, missing]`` indicator, used only when the column has no other softmax span).
    """

    start: int
    end: int
    activation: str
    column: str
    role: str

    @property
    def width(self) -> int:
        return self.end - self.start

    def shifted(self, offset: int) -> Span:
        return self._replace(start=self.start + offset, end=self.end + offset)

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


def as_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A numpy Generator from a Generator, a seed, or None (fresh entropy)."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


def choose_slots(block: np.ndarray, *, softmax: str = "argmax", rng: np.random.Generator | None = None) -> np.ndarray:
    """Index of the chosen slot per row of a softmax span.

    ``"argmax"`` (any real values); ``"probs"``: sample in proportion to the values (negatives count as 0,
    an all-zero row falls back to argmax); ``"logits"``: sample from ``softmax(values)``.
    """
    if softmax == "argmax" or block.shape[1] == 1:
        return np.argmax(block, axis=1)
    if softmax not in SOFTMAX_MODES:
        raise InputError(f"softmax must be one of {SOFTMAX_MODES}. Found {softmax!r}.")
    rng = as_rng(rng)
    if softmax == "logits":
        z = block - block.max(axis=1, keepdims=True)
        p = np.exp(z)
    else:
        p = np.clip(block, 0.0, None)
    total = p.sum(axis=1, keepdims=True)
    empty = total[:, 0] <= 0
    cdf = np.cumsum(p, axis=1) / np.where(total > 0, total, 1.0)
    u = rng.random((block.shape[0], 1))
    idx = np.minimum((cdf < u).sum(axis=1), block.shape[1] - 1)
    if empty.any():
        idx[empty] = np.argmax(block[empty], axis=1)
    return idx


def one_hot_into(out: np.ndarray, index: np.ndarray) -> None:
    """Write a one-hot of ``index`` (n,) into the (n, k) view ``out`` (assumed zero)."""
    out[np.arange(len(index)), index] = 1.0


def restore_dtype(values: np.ndarray, missing: np.ndarray, column: Column, natural: str) -> pd.Series:
    """A Series of ``values`` with ``missing`` rows set to NaN / NA, in the column's declared dtype.

    ``natural`` is the dtype used when the schema does not declare one. A dtype that cannot hold NaN
    (int64, bool) is widened to its nullable form (Int64, boolean) when missing values are present.
    Vectorised: nullable arrays are built from (values, mask), never row by row.
    """
    dtype = column.dtype or natural
    has_missing = bool(missing.any())
    if has_missing:
        dtype = {"int64": "Int64", "bool": "boolean"}.get(dtype, dtype)
    if dtype == "Int64":
        data = np.where(missing, 0, values).astype(np.int64)
        return pd.Series(pd.arrays.IntegerArray(data, missing.copy()))
    if dtype == "boolean":
        data = np.where(missing, False, values).astype(bool)
        return pd.Series(pd.arrays.BooleanArray(data, missing.copy()))
    if has_missing:
        if values.dtype.kind in "iub":
            values = values.astype(object if dtype in ("object", "str", "string", "category") else float)
        else:
            values = values.copy()
        values[missing] = np.nan if values.dtype.kind == "f" else None
    return pd.Series(values).astype(dtype)


class ColumnTransformer(ABC):
    """Reversible encoder of one column into ``output_dim`` floats; see the module docstring.

    Subclasses set ``type_name`` (the key in JSON state) and implement the abstract methods. Spans are
    relative to the column's block (the first starts at 0).
    """

    type_name: ClassVar[str] = ""

    def __init__(self, column: Column) -> None:
        self.column = column

    @property
    @abstractmethod
    def spans(self) -> list[Span]:
        """The column's output spans, relative to its block."""

    @property
    def output_dim(self) -> int:
        return self.spans[-1].end

    @property
    @abstractmethod
    def missing_slot(self) -> int | None:
        """Relative output index of the missing-value slot, or None for a non-nullable column."""

    @abstractmethod
    def fit(self, hist: NumericHistogram | CategoricalHistogram | None, *, rng: np.random.Generator):
        """Fit from a DP (or public) histogram, or from the schema alone when ``hist`` is None."""

    @abstractmethod
    def fit_exact(self, values: pd.Series, *, rng: np.random.Generator):
        """Fit on private values. Non-private: callers must have checked the mode (TableTransformer does)."""

    @abstractmethod
    def transform_into(self, series: pd.Series, out: np.ndarray, *, rng: np.random.Generator | None) -> None:
        """Encode ``series`` into the zero-filled (n, output_dim) view ``out``."""

    @abstractmethod
    def inverse_transform(self, block: np.ndarray, *, softmax: str, rng: np.random.Generator | None) -> pd.Series:
        """Decode an (n, output_dim) block of any real values into a Series of the column's dtype."""

    @abstractmethod
    def slot_counts(self) -> dict[int, np.ndarray]:
        """For each softmax span (by its index in ``spans``), DP (or proxy) counts of its slots."""

    @abstractmethod
    def get_state(self) -> dict[str, Any]:
        """JSON-serialisable learned state (small: floats and lists)."""

    @abstractmethod
    def set_state(self, state: dict[str, Any]) -> None:
        """Restore the state written by :meth:`get_state`."""


def check_hist(hist: Any, expected: type, column: Column) -> None:
    if hist is not None and not isinstance(hist, expected):
        raise SchemaError(
            f"Column '{column.name}' ({column.kind}) needs a {expected.__name__} in the metadata. "
            f"Found {type(hist).__name__}."
        )
