"""DP-auto-GAN (seed 003) with the fixes of DESIGN.md §1: one guarantee per test.

The Synthesizer contract (fit / sample / save / load / seeds / non-private mode) runs for every registered model
in tests/models/test_contract.py; here: the model's own privacy wiring, on small Adult slices with tiny settings.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from _canary import run_audit

from dpsynth.errors import InputError
from dpsynth.models import get_model_class
from dpsynth.models.base import read_model_file
from dpsynth.models.dp_auto_gan import DPAutoGAN
from dpsynth.privacy import dpsgd as dpsgd_module

FAST = dict(DPAutoGAN.fast_params)


@pytest.fixture(scope="module")
def small(adult):
    train, _ = adult
    return train.sample(1000, random_state=1).reset_index(drop=True)


class _Spy:
    """Records every DPSGD engine the model builds, and every change of the encoder's weights."""

    def __init__(self, monkeypatch):
        self.engines: list[tuple[str, dpsgd_module.DPSGD]] = []
        self.changes_outside_step = 0
        self.changes_inside_step = 0
        self._encoder = None
        self._last = None
        spy = self
        real_init, real_step = dpsgd_module.DPSGD.__init__, dpsgd_module.DPSGD.step

        def init(engine, module, optimizer, config, **kw):
            real_init(engine, module, optimizer, config, **kw)
            spy.engines.append((kw["phase"], engine))
            if kw["phase"] == "autoencoder":
                spy._encoder = getattr(module, "encoder", None)
                spy._last = spy._snapshot() if spy._encoder is not None else None

        def step(engine, *args, **kw):
            if spy._encoder is not None and not torch.equal(spy._snapshot(), spy._last):
                spy.changes_outside_step += 1
            out = real_step(engine, *args, **kw)
            if spy._encoder is not None:
                now = spy._snapshot()
                spy.changes_inside_step += int(not torch.equal(now, spy._last))
                spy._last = now
            return out

        monkeypatch.setattr(dpsgd_module.DPSGD, "__init__", init)
        monkeypatch.setattr(dpsgd_module.DPSGD, "step", step)

    def _snapshot(self) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1).clone() for p in self._encoder.parameters()])


@pytest.fixture(scope="module")
def fitted_with_spy(small, adult_schema):
    mp = pytest.MonkeyPatch()
    try:
        spy = _Spy(mp)
        model = DPAutoGAN(**FAST).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    finally:
        mp.undo()
    return model, spy


def test_registered_by_name():
    assert get_model_class("dp-auto-gan") is DPAutoGAN


def test_ledger_within_target_and_both_phases_composed(fitted_with_spy):
    model, spy = fitted_with_spy
    ledger = model.ledger_
    eps = ledger.epsilon()
    assert 0 < eps <= 1.0
    phases = ledger.phases()
    assert {"metadata", "autoencoder", "gan"} <= set(phases)
    # seed 003 Lemma 4: phases compose at the RDP/PLD level, tighter than adding per-phase epsilons
    assert eps < sum(phases.values())
    by_phase = {e.phase: e for e in ledger.entries if e.mechanism == "dp-sgd"}
    for phase in ("autoencoder", "gan"):
        entry = by_phase[phase]
        info = model.budget_["phases"][phase]
        assert entry.count == info["steps_taken"] > 0
        assert entry.params["clipping"] == "per_example"
        assert entry.params["noise_multiplier"] == pytest.approx(info["noise_multiplier"])
        assert info["noise_multiplier"] > 0
        # sampling rate from the DP row count, never len(frame)
        q = min(1.0, FAST[f"{phase}_batch_size"] / model.metadata_.n_rows)
        assert entry.params["sample_rate"] == pytest.approx(q)
        # the ledger and the noisy-sum divisor see the DP row count; the exact private count is never written
        assert entry.params["n_rows"] == pytest.approx(model.metadata_.n_rows)
    for _, engine in spy.engines:
        assert engine.expected_batch_size == pytest.approx(engine.config.sample_rate * model.metadata_.n_rows)


def test_encoder_trained_only_by_dp_sgd(fitted_with_spy):
    """The encoder is a parameter of the autoencoder-phase DP engine (clipped + noised with the decoder), and its
    weights change inside DP steps only: no plain optimizer step on unclipped gradients (the seed's public code)."""
    _, spy = fitted_with_spy
    phase, engine = next((p, e) for p, e in spy.engines if p == "autoencoder")
    encoder = engine.module.encoder
    trained = {id(p) for g in engine.optimizer.param_groups for p in g["params"]}
    assert all(id(p) in trained for p in encoder.parameters())
    assert engine.config.noise_multiplier > 0 and not engine.non_private
    assert spy.changes_inside_step > 0
    assert spy.changes_outside_step == 0
    gan = next(e for p, e in spy.engines if p == "gan")
    encoder_ids = {id(q) for q in encoder.parameters()}
    assert not any(id(p) in encoder_ids for g in gan.optimizer.param_groups for p in g["params"])


def test_noise_reaches_the_encoder():
    """One DP step on the model's autoencoder module: the encoder's update has the DP-SGD noise std sigma*C/(q n)."""
    from dpsynth.models._auto_gan_train import _AutoEncoder
    from dpsynth.models.networks.autoencoder import Decoder, Encoder, reconstruction_loss
    from dpsynth.privacy.ledger import PrivacyLedger

    torch.manual_seed(0)
    spans = [(0, 1, "tanh"), (1, 4, "softmax")]
    ae = _AutoEncoder(Encoder(4, (32,), 8), Decoder(8, (32,), 4))
    x = torch.cat([torch.rand(200, 1) * 2 - 1, torch.eye(3)[torch.randint(3, (200,))]], 1)
    before = torch.cat([p.detach().reshape(-1).clone() for p in ae.encoder.parameters()])
    sigma, clip, q = 50.0, 1.0, 0.5
    config = dpsgd_module.DPSGDConfig(noise_multiplier=sigma, max_grad_norm=clip, sample_rate=q)
    ledger = PrivacyLedger(target_epsilon=10.0, target_delta=1e-5)
    engine = dpsgd_module.DPSGD(ae, torch.optim.SGD(ae.parameters(), lr=1.0), config, ledger=ledger,
                                phase="autoencoder", max_steps=1, generator=torch.Generator().manual_seed(1),
                                n_rows=len(x))
    for idx in engine.batches():
        engine.step(lambda f, r: reconstruction_loss(f(r), r, spans), (x[idx],))
    change = torch.cat([p.detach().reshape(-1) for p in ae.encoder.parameters()]) - before
    expected = sigma * clip / (q * len(x))
    assert change.std().item() == pytest.approx(expected, rel=0.1)  # noise dominates the clipped signal (<= 1/(qn))


def test_frozen_encoder_is_never_updated(small, adult_schema, monkeypatch):
    import dpsynth.models.dp_auto_gan as module

    spy = _Spy(monkeypatch)
    seen = {}
    real = module.train_autoencoder

    def wrapped(encoder, decoder, *args, **kw):
        before = [p.detach().clone() for p in encoder.parameters()]
        out = real(encoder, decoder, *args, **kw)
        seen["unchanged"] = all(torch.equal(a, p) for a, p in zip(before, encoder.parameters()))
        return out

    monkeypatch.setattr(module, "train_autoencoder", wrapped)
    model = DPAutoGAN(**{**FAST, "encoder": "frozen"}).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    engine = next(e for p, e in spy.engines if p == "autoencoder")
    assert not hasattr(engine.module, "encoder")  # only the decoder is trained (with DP-SGD)
    assert seen["unchanged"]
    assert model.ledger_.epsilon() <= 1.0
    assert model.budget_["phases"]["autoencoder"]["steps_taken"] > 0


def test_wgan_gp_critic_with_per_example_penalty(small, adult_schema):
    # the penalty differentiates the critic at each record's interpolate inside the per-example loss
    model = DPAutoGAN(**{**FAST, "critic_loss": "wgan-gp", "gan_epochs": 0.2, "autoencoder_epochs": 0.2}).fit(
        small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    assert 0 < model.ledger_.epsilon() <= 1.0
    assert model.budget_["phases"]["gan"]["steps_taken"] > 0
    out = model.sample(50, seed=1)
    assert list(out.columns) == list(small.columns) and len(out) == 50


def test_a_batch_above_the_dp_row_count_caps_the_sampling_rate(small, adult_schema):
    """The row count is a noisy DP output: a small table must not fit on one seed and fail on another. With
    batches far above any plausible count, every phase samples with rate 1 and the ledger still holds."""
    params = {**FAST, "autoencoder_batch_size": 10_000, "gan_batch_size": 10_000, "autoencoder_epochs": 3.0,
              "gan_epochs": 3.0}
    model = DPAutoGAN(**params).fit(small.iloc[:50], epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    assert 0 < model.ledger_.epsilon() <= 1.0
    assert {e.params["sample_rate"] for e in model.ledger_.entries if e.mechanism == "dp-sgd"} == {1.0}
    assert len(model.sample(20, seed=1)) == 20


def test_automatic_batch_sizes_follow_the_dp_row_count(small, adult_schema):
    """Without batch sizes, each phase takes the data-following batch of dpsynth.models.phase (recorded in budget_):
    on 1,000 rows and 4 epochs the autoencoder shrinks its batch to 20 rows to take its 200 steps; the GAN phase
    would need 4-row batches for its 1,000 steps and stops at the smallest batch, 16."""
    from dpsynth.models.dp_auto_gan import LARGEST_BATCH, MIN_STEPS
    from dpsynth.models.phase import SMALLEST_BATCH, choose_batch_size

    epochs = 4.0
    params = {**FAST, "autoencoder_batch_size": None, "gan_batch_size": None, "autoencoder_epochs": epochs,
              "gan_epochs": epochs}
    model = DPAutoGAN(**params).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    n_dp = model.metadata_.n_rows
    for phase in ("autoencoder", "gan"):
        plan = model.budget_["phases"][phase]
        expected = choose_batch_size(n_dp, epochs=epochs, largest=LARGEST_BATCH, min_steps=MIN_STEPS[phase])
        assert plan["batch_size"] == expected < LARGEST_BATCH
        assert plan["sample_rate"] == pytest.approx(expected / n_dp)
        assert plan["steps"] == math.ceil(epochs / plan["sample_rate"])
        assert plan["steps"] >= MIN_STEPS[phase] or plan["batch_size"] == SMALLEST_BATCH
    assert model.budget_["phases"]["autoencoder"]["batch_size"] > SMALLEST_BATCH


def test_non_private_mode(small, adult_schema):
    model = DPAutoGAN(**FAST).fit(small, epsilon=math.inf, delta=1e-5, schema=adult_schema, seed=0)
    assert math.isinf(model.ledger_.epsilon())
    assert model.budget_["phases"]["autoencoder"]["noise_multiplier"] == 0.0
    assert model.budget_["phases"]["gan"]["noise_multiplier"] == 0.0
    synth = model.sample(200, seed=1)
    assert list(synth.columns) == model.schema_.names and len(synth) == 200


def test_save_load_same_samples_and_nothing_else(fitted_with_spy, tmp_path):
    model, _ = fitted_with_spy
    path = model.save(tmp_path / "m.dpsynth")
    tensors, header = read_model_file(path)
    assert {k.split(".")[0] for k in tensors} == {"generator", "decoder"}  # no encoder, no critic, no rows
    assert "fit_seconds" not in str(header)  # a timing side channel of the row count
    loaded = DPAutoGAN.load(path)
    pd.testing.assert_frame_equal(loaded.sample(500, seed=3), model.sample(500, seed=3))
    assert not model.sample(50, seed=3).equals(model.sample(50, seed=4))


@pytest.mark.slow(reason="a second full fit: ~10 s alone; the packaged contract checks refits already")
def test_fit_is_reproducible_from_its_seed(small, adult_schema, fitted_with_spy):
    model, _ = fitted_with_spy
    again = DPAutoGAN(**FAST).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    pd.testing.assert_frame_equal(again.sample(100, seed=5), model.sample(100, seed=5))


@pytest.mark.parametrize("bad", [{"encoder": "plain"}, {"critic_loss": "hinge"}, {"autoencoder_share": 1.0},
                                 {"autoencoder_epochs": 0}, {"gumbel_tau": -1.0},
                                 {"calibration_accountant": "gdp"}])
def test_bad_parameters_are_refused(bad):
    from dpsynth.errors import InputError

    with pytest.raises(InputError):
        DPAutoGAN(**{**FAST, **bad}).check_params()  # run by fit before any budget is spent


def test_audit_of_the_model_dpsgd_phases(fitted_with_spy):
    """White-box one-run audit (Dirac canaries) of each DP-SGD phase at the model's own (q, sigma, C): eps_LB must
    not exceed the epsilon the ledger charges for that configuration."""
    from dpsynth.privacy.audit import audit_dpsgd
    from dpsynth.privacy.ledger import PrivacyLedger

    _, spy = fitted_with_spy
    for phase, engine in spy.engines:
        ledger = PrivacyLedger(target_epsilon=1e6, target_delta=1e-5)
        result = audit_dpsgd(engine.config, ledger=ledger, m=500, steps=200, seed=0)
        assert 0 < ledger.epsilon() < math.inf
        assert result.eps_lower_bound <= ledger.epsilon(), phase


# The black-box audit's model: FAST with ~100x the steps (~3000 autoencoder, ~1500 critic steps of 32 of ~824 rows;
# ~10 s), enough for the non-private GAN to reproduce most of the rare rows it saw.
AUDIT_PARAMS = {**FAST, "autoencoder_epochs": 116.5, "gan_epochs": 58.3}


def _canary_audit(adult, adult_schema, epsilon, match_marginals):
    params = {**AUDIT_PARAMS, "match_marginals": match_marginals}
    return run_audit(lambda data: DPAutoGAN(**params).fit(data, epsilon=epsilon, delta=1e-5, schema=adult_schema,
                                                          seed=0), adult, adult_schema, seed=0)


@pytest.mark.parametrize("match_marginals", [True, pytest.param(False, marks=[  # the same audit, without the map
    pytest.mark.slow(reason="a second audited fit, about 12 s"), pytest.mark.ci])])
def test_black_box_canary_audit(adult_schema, adult, match_marginals):
    """One-run canary audit of the whole model (Steinke et al. 2023; tests/models/_canary.py): 40 real Adult rows,
    one per non-US country, each included w.p. 1/2 in a US-only base table; score = synthetic rows carrying the
    canary's country. eps_LB must stay below the ledger's epsilon. Measured: eps_LB 0.0 (9/15 correct with the
    marginal map, 8/15 without)."""
    result, model, _, _ = _canary_audit(adult, adult_schema, 1.0, match_marginals)
    assert 0 < model.ledger_.epsilon() <= 1.0
    assert result.guesses == 15
    assert result.eps_lower_bound <= model.ledger_.epsilon()


@pytest.mark.slow(reason="the audit's power check: a noise-off fit and its audit, about 15 s")
@pytest.mark.ci
def test_black_box_canary_audit_has_power(adult_schema, adult):
    """The same audit (canaries, score, guesses) on the non-private mode: it must reject the DP run's epsilon = 1,
    so the DP assertion above is one that can fail. Measured: 15/15 correct, eps_LB 1.51 (the largest 15 guesses can
    give), against 0.0 at epsilon = 1; in 20,000 synthetic rows the GAN reproduces the country of 20 of the 24
    included canaries (the 15th guess: 7 rows) and of none of the 16 excluded ones.
    Run without the marginal map: with it (argmax mode), the weight fit of marginal_map.py gives countries absent
    from the training rows up to 3,280 of the 20,000 rows here (10/15 correct, eps_LB 0.0), which buries the signal."""
    result, model, _, _ = _canary_audit(adult, adult_schema, math.inf, False)
    assert math.isinf(model.ledger_.epsilon())
    assert result.correct == result.guesses == 15
    assert result.eps_lower_bound > 1.0


@pytest.mark.slow(reason="full Adult at the default settings: minutes; benchmarks/adult_quality.py measures it")
def test_adult_quality_at_epsilon_one(adult):
    """Defaults on the full Adult train split at epsilon = 1 (minutes): XGBoost on synthetic, tested on adult.test."""
    from dpsynth import datasets

    train, test = adult
    model = DPAutoGAN().fit(train, epsilon=1.0, delta=1e-5, schema=datasets.schema("adult"), seed=0)
    synth = model.sample(len(train), seed=1)
    assert model.ledger_.epsilon() <= 1.0
    # fit and sample times (issue 5: fit <= 10 min, >= 50,000 rows/s) are measured by benchmarks/adult_quality.py,
    # not asserted here: they depend on the machine's speed that day, the quality targets below do not
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    from adult_quality import utility

    scores = utility(synth, test)
    # measured (seeds 0, 1): XGBoost AUC 0.871 / 0.871, accuracy 0.822 / 0.818; margin for seed variance
    assert scores["xgb_auc"] >= 0.84 and scores["xgb_acc"] >= 0.79, scores


def test_automatic_widths_follow_the_encoded_width(tmp_path):
    """The width rule (dpsynth.models.phase.choose_width): known answers, and a 3-column table (encoded in a few
    numbers) gets 32-unit autoencoder and critic layers, kept through save/load; Adult's 114 keeps (64,), (70, 35)."""
    from dpsynth.data.schema import Column, Schema
    from dpsynth.models.phase import choose_width

    assert [choose_width(w, tuned=128) for w in (1, 20, 33, 64, 65, 114, 500)] == [32, 32, 64, 64, 128, 128, 128]
    assert choose_width(114, tuned=64) == 64 and choose_width(114, tuned=70) == 70
    with pytest.raises(InputError):
        choose_width(0, tuned=64)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.choice(["x", "y"], 600), "b": rng.normal(size=600),
                          "c": rng.choice(["u", "v"], 600)})
    schema = Schema((Column("a", "categorical", categories=("x", "y")), Column("b", "continuous", lower=-4, upper=4),
                     Column("c", "categorical", categories=("u", "v")))).reviewed()
    params = {k: v for k, v in FAST.items() if k not in ("autoencoder_hidden", "critic_hidden")}
    model = DPAutoGAN(**params).fit(frame, epsilon=1.0, delta=1e-5, schema=schema, seed=0)
    assert model.transformer_.output_dim <= 32
    assert [m.out_features for m in model.decoder_.modules() if isinstance(m, torch.nn.Linear)][0] == 32
    assert model._widths(model.transformer_.output_dim) == ((32,), (32, 16))  # the critic is dropped after fit
    loaded = DPAutoGAN.load(model.save(tmp_path / "narrow.dpsynth"))
    pd.testing.assert_frame_equal(loaded.sample(50, seed=1), model.sample(50, seed=1))
    assert DPAutoGAN()._widths(114) == ((64,), (70, 35))
