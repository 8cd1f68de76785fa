"""The VAE and copula baselines of issue 20: dp-vae (DP), tvae and gaussian-copula (non-private references).

The contract runs in tests/models/test_contract.py, dp-vae's noise-off audits in test_noise_off_audits.py and its
canary-tag audit in tests/attacks/test_attack_contract.py; the VAE itself is DP-TLDM's (test_dp_tldm.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from safetensors import safe_open

from dpsynth.data.schema import Column, Schema
from dpsynth.errors import InputError
from dpsynth.models import get_model_class, model_phases
from dpsynth.models.dp_vae import DPVAE, TVAE
from dpsynth.models.gaussian_copula import GaussianCopula


@pytest.fixture(scope="module")
def small(adult):
    train, _ = adult
    return train.sample(1000, random_state=3).reset_index(drop=True)


# ---------------------------------------------------------------------------------------------- dp-vae
@pytest.fixture(scope="module")
def dp_vae(small, adult_schema):
    return DPVAE(**DPVAE.fast_params).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)


def test_dp_vae_gives_the_vae_all_the_budget(dp_vae, tmp_path):
    assert get_model_class("dp-vae") is DPVAE and model_phases("dp-vae") == ("metadata", "vae")
    params = DPVAE().get_params()
    assert "latent_sampler" not in params and "diffusion_epochs" not in params and "vae_share" not in params
    assert {e.phase for e in dp_vae.ledger_.entries} == {"metadata", "vae"}
    assert 0.9 < dp_vae.ledger_.epsilon() <= 1.0 + 1e-9  # the VAE is calibrated to the full target
    assert dp_vae.budget_["phases"]["vae"]["share"] == 1.0 and "diffusion" not in dp_vae.budget_["phases"]
    path = dp_vae.save(tmp_path / "vae.dpsynth")
    with safe_open(str(path), "pt") as f:  # the decoder only: no encoder, no denoiser
        assert all(k.startswith("decoder.") and ".encoder." not in k for k in f.keys())


def test_dp_vae_noise_follows_the_budget(dp_vae, small, adult_schema):
    """Less budget, more noise on the same plan (the calibration is the ledger's)."""
    tight = DPVAE(**DPVAE.fast_params).fit(small, epsilon=0.5, delta=1e-5, schema=adult_schema, seed=0)
    assert tight.budget_["phases"]["vae"]["noise_multiplier"] > dp_vae.budget_["phases"]["vae"]["noise_multiplier"]
    assert tight.budget_["phases"]["vae"]["steps"] == dp_vae.budget_["phases"]["vae"]["steps"]


# ---------------------------------------------------------------------------------------------- tvae
def test_tvae_is_non_private_only(small, adult_schema):
    assert not TVAE.supports_dp and get_model_class("tvae") is TVAE
    assert set(TVAE().get_params()) == {"numeric", "categorical", "latent_dim", "vae_hidden", "vae_layers", "beta",
                                        "epochs", "batch_size", "learning_rate"}
    with pytest.raises(InputError, match="non-private baseline"):
        TVAE(**TVAE.fast_params).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema)
    model = TVAE(**TVAE.fast_params).fit(small, epsilon=math.inf, delta=1e-5, schema=adult_schema, seed=0)
    assert math.isinf(model.epsilon_)
    vae = model.budget_["phases"]["vae"]
    # TVAE's settings reach the training loop: 2 epochs of 200-row batches, no noise
    assert vae["batch_size"] == 200 and vae["noise_multiplier"] == 0.0
    assert model.transformer_.numeric == "mode_specific"


# ---------------------------------------------------------------------------------------------- gaussian-copula
@pytest.fixture(scope="module")
def correlated():
    """A known joint law: x, y standard normal with correlation 0.8; a category that shifts x; 20% of y missing."""
    rng = np.random.default_rng(0)
    n = 20_000
    group = rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1])
    x = rng.standard_normal(n) + np.select([group == "a", group == "b"], [0.0, 1.0], 2.0)
    y = 0.8 * (x - x.mean()) / x.std() + 0.6 * rng.standard_normal(n)
    y = np.where(rng.uniform(size=n) < 0.2, np.nan, y)
    frame = pd.DataFrame({"x": x, "y": y, "group": group})
    schema = Schema([Column("x", "continuous", lower=-10.0, upper=10.0),
                     Column("y", "continuous", lower=-10.0, upper=10.0, nullable=True),
                     Column("group", "categorical", categories=("a", "b", "c"))], provenance="public")
    return frame, schema


def test_gaussian_copula_reproduces_a_known_joint_law(correlated, tmp_path):
    frame, schema = correlated
    with pytest.raises(InputError, match="non-private baseline"):
        GaussianCopula().fit(frame, epsilon=1.0, delta=1e-5, schema=schema)
    model = GaussianCopula().fit(frame, epsilon=math.inf, delta=1e-5, schema=schema, seed=0)
    synth = model.sample(20_000, seed=1)
    # marginals: quantiles, category shares, missing share
    for q in (0.1, 0.5, 0.9):
        assert synth["x"].quantile(q) == pytest.approx(frame["x"].quantile(q), abs=0.05)
    shares = synth["group"].value_counts(normalize=True)
    assert shares.to_dict() == pytest.approx({"a": 0.6, "b": 0.3, "c": 0.1}, abs=0.015)
    assert synth["y"].isna().mean() == pytest.approx(frame["y"].isna().mean(), abs=0.015)
    # dependence: the x-y correlation (on rows where y is present) and the shift of x by group
    both = synth.dropna()
    real_corr = frame.dropna()[["x", "y"]].corr().iloc[0, 1]
    assert both[["x", "y"]].corr().iloc[0, 1] == pytest.approx(real_corr, abs=0.05)
    means = synth.groupby("group")["x"].mean()
    assert means["a"] < means["b"] < means["c"] and means["c"] - means["a"] > 1.2
    # the file keeps the correlation and quantiles: the loaded model draws the same rows
    loaded = get_model_class("gaussian-copula").load(model.save(tmp_path / "gc.dpsynth"))
    pd.testing.assert_frame_equal(loaded.sample(500, seed=4), model.sample(500, seed=4))
    assert {e.phase for e in model.ledger_.entries} == {"metadata", "copula"}


def test_gaussian_copula_keeps_constant_and_all_missing_columns(tmp_path):
    """A constant column makes the correlation matrix singular, an all-missing one has no quantiles: both sample."""
    frame = pd.DataFrame({"c": np.ones(200), "m": np.full(200, np.nan), "k": ["u", "v"] * 100})
    schema = Schema([Column("c", "continuous", lower=0.0, upper=2.0),
                     Column("m", "continuous", lower=0.0, upper=1.0, nullable=True),
                     Column("k", "categorical", categories=("u", "v"))], provenance="public")
    synth = GaussianCopula().fit(frame, epsilon=math.inf, delta=1e-5, schema=schema, seed=0).sample(300, seed=0)
    assert (synth["c"] == 1.0).all() and synth["m"].isna().all() and set(synth["k"]) == {"u", "v"}
