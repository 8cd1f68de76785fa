"""Reversible encoding of a whole table: one column transformer per schema column, side by side.

``TableTransformer(schema, numeric=..., categorical=..., max_modes=...)`` is fitted with
``fit(metadata, rng=...)`` on the DP metadata a Synthesizer already holds (``self.metadata_``), or on the
schema alone (``metadata=None``). Then ``transform(df)`` gives a float32 matrix whose column blocks follow
the schema's column order and ``inverse_transform(matrix)`` gives back a DataFrame with the schema's columns
and dtypes. ``output_info`` lists the :class:`~dpsynth.data.transformers.base.Span` of every block, in order,
with absolute positions, so a generator can apply per-span activations (tanh / softmax) and a VAE per-column
output heads.

Privacy guarantees (DESIGN.md §1 rules 2 and 5):

- ``fit`` reads only the public schema and DP statistics (:class:`~dpsynth.data.metadata.DPMetadata`);
  everything it learns (mixture means / stds / weights, scaler moments, quantile knots, slot counts for
  condition vectors) is post-processing of DP outputs, costs nothing more, and may be saved in a model file.
- ``fit_exact`` reads private rows; it raises :class:`~dpsynth.errors.PrivacyError` unless the caller states
  ``non_private=True`` (the epsilon=inf mode). The transformer then records ``non_private`` in its state
  (as it does after ``fit`` on metadata marked ``non_private``, i.e. exact statistics).
- ``transform`` is a fixed function of one row at a time (no fitting): applying it to private rows adds no
  cross-row leakage; whatever consumes its output must itself be DP.

State is plain JSON (``to_dict`` / ``from_dict``): no pickle (rule 6).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from dpsynth.data.metadata import DPMetadata
from dpsynth.data.schema import Schema
from dpsynth.data.transformers.base import SOFTMAX_MODES, ColumnTransformer, Span, as_rng
from dpsynth.data.transformers.categorical import CATEGORICAL_METHODS, CategoricalTransformer
from dpsynth.data.transformers.numeric import NUMERIC_METHODS, NumericTransformer
from dpsynth.errors import InputError, NotFittedError, PrivacyError, SchemaError

__all__ = ["TableTransformer", "ColumnInfo", "STATE_VERSION"]

STATE_VERSION = 1


class ColumnInfo(NamedTuple):
    """Where one column lives in the output: ``[start, end)``, its spans, and its missing slot (or None)."""

    name: str
    kind: str
    start: int
    end: int
    spans: tuple[Span, ...]
    missing_slot: int | None


class TableTransformer:
    """Reversible table encoder; see the module docstring.

    ``numeric``: ``"mode_specific"`` (CTGAN / CTAB-GAN+), ``"minmax"``, ``"standard"`` or ``"quantile"``;
    ``categorical``: ``"onehot"`` or ``"ordinal"``; ``max_modes``: mixture components per column (upper bound);
    ``overrides``: per-column method, e.g. ``{"age": "minmax", "native-country": "ordinal"}``.
    """

    def __init__(
        self,
        schema: Schema,
        *,
        numeric: str = "mode_specific",
        categorical: str = "onehot",
        max_modes: int = 10,
        overrides: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(schema, Schema):
            raise InputError(f"schema must be a dpsynth Schema. Found {type(schema).__name__}.")
        if numeric not in NUMERIC_METHODS:
            raise InputError(f"numeric must be one of {NUMERIC_METHODS}. Found {numeric!r}.")
        if categorical not in CATEGORICAL_METHODS:
            raise InputError(f"categorical must be one of {CATEGORICAL_METHODS}. Found {categorical!r}.")
        if not isinstance(max_modes, (int, np.integer)) or max_modes < 1:
            raise InputError(f"max_modes must be an integer >= 1. Found {max_modes!r}.")
        overrides = dict(overrides or {})
        for name, method in overrides.items():
            if name not in schema:
                raise InputError(f"overrides name a column not in the schema: {name!r}.")
            allowed = CATEGORICAL_METHODS if schema[name].is_discrete else NUMERIC_METHODS
            if method not in allowed:
                raise InputError(
                    f"Column '{name}' ({schema[name].kind}) method must be one of {allowed}. Found {method!r}."
                )
        self.schema = schema
        self.numeric = numeric
        self.categorical = categorical
        self.max_modes = int(max_modes)
        self.overrides = overrides

    def __repr__(self) -> str:
        extra = f", overrides={self.overrides!r}" if self.overrides else ""
        return (
            f"TableTransformer({len(self.schema)} columns, numeric={self.numeric!r}, "
            f"categorical={self.categorical!r}, max_modes={self.max_modes}{extra})"
        )

    # ------------------------------------------------------------------ fit
    def _new_transformers(self) -> list[ColumnTransformer]:
        out: list[ColumnTransformer] = []
        for col in self.schema:
            if col.is_discrete:
                out.append(CategoricalTransformer(col, method=self.overrides.get(col.name, self.categorical)))
            else:
                method = self.overrides.get(col.name, self.numeric)
                out.append(NumericTransformer(col, method=method, max_modes=self.max_modes))
        return out

    def fit(self, metadata: DPMetadata | None, *, rng: np.random.Generator | int | None = None) -> TableTransformer:
        """Fit from DP metadata (a histogram per column; missing ones fall back to the schema) or, with
        ``metadata=None``, from the schema alone (uniform proxies over the public bounds and categories)."""
        if metadata is not None and not isinstance(metadata, DPMetadata):
            raise InputError(f"metadata must be a DPMetadata or None. Found {type(metadata).__name__}.")
        rng = as_rng(rng)
        hists = metadata.histograms if metadata is not None else {}
        if metadata is not None and metadata.sigma > 0:
            hists = {k: _denoise(h, metadata.sigma) for k, h in hists.items()}
        self.transformers_ = [t.fit(hists.get(t.column.name), rng=rng) for t in self._new_transformers()]
        self.non_private_ = bool(metadata is not None and metadata.non_private)  # exact metadata: not DP
        self._layout()
        return self

    def fit_exact(
        self, data: pd.DataFrame, *, non_private: bool, rng: np.random.Generator | int | None = None
    ) -> TableTransformer:
        """Fit on private rows — allowed only in the non-private mode (epsilon=inf), stated by the caller."""
        if non_private is not True:
            raise PrivacyError(
                "fit_exact reads private rows and is allowed only in non-private mode (epsilon=inf); "
                f"use fit(metadata) with DP metadata instead. Found non_private={non_private!r}."
            )
        self._check_columns(data)
        rng = as_rng(rng)
        self.transformers_ = [t.fit_exact(data[t.column.name], rng=rng) for t in self._new_transformers()]
        self.non_private_ = True
        self._layout()
        return self

    def _layout(self) -> None:
        infos, offset = [], 0
        for t in self.transformers_:
            spans = tuple(s.shifted(offset) for s in t.spans)
            miss = t.missing_slot
            infos.append(
                ColumnInfo(t.column.name, t.column.kind, offset, offset + t.output_dim, spans,
                           None if miss is None else offset + miss)
            )
            offset += t.output_dim
        self._column_info = infos
        self._output_dim = offset

    def _check_fitted(self) -> None:
        if not hasattr(self, "transformers_"):
            raise NotFittedError("TableTransformer is not fitted: call fit(metadata) first.")

    def _check_columns(self, data: pd.DataFrame) -> None:
        if not isinstance(data, pd.DataFrame):
            raise InputError(f"Expected a pandas DataFrame. Found {type(data).__name__}.")
        missing = [n for n in self.schema.names if n not in data.columns]
        if missing:
            raise SchemaError(f"Data lacks columns declared in the schema: {missing}.")

    # ------------------------------------------------------------------ layout access
    @property
    def output_info(self) -> list[Span]:
        """All spans, in output order, with absolute ``start``/``end``."""
        self._check_fitted()
        return [s for info in self._column_info for s in info.spans]

    @property
    def output_dim(self) -> int:
        self._check_fitted()
        return self._output_dim

    @property
    def column_info(self) -> list[ColumnInfo]:
        """Per-column blocks (start, end, spans, missing slot), in schema order."""
        self._check_fitted()
        return list(self._column_info)

    def slot_counts(self) -> dict[int, np.ndarray]:
        """DP (or proxy) counts of the slots of softmax spans, keyed by the span's index in ``output_info``.

        From the CategoricalHistogram for categories (missing last), from the mixture weights times the noisy
        continuous count plus the special-value and missing counts for numeric mode spans."""
        self._check_fitted()
        out, index = {}, 0
        for t in self.transformers_:
            for local, counts in t.slot_counts().items():
                out[index + local] = counts
            index += len(t.spans)
        return out

    # ------------------------------------------------------------------ transform
    def transform(self, data: pd.DataFrame, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Encode ``data`` (schema columns; extras ignored) into a float32 (n, output_dim) matrix.

        Mixture modes are drawn from their posterior when ``rng`` is given (CTGAN), else the mode of highest
        posterior density is used (deterministic)."""
        self._check_fitted()
        self._check_columns(data)
        rng = None if rng is None else as_rng(rng)
        out = np.zeros((len(data), self._output_dim), dtype=np.float32)
        for t, info in zip(self.transformers_, self._column_info):
            t.transform_into(data[t.column.name], out[:, info.start : info.end], rng=rng)
        return out

    def inverse_transform(
        self, data: Any, *, rng: np.random.Generator | int | None = None, softmax: str = "argmax"
    ) -> pd.DataFrame:
        """Decode an (n, output_dim) array of any real values into a DataFrame with the schema's dtypes.

        Softmax spans: ``softmax="argmax"`` (default; any real values, e.g. raw generator outputs),
        ``"probs"`` (sample a slot in proportion to non-negative values) or ``"logits"`` (sample from
        ``softmax(values)``) using ``rng``. Non-finite inputs are read as 0. Values are clipped to the bounds."""
        self._check_fitted()
        if softmax not in SOFTMAX_MODES:
            raise InputError(f"softmax must be one of {SOFTMAX_MODES}. Found {softmax!r}.")
        if hasattr(data, "detach"):
            data = data.detach().cpu().numpy()
        arr = np.asarray(data)
        if arr.dtype not in (np.float32, np.float64):  # a generator's float32 stays float32: no n x d copy
            arr = arr.astype(np.float64)
        if arr.ndim != 2 or arr.shape[1] != self._output_dim:
            raise InputError(f"inverse_transform needs an (n, {self._output_dim}) array. Found shape {arr.shape}.")
        if not np.isfinite(arr).all():
            arr = np.nan_to_num(arr, nan=0.0, posinf=0.0, neginf=0.0)
        rng = None if rng is None and softmax == "argmax" else as_rng(rng)
        cols = {}
        for t, info in zip(self.transformers_, self._column_info):
            series = t.inverse_transform(arr[:, info.start : info.end], softmax=softmax, rng=rng)
            cols[t.column.name] = series.reset_index(drop=True)
        return pd.DataFrame(cols, columns=self.schema.names)

    # ------------------------------------------------------------------ state
    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable state (schema, options, per-column learned state)."""
        self._check_fitted()
        return {
            "version": STATE_VERSION,
            "numeric": self.numeric,
            "categorical": self.categorical,
            "max_modes": self.max_modes,
            "overrides": dict(self.overrides),
            "non_private": self.non_private_,
            "schema": self.schema.to_dict(),
            "columns": {t.column.name: t.get_state() for t in self.transformers_},
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> TableTransformer:
        """Rebuild a fitted transformer from :meth:`to_dict` output."""
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            found = state.get("version") if isinstance(state, dict) else type(state).__name__
            raise InputError(f"Transformer state must be a dict with version {STATE_VERSION}. Found {found!r}.")
        self = cls(
            Schema.from_dict(state["schema"]),
            numeric=state["numeric"],
            categorical=state["categorical"],
            max_modes=int(state["max_modes"]),
            overrides=state.get("overrides"),
        )
        transformers = self._new_transformers()
        columns = state["columns"]
        for t in transformers:
            if t.column.name not in columns:
                raise InputError(f"Transformer state lacks column '{t.column.name}'.")
            t.set_state(columns[t.column.name])
        self.transformers_ = transformers
        self.non_private_ = bool(state.get("non_private", False))
        self._layout()
        return self


def _denoise(hist, sigma: float):
    """Zero numeric bins whose noisy count is below 2 noise sds (``sigma``, or the bin's own where the histogram
    records it: a zoom's sub-bins are noisier; post-processing of the DP histogram).

    Clipping noise at 0 leaves positive mass in every empty bin; a mixture fitted on it grows spurious tail
    modes. Bins below the floor are mostly empty ones; if no bin clears it (tiny data), the histogram is kept.
    """
    from dataclasses import replace

    from dpsynth.data.metadata import NumericHistogram

    if not isinstance(hist, NumericHistogram):
        return hist
    counts = np.asarray(hist.counts, dtype=float)
    kept = np.where(counts >= 2.0 * hist.bin_noise(sigma)[1], counts, 0.0)
    return replace(hist, counts=kept) if kept.sum() > 0 else hist
