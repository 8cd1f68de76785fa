"""DP-TLDM (seed 004) with the fixes of DESIGN.md §1: one guarantee per test.

The Synthesizer contract (fit / sample / save / load / seeds / non-private mode) runs for every registered model in
tests/models/test_contract.py; it is also run here for the batch-clipping mode. Small Adult slices, tiny settings.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from _canary import run_audit

from dpsynth.errors import InputError
from dpsynth.models import get_model_class
from dpsynth.models.base import read_model_file
from dpsynth.models.checks import check_non_private, check_synthesizer
from dpsynth.models.dp_tldm import DPTLDM
from dpsynth.privacy import dpsgd as dpsgd_module

FAST = dict(DPTLDM.fast_params)


@pytest.fixture(scope="module")
def small(adult):
    train, _ = adult
    return train.sample(1000, random_state=1).reset_index(drop=True)


class _EngineSpy:
    """Records every DPSGD engine the model builds (phase, engine)."""

    def __init__(self, monkeypatch):
        self.engines: list[tuple[str, dpsgd_module.DPSGD]] = []
        real_init = dpsgd_module.DPSGD.__init__
        spy = self

        def init(engine, module, optimizer, config, **kw):
            real_init(engine, module, optimizer, config, **kw)
            spy.engines.append((kw["phase"], engine))

        monkeypatch.setattr(dpsgd_module.DPSGD, "__init__", init)


@pytest.fixture(scope="module", params=["per_example", "batch"])
def fitted(request, small, adult_schema):
    mp = pytest.MonkeyPatch()
    spy = _EngineSpy(mp)
    try:
        model = DPTLDM(**FAST, clipping=request.param).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    finally:
        mp.undo()
    return model, spy


def test_registered():
    assert get_model_class("dp-tldm") is DPTLDM


def test_ledger_within_target_and_phases_recorded(fitted):
    model, _ = fitted
    ledger = model.ledger_
    assert 0 < ledger.epsilon() <= 1.0
    assert list(ledger.phases()) == ["metadata", "vae", "diffusion"]
    budget = model.budget_
    after_vae = budget["phases"]["vae"]["epsilon_after"]
    assert budget["metadata_epsilon"] <= after_vae <= budget["epsilon_total"] <= 1.0
    assert after_vae <= budget["phases"]["vae"]["target_epsilon"] + 1e-9
    assert budget["phases"]["vae"]["share"] == model.vae_share
    for phase in ("vae", "diffusion"):
        plan = budget["phases"][phase]
        assert plan["steps_taken"] == plan["steps"] and plan["noise_multiplier"] > 0


def test_sampling_rate_uses_the_dp_row_count(fitted):
    """q = B / n_dp, and neither the divisor nor the ledger holds the exact row count."""
    model, spy = fitted
    n_dp = model.metadata_.n_rows
    for phase, engine in spy.engines:
        batch = FAST["vae_batch_size"] if phase == "vae" else FAST["diffusion_batch_size"]
        assert engine.config.sample_rate == pytest.approx(batch / n_dp)
        assert engine.expected_batch_size == pytest.approx(batch)
    for entry in model.ledger_.entries:
        if entry.phase in ("vae", "diffusion"):
            assert entry.params["n_rows"] == pytest.approx(n_dp)


def test_clipping_mode_and_sensitivity_recorded(fitted):
    """Per-example clipping has sensitivity C; seed 004's batch clipping has sensitivity 2C (noise std 2 C sigma)."""
    model, spy = fitted
    c = model.max_grad_norm
    expected = c if model.clipping == "per_example" else 2 * c
    assert {phase for phase, _ in spy.engines} == {"vae", "diffusion"}
    for _, engine in spy.engines:
        assert engine.config.clipping == model.clipping
        assert engine.config.sensitivity == pytest.approx(expected)
        assert engine.config.noise_std == pytest.approx(expected * engine.config.noise_multiplier)
    entries = [e for e in model.ledger_.entries if e.phase in ("vae", "diffusion")]
    assert len(entries) == 2 and all(e.params["sensitivity"] == pytest.approx(expected) for e in entries)


def test_gdp_report_stored_and_saved(fitted, tmp_path):
    model, _ = fitted
    gdp = model.gdp_
    assert gdp["mu_clt"] > 0 and 0 < gdp["separation_clt"] < 1 and gdp["epsilon"] == pytest.approx(model.epsilon_)
    assert {"vae", "diffusion"} <= {e["phase"] for e in gdp["entries"]}
    _, header = read_model_file(model.save(tmp_path / "m.dpsynth"))
    assert header["state"]["gdp"]["mu_seed004"] == pytest.approx(gdp["mu_seed004"])


def test_save_load_identical_samples_and_no_encoder(fitted, tmp_path):
    model, _ = fitted
    tensors, _ = read_model_file(model.save(tmp_path / "m.dpsynth"))
    assert {k.split(".")[0] for k in tensors} == {"decoder", "denoiser"}  # the encoder never leaves fit()
    loaded = DPTLDM.load(tmp_path / "m.dpsynth")
    pd.testing.assert_frame_equal(loaded.sample(300, seed=3), model.sample(300, seed=3))
    assert not model.sample(50, seed=3).equals(model.sample(50, seed=4))


@pytest.mark.slow(reason="the whole contract again, with batch clipping: about a minute")
@pytest.mark.ci
def test_contract_batch_clipping(small, adult_schema, tmp_path):
    check_synthesizer(DPTLDM, small, adult_schema, tmp_path, params={**FAST, "clipping": "batch"})


def test_non_private_mode(small, adult_schema):
    model = check_non_private(DPTLDM, small, adult_schema)
    assert model.transformer_.non_private_ and math.isinf(model.ledger_.epsilon())
    assert {"vae", "diffusion"} <= set(model.ledger_.phases())


@pytest.mark.slow(reason="an ablation of the default model; its own fit")
def test_prior_sampler_gives_the_whole_budget_to_the_vae(small, adult_schema):
    model = DPTLDM(**FAST, latent_sampler="prior").fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    assert list(model.ledger_.phases()) == ["metadata", "vae"] and model.ledger_.epsilon() <= 1.0
    assert len(model.sample(100, seed=0)) == 100


@pytest.mark.parametrize("bad", [{"clipping": "microbatch"}, {"latent_sampler": "flow"}, {"vae_share": 1.0},
                                 {"schedule": "sqrt"}])
def test_bad_parameters_are_refused(small, adult_schema, bad):
    with pytest.raises(InputError):
        DPTLDM(**{**FAST, **bad}).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)


def test_white_box_audit_of_the_model_dpsgd_phases(fitted):
    """One-run audit (Dirac gradient canaries) at each phase's own (q, sigma, C, clipping): eps_LB <= epsilon."""
    from dpsynth.privacy.audit import audit_dpsgd
    from dpsynth.privacy.ledger import PrivacyLedger

    _, spy = fitted
    for phase, engine in spy.engines:
        ledger = PrivacyLedger(target_epsilon=1e6, target_delta=1e-5)
        result = audit_dpsgd(engine.config, ledger=ledger, m=500, steps=200, seed=0)
        assert 0 < ledger.epsilon() < math.inf
        assert result.eps_lower_bound <= ledger.epsilon(), phase


# The black-box audit's model: FAST with a wider VAE / denoiser, and (non-private mode only) 100 epochs of batch 64,
# so that the network itself - not only the marginal map - can learn the canaries' rare countries.
AUDIT_PARAMS = {**FAST, "latent_dim": 16, "vae_hidden": 128, "denoiser_hidden": 128, "nonprivate_epochs": 100,
                "nonprivate_batch_size": 64}


def _canary_audit(adult, adult_schema, epsilon, match_marginals):
    params = {**AUDIT_PARAMS, "match_marginals": match_marginals}
    return run_audit(lambda data: DPTLDM(**params).fit(data, epsilon=epsilon, delta=1e-5, schema=adult_schema, seed=0),
                     adult, adult_schema, seed=0)


@pytest.mark.parametrize("match_marginals", [True, False])
def test_black_box_canary_audit(adult_schema, adult, match_marginals):
    """One-run canary audit of the whole model (Steinke et al. 2023; tests/models/_canary.py): 40 real Adult rows,
    one per non-US country, each included w.p. 1/2 in a US-only base table; score = synthetic rows carrying the
    canary's country. eps_LB must stay below the ledger's epsilon. Measured: eps_LB 0.0 (11/15 correct with the
    marginal map, 8/15 without)."""
    result, model, _, _ = _canary_audit(adult, adult_schema, 1.0, match_marginals)
    assert 0 < model.ledger_.epsilon() <= 1.0
    assert result.guesses == 15
    assert result.eps_lower_bound <= model.ledger_.epsilon()


@pytest.mark.slow(reason="the audit's power check: two noise-off fits and their audits, about 20 s")
@pytest.mark.ci
@pytest.mark.parametrize("match_marginals", [True, False])
def test_black_box_canary_audit_has_power(adult_schema, adult, match_marginals):
    """The same audit (canaries, score, guesses) on the non-private mode: it must reject the DP run's epsilon = 1,
    so the DP assertion above is one that can fail. In this mode the marginal map's category weights are fitted to
    the exact counts, and without the map the network itself has learnt the included countries. Measured: 15/15
    correct, eps_LB 1.51 (the largest 15 guesses can give) with and without the marginal map, against 0.0 at
    epsilon = 1; in 20,000 synthetic rows the 15th guessed canary's country appears 23 / 21 times (with / without
    the map), an excluded one's at most 5 / 1."""
    result, model, _, _ = _canary_audit(adult, adult_schema, math.inf, match_marginals)
    assert math.isinf(model.ledger_.epsilon())
    assert result.correct == result.guesses == 15
    assert result.eps_lower_bound > 1.0


@pytest.mark.slow(reason="full Adult at the default settings: minutes; benchmarks/adult_quality.py measures it")
def test_adult_quality_at_epsilon_one(adult):
    """Defaults on the full Adult train split at epsilon = 1 (minutes): XGBoost on synthetic, tested on adult.test."""
    import sys
    from pathlib import Path

    from dpsynth import datasets

    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    from adult_quality import utility

    train, test = adult
    model = DPTLDM().fit(train, epsilon=1.0, delta=1e-5, schema=datasets.schema("adult"), seed=0)
    synth = model.sample(len(train), seed=1)
    assert model.ledger_.epsilon() <= 1.0
    # fit and sample times (issue 5: fit <= 10 min, >= 50,000 rows/s) are measured by benchmarks/adult_quality.py,
    # not asserted here: they depend on the machine's speed that day, the quality targets below do not
    scores = utility(synth, test)
    # issue 5's targets for the better model (measured 0.870 +- 0.006 AUC, 0.826 accuracy over 3 seeds)
    assert scores["xgb_auc"] >= 0.85 and scores["xgb_acc"] >= 0.80, scores
