"""The one-call API: identical data scores perfectly, undefined values carry reasons, the table is tidy."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpsynth.data.schema import Column, Schema
from dpsynth.errors import InputError
from dpsynth.evaluate import GROUPS, EvaluationResult, Limits, evaluate
from dpsynth.evaluate.result import COLUMNS

FAST = dict(seeds=(0, 1), n_jobs=1, limits=Limits(per_column_rows=300, discriminator_rows=300))

# metric prefixes whose perfect value is 0, and those whose perfect value is 100
ZERO = ("similarity.", "marginal.", "dimwise.probability", "diversity.", "pca.", "bhattacharyya",
        "correlation.", "ml_efficacy.accuracy.diff", "ml_efficacy.f1.diff", "ml_efficacy.auc.diff",
        "ml_efficacy.ap.diff")
HUNDRED = ("quality.",)


@pytest.fixture(scope="module")
def identical(real, real_test):
    return evaluate(real, real.copy(), real_test=real_test, target="label", **FAST)


def test_identical_data_gets_the_perfect_score_for_every_metric(identical):
    t = identical.table
    assert set(t.metric.str.split(".").str[0]) >= {"similarity", "marginal", "quality", "dimwise", "ml_efficacy",
                                                   "diversity", "pca", "bhattacharyya", "correlation"}
    checked = 0
    for r in t.itertuples():
        if math.isnan(r.value):  # undefined (e.g. a column no model can predict even from real rows)
            assert r.note, (r.metric, r.subject)
            continue
        if r.metric.startswith(ZERO):
            assert r.value == pytest.approx(0.0, abs=1e-9), (r.metric, r.subject, r.value)
            checked += 1
        elif r.metric.startswith(HUNDRED):
            assert r.value == pytest.approx(100.0, abs=1e-9), (r.metric, r.subject, r.value)
            checked += 1
    assert checked > 50
    # train-on-synthetic equals train-on-real, column by column and model by model
    for prefix in ("dimwise.prediction.", "ml_efficacy."):
        sub = t[t.metric.str.startswith(prefix)]
        real = sub[sub.metric.str.endswith(".real")].set_index(["metric", "subject"]).value
        syn = sub[sub.metric.str.endswith(".synthetic")].set_index(["metric", "subject"]).value
        syn.index = syn.index.set_levels(syn.index.levels[0].str.replace(".synthetic", ".real"), level=0)
        assert len(real) > 0
        pd.testing.assert_series_equal(real.sort_index(), syn.sort_index(), check_names=False)


def test_table_is_tidy_and_every_nan_has_a_reason(identical):
    t = identical.table
    assert tuple(t.columns) == COLUMNS
    nan = t[t.value.isna()]
    assert (nan.note.str.len() > 0).all(), nan
    assert identical.value("quality.resemblance") == pytest.approx(100.0)
    assert set(identical.info["seconds"]) == set(GROUPS)
    rf = t[(t.metric == "ml_efficacy.auc.real") & (t.subject == "rf")].iloc[0]
    assert rf.n_seeds == 2 and np.isfinite(rf.spread)


def test_json_round_trip_is_strict(identical):
    text = identical.to_json()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    back = EvaluationResult.from_json(text)
    pd.testing.assert_frame_equal(back.table, identical.table)
    assert set(back.figures) == set(identical.figures)


def test_one_way_tvd_of_a_shuffled_copy_is_zero(real):
    shuffled = real.sample(frac=1.0, random_state=3).reset_index(drop=True)
    res = evaluate(real, shuffled, metrics=["unsupervised"], **FAST)
    tvd1 = res.metrics("marginal.tvd1")
    assert (tvd1.value.abs() < 1e-12).all()


def test_one_class_synthetic_target_is_undefined_with_reason(real, real_test):
    synth = real.copy()
    synth["label"] = "no"
    res = evaluate(real, synth, real_test=real_test, target="label", metrics=["ml_efficacy"], **FAST)
    auc = res.table[(res.table.metric == "ml_efficacy.auc.synthetic") & (res.table.subject == "xgb")].iloc[0]
    assert math.isnan(auc.value) and "one class" in auc.note
    assert res.table[res.table.metric == "ml_efficacy.auc.real"].value.notna().all()


def test_constant_test_target_makes_r2_undefined(real):
    test = real.copy()
    test["age"] = 40
    res = evaluate(real, real, real_test=test, target="age", metrics=["ml_efficacy"], seeds=(0,), n_jobs=1)
    r2 = res.table[res.table.metric == "ml_efficacy.r2.synthetic"]
    assert r2.value.isna().all() and r2.note.str.contains("constant").all()
    assert res.table[res.table.metric == "ml_efficacy.mae.real"].value.notna().all()


def test_no_target_reports_ml_efficacy_as_undefined(real):
    res = evaluate(real, real, metrics=["ml_efficacy"], seeds=(0,))
    assert math.isnan(res.value("ml_efficacy")) and "target" in res.table.note.iloc[0]


def test_missing_values_and_schema_kinds(real):
    messy = real.copy()
    messy.loc[::7, "hours"] = np.nan
    messy.loc[::5, "color"] = None
    schema = Schema(columns=(Column("age", "integer", lower=0, upper=120),
                             Column("hours", "continuous", lower=0, upper=100, nullable=True),
                             Column("color", "categorical", categories=("red", "green", "blue"), nullable=True),
                             Column("kids", "integer", lower=0, upper=10),
                             Column("label", "binary", categories=("no", "yes"))), target="label")
    res = evaluate(messy, messy.iloc[::-1], schema=schema, **FAST)
    assert res.info["kinds"]["kids"] == "continuous" and res.info["target"] == "label"
    assert (res.table[res.table.value.isna()].note.str.len() > 0).all()
    assert res.value("marginal.tvd1") == pytest.approx(0.0, abs=1e-12)


def test_worse_synthetic_scores_worse(real, real_test):
    rng = np.random.default_rng(0)
    bad = pd.DataFrame({c: real[c].to_numpy()[rng.permutation(len(real))] for c in real.columns})
    good = evaluate(real, real, real_test=real_test, target="label", metrics=["quality", "similarity"], **FAST)
    worse = evaluate(real, bad, real_test=real_test, target="label", metrics=["quality", "similarity"], **FAST)
    assert worse.value("similarity.association_diff") > good.value("similarity.association_diff")
    assert worse.value("quality.discriminability") < good.value("quality.discriminability")


@pytest.mark.parametrize("kwargs, match", [
    (dict(metrics=["nope"]), "metrics must be"),
    (dict(target="missing"), "target must be"),
    (dict(seeds=()), "seeds must"),
])
def test_bad_arguments_raise_input_error(real, kwargs, match):
    with pytest.raises(InputError, match=match):
        evaluate(real, real, **kwargs)


def test_bad_frames_raise_input_error(real):
    with pytest.raises(InputError, match="Missing"):
        evaluate(real, real.drop(columns=["age"]))
    with pytest.raises(InputError, match="at least one row"):
        evaluate(real, real.iloc[:0])
    with pytest.raises(InputError, match="Limits"):
        Limits(per_column_rows=0)
