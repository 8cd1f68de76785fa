"""Public metadata: what columns a table has, of which kind, with which bounds and categories.

A :class:`Schema` is *public* information: the user declares it (a JSON or YAML file they vouch for), or it
is derived with DP (:mod:`dpsynth.data.discovery`, charged to the model's ledger). :func:`infer_schema` reads
the private data to *propose* a schema for review; its output is public only once the user vouches for it,
and dpsynth says so every time it is used.

Column kinds (seed 000 §4.2 for mixed and long-tail):

========== ===============================================================================
continuous real numbers in [lower, upper]
integer    whole numbers in [lower, upper]; sampled values are rounded and stay ints
categorical one of ``categories`` (strings or numbers), no order
binary     categorical with exactly two categories
mixed      continuous with ``special_values`` that carry their own probability mass
           (e.g. 0 in Adult's capital-gain)
long_tail  positive, heavy right tail: modelled after a log transform
========== ===============================================================================

Any column may be ``nullable``: missing values are modelled with an explicit indicator.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpsynth.errors import SchemaError

__all__ = ["KINDS", "NUMERIC_KINDS", "DISCRETE_KINDS", "Column", "Schema"]

KINDS = ("continuous", "integer", "categorical", "binary", "mixed", "long_tail")
NUMERIC_KINDS = ("continuous", "integer", "mixed", "long_tail")
DISCRETE_KINDS = ("categorical", "binary")
DTYPES = ("float64", "int64", "Int64", "object", "str", "string", "category", "bool", "boolean")


@dataclass(frozen=True)
class Column:
    """One column's public metadata. Validated on construction."""

    name: str
    kind: str
    nullable: bool = False
    lower: float | None = None
    upper: float | None = None
    categories: tuple[Any, ...] | None = None
    special_values: tuple[float, ...] = ()
    integer_valued: bool = False  # for mixed / long_tail: round sampled values
    dtype: str | None = None  # pandas dtype to restore on sampling; None = natural for the kind
    other: Any = None  # categorical: the category that values outside ``categories`` are mapped to

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"Column name must be a non-empty string. Found {self.name!r}.")
        if self.kind not in KINDS:
            raise SchemaError(f"Column '{self.name}': kind must be one of {KINDS}. Found {self.kind!r}.")
        if self.dtype is not None and self.dtype not in DTYPES:
            raise SchemaError(f"Column '{self.name}': dtype must be one of {DTYPES}. Found {self.dtype!r}.")
        if self.kind in DISCRETE_KINDS:
            if self.categories is None or len(self.categories) == 0:
                raise SchemaError(f"Column '{self.name}' ({self.kind}) needs a non-empty list of categories.")
            cats = tuple(self.categories)
            object.__setattr__(self, "categories", cats)
            if len(set(cats)) != len(cats):
                raise SchemaError(f"Column '{self.name}': categories contain duplicates: {list(cats)}.")
            if self.kind == "binary" and len(cats) != 2:
                raise SchemaError(f"Column '{self.name}' is binary but has {len(cats)} categories: {list(cats)}.")
            if any(isinstance(c, float) and math.isnan(c) for c in cats):
                raise SchemaError(f"Column '{self.name}': NaN is not a category; set nullable: true instead.")
            if self.other is not None and self.other not in cats:
                raise SchemaError(f"Column '{self.name}': 'other' category {self.other!r} must be one of its categories.")
        else:
            if self.categories is not None or self.other is not None:
                raise SchemaError(f"Column '{self.name}' ({self.kind}) is numeric and cannot have categories.")
            for bound in ("lower", "upper"):
                value = getattr(self, bound)
                if value is None or not math.isfinite(float(value)):
                    raise SchemaError(f"Column '{self.name}' ({self.kind}) needs a finite '{bound}' bound.")
                object.__setattr__(self, bound, float(value))
            if self.lower > self.upper:
                raise SchemaError(f"Column '{self.name}': lower {self.lower} > upper {self.upper}.")
            specials = tuple(float(v) for v in self.special_values)
            object.__setattr__(self, "special_values", specials)
            if specials and self.kind != "mixed":
                raise SchemaError(f"Column '{self.name}': only mixed columns have special_values.")
            if self.kind == "mixed" and not specials:
                raise SchemaError(f"Column '{self.name}' is mixed but declares no special_values.")
            if self.kind == "long_tail" and self.lower < 0:
                raise SchemaError(f"Column '{self.name}' is long_tail and needs lower >= 0. Found {self.lower}.")

    @property
    def is_numeric(self) -> bool:
        return self.kind in NUMERIC_KINDS

    @property
    def is_discrete(self) -> bool:
        return self.kind in DISCRETE_KINDS

    @property
    def rounds(self) -> bool:
        """True when sampled values must be whole numbers."""
        return self.kind == "integer" or self.integer_valued

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if not (v is None or v is False or v == ())}  # keep 0.0 bounds
        out["name"], out["kind"] = self.name, self.kind
        if self.categories is not None:
            out["categories"] = [_to_json_scalar(c) for c in self.categories]
        if self.other is not None:
            out["other"] = _to_json_scalar(self.other)
        if self.special_values:
            out["special_values"] = list(self.special_values)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Column:
        if not isinstance(data, dict):
            raise SchemaError(f"Each column must be a mapping. Found {data!r:.80}.")
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise SchemaError(f"Column '{data.get('name')}': unknown keys {sorted(unknown)}; allowed {sorted(known)}.")
        if "name" not in data or "kind" not in data:
            raise SchemaError(f"Each column needs 'name' and 'kind'. Found {data!r:.80}.")
        data = dict(data)
        if data.get("categories") is not None:
            data["categories"] = tuple(data["categories"])
        if data.get("special_values") is not None:
            data["special_values"] = tuple(data["special_values"])
        return cls(**data)


@dataclass(frozen=True)
class Schema:
    """An ordered set of :class:`Column` plus an optional target column.

    ``provenance`` says where the metadata came from: ``"public"`` (declared by the user),
    ``"inferred"`` (read from private data by :func:`infer_schema`, public only if the user vouches for it),
    or ``"dp"`` (derived with a DP mechanism charged to a ledger).
    """

    columns: tuple[Column, ...]
    target: str | None = None
    provenance: str = "public"
    excluded: tuple[str, ...] = field(default=())  # columns the data has but the model leaves out

    def __post_init__(self) -> None:
        cols = tuple(self.columns)
        object.__setattr__(self, "columns", cols)
        object.__setattr__(self, "excluded", tuple(self.excluded))
        if not cols:
            raise SchemaError("A schema needs at least one column.")
        names = [c.name for c in cols]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SchemaError(f"Duplicate column names in schema: {dupes}.")
        if self.target is not None and self.target not in names:
            raise SchemaError(f"Target column '{self.target}' is not in the schema columns {names}.")
        if self.provenance not in ("public", "inferred", "dp"):
            raise SchemaError(f"provenance must be public, inferred or dp. Found {self.provenance!r}.")

    # ------------------------------------------------------------------ access
    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def __getitem__(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(c.name == name for c in self.columns)

    def __iter__(self):
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def replace_column(self, column: Column) -> Schema:
        return replace(self, columns=tuple(column if c.name == column.name else c for c in self.columns))

    def subset(self, names: Iterable[str]) -> Schema:
        keep = list(names)
        target = self.target if self.target in keep else None
        return replace(self, columns=tuple(self[n] for n in keep), target=target)

    # ------------------------------------------------------------------ validation
    def validate(self, df: pd.DataFrame, *, allow_extra: bool = False) -> None:
        """Raise :class:`SchemaError` when ``df`` does not fit: missing/extra columns, unknown categories,
        NaN in a non-nullable column, infinite values. Values outside numeric bounds are allowed: models
        clip them to the public bounds (the documented handling), which is what DP requires."""
        missing = [n for n in self.names if n not in df.columns]
        if missing:
            raise SchemaError(f"Data lacks columns declared in the schema: {missing}.")
        extra = [c for c in df.columns if c not in self.names and c not in self.excluded]
        if extra and not allow_extra:
            raise SchemaError(
                f"Data has columns the schema does not declare: {extra}. Add them to the schema or drop them first."
            )
        for col in self.columns:
            series = df[col.name]
            isna = series.isna()
            if isna.any() and not col.nullable:
                raise SchemaError(
                    f"Column '{col.name}' has {int(isna.sum())} missing values but is not nullable in the schema."
                )
            values = series[~isna]
            if col.is_discrete:
                unknown = [] if col.other is not None else unknown_categories(values, col.categories)
                if unknown:
                    shown = ", ".join(repr(u) for u in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
                    raise SchemaError(
                        f"Column '{col.name}' has {len(unknown)} value(s) outside the declared categories: {shown}."
                    )
            else:
                numeric = pd.to_numeric(values, errors="coerce")
                bad = numeric.isna()
                if bad.any():
                    raise SchemaError(
                        f"Column '{col.name}' is {col.kind} but holds non-numeric values, e.g. {values[bad].iloc[0]!r}."
                    )
                if np.isinf(numeric.to_numpy(dtype=float)).any():
                    raise SchemaError(f"Column '{col.name}' holds infinite values; replace them or mark them missing.")

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"provenance": self.provenance}
        if self.target is not None:
            out["target"] = self.target
        if self.excluded:
            out["excluded"] = list(self.excluded)
        out["columns"] = [c.to_dict() for c in self.columns]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Schema:
        if not isinstance(data, dict) or "columns" not in data:
            raise SchemaError("A schema file must be a mapping with a 'columns' list.")
        unknown = set(data) - {"columns", "target", "provenance", "excluded"}
        if unknown:
            raise SchemaError(f"Unknown top-level schema keys: {sorted(unknown)}.")
        return cls(
            columns=tuple(Column.from_dict(c) for c in data["columns"]),
            target=data.get("target"),
            provenance=data.get("provenance", "public"),
            excluded=tuple(data.get("excluded", ())),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def save(self, path: str | os.PathLike) -> None:
        """Write JSON (or YAML for a .yaml/.yml suffix), atomically."""
        from dpsynth._io import atomic_write_text

        path = Path(path)
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            text = yaml.safe_dump(self.to_dict(), sort_keys=False)
        else:
            text = self.to_json() + "\n"
        atomic_write_text(path, text)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Schema:
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise SchemaError(f"Cannot read schema file {path}: {exc.strerror or exc}.") from exc
        try:
            if path.suffix.lower() in (".yaml", ".yml"):
                import yaml

                data = yaml.safe_load(text)
            else:
                data = json.loads(text)
        except Exception as exc:  # noqa: BLE001 - any parse error is a user error here
            raise SchemaError(f"Schema file {path} is not valid {'YAML' if path.suffix.lower() in ('.yaml', '.yml') else 'JSON'}: {exc}.") from exc
        return cls.from_dict(data)


def unknown_categories(values: pd.Series, categories: Sequence[Any]) -> list[Any]:
    """Distinct values of ``values`` (NaN excluded) not among ``categories`` (compared as-is, then as str)."""
    cats = set(categories)
    cats_str = {str(c) for c in categories}
    out = []
    for v in pd.unique(values.dropna()):
        if v in cats:
            continue
        if str(v) in cats_str:
            continue
        out.append(v)
    return out


def _to_json_scalar(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    return value
