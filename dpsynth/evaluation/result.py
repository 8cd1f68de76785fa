"""The value returned by :func:`dpsynth.evaluation.evaluate`: a tidy table plus plot-ready figure data."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["COLUMNS", "Row", "EvaluationResult", "undefined", "row", "aggregate"]

COLUMNS = ("metric", "subject", "value", "spread", "n_seeds", "note")


@dataclass(frozen=True)
class Row:
    """One line of the tidy table.

    ``metric`` is ``<group>.<measure>[.<variant>]`` (e.g. ``ml_efficacy.auc.diff``); ``subject`` is a column,
    a column pair ``"a|b"``, a model name or ``"(all)"`` for a table-level score; ``spread`` is the standard
    deviation over seeds, folds or subsets (NaN with one); ``note`` is empty unless ``value`` is undefined
    (then ``value`` is NaN and ``note`` says why) or the number needs a caveat.
    """

    metric: str
    subject: str
    value: float
    spread: float = math.nan
    n_seeds: int = 1
    note: str = ""


def row(metric: str, subject: str, values, *, note: str = "") -> Row:
    """A row from one value or a list of per-seed values (mean and sample std); NaN seeds need a note."""
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    finite = arr[np.isfinite(arr)]
    if finite.size == 0:
        if not note:
            raise ValueError(f"{metric}/{subject}: an undefined value needs a note saying why.")
        return Row(metric, str(subject), math.nan, math.nan, int(arr.size), note)
    spread = float(np.std(finite, ddof=1)) if finite.size > 1 else math.nan
    return Row(metric, str(subject), float(np.mean(finite)), spread, int(finite.size), note)


def undefined(metric: str, subject: str, reason: str, *, n_seeds: int = 0) -> Row:
    """A row for a metric that has no value, with the reason (never a silent NaN or 0)."""
    return Row(metric, str(subject), math.nan, math.nan, n_seeds, reason)


def aggregate(metric: str, values: dict[str, float], *, how: str = "mean", scale: float = 1.0,
              caveats: dict[str, str] | None = None, subject: str = "(all)", over: str = "columns") -> Row:
    """The mean (or sum) of per-column ``values`` as one row whose note names every column left out.

    A column whose value is undefined (NaN or infinite) cannot enter the mean; dropping it silently would let
    a table with a broken column read as perfect, so the note lists it. ``caveats`` (column -> text) are
    columns that entered the mean with a value that needs saying (e.g. "scored 0: synthetic column is all
    missing"). With no defined value at all the row is undefined, with the reason.
    """
    ok = {k: float(v) for k, v in values.items() if np.isfinite(v)}
    left_out = [k for k in values if k not in ok]
    parts = []
    if left_out:
        parts.append(f"left out ({len(left_out)} undefined): {', '.join(left_out)}")
    for k, text in (caveats or {}).items():
        parts.append(f"{k}: {text}")
    if not ok:
        reason = "; ".join(parts) if parts else f"no {over.removesuffix('s')} to {how}"
        return undefined(metric, subject, f"no defined value: {reason}")
    total = float(np.sum(list(ok.values()))) if how == "sum" else float(np.mean(list(ok.values())))
    return row(metric, subject, scale * total, note="; ".join([f"{how} over {len(ok)} {over}", *parts]))


@dataclass
class EvaluationResult:
    """Tidy metric table (:data:`COLUMNS`) and plot data keyed by figure name.

    ``figures`` holds plain numbers (histograms, matrices, points), not images: :mod:`.figures` renders them,
    and they survive ``to_json``. ``info`` records the settings (columns, kinds, caps, seeds, timings).
    """

    table: pd.DataFrame
    figures: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: list[Row], figures: dict[str, Any] | None = None,
                  info: dict[str, Any] | None = None) -> EvaluationResult:
        table = pd.DataFrame([r.__dict__ for r in rows], columns=list(COLUMNS))
        table = table.astype({"metric": str, "subject": str, "value": float, "spread": float,
                              "n_seeds": int, "note": str})
        return cls(table=table, figures=dict(figures or {}), info=dict(info or {}))

    def value(self, metric: str, subject: str = "(all)") -> float:
        """The value of one (metric, subject) row; KeyError if there is none."""
        hit = self.table[(self.table.metric == metric) & (self.table.subject == subject)]
        if hit.empty:
            raise KeyError(f"No row for metric {metric!r}, subject {subject!r}.")
        return float(hit.value.iloc[0])

    def metrics(self, prefix: str) -> pd.DataFrame:
        """Rows whose metric starts with ``prefix``."""
        return self.table[self.table.metric.str.startswith(prefix)].reset_index(drop=True)

    def summary(self) -> pd.DataFrame:
        """Table-level rows (subject ``(all)`` / ``(sum)``) plus per-model ML efficacy: what a reader looks at first."""
        t = self.table
        keep = t.subject.isin(["(all)", "(sum)"]) | t.metric.str.startswith("ml_efficacy.")
        return t[keep].reset_index(drop=True)

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": [{k: _clean(v) for k, v in rec.items()} for rec in self.table.to_dict(orient="records")],
            "figures": _clean(self.figures),
            "info": _clean(self.info),
        }

    def to_json(self, indent: int | None = 1) -> str:
        """JSON text (NaN written as null; allow_nan is off so the output is strict JSON)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> EvaluationResult:
        data = json.loads(text)
        rows = [Row(r["metric"], r["subject"], _nan(r["value"]), _nan(r["spread"]), int(r["n_seeds"]), r["note"])
                for r in data["table"]]
        return cls.from_rows(rows, data.get("figures", {}), data.get("info", {}))

    def __repr__(self) -> str:
        return f"EvaluationResult({len(self.table)} rows, figures={sorted(self.figures)})"


def _nan(v: Any) -> float:
    return math.nan if v is None else float(v)


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    return obj
