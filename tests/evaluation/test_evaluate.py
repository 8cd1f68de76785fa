"""The one-call API: identical data scores perfectly, undefined values carry reasons, the table is tidy."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpsynth.data.schema import Column, Schema
from dpsynth.errors import InputError
from dpsynth.evaluation import GROUPS, EvaluationResult, Limits, evaluate
from dpsynth.evaluation.result import COLUMNS, aggregate

FAST = dict(seeds=(0, 1), n_jobs=1, limits=Limits(per_column_rows=300, discriminator_rows=300))

# metric prefixes whose perfect value is 0, and those whose perfect value is 100
ZERO = ("similarity.", "marginal.", "dimwise.probability", "diversity.", "pca.", "bhattacharyya",
        "correlation.", "ml_efficacy.accuracy.diff", "ml_efficacy.f1.diff", "ml_efficacy.auc.diff",
        "ml_efficacy.ap.diff")
HUNDRED = ("quality.",)


@pytest.fixture(scope="module")
def identical(real, real_test):
    """The real table in another row order, scored with caps (300) below its size (400 rows)."""
    return evaluate(real, real.sample(frac=1.0, random_state=5), real_test=real_test, target="label", **FAST)


def test_identical_data_gets_the_perfect_score_for_every_metric(identical):
    t = identical.table
    assert set(t.metric.str.split(".").str[0]) >= {"similarity", "marginal", "quality", "dimwise", "ml_efficacy",
                                                   "diversity", "pca", "bhattacharyya", "correlation"}
    checked = 0
    for r in t.itertuples():
        if math.isnan(r.value):  # undefined (e.g. a column no model can predict even from real rows)
            assert r.note, (r.metric, r.subject)
            continue
        if r.metric == "quality.discriminability.real_vs_real":  # two halves of real: a noise floor, not 100
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
    # XGBoost samples rows and columns per tree with its seed: the spread over seeds is not a constant 0
    xgb = t[(t.metric == "ml_efficacy.auc.real") & (t.subject == "xgb")].iloc[0]
    assert xgb.n_seeds == 2 and xgb.spread > 0
    bars = identical.figures["ml_efficacy"]["scores"]["auc"]["xgb"]  # means, then stds (the error bars)
    assert bars[0] == pytest.approx(xgb.value) and bars[2] == pytest.approx(xgb.spread)


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


def test_constant_test_target_makes_r2_undefined(real):
    test = real.copy()
    test["age"] = 40
    res = evaluate(real, real, real_test=test, target="age", metrics=["ml_efficacy"], seeds=(0,), n_jobs=1)
    r2 = res.table[res.table.metric == "ml_efficacy.r2.synthetic"]
    assert r2.value.isna().all() and r2.note.str.contains("constant").all()
    assert res.table[res.table.metric == "ml_efficacy.mae.real"].value.notna().all()


def test_ml_models_chooses_the_classifiers(real, real_test):
    res = evaluate(real, real, real_test=real_test, target="label", metrics=["ml_efficacy"], seeds=(0,), n_jobs=1,
                   ml_models=["lr", "dt"])
    assert set(res.table["subject"]) == {"lr", "dt"} and res.info["ml_models"] == ["lr", "dt"]


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
    res = evaluate(messy, messy.iloc[::-1], schema=schema, **{**FAST, "seeds": (0,)})
    assert res.info["kinds"]["kids"] == "continuous" and res.info["target"] == "label"
    assert (res.table[res.table.value.isna()].note.str.len() > 0).all()
    assert res.value("marginal.tvd1") == pytest.approx(0.0, abs=1e-12)


def test_worse_synthetic_scores_worse(real, real_test):
    from dpsynth.evaluation import discriminability

    rng = np.random.default_rng(0)
    bad = pd.DataFrame({c: real[c].to_numpy()[rng.permutation(len(real))] for c in real.columns})
    good = evaluate(real, real, metrics=["similarity"], **FAST)
    worse = evaluate(real, bad, metrics=["similarity"], **FAST)
    assert worse.value("similarity.association_diff") > good.value("similarity.association_diff")
    disc = {name: discriminability.rows(_context(real, synth, None, None, ()))[0].value
            for name, synth in (("good", real), ("bad", bad))}
    assert disc["bad"] < disc["good"] == 100.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(metrics=["nope"]), "metrics must be"),
    (dict(target="missing"), "target must be"),
    (dict(seeds=()), "seeds must"),
    (dict(ml_models=["xgb", "svm"]), "ml_models must be a non-empty list drawn from"),
    (dict(ml_models=[]), "ml_models must be"),
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


# ------------------------------------------------------------------ audit of issue 4: regression tests
def _context(real, synth, test, target, models, seeds=(0,)):
    from dpsynth.evaluation._prep import infer_kinds
    from dpsynth.evaluation.core import Context

    return Context(real=real, synthetic=synth, real_test=test, kinds=infer_kinds(real), target=target,
                   seeds=seeds, limits=Limits(), executor="sequential", models=models)


def test_mlp_and_ridge_learn_a_target_of_size_1e6():
    """A raw target ~1e6 left the MLP at R2 -11 trained on real and on synthetic rows alike (diff ~0)."""
    from dpsynth.evaluation import ml_efficacy

    def houses(n, seed):
        rng = np.random.default_rng(seed)
        size, rooms = rng.uniform(50, 250, n), rng.integers(1, 20, n)
        area = rng.choice(["north", "south"], n)
        price = 2e5 + 4e3 * size + 1e4 * rooms + 1e5 * (area == "north") + rng.normal(0, 2e4, n)
        return pd.DataFrame({"size": size, "rooms": rooms, "area": area, "price": price})

    train, test = houses(500, 0), houses(200, 1)
    ctx = _context(train, train.iloc[:60], test, "price", ("mlp", "lr"))
    features = ctx.encoder().transform(train, columns=ctx.encoder().columns_except("price"))
    assert features.min() == 0.0 and features.max() == 1.0  # inputs min-max scaled with the real bounds
    rows, fig = ml_efficacy.run(ctx)
    r2 = {(r.metric, r.subject): r.value for r in rows}
    assert r2[("ml_efficacy.r2.real", "mlp")] > 0.8 and r2[("ml_efficacy.r2.real", "lr")] > 0.8
    assert r2[("ml_efficacy.evs.real", "mlp")] > 0.8
    assert fig["ml_efficacy"]["task"] == "regression"


def test_one_class_synthetic_target_gives_the_constant_predictors_accuracy(real, real_test):
    """Accuracy and F1 of the constant predictor are defined (seeds 000/002 tables); AUC and AP are not."""
    synth = real.copy()
    synth["label"] = "no"
    res = evaluate(real, synth, real_test=real_test, target="label", metrics=["ml_efficacy"], seeds=(0,), n_jobs=1)
    t = res.table.set_index(["metric", "subject"])
    share_no = float(np.mean(real_test["label"] == "no"))
    positive = real["label"].value_counts().idxmin()
    # F1 of the positive class: 0 when "no" is the negative class, else 2 P R / (P + R) with R = 1, P = share
    f1 = 0.0 if positive == "yes" else 2 * share_no / (1 + share_no)
    assert res.table[res.table.metric == "ml_efficacy.auc.real"].value.notna().all()
    for model in ("dt", "rf", "lr", "mlp", "xgb"):
        assert t.loc[("ml_efficacy.accuracy.synthetic", model)].value == pytest.approx(share_no)
        assert t.loc[("ml_efficacy.f1.synthetic", model)].value == pytest.approx(f1)
        assert "constant predictor" in t.loc[("ml_efficacy.accuracy.synthetic", model)].note
        assert np.isfinite(t.loc[("ml_efficacy.accuracy.diff", model)].value)
        for score in ("auc", "ap"):
            for variant in ("synthetic", "diff"):
                r = t.loc[(f"ml_efficacy.{score}.{variant}", model)]
                assert math.isnan(r.value) and "one class" in r.note and "no ranking" in r.note


@pytest.mark.parametrize("labels", [["no"] * 7 + ["yes"], ["no", "yes"] * 4 + ["no"]])
def test_a_few_synthetic_rows_train_the_mlp_without_early_stopping(real, real_test, labels):
    """A DP row count can give a synthetic table of a few rows: one class seen once (no stratified split), or too
    few rows for a validation split of two. scikit-learn's early stopping raises there; the MLP trains without."""
    synth = real.iloc[: len(labels)].assign(label=labels)
    res = evaluate(real, synth, real_test=real_test, target="label", metrics=["ml_efficacy"], seeds=(0,), n_jobs=1,
                   ml_models=["mlp", "xgb"])
    t = res.table.set_index(["metric", "subject"])
    mlp = t.loc[("ml_efficacy.auc.synthetic", "mlp")]
    assert np.isfinite(mlp.value) and "without early stopping" in mlp.note
    assert "early stopping" not in t.loc[("ml_efficacy.auc.real", "mlp")].note  # the real table holds it out
    assert "early stopping" not in t.loc[("ml_efficacy.auc.synthetic", "xgb")].note


def test_a_few_synthetic_rows_of_a_numeric_target_train_the_mlp_without_early_stopping(real, real_test):
    synth = real.iloc[:9]
    res = evaluate(real, synth, real_test=real_test, target="age", metrics=["ml_efficacy"], seeds=(0,), n_jobs=1,
                   ml_models=["mlp"])
    r2 = res.table[(res.table.metric == "ml_efficacy.r2.synthetic") & (res.table.subject == "mlp")].iloc[0]
    assert np.isfinite(r2.value) and "without early stopping" in r2.note


def test_shuffled_capped_copy_with_other_dtypes_is_perfect(real):
    """Any row order, a cap below the table size, and int columns read back as float: still exactly 100."""
    from dpsynth.evaluation import discriminability

    copy = real.sample(frac=1.0, random_state=11).astype({"age": float, "kids": float})
    ctx = _context(real, copy, None, None, ())
    ctx = type(ctx)(**{**ctx.__dict__, "limits": Limits(discriminator_rows=250)})
    rows = {r.metric: r for r in discriminability.rows(ctx)}
    assert rows["quality.discriminability"].value == 100.0
    floor = rows["quality.discriminability.real_vs_real"]
    assert 70.0 < floor.value < 100.0 and "200 rows each" in floor.note  # m = min(cap, 400 // 2)


def test_same_population_scores_near_100_and_far_above_a_broken_table(two_samples):
    """Two independent samples of one population: a well calibrated discriminator stays near 100."""
    from dpsynth.evaluation import discriminability

    a, b = two_samples
    rng = np.random.default_rng(0)
    broken = pd.DataFrame({c: b[c].to_numpy()[rng.permutation(len(b))] for c in b.columns})
    same = {r.metric: r.value for r in discriminability.rows(_context(a, b, None, None, ()))}
    worse = {r.metric: r.value for r in discriminability.rows(_context(a, broken, None, None, ()))}
    assert same["quality.discriminability"] > 90.0 and same["quality.discriminability.real_vs_real"] > 90.0
    assert worse["quality.discriminability"] < same["quality.discriminability"] - 10.0


def test_all_missing_synthetic_column_is_never_a_silent_perfect_score(real):
    """An all-missing synthetic column once gave a Wasserstein mean of 0 and a similarity of 100."""
    from dpsynth.evaluation import quality, similarity

    small = real[["age", "hours", "color"]].iloc[:150].assign(double=lambda d: 2.0 * d["hours"])
    ctx = _context(small, small.assign(double=np.nan), None, None, ())
    rows = similarity.run(ctx)[0] + quality._resemblance(ctx)
    t = pd.DataFrame([r.__dict__ for r in rows]).set_index(["metric", "subject"])
    per_col = t.loc[("similarity.wasserstein", "double")]
    assert math.isnan(per_col.value) and "all missing" in per_col.note
    assert "double" in t.loc[("similarity.wasserstein", "(all)")].note  # the mean names what it left out
    for name in ("column_similarity", "statistical_similarity", "ks_similarity"):
        r = t.loc[(f"quality.{name}", "(all)")]
        assert r.value < 100.0 and "double: scored 0" in r.note, (name, r.value, r.note)
    # age and hours are copied (100 each), double scores the worst value 0
    assert t.loc[("quality.statistical_similarity", "(all)")].value == pytest.approx(200.0 / 3)
    # utility: no synthetic value to train on -> every synthetic fold undefined -> the column scores 0, noted
    X = np.zeros((4, 2), dtype=np.float32)
    fold = quality._fold_score("regression", X, np.full(4, np.nan), X, np.array([1.0, 2, 3, 4]), 0)
    assert math.isnan(fold)
    value, note = quality.column_utility([0.8, 0.9, 0.7], [fold] * 3)
    assert value == 0.0 and "scored 0" in note
    agg = aggregate("quality.utility", {"age": 0.5, "double": value}, scale=100.0, caveats={"double": note})
    assert agg.value == pytest.approx(25.0) and "double: scored 0" in agg.note


def test_bool_and_01_columns_are_the_same_labels():
    from dpsynth.evaluation._prep import as_labels

    flags = pd.DataFrame({"flag": [True, False, True, True] * 5, "g": list("ab") * 10})
    ints = flags.astype({"flag": int})
    for a, b in ((flags, ints), (ints, flags), (flags, ints.astype({"flag": float}))):
        res = evaluate(a, b, metrics=["similarity", "unsupervised"], seeds=(0,), n_jobs=1)
        assert res.value("similarity.jsd", "flag") == 0.0
        assert res.value("marginal.tvd1", "flag") == 0.0
    assert list(as_labels(pd.Series([True, np.True_, 1, 1.0, "1", None], dtype=object))) == ["1"] * 5 + ["<missing>"]
    nullable = pd.Series([True, None, False], dtype="boolean")
    assert list(evaluate.__globals__["infer_kinds"](pd.DataFrame({"b": nullable})).values()) == ["categorical"]
