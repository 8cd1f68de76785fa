"""The contract every dpsynth model passes, shipped with the package (as scikit-learn ships ``check_estimator``).

``check_synthesizer(DPTLDM)`` (or an instance, whose hyper-parameters are then used) fits the model on a slice of
the bundled Adult table, or on ``data`` with ``schema``, and checks, raising :class:`AssertionError` with what broke:

- the estimator contract: ``get_params`` returns the constructor's arguments by value, ``set_params`` round-trips
  and refuses unknown names and invalid values (leaving the model unchanged), ``sklearn.base.clone`` gives an
  unfitted copy with the same hyper-parameters; ``sample`` before ``fit`` raises :class:`NotFittedError`;
- budgets: bad epsilon or delta and a budget given twice are refused before anything is spent; ``fit`` returns
  the model; the ledger holds events of the model's declared ``phases`` only, a metadata phase, and a composed
  epsilon within the target; without a schema the metadata phase stays within ``metadata_share`` of it;
  ``budget_`` has the one shape of :func:`dpsynth.models.phase.budget_summary` and agrees with the ledger;
- no mutation of the input frame (values, dtypes, columns, index);
- samples: the schema's columns, dtypes, bounds and categories; ``sample(0)``; the same seed gives the same rows
  and another seed other rows; a refit of the same instance with the same fit seed gives the same model;
- persistence: ``save``/``load`` keep every hyper-parameter, the ledger and the samples, and leave no temp file;
- the non-private mode (``epsilon=inf``) fits and samples with an infinite ledger epsilon; a non-private
  baseline (``supports_dp = False``) refuses a finite epsilon and runs the whole contract at ``epsilon=inf``.

The checks cost three fits (two DP, one non-private) with the model's ``fast_params``: seconds for the built-ins.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpsynth.data.schema import Schema
from dpsynth.errors import InputError, NotFittedError
from dpsynth.models.base import Synthesizer, read_model_file

__all__ = ["check_synthesizer", "check_non_private", "check_sample_frame", "expected_dtype"]

#: rows of the bundled Adult train split the checks fit on when no data is given
DEFAULT_ROWS = 2000


def check_synthesizer(
    model: type[Synthesizer] | Synthesizer,
    data: pd.DataFrame | None = None,
    schema: Schema | None = None,
    tmp_dir: str | Path | None = None,
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    n: int = 300,
    params: dict[str, Any] | None = None,
    metadata_share: float = 0.1,
    non_private: bool = True,
) -> Synthesizer:
    """Run the contract (module docstring) on ``model``; return the fitted model. ``data=None`` uses the bundled
    Adult slice with its public schema; pass ``schema=None`` with your own data to check DP discovery."""
    cls, params = _resolve(model, params)
    if data is None:
        data, schema = _adult_slice(schema)
    if not cls.supports_dp:  # a non-private baseline: its contract runs at epsilon = inf, and a finite one is refused
        _raises(InputError, lambda: cls(**params).fit(data, epsilon=1.0, delta=delta, schema=schema),
                "a finite epsilon for a non-private baseline")
        epsilon, non_private = math.inf, False
    if tmp_dir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return check_synthesizer(cls, data, schema, tmp, epsilon=epsilon, delta=delta, n=n, params=params,
                                     metadata_share=metadata_share, non_private=non_private)
    tmp_dir = Path(tmp_dir)
    before = data.copy(deep=True)  # before any fit, refused ones included

    fresh = cls(**params)
    _check_estimator_api(fresh, params)
    _raises(NotFittedError, lambda: cls(**params).sample(5), "sample() before fit()")
    _check_budget_refusals(cls, params, data, schema, delta)

    fitted = fresh.fit(data, epsilon=epsilon, delta=delta, schema=schema, seed=0, metadata_share=metadata_share)
    _expect(fitted is fresh, "fit() must return the model itself")
    _expect(data.equals(before) and data.dtypes.equals(before.dtypes) and data.index.equals(before.index),
            "fit() changed the caller's frame")
    _check_ledger(fitted, epsilon, metadata_share if schema is None else None)
    _check_budget(fitted)

    synth = fitted.sample(n, seed=7)
    check_sample_frame(synth, fitted.schema_, n)
    _expect(fitted.sample(0).shape == (0, len(fitted.schema_)), "sample(0) must be an empty frame with every column")
    _expect(synth.equals(fitted.sample(n, seed=7)), "the same sample seed gave different rows")
    _expect(not synth.equals(fitted.sample(n, seed=8)), "two sample seeds gave the same rows")

    from sklearn.base import clone

    copy = clone(fitted)
    _expect(type(copy) is cls and copy is not fitted, "clone() must build a new model of the same class")
    _raises(NotFittedError, lambda: copy.sample(5), "a clone of a fitted model must be unfitted")
    _expect(_same_params(copy.get_params(), fitted.get_params()), "clone() changed a hyper-parameter")

    _check_file(fitted, cls, synth, n, tmp_dir)

    # refit of the same instance, same fit seed: the same model (reproducibility; no state leaks between fits)
    refit = fitted.fit(data, epsilon=epsilon, delta=delta, schema=schema, seed=0, metadata_share=metadata_share)
    _expect(refit.sample(n, seed=7).equals(synth), "a refit with the same seed gave a different model")
    _expect(math.isclose(refit.ledger_.epsilon(), fitted.ledger_.epsilon()), "a refit changed the ledger")
    if non_private:
        check_non_private(cls, data, schema, params=params)
    return fitted


def check_non_private(model: type[Synthesizer] | Synthesizer, data: pd.DataFrame | None = None,
                      schema: Schema | None = None, *, n: int = 200,
                      params: dict[str, Any] | None = None) -> Synthesizer:
    """The explicit non-private mode: fits at ``epsilon=inf``, ledger epsilon inf, samples well-formed."""
    cls, params = _resolve(model, params)
    if data is None:
        data, schema = _adult_slice(schema)
    fitted = cls(**params).fit(data, epsilon=math.inf, delta=1e-5, schema=schema, seed=0)
    _expect(math.isinf(fitted.ledger_.epsilon()), "a non-private fit must have ledger epsilon inf")
    check_sample_frame(fitted.sample(n, seed=1), fitted.schema_, n)
    return fitted


# ---------------------------------------------------------------------------------------------- pieces
def _resolve(model, params) -> tuple[type[Synthesizer], dict[str, Any]]:
    if isinstance(model, Synthesizer):
        return type(model), dict(model.get_params() if params is None else params)
    if isinstance(model, type) and issubclass(model, Synthesizer):
        return model, dict(model.fast_params if params is None else params)
    raise InputError(f"check_synthesizer needs a Synthesizer class or instance. Found {model!r}.")


def _adult_slice(schema: Schema | None) -> tuple[pd.DataFrame, Schema | None]:
    from dpsynth import datasets

    adult = datasets.load("adult")
    return adult.train.sample(DEFAULT_ROWS, random_state=0).reset_index(drop=True), schema or adult.schema


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _raises(error: type[Exception], call, what: str) -> None:
    try:
        call()
    except error:
        return
    except Exception as exc:  # noqa: BLE001 - the wrong error is the finding
        raise AssertionError(f"{what}: expected {error.__name__}, got {type(exc).__name__}: {exc}") from exc
    raise AssertionError(f"{what}: expected {error.__name__}, nothing was raised")


def _same_params(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def norm(v):
        return list(v) if isinstance(v, (list, tuple)) else v

    return a.keys() == b.keys() and all(norm(a[k]) == norm(b[k]) for k in a)


def _check_estimator_api(model: Synthesizer, params: dict[str, Any]) -> None:
    got = model.get_params()
    _expect(set(params) <= set(got), f"get_params() lacks {sorted(set(params) - set(got))}")
    _expect(_same_params({k: got[k] for k in params}, params), "get_params() does not return the given values")
    _expect(model.get_params(deep=True) == got, "get_params(deep=True) differs from get_params()")
    _expect(_same_params(type(model)(**got).get_params(), got),
            "the constructor must store its arguments unchanged (get_params of a model built from get_params() "
            "differs; sklearn.base.clone would fail)")
    _expect(model.set_params(**got) is model and _same_params(model.get_params(), got),
            "set_params(**get_params()) must return the model unchanged")
    _raises(InputError, lambda: model.set_params(no_such_hyper_parameter=1), "set_params(unknown name)")
    name, bad = _invalid_value(got)
    if name is not None:
        _raises(InputError, lambda: model.set_params(**{name: bad}), f"set_params({name}={bad!r})")
        _expect(_same_params(model.get_params(), got), "a refused set_params() changed the model")


def _invalid_value(params: dict[str, Any]) -> tuple[str | None, Any]:
    """A value every model must refuse for some hyper-parameter: text where a number or a flag belongs."""
    for name, value in params.items():
        if isinstance(value, (bool, int, float)) and not isinstance(value, str):
            return name, "not a number"
    return None, None


def _check_budget_refusals(cls, params, data, schema, delta) -> None:
    from dpsynth.privacy.budget import PrivacyBudget

    _raises(InputError, lambda: cls(**params).fit(data, epsilon=-1.0, delta=delta, schema=schema), "epsilon = -1")
    _raises(InputError, lambda: cls(**params).fit(data, epsilon=1.0, delta=1.5, schema=schema), "delta = 1.5")
    _raises(InputError, lambda: cls(**params).fit(data, PrivacyBudget(1.0, delta), epsilon=1.0, schema=schema),
            "a PrivacyBudget and epsilon= together")


def _check_ledger(model: Synthesizer, epsilon: float, metadata_share: float | None) -> None:
    ledger = model.ledger_
    _expect(bool(ledger.entries), "fit() recorded no privacy event")
    _expect(0 < ledger.epsilon() <= epsilon + 1e-9, f"ledger epsilon {ledger.epsilon()} exceeds the target {epsilon}")
    phases = ledger.phases()
    _expect("metadata" in phases, "no metadata phase in the ledger")
    unknown = set(phases) - set(model.phases)
    _expect(not unknown, f"ledger phases {sorted(unknown)} are not among the model's declared phases {model.phases}")
    if metadata_share is not None:  # DP discovery: the metadata phase alone stays within its share
        _expect(phases["metadata"] <= metadata_share * epsilon * (1 + 1e-6),
                f"metadata phase epsilon {phases['metadata']:.4f} exceeds metadata_share * epsilon "
                f"= {metadata_share * epsilon:.4f}")


def _check_budget(model: Synthesizer) -> None:
    """``budget_`` has the one shape of :func:`dpsynth.models.phase.budget_summary` and agrees with the ledger."""
    budget = getattr(model, "budget_", None)
    keys = {"target_epsilon", "delta", "n_rows_dp", "metadata_epsilon", "epsilon_total", "phases"}
    _expect(isinstance(budget, dict) and keys <= set(budget), f"budget_ must be a dict with {sorted(keys)}")
    _expect(math.isclose(float(budget["epsilon_total"]), model.ledger_.epsilon(), rel_tol=1e-9),
            "budget_['epsilon_total'] differs from the ledger's epsilon")
    _expect(max(1, round(float(budget["n_rows_dp"]))) == model.row_count_,  # `dpsynth info` prints it as such
            "budget_['n_rows_dp'] is not the row count the model publishes (row_count_)")
    phases = budget["phases"]
    _expect(bool(phases) and set(phases) <= set(model.phases) - {"metadata"},
            f"budget_ phases {sorted(phases)} must be the model's declared training phases {model.phases}")
    for name, entry in phases.items():
        _expect(float(entry["epsilon_after"]) <= model.ledger_.target_epsilon * (1 + 1e-9),
                f"budget_ phase {name} ends above the target")


def _check_file(model: Synthesizer, cls: type[Synthesizer], synth: pd.DataFrame, n: int, tmp_dir: Path) -> None:
    from dpsynth.models import load_model

    path = tmp_dir / f"{cls.name}.dpsynth"
    model.save(path)
    _, header = read_model_file(path)
    _expect(header["model"] == cls.name, "the model file names another model")
    _expect(math.isclose(float(header["ledger"]["epsilon"]), model.ledger_.epsilon()), "the file's ledger differs")
    loaded = load_model(path)
    _expect(type(loaded) is cls, "load_model() returned another class")
    _expect(_same_params(loaded.get_params(), model.get_params()), "a hyper-parameter did not survive the file")
    _expect(loaded.sample(n, seed=7).equals(synth), "the loaded model samples other rows for the same seed")
    _expect(math.isclose(loaded.ledger_.epsilon(), model.ledger_.epsilon()), "the loaded ledger differs")
    _expect(loaded.budget_ == model.budget_, "budget_ did not survive the file")
    _expect(not any(p.suffix == ".tmp" for p in tmp_dir.iterdir()), "a temp file was left behind")


def expected_dtype(col, has_nan: bool) -> str:
    """The dtype ``sample`` must give a column (dpsynth.data.frame.restore_dtypes' documented rule): the
    schema's ``dtype``, except that NaN promotes int64 to Int64 and bool to boolean; a numeric column that is
    not rounded is float64; without a declared dtype, the natural one for the kind and categories."""
    if col.is_numeric:
        if not col.rounds:
            return "float64"
        if col.dtype in (None, "int64", "Int64"):
            return "Int64" if has_nan or col.dtype == "Int64" else "int64"
        return "float64"
    cats = col.categories
    natural_bool = col.dtype is None and all(isinstance(c, (bool, np.bool_)) for c in cats)
    natural_int = col.dtype is None and all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in cats)
    if col.dtype in ("bool", "boolean") or natural_bool:
        return "boolean" if has_nan or col.dtype == "boolean" else "bool"
    if col.dtype in ("int64", "Int64") or natural_int:
        return "Int64" if has_nan or col.dtype == "Int64" else "int64"
    return col.dtype or "object"


def check_sample_frame(synth: pd.DataFrame, schema: Schema, n: int) -> None:
    """``synth`` has ``n`` rows, the schema's columns in order, their dtypes, bounds and categories."""
    _expect(isinstance(synth, pd.DataFrame), f"sample() must return a DataFrame. Found {type(synth).__name__}")
    _expect(list(synth.columns) == schema.names, "sample() columns differ from the schema's")
    _expect(len(synth) == n, f"sample({n}) returned {len(synth)} rows")
    for col in schema.columns:
        values = synth[col.name]
        _expect(col.nullable or not values.isna().any(), f"{col.name}: NaN in a non-nullable column")
        present = values.dropna()
        if col.is_discrete:
            _expect(set(present.unique()) <= set(col.categories), f"{col.name}: values outside the categories")
        else:
            arr = present.to_numpy(dtype=float)
            _expect(bool(np.all(arr >= col.lower - 1e-9) and np.all(arr <= col.upper + 1e-9)),
                    f"{col.name}: out of bounds")
            _expect(not col.rounds or bool(np.all(np.mod(arr, 1) == 0)), f"{col.name}: integer column with fractions")
            if col.step is not None:  # multiples of the declared step (special values apart)
                body = arr[~np.isin(arr, col.special_values)] / col.step
                _expect(bool(np.allclose(body, np.round(body), rtol=0, atol=1e-6)),
                        f"{col.name}: values off the multiples of step {col.step:g}")
        expected = expected_dtype(col, bool(values.isna().any()))
        _expect(str(values.dtype) == expected, f"{col.name}: dtype {values.dtype} != {expected} (schema {col.dtype})")
        if expected == "category":
            _expect(list(values.cat.categories) == list(col.categories), f"{col.name}: categories reordered or lost")
