"""Resolve the schema a model trains on, and release DP statistics with it (DESIGN.md §1 rule 2).

``resolve_schema(data, schema, ledger=..., share=...)`` returns ``(schema, DPMetadata)``:

* **Public schema given**: the schema is used as declared (and the data validated against it); the metadata
  phase releases a noisy row count and one noisy histogram per column (declared categories, or a grid inside
  the declared bounds) with the Gaussian mechanism.
* **No schema, private mode**: the schema itself is discovered with DP, in the same single pass:
  - column kinds come from dtypes (public structure of the frame, not its values): bool -> binary,
    text/category -> categorical, integer dtype -> integer, float -> continuous;
  - category domains by Gaussian partition selection (thresholded noisy counts). **Rule for rare
    categories:** a value whose noisy count is below the threshold is not released; its rows are mapped to
    an explicit ``"__other__"`` category, so no row is dropped. A text column for which no value clears the
    threshold (e.g. an identifier) is excluded, with a warning;
  - numeric bounds by DP quantiles: a noisy histogram over a fixed, data-independent geometric grid
    (40 bins per decade from 1e-3 to 1e10, both signs, plus an exact-zero bin), small noisy counts set to
    0 (post-processing), bounds = the edges of groups of 8 bins (5 groups per decade, so bounds are coarse:
    a factor ~1.6) around the ``TAIL`` and ``1 - TAIL`` quantiles; values outside are clipped. A noisy
    zero-bin mass >= 10% makes the column ``mixed`` with special value 0;
  - missing-value fractions by the noisy count of a "missing" cell in every histogram; text and float
    columns are marked nullable (an int or bool dtype cannot hold NaN).
* **Non-private mode** (``epsilon=inf``): :func:`~dpsynth.data.inference.infer_schema` and exact counts,
  recorded as non-private events.

Budget: every query is a Gaussian count of L2 sensitivity 1 (add/remove one record touches one cell per
query). With m queries (1 row count + 1 per column), sigma is calibrated so that the metadata phase alone
is (share * epsilon, delta / 2)-DP; partition selection adds delta / 4 in total (split over the columns
that need it). The ledger composes the phase with training phases exactly (PLD), so the final epsilon is
that of the whole release.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
from dp_accounting import dp_event
from scipy.stats import norm

from dpsynth.data.frame import categorical_codes, check_frame
from dpsynth.data.inference import infer_schema
from dpsynth.data.metadata import CategoricalHistogram, DPMetadata, NumericHistogram
from dpsynth.data.schema import Column, Schema
from dpsynth.errors import InputError
from dpsynth.privacy.accounting import epsilon_of
from dpsynth.privacy.ledger import PrivacyLedger
from dpsynth.privacy.mechanisms import gaussian_counts, gaussian_partition_selection, selection_threshold

__all__ = ["resolve_schema", "OTHER", "geometric_grid", "calibrate_metadata_sigma", "TAIL"]

OTHER = "__other__"
TAIL = 0.005  # quantile level of the DP bounds
PHASE = "metadata"
_BINS_PER_DECADE = 40
_DECADES = (-3, 10)
_SPURIOUS = 0.01  # chance that pure noise anywhere on a column's grid clears the floor
_GROUP = 8  # fine bins per group when estimating bounds (40 per decade / 8 = 5 groups per decade)


def geometric_grid() -> np.ndarray:
    """Data-independent bin edges covering +-[1e-3, 1e10] (finite ends), used for DP bounds."""
    pos = np.logspace(_DECADES[0], _DECADES[1], (_DECADES[1] - _DECADES[0]) * _BINS_PER_DECADE + 1)
    return np.concatenate([-pos[::-1], pos])


def calibrate_metadata_sigma(n_queries: int, epsilon: float, delta: float) -> float:
    """Smallest sigma (to 0.1%) such that ``n_queries`` Gaussian counts compose to (epsilon, delta)-DP."""
    lo, hi = 1e-3, 1e6
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        if epsilon_of([(dp_event.GaussianDpEvent(mid), n_queries)], delta, accountant="pld") > epsilon:
            lo = mid
        else:
            hi = mid
    return hi


def resolve_schema(
    data: pd.DataFrame,
    schema: Schema | None,
    *,
    ledger: PrivacyLedger,
    share: float,
    rng: np.random.Generator,
    progress: bool = False,
) -> tuple[Schema, DPMetadata]:
    """See the module docstring. Records every query in ``ledger`` under phase "metadata"."""
    check_frame(data)
    non_private = ledger.non_private
    if schema is None and non_private:
        schema = infer_schema(data, warn=True)
    if schema is not None:
        schema.validate(data)
        return schema, _public_schema_stats(data, schema, ledger, share, rng)
    return _discover(data, ledger, share, rng)


# ---------------------------------------------------------------------------------------------- helpers
def _sigma(ledger: PrivacyLedger, n_queries: int, share: float) -> float:
    if ledger.non_private:
        return 0.0
    return calibrate_metadata_sigma(n_queries, share * ledger.target_epsilon, ledger.target_delta / 2)


def _spend(ledger: PrivacyLedger, sigma: float, mechanism: str, extra_delta: float = 0.0, **params) -> None:
    event = dp_event.NonPrivateDpEvent() if sigma == 0 else dp_event.GaussianDpEvent(sigma)
    ledger.spend(event, phase=PHASE, mechanism=mechanism, extra_delta=extra_delta, sensitivity=1.0,
                 sigma=sigma, **params)


def _noisy_row_count(data: pd.DataFrame, ledger, sigma, rng) -> float:
    _spend(ledger, sigma, "row count")
    return max(1.0, float(gaussian_counts(np.array([len(data)]), sigma=sigma, rng=rng)[0]))


def _public_grid(col: Column) -> np.ndarray:
    """Bin edges inside public bounds: unit bins for small integer ranges, else 64 equal bins."""
    if col.lower == col.upper:
        return np.array([col.lower, col.upper])
    if col.rounds and col.upper - col.lower <= 200:
        return np.arange(col.lower - 0.5, col.upper + 1.0, 1.0)
    return np.linspace(col.lower, col.upper, 65)


def _numeric_counts(values: np.ndarray, edges: np.ndarray, specials: tuple[float, ...]) -> tuple[np.ndarray, list, int]:
    missing = np.isnan(values)
    present = values[~missing]
    special_counts = []
    for s in specials:
        hit = present == s
        special_counts.append(int(hit.sum()))
        present = present[~hit]
    idx = np.clip(np.searchsorted(edges, present, side="right") - 1, 0, len(edges) - 2)
    return np.bincount(idx, minlength=len(edges) - 1), special_counts, int(missing.sum())


def _histogram_numeric(series: pd.Series, col: Column, edges, ledger, sigma, rng) -> NumericHistogram:
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
    values = np.where(np.isnan(values), np.nan, np.clip(values, col.lower, col.upper))
    counts, specials, missing = _numeric_counts(values, edges, col.special_values)
    _spend(ledger, sigma, f"histogram {col.name}", bins=len(counts) + len(specials) + 1)
    noisy = gaussian_counts(np.concatenate([counts, specials, [missing]]), sigma=sigma, rng=rng)
    noisy = np.clip(noisy, 0, None)
    k = len(counts)
    special_counts = {s: float(c) for s, c in zip(col.special_values, noisy[k : k + len(specials)])}
    return NumericHistogram(edges, noisy[:k], special_counts, float(noisy[-1]) if col.nullable else 0.0)


def _histogram_categorical(series: pd.Series, col: Column, ledger, sigma, rng) -> CategoricalHistogram:
    codes = categorical_codes(series, col.categories, col.other)
    counts = np.bincount(codes[codes >= 0], minlength=len(col.categories))
    missing = int((codes < 0).sum())
    _spend(ledger, sigma, f"histogram {col.name}", bins=len(counts) + 1)
    noisy = np.clip(gaussian_counts(np.append(counts, missing), sigma=sigma, rng=rng), 0, None)
    return CategoricalHistogram(col.categories, noisy[:-1], float(noisy[-1]) if col.nullable else 0.0)


def _public_schema_stats(data, schema: Schema, ledger, share, rng) -> DPMetadata:
    sigma = _sigma(ledger, len(schema) + 1, share)
    n_rows = _noisy_row_count(data, ledger, sigma, rng)
    hists = {}
    for col in schema.columns:
        if col.is_discrete:
            hists[col.name] = _histogram_categorical(data[col.name], col, ledger, sigma, rng)
        else:
            hists[col.name] = _histogram_numeric(data[col.name], col, _public_grid(col), ledger, sigma, rng)
    return DPMetadata(n_rows, hists, non_private=ledger.non_private, sigma=sigma)


# ---------------------------------------------------------------------------------------------- DP discovery
def _discover(data: pd.DataFrame, ledger: PrivacyLedger, share: float, rng) -> tuple[Schema, DPMetadata]:
    n_text = sum(not _is_numeric_or_bool(data[c]) for c in data.columns)
    sigma = _sigma(ledger, data.shape[1] + 1, share)
    selection_delta = ledger.target_delta / 4 / max(n_text, 1)
    threshold = selection_threshold(sigma, selection_delta)
    n_rows = _noisy_row_count(data, ledger, sigma, rng)
    columns, hists, excluded = [], {}, []
    for name in data.columns:
        series = data[name]
        if _is_numeric_or_bool(series) and not pd.api.types.is_bool_dtype(series.dtype):
            col, hist = _discover_numeric(series, n_rows, ledger, sigma, rng)
        else:
            col, hist = _discover_categorical(series, n_rows, ledger, sigma, threshold, selection_delta, rng)
        if col is None:
            excluded.append(name)
            continue
        columns.append(col)
        hists[name] = hist
    if not columns:
        raise InputError("DP discovery found no usable column; declare a schema.")
    return Schema(tuple(columns), provenance="dp", excluded=tuple(excluded)), DPMetadata(n_rows, hists, sigma=sigma)


def _is_numeric_or_bool(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype)


def _discover_categorical(series, n_rows, ledger, sigma, threshold, selection_delta, rng):
    name = str(series.name)
    nullable = not pd.api.types.is_bool_dtype(series.dtype)
    if pd.api.types.is_bool_dtype(series.dtype):
        col = Column(name, "binary", categories=(False, True), dtype=str(series.dtype))
        return col, _histogram_categorical(series, col, ledger, sigma, rng)
    present = series.dropna()
    key_counts = present.value_counts(sort=False).to_dict()
    ledger.spend(dp_event.GaussianDpEvent(sigma), phase=PHASE, mechanism=f"partition selection {name}",
                 extra_delta=selection_delta, sensitivity=1.0, sigma=sigma, threshold=threshold)
    kept = gaussian_partition_selection(key_counts, sigma=sigma, threshold=threshold, rng=rng)
    missing = max(0.0, float(gaussian_counts(np.array([series.isna().sum()]), sigma=sigma, rng=rng)[0]))
    if not kept:
        warnings.warn(f"Column '{name}': no value is frequent enough to release under DP (ID-like or too rare); "
                      "the column is excluded. Declare its categories in a schema to keep it.", stacklevel=4)
        return None, None
    cats = sorted(kept, key=lambda v: (str(type(v)), str(v)))
    counts = [kept[c] for c in cats]
    other = None
    if OTHER not in kept:
        # rows whose value was not released go to an explicit "other" category (never dropped)
        cats.append(OTHER)
        # its frequency: the DP row count minus released counts (post-processing, no extra query)
        counts.append(max(0.0, n_rows - sum(kept.values()) - missing))
        other = OTHER
    cats = [c.item() if isinstance(c, np.generic) else c for c in cats]
    kind = "binary" if len(cats) == 2 else "categorical"
    col = Column(name, kind, nullable=nullable, categories=tuple(cats), other=other, dtype=_dtype(series))
    return col, CategoricalHistogram(tuple(cats), np.clip(np.array(counts, dtype=float), 0, None), missing)


def _discover_numeric(series, n_rows, ledger, sigma, rng):
    name = str(series.name)
    values = series.to_numpy(dtype=float)
    if np.isinf(values).any():
        raise InputError(f"Column '{name}' holds infinite values; replace them or mark them missing.")
    edges = geometric_grid()
    zero = values == 0
    counts, _, missing = _numeric_counts(np.where(zero, np.nan, values), edges, ())
    missing = int(np.isnan(values).sum())
    _spend(ledger, sigma, f"DP quantiles {name}", bins=len(counts) + 2)
    noisy = gaussian_counts(np.concatenate([counts, [zero.sum(), missing]]), sigma=sigma, rng=rng)
    bins, zero_count, missing_count = noisy[:-2], noisy[-2], noisy[-1]
    # Bounds from groups of _GROUP adjacent bins (signal grows like the group, noise like its square root);
    # post-processing zeroes the noise floor so that a spurious group anywhere on the grid is unlikely (1%).
    starts = _group_starts(len(bins))
    grouped = np.add.reduceat(bins, starts)
    floor = sigma * math.sqrt(_GROUP) * float(norm.isf(_SPURIOUS / (len(grouped) + 1)))
    grouped = np.where(grouped >= floor, grouped, 0.0)
    zero_count = zero_count if zero_count >= sigma * float(norm.isf(_SPURIOUS)) else 0.0
    if grouped.sum() + zero_count <= 0:
        raise InputError(f"Column '{name}': too few values to bound under DP; declare its bounds in a schema.")
    mass = np.concatenate([grouped, [zero_count]])
    bins = np.clip(bins, 0, None)
    lower, upper = _dp_bounds(grouped, zero_count, np.append(edges[starts], edges[-1]))
    integral = pd.api.types.is_integer_dtype(series.dtype)
    if integral:
        lower, upper = math.floor(lower), math.ceil(upper)
    nullable = not integral
    special = (0.0,) if zero_count >= 0.10 * mass.sum() and lower <= 0 <= upper and grouped.sum() > 0 else ()
    kind = "mixed" if special else ("integer" if integral else "continuous")
    col = Column(name, kind, nullable=nullable, lower=lower, upper=upper, special_values=special,
                 integer_valued=integral and bool(special), dtype=_dtype(series))
    inside = (edges[:-1] < upper) & (edges[1:] > lower)
    sub_edges = np.clip(np.append(edges[:-1][inside], edges[1:][inside][-1:]), lower, upper)
    sub_counts = bins[inside]
    specials = {0.0: float(max(zero_count, 0.0))} if special else {}
    if not special and zero_count > 0 and lower <= 0 <= upper:  # fold zeros into the bin holding 0
        j = int(np.clip(np.searchsorted(sub_edges, 0.0, side="right") - 1, 0, len(sub_counts) - 1))
        sub_counts = sub_counts.copy()
        sub_counts[j] += zero_count
    hist = NumericHistogram(sub_edges, sub_counts, specials, float(max(missing_count, 0.0)) if nullable else 0.0)
    return col, hist


def _group_starts(n_bins: int) -> np.ndarray:
    """First fine-bin index of each group: _GROUP bins per group on each sign, the bin around 0 alone."""
    half = (n_bins - 1) // 2
    return np.concatenate([np.arange(0, half, _GROUP), [half], np.arange(half + 1, n_bins, _GROUP)])


def _dp_bounds(bins: np.ndarray, zero_count: float, edges: np.ndarray) -> tuple[float, float]:
    """Grid edges around the TAIL and 1-TAIL quantiles of the (noisy) distribution, zero included."""
    zero_at = np.searchsorted(edges, 0.0)  # edges[zero_at - 1] < 0 < edges[zero_at]
    points = np.concatenate([edges[:-1][:zero_at], [0.0], edges[:-1][zero_at:]])
    mass = np.concatenate([bins[:zero_at], [zero_count], bins[zero_at:]])
    right = np.concatenate([edges[1:][:zero_at], [0.0], edges[1:][zero_at:]])
    cdf = np.cumsum(mass) / mass.sum()
    lo = int(np.searchsorted(cdf, TAIL, side="left"))
    hi = int(np.searchsorted(cdf, 1 - TAIL, side="left"))
    lower = float(points[lo])
    upper = float(right[min(hi, len(right) - 1)])
    return (lower, upper) if lower <= upper else (upper, lower)


def _dtype(series: pd.Series) -> str | None:
    from dpsynth.data.schema import DTYPES

    name = str(series.dtype)
    return name if name in DTYPES else None
