"""Public metadata: what columns a table has, of which kind, with which bounds and categories.

A :class:`Schema` is *public* information: the user declares it (a JSON or YAML file they vouch for), or it
is derived with DP (:mod:`dpsynth.data.discovery`, charged to the model's ledger). :func:`infer_schema` reads
the private data to *propose* a schema (``provenance: inferred``); it is public only once the user reviews it
and vouches for it (``"provenance": "public"`` in the file, or :meth:`Schema.reviewed`).

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

A numeric column may declare a ``step``: its values are whole multiples of it (King County's ``floors``: 1, 1.5,
2, ... with step 0.5; ``bathrooms`` in quarters). Sampled values are rounded to the nearest multiple inside the
bounds (:meth:`Column.snap`), and DP histograms of a range of at most ``UNIT_GRID_SPAN`` steps take one bin per
multiple, as whole numbers do (an integer column has step 1 unless it declares a larger whole one). Without it a
value such as 1.5 is drawn somewhere in the histogram bin around it (1.48-1.52), and half the draws fall on the
other side of 1.5.
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

__all__ = ["KINDS", "NUMERIC_KINDS", "DISCRETE_KINDS", "PROVENANCES", "INFERRED_NOTE", "Column", "Schema",
           "tidy_multiples"]

KINDS = ("continuous", "integer", "categorical", "binary", "mixed", "long_tail")
NUMERIC_KINDS = ("continuous", "integer", "mixed", "long_tail")
DISCRETE_KINDS = ("categorical", "binary")
DTYPES = ("float64", "int64", "Int64", "object", "str", "string", "category", "bool", "boolean")
PROVENANCES = ("public", "inferred", "dp")
#: written at the top of an inferred schema file: the user must review it before it counts as public
INFERRED_NOTE = (
    "Inferred by READING THE PRIVATE DATA: not differentially private. Review every bound, category and special "
    "value, replace data-derived ones by public knowledge, then set \"provenance\": \"public\" to vouch for it "
    "(a DP fit refuses an inferred schema)."
)


@dataclass(frozen=True)
class Column:
    """One column's public metadata. Validated on construction: every field's type and value, so that a
    malformed schema file fails with one :class:`SchemaError` line naming the column, the field, the rule and
    the value found (never a TypeError, and never a silently coerced value such as ``"abc"`` -> ``a, b, c``)."""

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
    # categorical, nullable: values outside ``categories`` are read as missing (DP discovery sets this when an
    # "other" slot would hold no mass its noisy counts can detect)
    unknown_as_missing: bool = False
    step: float | None = None  # numeric: values are whole multiples of step (None: any number; integer: 1)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"Column name must be a non-empty string. Found {_shown(self.name)}.")
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise self._error("kind", f"must be one of {', '.join(KINDS)}", self.kind)
        for flag in ("nullable", "integer_valued", "unknown_as_missing"):
            value = getattr(self, flag)
            if not isinstance(value, (bool, np.bool_)):
                raise self._error(flag, "must be true or false", value)
            object.__setattr__(self, flag, bool(value))
        if self.dtype is not None and (not isinstance(self.dtype, str) or self.dtype not in DTYPES):
            raise self._error("dtype", f"must be one of {', '.join(DTYPES)}", self.dtype)
        if self.kind in DISCRETE_KINDS:
            self._check_discrete()
        else:
            self._check_numeric()

    def _error(self, field_name: str, rule: str, value: Any) -> SchemaError:
        return SchemaError(f"Column '{self.name}': field '{field_name}' {rule}. Found {_shown(value)}.")

    def _check_discrete(self) -> None:
        for name in ("lower", "upper"):
            if getattr(self, name) is not None:
                raise self._error(name, f"is for numeric columns only, not {self.kind}", getattr(self, name))
        specials = self.special_values
        if specials is not None and not (_is_sequence(specials) and len(specials) == 0):
            raise self._error("special_values", f"is for numeric columns only, not {self.kind}", specials)
        if self.integer_valued:
            raise self._error("integer_valued", f"is for numeric columns only, not {self.kind}", True)
        if self.step is not None:
            raise self._error("step", f"is for numeric columns only, not {self.kind}", self.step)
        object.__setattr__(self, "special_values", ())
        if self.categories is None or (_is_sequence(self.categories) and len(self.categories) == 0):
            raise self._error("categories", f"must be a non-empty list for a {self.kind} column", self.categories)
        if not _is_sequence(self.categories):
            raise self._error("categories", "must be a list", self.categories)
        cats = tuple(self.categories)
        for c in cats:
            if not isinstance(c, _SCALARS):
                raise self._error("categories", "must hold only strings, numbers or booleans", c)
            if isinstance(c, (float, np.floating)) and math.isnan(c):
                raise self._error("categories", "must not hold NaN (set nullable: true instead)", c)
        object.__setattr__(self, "categories", cats)
        # True == 1 and 1 == 1.0 in Python: such pairs would silently merge into one category
        if len(set(cats)) != len(cats):
            raise self._error("categories", "must not contain duplicates (True equals 1, 1 equals 1.0)", list(cats))
        if self.kind == "binary" and len(cats) != 2:
            raise self._error("categories", f"must have exactly 2 entries for a binary column (has {len(cats)})",
                              list(cats))
        if self.other is not None and (not isinstance(self.other, _SCALARS) or self.other not in cats):
            raise self._error("other", "must be one of the column's categories", self.other)
        if self.unknown_as_missing and (self.other is not None or not self.nullable):
            raise self._error("unknown_as_missing", "needs a nullable column without an 'other' category",
                              self.unknown_as_missing)

    def _check_numeric(self) -> None:
        for name in ("categories", "other", "unknown_as_missing"):
            if getattr(self, name) not in (None, False):
                raise self._error(name, f"is for categorical or binary columns only, not {self.kind}",
                                  getattr(self, name))
        for bound in ("lower", "upper"):
            value = getattr(self, bound)
            if not _is_real(value) or not math.isfinite(float(value)):
                raise self._error(bound, f"must be a finite number for a {self.kind} column", value)
            object.__setattr__(self, bound, float(value))
        if self.lower > self.upper:
            raise SchemaError(f"Column '{self.name}': lower {self.lower} > upper {self.upper}.")
        specials = () if self.special_values is None else self.special_values
        if not _is_sequence(specials):
            raise self._error("special_values", "must be a list of numbers", specials)
        for v in specials:
            if not _is_real(v) or not (self.lower <= float(v) <= self.upper):
                raise self._error("special_values", f"must hold numbers in [lower, upper] = [{self.lower:g}, "
                                  f"{self.upper:g}]", v)
        specials = tuple(float(v) for v in specials)
        if len(set(specials)) != len(specials):
            raise self._error("special_values", "must not contain duplicates", list(specials))
        object.__setattr__(self, "special_values", specials)
        if specials and self.kind != "mixed":
            raise SchemaError(f"Column '{self.name}': only mixed columns have special_values. Found kind {self.kind}.")
        if self.kind == "mixed" and not specials:
            raise SchemaError(f"Column '{self.name}' is mixed but declares no special_values.")
        if self.kind == "long_tail" and self.lower < 0:
            raise SchemaError(f"Column '{self.name}' is long_tail and needs lower >= 0. Found {self.lower}.")
        self._check_step()

    def _check_step(self) -> None:
        if self.step is None:
            return
        if isinstance(self.step, (bool, np.bool_)) or not _is_real(self.step) or not (
                math.isfinite(float(self.step)) and float(self.step) > 0):
            raise self._error("step", "must be a finite number > 0", self.step)
        object.__setattr__(self, "step", float(self.step))
        if self.rounds and self.step % 1 != 0:
            raise self._error("step", "must be a whole number for a column of whole numbers", self.step)
        first, last = self.lattice()
        if first > last:
            raise self._error("step", f"must have a multiple in [lower, upper] = [{self.lower:g}, {self.upper:g}]",
                              self.step)

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

    @property
    def grid_step(self) -> float | None:
        """The spacing of the values a numeric column can take: ``step``, 1 for whole numbers, else None."""
        return self.step if self.step is not None else (1.0 if self.rounds else None)

    def lattice(self) -> tuple[float, float]:
        """The smallest and largest multiple of :attr:`grid_step` inside the bounds (first > last: none)."""
        step = self.grid_step
        first, last = math.ceil(self.lower / step - 1e-9) * step, math.floor(self.upper / step + 1e-9) * step
        return tidy_multiples(first, step), tidy_multiples(last, step)

    def snap(self, values: np.ndarray) -> np.ndarray:
        """``values`` rounded to the nearest multiple of :attr:`grid_step` inside the bounds (NaN kept; no step:
        unchanged). Decimal steps give tidy decimals (0.1 * 3 -> 0.3, not 0.30000000000000004)."""
        step = self.grid_step
        if step is None:
            return values
        first, last = self.lattice()
        with np.errstate(invalid="ignore"):
            snapped = np.clip(np.round(np.asarray(values, float) / step) * step, first, last)
        return tidy_multiples(snapped, step)

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
        """Build a column from a parsed JSON/YAML mapping; every field is type-checked by the constructor."""
        if not isinstance(data, dict):
            raise SchemaError(f"Each entry of 'columns' must be a mapping with 'name' and 'kind'. "
                              f"Found {_shown(data)}.")
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise SchemaError(f"Column '{data.get('name')}': unknown keys {sorted(map(str, unknown))}; "
                              f"allowed {sorted(known)}.")
        if "name" not in data or "kind" not in data:
            raise SchemaError(f"Each column needs 'name' and 'kind'. Found {_shown(data)}.")
        data = dict(data)
        if data.get("special_values") is None:
            data.pop("special_values", None)
        return cls(**data)


@dataclass(frozen=True)
class Schema:
    """An ordered set of :class:`Column` plus an optional target column.

    ``provenance`` says where the metadata came from: ``"public"`` (declared by the user, or an inferred
    schema the user reviewed and vouched for: :meth:`reviewed`), ``"inferred"`` (read from private data by
    :func:`~dpsynth.data.inference.infer_schema`; not DP, so a DP fit must not use it as public metadata),
    or ``"dp"`` (derived with a DP mechanism charged to a ledger).
    """

    columns: tuple[Column, ...]
    target: str | None = None
    provenance: str = "public"
    excluded: tuple[str, ...] = field(default=())  # columns the data has but the model leaves out

    def __post_init__(self) -> None:
        if not _is_sequence(self.columns) or not all(isinstance(c, Column) for c in self.columns):
            raise SchemaError(f"Schema field 'columns' must be a list of Column objects. Found {_shown(self.columns)}.")
        cols = tuple(self.columns)
        object.__setattr__(self, "columns", cols)
        if not cols:
            raise SchemaError("A schema needs at least one column. Found an empty 'columns' list.")
        if not _is_sequence(self.excluded) or not all(isinstance(n, str) for n in self.excluded):
            raise SchemaError(f"Schema field 'excluded' must be a list of column names. Found {_shown(self.excluded)}.")
        object.__setattr__(self, "excluded", tuple(self.excluded))
        names = [c.name for c in cols]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SchemaError(f"Duplicate column names in schema: {dupes}.")
        if self.target is not None and not isinstance(self.target, str):
            raise SchemaError(f"Schema field 'target' must be a column name. Found {_shown(self.target)}.")
        if self.target is not None and self.target not in names:
            raise SchemaError(f"Target column '{self.target}' is not in the schema columns {names}.")
        if not isinstance(self.provenance, str) or self.provenance not in PROVENANCES:
            raise SchemaError(f"Schema field 'provenance' must be one of {', '.join(PROVENANCES)}. "
                              f"Found {_shown(self.provenance)}.")

    def reviewed(self) -> Schema:
        """This schema marked ``provenance="public"``: the caller vouches that every bound, category and special
        value in it is public knowledge (a documented range, a published code list), not a fact learnt from the
        private rows. Call it only after reviewing an inferred schema; a DP fit refuses an ``"inferred"`` one."""
        return replace(self, provenance="public")

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
    def validate(self, df: pd.DataFrame, *, allow_extra: bool = False, exact: bool = False) -> None:
        """Raise :class:`SchemaError` when ``df`` does not fit: missing/extra columns, unknown categories,
        NaN in a non-nullable column, infinite values. Values outside numeric bounds are allowed: models
        clip them to the public bounds (the documented handling), which is what DP requires. Columns holding
        values no model can represent (lists, dates, complex numbers, mixed types) raise InputError.

        Messages name the rule and the column only; the counts and offending values of the rows are added
        only with ``exact=True`` (non-private use: ``schema infer``, an epsilon = inf fit). A DP fit must not
        print private values or counts (DESIGN.md §1 rule 8)."""
        from dpsynth.data.frame import check_column  # frame imports this module

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
            check_column(series)
            isna = series.isna()
            if isna.any() and not col.nullable:
                found = f"{int(isna.sum())} missing values" if exact else "missing values"
                raise SchemaError(f"Column '{col.name}' has {found} but is not nullable in the schema; declare "
                                  "it \"nullable\": true.")
            values = series[~isna]
            if col.is_discrete:
                maps_unknown = col.other is not None or col.unknown_as_missing
                unknown = [] if maps_unknown else unknown_categories(values, col.categories)
                if unknown:
                    if exact:
                        shown = ", ".join(repr(u) for u in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
                        found = f"{len(unknown)} value(s) outside the declared categories: {shown}"
                    else:
                        found = "values outside the declared categories (not shown: private)"
                    raise SchemaError(f"Column '{col.name}' has {found}. Declare them, or an \"other\" category.")
            else:
                numeric = pd.to_numeric(values, errors="coerce")
                bad = numeric.isna()
                if bad.any():
                    example = f", e.g. {values[bad].iloc[0]!r}" if exact else ""
                    raise SchemaError(f"Column '{col.name}' is {col.kind} but holds non-numeric values{example}.")
                if np.isinf(numeric.to_numpy(dtype=float)).any():
                    raise SchemaError(f"Column '{col.name}' holds infinite values; replace them or mark them missing.")

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.provenance == "inferred":
            out["note"] = INFERRED_NOTE
        out["provenance"] = self.provenance
        if self.target is not None:
            out["target"] = self.target
        if self.excluded:
            out["excluded"] = list(self.excluded)
        out["columns"] = [c.to_dict() for c in self.columns]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Schema:
        """Build a schema from a parsed JSON/YAML mapping, checking every field (one SchemaError line if bad)."""
        if not isinstance(data, dict):
            raise SchemaError(f"A schema file must be a mapping with a 'columns' list. Found {_shown(data)}.")
        unknown = set(data) - {"columns", "target", "provenance", "excluded", "note"}
        if unknown:
            raise SchemaError(f"Unknown top-level schema keys: {sorted(map(str, unknown))}; allowed columns, "
                              "target, provenance, excluded, note.")
        columns = data.get("columns")
        if not isinstance(columns, list) or not columns:
            raise SchemaError(f"Schema field 'columns' must be a non-empty list of column mappings. "
                              f"Found {_shown(columns)}.")
        if not isinstance(data.get("note", ""), str):
            raise SchemaError(f"Schema field 'note' must be text. Found {_shown(data['note'])}.")
        excluded = data.get("excluded", [])
        if not isinstance(excluded, list):
            raise SchemaError(f"Schema field 'excluded' must be a list of column names. Found {_shown(excluded)}.")
        return cls(
            columns=tuple(Column.from_dict(c) for c in columns),
            target=data.get("target"),
            provenance=data.get("provenance", "public"),
            excluded=tuple(excluded),
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
            fmt = "YAML" if path.suffix.lower() in (".yaml", ".yml") else "JSON"
            # YAML parse errors span several lines (with a caret drawing): keep the error to one line
            raise SchemaError(f"Schema file {path} is not valid {fmt}: {' '.join(str(exc).split())}.") from exc
        return cls.from_dict(data)


_SCALARS = (str, bool, int, float, np.bool_, np.integer, np.floating)


def tidy_multiples(values, step: float):
    """Multiples of ``step`` rounded to the decimals ``step`` has (plus 2), so float products read as decimals."""
    decimals = max(0, -math.floor(math.log10(step))) + 2 if step < 1 else 0
    return np.round(values, decimals) if decimals else values


def _is_real(value: Any) -> bool:
    """A real number, not a bool (YAML's ``true`` must not become the bound 1.0)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _is_sequence(value: Any) -> bool:
    """An ordered list of values; a string is not one (``"abc"`` must not become ``a, b, c``)."""
    return isinstance(value, (list, tuple, np.ndarray, pd.Index))


def _shown(value: Any) -> str:
    """The value found, for a one-line error message: repr cut to 60 characters, plus its type."""
    text = repr(value)
    if "\n" in text:  # a numpy array's repr spans lines
        text = " ".join(text.split())
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def unknown_categories(values: pd.Series, categories: Sequence[Any]) -> list[Any]:
    """Distinct values of ``values`` (NaN excluded) not among ``categories`` (compared as-is, then as str)."""
    cats = set(categories)
    cats_str = {str(c) for c in categories}
    return [v for v in pd.unique(values.dropna()) if v not in cats and str(v) not in cats_str]


def _to_json_scalar(value: Any) -> Any:
    return value.item() if isinstance(value, (np.integer, np.floating, np.bool_)) else value
