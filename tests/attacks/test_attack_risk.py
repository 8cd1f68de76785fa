"""assess_risk: one call, tidy table, JSON round trip, HTML section, skipped attacks."""

from __future__ import annotations

import json

import pytest

from dpsynth.attacks.risk import DEFAULT_ATTACKS, RiskResult, assess_risk
from dpsynth.errors import InputError

FAST = ["closest_distance_hamming", "closest_distance_l2", "density", "gan_leaks", "attribute_linear_regression",
        "attribute_nearest_neighbour", "singling_out_univariate", "linkability"]


@pytest.fixture(scope="module")
def data(adult):
    train_full, test_full = adult
    return (train_full.sample(1500, random_state=0).reset_index(drop=True),
            test_full.sample(1500, random_state=0).reset_index(drop=True))


@pytest.fixture(scope="module")
def copy_result(data):
    train, control = data
    return assess_risk(train, train, control=control, attacks=FAST, n_targets=200, executor="sequential", seed=0)


@pytest.mark.anonymeter
def test_copy_release_is_flagged(copy_result):
    rr = copy_result
    assert {r.attack for r in rr.results} == set(FAST) and not rr.skipped
    assert rr["closest_distance_hamming"].value > 0.9
    assert rr["singling_out_univariate"].value > 0.8
    assert rr.worst().value > 0.9 and rr.worst("membership").kind == "membership"


@pytest.mark.anonymeter
def test_table_is_tidy(copy_result):
    table = copy_result.table
    assert list(table.columns) == ["attack", "kind", "metric", "value", "ci_low", "ci_high", "n_targets"]
    risk = table[table.metric == "risk"]
    assert len(risk) == len(FAST) and risk.value.between(0, 1).all()
    mia = table[table.attack == "closest_distance_l2"].set_index("metric")
    assert {"accuracy", "tpr", "fpr", "auc", "advantage", "privacy_gain", "relative_risk"} <= set(mia.index)
    assert len(copy_result.summary) == len(FAST)


def test_json_round_trip(copy_result, tmp_path):
    path = tmp_path / "risk.json"
    text = copy_result.to_json(path)
    back = RiskResult.from_dict(json.loads(path.read_text()))
    assert json.loads(text) == back.to_dict()
    assert back["closest_distance_l2"].metric("auc") == pytest.approx(copy_result["closest_distance_l2"].metric("auc"))


def test_html_section(copy_result):
    html = copy_result.to_html_section()
    assert html.startswith('<section class="dpsynth-privacy-risk">') and html.endswith("</section>")
    assert "<svg" in html and "closest_distance_hamming" in html and "Privacy gain" in html


@pytest.mark.anonymeter
def test_without_control_membership_is_skipped(data):
    train, _ = data
    rr = assess_risk(train, train.sample(500, random_state=1),
                     attacks=["closest_distance_l2", "singling_out_univariate"],
                     n_targets=100, executor="sequential")
    assert "closest_distance_l2" in rr.skipped and "control" in rr.skipped["closest_distance_l2"]
    assert [r.attack for r in rr.results] == ["singling_out_univariate"]


def test_argument_errors(data):
    train, control = data
    with pytest.raises(InputError, match="attacks"):
        assess_risk(train, train, attacks=["nope"])
    with pytest.raises(InputError, match="generator"):
        assess_risk(train, train, attacks=["shadow_groundhog"])
    with pytest.raises(InputError, match="same columns"):
        assess_risk(train, train.drop(columns=["age"]))
    with pytest.raises(InputError, match="sensitive"):
        assess_risk(train, train, sensitive="salary")
    assert "shadow_groundhog" not in DEFAULT_ATTACKS


@pytest.mark.slow(reason="every default attack on full Adult in worker processes: minutes")
def test_default_attacks_in_parallel_on_adult(adult):
    train, test = adult
    rr = assess_risk(train, train.sample(len(train), replace=True, random_state=0), control=test, seed=0)
    assert {r.attack for r in rr.results} == set(DEFAULT_ATTACKS)


def test_shadow_attack_through_assess_risk(data):
    from dpsynth.attacks.shadow import ShadowConfig

    train, control = data

    def resample(df, seed, n=None):
        return df.sample(n or len(df), replace=True, random_state=seed).reset_index(drop=True)

    cfg = ShadowConfig(reference_size=200, synthetic_size=100, n_train_sets=8, n_test_sets=4, n_targets=1,
                       n_repetitions=1, sets_per_fit=2)
    rr = assess_risk(train, train, control=control, generator=resample, attacks=["shadow_groundhog"], shadow=cfg,
                     executor="sequential", n_targets=50)
    assert {r.attack for r in rr.results} == {f"shadow_groundhog_{f}" for f in ("naive", "histogram", "correlation")}
    assert all(r.kind == "membership" for r in rr.results)


def test_all_without_generator_records_the_skipped_shadow_attack(data, monkeypatch):
    from dpsynth.attacks import risk

    ran = []
    monkeypatch.setattr(risk, "_run_task", lambda task: (ran.append(task[0]), (None, 0.0, "not run here"))[1])
    train, control = data
    rr = assess_risk(train, train, control=control, attacks="all", n_targets=10, executor="sequential")
    assert "generator" in rr.skipped["shadow_groundhog"] and set(ran) == set(DEFAULT_ATTACKS)


def test_html_labels_intervals_with_their_level(data):
    train, control = data
    rr = assess_risk(train.iloc[:400], train.iloc[:400], control=control.iloc[:400], n_targets=50,
                     attacks=["closest_distance_l2", "attribute_linear_regression"], executor="sequential",
                     confidence=0.9)
    html = rr.to_html_section()
    assert "95%" not in html and "90% CI" in html
    assert "<th>tpr (94.9% CI)</th>" in html  # per-rate level sqrt(0.9), so the advantage holds at 90%
    back = RiskResult.from_dict(json.loads(rr.to_json()))
    assert back["closest_distance_l2"].metrics["tpr"].level == pytest.approx(0.9 ** 0.5)
    assert back["attribute_linear_regression"].metrics["privacy_gain"].ci is not None
