"""Every public argument and hyper-parameter is type- and range-checked with one InputError line naming it, before
any work (issue 15). Property-based: wrong values of every kind, for every hyper-parameter of every model."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsynth.cli import main
from dpsynth.errors import InputError
from dpsynth.models import available_models, get_model_class

WRONG = st.one_of(st.text(max_size=5), st.none(), st.booleans(), st.lists(st.text(max_size=2), max_size=2),
                  st.sampled_from([math.nan, math.inf, -math.inf, -1, -0.5, 0, {}]))


def _params(name):
    cls = get_model_class(name)
    return {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values() if p.name != "self"}


def _is_acceptable(value, default, zero_ok):
    """What check_params lets through: the same type family, in range."""
    if default is None:  # an automatic size: None or an integer >= 1
        return value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 1)
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool) and (value >= 1 or (zero_ok and value == 0))
    if isinstance(default, float):
        return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                and (value > 0 or (zero_ok and value == 0)))
    if isinstance(default, str):
        return isinstance(value, str)
    return False  # tuples: none of WRONG is a non-empty list of positive integers


@settings(max_examples=150, deadline=None, derandomize=True)
@given(model=st.sampled_from(sorted(available_models())), data=st.data(), value=WRONG)
def test_a_wrong_hyper_parameter_is_one_input_error_naming_it(model, data, value):
    params = _params(model)
    name = data.draw(st.sampled_from(sorted(params)))
    instance = get_model_class(model)(**{name: value})
    if _is_acceptable(value, params[name], name in instance.zero_allowed):
        return  # e.g. any text for a text parameter: the model's own choice check decides (tested per model)
    with pytest.raises(InputError) as info:
        instance.check_params()
    assert name in str(info.value) and "\n" not in str(info.value)


def test_defaults_and_fast_params_pass_the_checks():
    for name in available_models():
        cls = get_model_class(name)
        cls().check_params()
        cls(**cls.fast_params).check_params()


def _frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.integers(0, 9, 2000), "b": rng.choice(["x", "y"], 2000)})


@pytest.mark.parametrize("kwargs, message", [
    ({"epsilon": True}, "not booleans"),
    ({"delta": True}, "not booleans"),
    ({"epsilon": "1"}, "epsilon"),
    ({"metadata_share": "0.1"}, "metadata_share must be a number"),
    ({"metadata_share": True}, "metadata_share must be a number"),
    ({"seed": 1.5}, "seed must be"),
    ({"seed": -1}, "seed must be"),
    ({"seed": "abc"}, "seed must be"),
    ({"dtypes": "inferred"}, "dtypes must be one of public, private"),
])
def test_bad_fit_arguments_are_refused_before_any_work(kwargs, message):
    budget = {"epsilon": 1.0, "delta": 1e-5, **kwargs}
    model = get_model_class("marginals")()
    with pytest.raises(InputError, match=message):
        model.fit(_frame(), **budget)
    assert not hasattr(model, "ledger_")  # nothing was spent


@pytest.mark.parametrize("argv, message", [
    (["--seed", "-1"], "seed must be"),
    (["--param", "reuse_metadata=3"], "hyper-parameter reuse_metadata must be true or false"),
    (["--param", "reuse_metadata=yes"], "hyper-parameter reuse_metadata must be true or false"),
    (["--metadata-share", "0"], "metadata_share"),
])
def test_bad_cli_arguments_are_one_line(tmp_path, capsys, argv, message):
    data = tmp_path / "d.csv"
    _frame().to_csv(data, index=False)
    out = tmp_path / "m.dpsynth"
    assert main(["fit", str(data), "--epsilon", "1", "--out", str(out), "--quiet", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err and not out.exists()
