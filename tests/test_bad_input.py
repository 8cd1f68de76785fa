"""Bad input through the public API (issue 2, "Bad input"): each case a clear error or a documented handling.

The CLI side of the same cases (exit code 2, one line) is in tests/test_cli.py. Frames are tiny: every test
here runs in well under a second once torch is imported, except the one DP fit (a few seconds under load).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsynth.data.schema import Column, Schema
from dpsynth.errors import InputError, SchemaError

BAD_BUDGETS = [
    (math.nan, 1e-5, "epsilon must be > 0"),
    (-math.inf, 1e-5, "epsilon must be > 0"),
    (0.0, 1e-5, "epsilon must be > 0"),
    (-1.0, 1e-5, "epsilon must be > 0"),
    (1.0, 0.0, r"delta must be in \(0, 1\)"),
    (1.0, -1e-5, r"delta must be in \(0, 1\)"),
    (1.0, 1.0, r"delta must be in \(0, 1\)"),
    (1.0, math.nan, r"delta must be in \(0, 1\)"),
    (1.0, math.inf, r"delta must be in \(0, 1\)"),
]


def _tiny() -> pd.DataFrame:
    return pd.DataFrame({"c": ["a", "b"] * 20, "x": np.arange(40) % 5})


def _schema(**extra) -> Schema:
    return Schema((Column("c", "categorical", categories=("a", "b", "never_seen")),
                   Column("x", "integer", lower=0, upper=4)), **extra)


@pytest.mark.parametrize("epsilon, delta, message", BAD_BUDGETS)
def test_bad_privacy_budget_is_refused_by_fit(epsilon, delta, message):
    from dpsynth.models import get_model_class

    with pytest.raises(InputError, match=message) as info:
        get_model_class("marginals")().fit(_tiny(), epsilon=epsilon, delta=delta, schema=_schema())
    assert "\n" not in str(info.value)


def test_delta_above_one_over_n_is_warned_from_the_dp_row_count():
    from dpsynth.models import get_model_class

    # 40 rows, delta 0.1 > 1/40: warned after the metadata phase, from the DP count (never from len(data), whose
    # 1/n = 0.025 the message would then publish)
    with pytest.warns(UserWarning, match=r"delta=0\.1 is larger than 1/n = .*\(n: the DP row count\)") as record:
        model = get_model_class("marginals")().fit(_tiny(), epsilon=1.0, delta=0.1, schema=_schema(), seed=3)
    message = next(str(w.message) for w in record if "1/n" in str(w.message))
    assert f"{1 / model.metadata_.n_rows:.3g}" in message and "0.025 " not in message


def test_value_outside_the_declared_categories_is_refused_at_fit():
    from dpsynth.models import get_model_class

    data = _tiny().assign(c=["a", "b", "zz", "a"] * 10)
    with pytest.raises(SchemaError, match="outside the declared categories") as info:
        get_model_class("marginals")().fit(data, epsilon=1.0, delta=1e-5, schema=_schema())
    assert "zz" not in str(info.value)  # a DP fit never quotes a private value
    with pytest.raises(SchemaError, match="1 value\\(s\\) outside the declared categories: 'zz'"):
        get_model_class("marginals")().fit(data, epsilon=math.inf, delta=1e-5, schema=_schema())


def test_categories_unseen_in_training_are_sampled_only_from_the_declared_list():
    """A declared category absent from the private rows may be sampled (DP noise gives it mass: hiding it would
    reveal that no row holds it); nothing outside the declared list ever is, and dtypes are kept."""
    from dpsynth.models import get_model_class

    model = get_model_class("marginals")().fit(_tiny(), epsilon=0.5, delta=1e-5, schema=_schema(), seed=0)
    synth = model.sample(2000, seed=1)
    assert set(synth["c"]) <= {"a", "b", "never_seen"} and set(synth["x"]) <= set(range(5))
    assert str(synth["x"].dtype) == "int64"


def test_unseen_categories_at_evaluate_time_count_as_a_mismatch():
    """dpsynth.evaluate's documented rule: a categorical histogram has one bin per category seen in either
    table, so a synthetic category the real data never had is all mismatch (JSD 1), not an error or a drop."""
    from dpsynth.evaluation import evaluate

    real = pd.DataFrame({"c": ["a", "b"] * 30, "x": np.arange(60) % 7})
    unseen = real.assign(c=["zz"] * 60)
    same = evaluate(real, real, metrics=["similarity"], seeds=(0,)).table
    other = evaluate(real, unseen, metrics=["similarity"], seeds=(0,)).table

    def jsd(table):
        return float(table[(table["metric"] == "similarity.jsd") & (table["subject"] == "c")]["value"].iloc[0])

    assert jsd(same) == pytest.approx(0.0) and jsd(other) == pytest.approx(1.0)


@pytest.mark.parametrize("frame, message", [
    (pd.DataFrame({"c": []}), "no rows"),
    (pd.DataFrame({"c": [np.nan] * 4}), "No usable column"),
    (pd.DataFrame({"c": [1.0, np.inf], "x": [1, 2]}), "infinite values"),
    (pd.DataFrame({"c": pd.Series([True, 1] * 3, dtype=object), "x": range(6)}), "mixes value types"),
    (pd.DataFrame({"c": pd.to_datetime(["2024-01-01"] * 6), "x": range(6)}), "days since an epoch"),
])
def test_bad_frames_are_refused_by_schema_inference(frame, message):
    from dpsynth.data.inference import infer_schema

    with pytest.raises(InputError, match=message):
        infer_schema(frame)
