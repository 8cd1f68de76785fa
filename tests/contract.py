"""The contract every registered Synthesizer passes (run by tests/models/test_contract.py for each model).

Import :func:`check_synthesizer` from a model's own tests to run it with other data or parameters.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsynth.data.schema import Schema
from dpsynth.errors import InputError, NotFittedError
from dpsynth.models import load_model
from dpsynth.models.base import Synthesizer, read_model_file


def check_synthesizer(
    model_cls: type[Synthesizer],
    data: pd.DataFrame,
    schema: Schema | None,
    tmp_path: Path,
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    n: int = 300,
    params: dict | None = None,
) -> Synthesizer:
    params = dict(model_cls.fast_params if params is None else params)
    model = model_cls(**params)
    got = model.get_params()
    assert set(params) <= set(got)
    for key, value in params.items():  # values, not only keys (lists may come back as tuples)
        assert got[key] == value or (isinstance(value, list) and list(got[key]) == value), key

    with pytest.raises(NotFittedError):
        model.sample(5)
    with pytest.raises(InputError):
        model_cls(**params).fit(data, epsilon=-1.0, delta=delta, schema=schema)
    with pytest.raises(InputError):
        model_cls(**params).fit(data, epsilon=epsilon, delta=1.5, schema=schema)

    assert model.fit(data, epsilon=epsilon, delta=delta, schema=schema, seed=0) is model
    ledger = model.ledger_
    assert ledger.entries, "fit recorded no privacy event"
    assert 0 < ledger.epsilon() <= epsilon + 1e-9, f"ledger epsilon {ledger.epsilon()} exceeds target {epsilon}"
    assert "metadata" in ledger.phases()

    synth = model.sample(n, seed=7)
    _check_frame(synth, model.schema_, n)
    assert model.sample(0).shape == (0, len(model.schema_))
    pd.testing.assert_frame_equal(synth, model.sample(n, seed=7))

    path = tmp_path / f"{model_cls.name}.dpsynth"
    model.save(path)
    tensors, header = read_model_file(path)
    assert header["model"] == model_cls.name and header["ledger"]["epsilon"] == pytest.approx(ledger.epsilon())
    loaded = load_model(path)
    assert type(loaded) is model_cls
    reloaded = loaded.get_params()
    for key, value in model.get_params().items():  # every hyper-parameter survives the file, by value
        assert reloaded[key] == value or list(reloaded[key]) == list(value), key
    pd.testing.assert_frame_equal(loaded.sample(n, seed=7), synth)
    assert loaded.ledger_.epsilon() == pytest.approx(ledger.epsilon())
    assert not any(p.suffix == ".tmp" for p in tmp_path.iterdir()), "a temp file was left behind"
    return model


def check_non_private(model_cls: type[Synthesizer], data: pd.DataFrame, schema: Schema | None, *, n: int = 200,
                      params: dict | None = None) -> Synthesizer:
    model = model_cls(**dict(model_cls.fast_params if params is None else params))
    model.fit(data, epsilon=math.inf, delta=1e-5, schema=schema, seed=0)
    assert math.isinf(model.ledger_.epsilon())
    _check_frame(model.sample(n, seed=1), model.schema_, n)
    return model


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


def _check_frame(synth: pd.DataFrame, schema: Schema, n: int) -> None:
    assert isinstance(synth, pd.DataFrame)
    assert list(synth.columns) == schema.names
    assert len(synth) == n
    for col in schema.columns:
        values = synth[col.name]
        if not col.nullable:
            assert not values.isna().any(), f"{col.name}: NaN in a non-nullable column"
        present = values.dropna()
        if col.is_discrete:
            allowed = set(col.categories)
            assert set(present.unique()) <= allowed, f"{col.name}: values outside the categories"
        else:
            arr = present.to_numpy(dtype=float)
            assert np.all(arr >= col.lower - 1e-9) and np.all(arr <= col.upper + 1e-9), f"{col.name}: out of bounds"
            if col.rounds:
                assert np.all(np.mod(arr, 1) == 0), f"{col.name}: integer column with fractions"
        expected = expected_dtype(col, bool(values.isna().any()))
        assert str(values.dtype) == expected, f"{col.name}: dtype {values.dtype} != {expected} (schema {col.dtype})"
        if expected == "category":
            assert list(values.cat.categories) == list(col.categories), f"{col.name}: categories reordered or lost"
