"""A crafted risk JSON (issue 15) never reaches the HTML report raw: every field is type-checked on load (one
InputError line naming the field) and every interpolated field is escaped."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpsynth.attacks.base import Estimate, Result
from dpsynth.attacks.risk import RiskResult
from dpsynth.errors import InputError
from dpsynth.evaluation.risk_section import load_risk, risk_section

SCRIPT = "<script>alert(1)</script>"


def _valid() -> dict:
    result = Result(attack="closest_distance_hamming", kind="membership", value=0.12, ci=(0.02, 0.22),
                    baseline=0.5, baseline_name="chance accuracy", n_targets=200,
                    metrics={"accuracy": Estimate(0.56, (0.51, 0.61)), "auc": Estimate(0.58, None)})
    rr = RiskResult([result], {"density": "needs control rows"}, {"n_train": 400, "n_synthetic": 400},
                    {"membership": 1.5})
    return json.loads(rr.to_json())


# every place a writer puts a value, as a path into the JSON
PATHS = [
    ("results", 0, "value"), ("results", 0, "baseline"), ("results", 0, "confidence"), ("results", 0, "n_targets"),
    ("results", 0, "ci", 0), ("results", 0, "ci"), ("results", 0, "kind"), ("results", 0, "attack"),
    ("results", 0, "notes"), ("results", 0, "baseline_name"), ("results", 0, "metrics", "accuracy", "value"),
    ("results", 0, "metrics", "accuracy", "ci", 1), ("results", 0, "metrics", "auc"), ("results", 0, "metrics"),
    ("results", 0), ("results",), ("settings", "n_train"), ("settings", "n_synthetic"), ("settings",),
    ("skipped", "density"), ("timings", "membership"),
]


def _put(data: dict, path: tuple, value) -> dict:
    data = copy.deepcopy(data)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


def _report(tmp_path, data) -> str:
    path = tmp_path / "risk.json"
    path.write_text(json.dumps(data))
    return risk_section(path)[1]


def test_a_valid_risk_json_round_trips(tmp_path):
    html = _report(tmp_path, _valid())
    assert "closest_distance_hamming" in html and "0.120" in html and "400 training rows" in html


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS),
       value=st.one_of(st.just(SCRIPT), st.just([SCRIPT]), st.just({"x": SCRIPT}), st.booleans(), st.none(),
                       st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8)))
def test_crafted_fields_are_refused_or_escaped(tmp_path, path, value):
    data = _put(_valid(), path, value)
    try:
        html = _report(tmp_path, data)
    except InputError as exc:
        assert "\n" not in str(exc) and "risk JSON" in str(exc)
        return
    assert "<script" not in html.lower()


@pytest.mark.parametrize("path,name", [
    (("results", 0, "value"), r"results\[0\]\.value"), (("results", 0, "n_targets"), "n_targets"),
    (("results", 0, "ci", 0), r"results\[0\]\.ci"), (("settings", "n_train"), "settings.n_train"),
    (("results", 0, "metrics", "accuracy", "ci", 1), "metrics.accuracy.ci"), (("timings", "membership"), "timings"),
])
def test_numeric_fields_holding_markup_are_refused_by_name(tmp_path, path, name):
    with pytest.raises(InputError, match=name):
        load_risk(_write(tmp_path, _put(_valid(), path, SCRIPT)))


def _write(tmp_path, data):
    path = tmp_path / "risk.json"
    path.write_text(json.dumps(data))
    return path
