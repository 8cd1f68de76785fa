"""Canaries of the audit (:mod:`dpsynth.attacks.audit`): records the auditor controls, and their scores.

An audit has power only if a model that memorises its canary emits something it would not emit without it,
so every canary carries values the base table D0 lacks:

- :func:`audit_schema` is the schema the audit declares when the user gives none: inferred from D0 (the
  auditor drew D0, so it is public to the audit) plus, per categorical column, one fresh category
  (``"dpsynth-canary"``, or the largest code + 1 for numeric codes) and, per numeric column, an upper bound
  moved up by the column's range. Without this room a canary built from D0 holds only values D0 already has
  (rare values, maxima) and no attack can tell a fit with it from one without it.
- :func:`craft_canary` (in-out audit): one record with, per column, a schema category D0 lacks (the fresh one
  when the audit built the schema) and the numeric upper bound (above D0's maximum when there is room).
- :func:`tag_canaries` (one-run audit): m real rows of the population whose ``column`` carries m fresh
  categories declared in the schema, one per canary, so each canary has a signature no other record shares
  (the construction of ``tests/models/_canary.py`` with crafted instead of real rare values).

Scores, higher = "the canary was in the training data": ``hamming`` and ``l2`` (minus the distance to the
nearest synthetic record; ``l2`` is GAN-Leaks' full black-box score: its calibration by the distance to a
reference sample is one constant for one canary across fits, so it ranks fits identically), ``density``
(log kernel density of the synthetic data at the canary, the kernel-estimator / DOMIAS score: its reference
density is likewise a constant across fits) and ``novelty`` (synthetic cells carrying the canary's values
that D0 lacks - what a per-column histogram leaks).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from dpsynth.attacks._encoding import TableEncoder, as_strings
from dpsynth.attacks.membership import log_density_ratio, nearest_hamming, nearest_l2
from dpsynth.errors import InputError

__all__ = ["CANARY", "SCORES", "audit_schema", "craft_canary", "fresh_categories", "novelty_rules", "score_canary",
           "tag_canaries", "tag_column", "tag_scores"]

CANARY = "dpsynth-canary"
SCORES = ("hamming", "l2", "density", "novelty")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def fresh_categories(column: Any, k: int) -> list[Any]:
    """``k`` values absent from a discrete column's categories, of the same type (none for booleans)."""
    cats = list(column.categories)
    if column.dtype in ("bool", "boolean") or any(isinstance(c, (bool, np.bool_)) for c in cats):
        return []  # a boolean column has no room for a third value
    if all(_is_number(c) for c in cats):
        top = max(cats)
        step = type(top)(1)
        return [top + step * (j + 1) for j in range(k)]
    names = {str(c) for c in cats}
    out, j = [], 0
    while len(out) < k:
        name = CANARY if k == 1 and j == 0 else f"{CANARY}-{j:03d}"
        if name not in names:
            out.append(name)
        j += 1
    return out


def _widen(column: Any) -> Any:
    if column.is_discrete:
        new = fresh_categories(column, 1)
        return replace(column, kind="categorical", categories=(*column.categories, *new)) if new else column
    span = (column.upper - column.lower) or 1.0
    upper = column.upper + span
    return replace(column, upper=float(math.ceil(upper)) if column.rounds else upper)


def audit_schema(base: pd.DataFrame) -> Any:
    """The schema an audit declares when none is given: inferred from D0 plus room for a canary (see above)."""
    from dpsynth.data.inference import infer_schema

    inferred = infer_schema(base, warn=False)
    return replace(inferred, columns=tuple(_widen(c) for c in inferred.columns), provenance="public")


def craft_canary(data: pd.DataFrame, schema: Any = None) -> pd.DataFrame:
    """One record unlike ``data``: per column a schema category absent from ``data`` (else its rarest value),
    numbers at the schema's upper bound (else the data's maximum). ``schema=None``: :func:`audit_schema`."""
    schema = audit_schema(data) if schema is None else schema
    columns = {c.name: c for c in schema.columns}
    row = {}
    for c in data.columns:
        s, col = data[c], columns.get(c)
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) and not (col and col.is_discrete):
            upper = getattr(col, "upper", None)
            row[c] = upper if upper is not None else s.max()
            continue
        cats = list(getattr(col, "categories", None) or [])
        present = set(s.dropna().astype(str))
        absent = [v for v in cats if str(v) not in present]
        row[c] = absent[-1] if absent else s.value_counts().index[-1]
    out = pd.DataFrame([row])
    for c in data.columns:
        try:
            out[c] = out[c].astype(data[c].dtype)
        except (TypeError, ValueError):
            pass
    return out


def novelty_rules(base: pd.DataFrame, canary: pd.DataFrame) -> list[tuple[str, str, Any]]:
    """Where the canary is new w.r.t. the base table D0: (column, "eq", value) or (column, "gt"|"lt", cut).

    A numeric cut is halfway between D0's extreme and the canary's value, not D0's extreme itself: a model that
    samples uniformly inside a histogram bin exceeds D0's maximum without any canary."""
    rules = []
    for c in base.columns:
        v, s = canary[c].iloc[0], base[c]
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) and _is_number(v):
            if v > s.max():
                rules.append((c, "gt", (float(s.max()) + float(v)) / 2.0))
            elif v < s.min():
                rules.append((c, "lt", (float(s.min()) + float(v)) / 2.0))
        elif str(v) not in set(s.dropna().astype(str)):
            rules.append((c, "eq", str(v)))
    return rules


def _novelty(syn: pd.DataFrame, rules: list[tuple[str, str, Any]]) -> float:
    total = 0
    for c, op, v in rules:
        if op == "eq":
            total += int((as_strings(syn[c]) == v).sum())
        else:
            x = pd.to_numeric(syn[c], errors="coerce")
            total += int((x > v).sum() if op == "gt" else (x < v).sum())
    return float(total)


def score_canary(syn: pd.DataFrame, canary: pd.DataFrame, encoder: TableEncoder,
                 rules: list[tuple[str, str, Any]]) -> dict[str, float]:
    """Every score of :data:`SCORES` for one canary against one fit's synthetic output."""
    syn = syn[encoder.columns]
    syn_codes, can_codes = encoder.codes(syn, canary)
    syn_m, can_m = encoder.numeric_matrix(syn), encoder.numeric_matrix(canary)
    try:
        density = float(log_density_ratio(syn_m, can_m, select_bandwidth=False)[0])
    except (InputError, np.linalg.LinAlgError):  # a (near) constant output has no density: rank it lowest
        density = -math.inf
    return {
        "hamming": -float(nearest_hamming(can_codes, syn_codes)[0]),
        "l2": -float(nearest_l2(can_m, syn_m)[0]),
        "density": density if math.isfinite(density) else -1e300,
        "novelty": _novelty(syn, rules),
    }


def tag_column(schema: Any, base: pd.DataFrame) -> str:
    """The discrete column with the most categories that can take fresh ones (the one-run canaries' tags)."""
    best = None
    for col in schema.columns:
        usable = col.name in base.columns and col.is_discrete and fresh_categories(col, 1)
        if usable and (best is None or len(col.categories) > len(best.categories)):
            best = col
    if best is None:
        raise InputError("The one-run audit tags its canaries with new categories: it needs a categorical column. "
                         "Found none.")
    return best.name


def tag_canaries(schema: Any, rows: pd.DataFrame, column: str) -> tuple[Any, pd.DataFrame]:
    """(schema with len(rows) fresh categories in ``column``, the rows with one tag each in ``column``)."""
    col = schema[column]
    tags = fresh_categories(col, len(rows))
    schema = schema.replace_column(replace(col, kind="categorical", categories=(*col.categories, *tags)))
    canaries = rows.reset_index(drop=True).copy()
    canaries[column] = pd.Series(tags, dtype=object if not all(map(_is_number, tags)) else None)
    try:
        canaries[column] = canaries[column].astype(rows[column].dtype)
    except (TypeError, ValueError):
        pass
    return schema, canaries


def tag_scores(syn: pd.DataFrame, canaries: pd.DataFrame, column: str, encoder: TableEncoder) -> np.ndarray:
    """Synthetic rows carrying canary j's tag, plus (tie-break in (0, 0.5]) 1/(2(1 + d)), d = its nearest L2."""
    syn = syn[encoder.columns]
    counts = pd.Series(as_strings(syn[column])).value_counts()
    count = np.array([float(counts.get(str(t), 0)) for t in canaries[column]])
    d = nearest_l2(encoder.numeric_matrix(canaries), encoder.numeric_matrix(syn))
    return count + 0.5 / (1.0 + d)
