"""Seed 001's DP-DNN and DP-GAN-DNN (issue 21): what is private (one DP-SGD phase per network, composed in one
ledger with the recorded split), what is post-processing (uniform or DP-GAN inputs labelled by the network), the
poster's refinements, and that the non-private DNN learns a dependency. The contract runs in test_contract.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpsynth.data.schema import Column, Schema
from dpsynth.errors import InputError
from dpsynth.models import get_model_class, model_phases
from dpsynth.models.dp_dnn import DPDNN, DPGANDNN, label_quota_filter


def _table(n=1500, seed=0):
    """label = "hi" exactly when x > 0; colour independent of both."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-5, 5, n)
    return pd.DataFrame({"x": x, "colour": rng.choice(["red", "green", "blue"], n),
                         "label": np.where(x > 0, "hi", "lo")})


SCHEMA = Schema([Column("x", "continuous", lower=-5.0, upper=5.0),
                 Column("colour", "categorical", categories=["red", "green", "blue"]),
                 Column("label", "categorical", categories=["hi", "lo"])], target="label", provenance="public")


def test_registration_and_phases():
    assert get_model_class("dp-dnn") is DPDNN and get_model_class("dp-gan-dnn") is DPGANDNN
    assert model_phases("dp-dnn") == ("metadata", "dnn") and model_phases("dp-gan-dnn") == ("metadata", "gan", "dnn")
    with pytest.raises(InputError, match="gan_share"):
        DPGANDNN(gan_share=1.0).fit(_table(), epsilon=1.0, delta=1e-5, schema=SCHEMA)


def test_label_quota_filter_keeps_candidates_until_each_quota_is_met():
    taken = np.zeros(3, dtype=np.int64)
    keep = label_quota_filter(np.array([0, 0, 1, 0, 2, 2, 1]), np.array([2, 1, 1]), taken)
    assert keep.tolist() == [0, 1, 2, 4] and taken.tolist() == [2, 1, 1]


def test_dp_dnn_is_one_poisson_dp_sgd_phase_at_the_target():
    model = DPDNN(epochs=2.0).fit(_table(), epsilon=1.0, delta=1e-5, schema=SCHEMA, seed=0)
    phases = {e.phase for e in model.ledger_.entries}
    assert phases == {"metadata", "dnn"}  # the DP row count and histograms, then the network
    dnn = model.budget_["phases"]["dnn"]
    assert dnn["noise_multiplier"] > 0 and dnn["sample_rate"] < 1 and dnn["steps_taken"] == dnn["steps"]
    assert 0.9 < model.ledger_.epsilon() <= 1.0 + 1e-9 and model.budget_["label"] == "label"


def test_dp_gan_dnn_composes_its_two_phases_with_the_recorded_split():
    model = DPGANDNN(**DPGANDNN.fast_params, gan_share=0.3).fit(_table(), epsilon=1.0, delta=1e-5, schema=SCHEMA,
                                                               seed=0)
    assert {e.phase for e in model.ledger_.entries} == {"metadata", "gan", "dnn"}
    gan_eps = model.budget_["phases"]["gan"]["epsilon_after"]
    meta = model.budget_["metadata_epsilon"]
    assert gan_eps <= meta + 0.3 * (1.0 - meta) + 0.01  # calibrated to its share of what the metadata left
    assert model.budget_["phases"]["gan"]["share"] == 0.3
    assert 0.5 < model.ledger_.epsilon() <= 1.0 + 1e-9  # calibrated by RDP (fast_params), reported by PLD


def test_non_private_dnn_labels_uniform_inputs_by_what_it_learned(tmp_path):
    """Inputs uniform within the public ranges (x over [-5, 5], colours equally often); the label is the network's
    prediction, so it follows x's sign."""
    model = DPDNN(epochs=30.0).fit(_table(), epsilon=float("inf"), delta=1e-5, schema=SCHEMA, seed=0)
    rows = model.sample(3000, seed=1)
    assert stats.kstest(rows["x"], stats.uniform(-5, 10).cdf).pvalue > 1e-3
    counts = rows["colour"].value_counts()
    assert stats.chisquare(counts.to_numpy()).pvalue > 1e-3  # uniform over the three colours
    agree = ((rows["x"] > 0) == (rows["label"] == "hi")).mean()
    assert agree > 0.95
    model.save(tmp_path / "m.dpsynth")
    again = DPDNN.load(tmp_path / "m.dpsynth")
    pd.testing.assert_frame_equal(again.sample(200, seed=4), model.sample(200, seed=4))


def test_keep_label_proportions_follows_the_dp_label_counts():
    """The label counts of the metadata (exact at epsilon inf): about 69% "hi"; uniform inputs labelled about
    50 / 50 by a network that learned the sign of x come back in those proportions once the refinement drops
    candidates."""
    table = _table(2000)
    table.loc[table.index[:800], "label"] = "hi"
    table.loc[table.index[:800], "x"] = np.abs(table.loc[table.index[:800], "x"])
    share = float((table["label"] == "hi").mean())
    plain = DPDNN(epochs=10.0).fit(table, epsilon=float("inf"), delta=1e-5, schema=SCHEMA, seed=0)
    quota = DPDNN(epochs=10.0, keep_label_proportions=True).fit(table, epsilon=float("inf"), delta=1e-5,
                                                                 schema=SCHEMA, seed=0)
    want = dict(zip(["hi", "lo"], quota.label_quota_))
    assert want["hi"] == pytest.approx(share) and share > 0.65
    got = quota.sample(1000, seed=2)["label"].value_counts(normalize=True)
    assert got["hi"] == pytest.approx(share, abs=0.002)
    assert abs(plain.sample(1000, seed=2)["label"].value_counts(normalize=True)["hi"] - 0.5) < 0.08


def test_without_a_target_a_column_is_picked_with_public_randomness():
    schema = Schema(SCHEMA.columns, provenance="public")
    picks = {DPDNN(**DPDNN.fast_params).fit(_table(300), epsilon=float("inf"), delta=1e-5, schema=schema, seed=s)
             .budget_["label"] for s in range(8)}
    assert picks <= {"x", "colour", "label"} and len(picks) > 1
