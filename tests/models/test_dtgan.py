"""DTGAN_D (seed 002) on the conditional WGAN-GP core: one guarantee per test.

The Synthesizer contract (fit / sample / save / load / seeds / non-private mode) runs for every registered model in
tests/models/test_contract.py, the noise-off audit in test_noise_off_audits.py; here: the core's pieces and the
model's privacy wiring, on small Adult slices with tiny settings.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpsynth.data.row_store import EncodedRows
from dpsynth.data.transformers import TableTransformer
from dpsynth.errors import InputError
from dpsynth.models import get_model_class
from dpsynth.models._conditional_gan import Conditions, discriminator_units, slerp, target_span, unit_loss
from dpsynth.models.dtgan import DTGANDiscriminator, DTGANGenerator
from dpsynth.models.networks.ctgan import ConditionalGenerator
from dpsynth.models.networks.gan import Critic
from dpsynth.privacy.per_example import per_example_grads

FAST = dict(DTGANDiscriminator.fast_params)
_READ, _CLOSE = EncodedRows.__getitem__, EncodedRows.close


@pytest.fixture(scope="module")
def small(adult):
    train, _ = adult
    return train.sample(1000, random_state=1).reset_index(drop=True)


@pytest.fixture(scope="module")
def fitted(small, adult_schema):
    return DTGANDiscriminator(**FAST).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)


@pytest.fixture(scope="module")
def encoded(small, adult_schema):
    transformer = TableTransformer(adult_schema, numeric="mode_specific", max_modes=3).fit(None, rng=0)
    x = torch.as_tensor(transformer.transform(small, rng=0), dtype=torch.float32)
    return transformer, x


def test_registered_by_name():
    assert get_model_class("dtgan-d") is DTGANDiscriminator


def test_slerp_ends_on_its_endpoints_and_stays_on_the_sphere():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 7, generator=g), torch.randn(64, 7, generator=g)
    a, b = a / a.norm(dim=1, keepdim=True), b / b.norm(dim=1, keepdim=True)
    assert torch.allclose(slerp(a, b, torch.zeros(64, 1)), a, atol=1e-5)
    assert torch.allclose(slerp(a, b, torch.ones(64, 1)), b, atol=1e-5)
    t = torch.rand(64, 1, generator=g)
    mid = slerp(a, b, t)
    assert torch.allclose(mid.norm(dim=1), torch.ones(64), atol=1e-4)  # unit vectors stay unit (a lerp would not)
    angle = torch.acos((a * b).sum(1).clamp(-1, 1))
    assert torch.allclose(torch.acos((a * mid).sum(1).clamp(-1, 1)), t.squeeze(1) * angle, atol=1e-3)
    assert torch.allclose(slerp(a, 2 * a, t), a + t * a, atol=1e-5)  # parallel rows: the linear interpolate


def test_conditions_are_read_off_each_row(encoded):
    transformer, x = encoded
    conditions = Conditions(transformer)
    cond = conditions.from_rows(x[:500], torch.Generator().manual_seed(0))
    assert cond.shape == (500, conditions.dim) and torch.all(cond.sum(1) == 1)  # one span, one slot, per row
    chosen = []
    for j, span in enumerate(conditions.spans):
        block = cond[:, conditions.offsets[j]:conditions.offsets[j + 1]]
        rows = block.sum(1) == 1
        assert torch.equal(block[rows], x[:500][rows, span.start:span.end])  # the row's own category
        chosen.append(int(rows.sum()))
    assert min(chosen) > 0  # every span gets chosen (uniformly: ~500 / 9 each)


def test_a_unit_depends_on_its_own_row_only(encoded):
    """Row i's (real, fake, cond, mixed) and its per-example gradient are unchanged when another row changes: the
    clipped unit holds everything that depends on row i, and nothing of the other rows (no batch statistics)."""
    transformer, x = encoded
    conditions = Conditions(transformer)
    spans = [(s.start, s.end, s.activation) for s in transformer.output_info]
    torch.manual_seed(0)
    gen_net = ConditionalGenerator(8, conditions.dim, (16,), x.shape[1])
    gen_net.train()
    critic = Critic(x.shape[1] + conditions.dim, (16,))
    rows = x[:32].clone()
    other = rows.clone()
    other[5] = x[100]

    def units(batch):
        return discriminator_units(batch, gen_net, conditions, spans, noise_dim=8, gumbel_tau=0.2,
                                   generator=torch.Generator().manual_seed(1))

    a, b = units(rows), units(other)
    keep = torch.arange(32) != 5
    for ta, tb in zip(a, b):
        assert torch.equal(ta[keep], tb[keep])
    assert not torch.equal(a[0][5], b[0][5])
    assert gen_net.training  # restored
    grads_a = per_example_grads(critic, unit_loss(10.0), a)[0]
    grads_b = per_example_grads(critic, unit_loss(10.0), b)[0]
    for name in grads_a:
        assert torch.allclose(grads_a[name][keep], grads_b[name][keep])
        assert grads_a[name].shape[0] == 32


def test_ledger_within_target_and_phases_composed(fitted):
    ledger = fitted.ledger_
    assert 0 < ledger.epsilon() <= 1.0
    by_phase = {e.phase: e for e in ledger.entries if e.mechanism == "dp-sgd"}
    assert set(by_phase) == {"classifier", "gan"}  # Adult's target is categorical: the classifier is on
    for phase in ("classifier", "gan"):
        entry, info = by_phase[phase], fitted.budget_["phases"][phase]
        assert entry.count == info["steps_taken"] > 0
        assert entry.params["clipping"] == "per_example" and info["noise_multiplier"] > 0
        q = min(1.0, FAST[f"{phase}_batch_size"] / fitted.metadata_.n_rows)  # from the DP row count
        assert entry.params["sample_rate"] == pytest.approx(q)
        assert entry.params["n_rows"] == pytest.approx(fitted.metadata_.n_rows)
    assert fitted.budget_["phases"]["gan"]["generator_steps"] == by_phase["gan"].count // FAST["critic_iters"]


def test_epochs_count_at_most_work_rows_so_the_steps_stop_growing_with_the_rows():
    """dpsynth.models.phase.WORK_ROWS: up to 250,000 DP rows an epoch is a pass (Census KDD's plan unchanged);
    above, WORK_ROWS / B steps, so 1M and 10M rows plan the same steps, each at a smaller rate and less noise."""
    from dpsynth.models.phase import WORK_ROWS, DPPhase
    from dpsynth.privacy.ledger import PrivacyLedger

    def plan(n_dp: float):
        ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-6)
        return DPPhase("vae", ledger=ledger, n_dp=n_dp, epochs=3.0, batch_size=None, largest_batch=4096,
                       min_steps=100, target_epsilon=1.0, max_grad_norm=1.0, accountant="rdp", rtol=0.01).plan

    census, at_cap, million, ten_million = (plan(n) for n in (199_523.0, WORK_ROWS, 1e6, 1e7))
    assert census.steps == math.ceil(3.0 / (4096 / 199_523)) == 147  # a pass per epoch, as before the cap
    assert at_cap.steps == math.ceil(3.0 * WORK_ROWS / 4096) == million.steps == ten_million.steps == 184
    assert million.sample_rate == pytest.approx(4096 / 1e6) and ten_million.sample_rate == pytest.approx(4096 / 1e7)
    assert ten_million.noise_multiplier < million.noise_multiplier < at_cap.noise_multiplier


def test_the_step_caps_bound_both_phases_and_the_noise_follows_the_capped_plan(small, adult_schema):
    from dpsynth.models.phase import DPPhase
    from dpsynth.privacy.ledger import PrivacyLedger

    # Census KDD's DP row count with the default sizing: 24 passes at batch 512 would be 9,353 critic steps
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-6)
    common = dict(ledger=ledger, n_dp=199_523.0, epochs=24.0, batch_size=None, largest_batch=512, min_steps=1000,
                  target_epsilon=1.0, max_grad_norm=1.0, accountant="rdp", rtol=0.01)
    uncapped, capped = DPPhase("gan", **common), DPPhase("gan", max_steps=2000, **common)
    assert uncapped.plan.steps == math.ceil(24 / (512 / 199_523)) == 9353
    assert capped.plan.steps == 2000 and capped.plan.sample_rate == uncapped.plan.sample_rate
    assert capped.plan.noise_multiplier < uncapped.plan.noise_multiplier  # fewer steps: less noise for the budget
    with pytest.raises(InputError, match="max_steps"):
        DPPhase("gan", max_steps=0, **common)
    # a fit takes the capped plan, and the ledger charges exactly the capped steps (1000 rows, batch 32: 32 steps)
    model = DTGANDiscriminator(**{**FAST, "gan_max_steps": 9, "classifier_max_steps": 4})
    model.fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    by_phase = {e.phase: e.count for e in model.ledger_.entries if e.mechanism == "dp-sgd"}
    assert by_phase == {"gan": 9, "classifier": 4}
    assert model.budget_["phases"]["gan"]["steps"] == 9 and model.ledger_.epsilon() <= 1.0


def _fit_from(source, schema, monkeypatch, **params):
    """A fit of dtgan-d with the minmax encoding (no random draws), recording every read of the rows on disk and
    the whole encoded matrix before the store is removed."""
    reads, kept = [], {}

    def keep_and_close(self):
        kept["x"] = _READ(self, np.arange(len(self)))
        _CLOSE(self)

    monkeypatch.setattr(EncodedRows, "__getitem__", lambda self, idx: reads.append(len(idx)) or _READ(self, idx))
    monkeypatch.setattr(EncodedRows, "close", keep_and_close)
    model = DTGANDiscriminator(**{**FAST, "numeric": "minmax", **params})
    model.fit(source, epsilon=1.0, delta=1e-5, schema=schema, seed=0)
    return model, reads, kept.get("x")


def _plan(model):
    keys = ("batch_size", "sample_rate", "steps", "steps_taken", "noise_multiplier")
    return {phase: {k: info[k] for k in keys} for phase, info in model.budget_["phases"].items()}


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_fit_from_a_file_trains_on_the_rows_on_disk_with_the_frame_fits_plan(small, adult_schema, tmp_path,
                                                                                monkeypatch, suffix):
    from dpsynth.data.frame import conform

    path = tmp_path / f"adult{suffix}"
    small.to_parquet(path) if suffix == ".parquet" else small.to_csv(path, index=False)
    from_frame, frame_reads, _ = _fit_from(small, adult_schema, monkeypatch)
    from_file, reads, encoded = _fit_from(str(path), adult_schema, monkeypatch, backend="duckdb")
    assert frame_reads == []  # a frame fit keeps its rows in memory
    # the same metadata release (same code, same draws), hence the same plan, noise and ledger
    assert from_file.metadata_.n_rows == from_frame.metadata_.n_rows
    assert _plan(from_file) == _plan(from_frame)
    assert from_file.ledger_.epsilon() == pytest.approx(from_frame.ledger_.epsilon())
    # each DP-SGD step reads its Poisson sample, and nothing else, from disk
    steps = sum(info["steps_taken"] for info in from_file.budget_["phases"].values())
    assert len(reads) == steps and sum(reads) < 0.2 * steps * len(small)
    # the rows on disk are the frame path's encoding, row by row
    expected = from_file.transformer_.transform(conform(small, adult_schema), rng=np.random.default_rng(0))
    np.testing.assert_allclose(encoded.numpy(), expected, rtol=1e-6, atol=1e-6)
    assert from_file.marginal_map_ is not None  # the marginal map is fitted after an engine fit too
    synthetic = from_file.sample(300, seed=1)
    assert list(synthetic.columns) == list(adult_schema.names) and len(synthetic) == 300


@pytest.mark.slow(reason="two dtgan-d fits through the CLI, about 9 s")
@pytest.mark.ci
def test_the_cli_fits_dtgan_d_from_a_file_without_loading_it(small, adult_schema, tmp_path, pandas_loader_refused):
    import json

    from dpsynth.cli.main import main
    from dpsynth.models import load_model

    data, schema_file, out = tmp_path / "adult.parquet", tmp_path / "schema.json", tmp_path / "m.dpsynth"
    small.to_parquet(data)
    adult_schema.save(schema_file)
    params = [arg for k, v in FAST.items() for arg in ("--param", f"{k}={json.dumps(v)}")]
    assert main(["fit", str(data), "--model", "dtgan-d", "--backend", "duckdb", "--schema", str(schema_file),
                 "--epsilon", "1", "--out", str(out), "--quiet", "--seed", "3", *params]) == 0
    model = load_model(out)
    reference = DTGANDiscriminator(**FAST).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=3)
    assert _plan(model) == _plan(reference)  # the same DP metadata, plan and noise as the library's frame fit
    assert len(model.sample(200, seed=0)) == 200


@pytest.mark.parametrize("name", ["dtgan-g", pytest.param("dp-sactgan", marks=[
    pytest.mark.slow(reason="two attention-GAN fits, about 10 s; dtgan-g covers the shared path"), pytest.mark.ci])])
def test_the_sanitized_generator_models_fit_a_file_as_they_fit_the_frame(name, small, adult_schema, tmp_path):
    path = tmp_path / "adult.parquet"
    small.to_parquet(path)
    cls = get_model_class(name)
    params = {**cls.fast_params, "numeric": "minmax"}
    from_frame = cls(**params).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    from_file = cls(**params, backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    assert from_file.budget_ == from_frame.budget_  # same metadata, phases, steps, noise and composed epsilon
    assert len(from_file.sample(100, seed=0)) == 100


def test_only_the_models_that_read_tables_take_a_path(small, adult_schema, tmp_path):
    path = tmp_path / "adult.parquet"
    small.to_parquet(path)
    with pytest.raises(InputError, match="backend='duckdb' or 'spark'"):
        DTGANDiscriminator(**FAST).fit(str(path), epsilon=1.0, delta=1e-5, schema=adult_schema)
    frames_only = get_model_class("gaussian-copula")  # every DP model reads tables; a non-private reference does not
    with pytest.raises(InputError, match="dtgan-d"):  # the message names the models that do
        frames_only(**dict(frames_only.fast_params)).fit(str(path), epsilon=float("inf"), delta=1e-5,
                                                         schema=adult_schema)
    with pytest.raises(InputError, match="backend must be one of"):
        DTGANDiscriminator(backend="polars").check_params()


def test_a_spark_frame_is_fitted_as_the_parquet_file_is(spark, small, adult_schema, tmp_path, monkeypatch):
    path = tmp_path / "adult.parquet"
    small.to_parquet(path)
    from_file, _, encoded = _fit_from(str(path), adult_schema, monkeypatch, backend="duckdb")
    on_spark, _, encoded_spark = _fit_from(spark.read.parquet(str(path)), adult_schema, monkeypatch, backend="spark")
    assert _plan(on_spark) == _plan(from_file)
    np.testing.assert_allclose(encoded_spark.numpy(), encoded.numpy())


def test_the_classifier_is_off_without_a_categorical_target_or_share(small, adult_schema):
    model = DTGANDiscriminator(**{**FAST, "classifier_share": 0.0}).fit(small, epsilon=1.0, delta=1e-5,
                                                                        schema=adult_schema, seed=0)
    assert {e.phase for e in model.ledger_.entries if e.mechanism == "dp-sgd"} == {"gan"}
    transformer = TableTransformer(adult_schema, max_modes=3).fit(None, rng=0)
    assert target_span(transformer, "age") is None and target_span(transformer, None) is None
    assert target_span(transformer, "income").column == "income"


def test_only_the_generator_is_saved(fitted, tmp_path):
    from dpsynth.models.base import read_model_file

    tensors, header = read_model_file(fitted.save(tmp_path / "m.dpsynth"))
    assert tensors and all(k.startswith("generator.") for k in tensors)
    assert set(header["state"]["budget"]["phases"]) == {"classifier", "gan"}


def test_non_private_mode_trains_without_noise(small, adult_schema):
    model = DTGANDiscriminator(**FAST).fit(small, epsilon=math.inf, delta=1e-5, schema=adult_schema, seed=0)
    assert math.isinf(model.epsilon_)
    assert len(model.sample(50, seed=0)) == 50


def test_non_private_sanitized_models_use_one_discriminator(small, adult_schema):
    """The papers' non-private references: no sanitizer noise and one discriminator on all rows (shards only
    amplify privacy); the DP fit keeps its shards."""
    fast = DTGANGenerator.fast_params
    ref = DTGANGenerator(**fast).fit(small, epsilon=math.inf, delta=1e-5, schema=adult_schema, seed=0)
    dp = DTGANGenerator(**fast).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    assert ref.budget_["phases"]["generator"]["n_shards"] == 1
    assert ref.budget_["phases"]["generator"]["noise_multiplier"] == 0.0
    assert dp.budget_["phases"]["generator"]["n_shards"] == fast["n_shards"] > 1


@pytest.mark.parametrize("bad", [{"numeric": "log"}, {"classifier_share": 1.0}, {"calibration_accountant": "x"},
                                 {"gp_weight": -1.0}, {"generator_hidden": ()}])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(InputError):
        DTGANDiscriminator(**bad).check_params()


def test_generated_rows_follow_the_dp_category_counts(fitted):
    """Sampling conditions come from the DP counts, and the logits are reweighted to them: income's share of
    '>50K' in 4,000 rows is within 0.1 of the DP count's (a loose bound: an epsilon = 1 fit of 1,000 rows)."""
    rows = fitted.sample(4000, seed=1)
    hist = fitted.metadata_.histograms["income"]
    counts = dict(zip(hist.categories, np.maximum(np.asarray(hist.counts, dtype=float), 0)))
    share = counts[">50K"] / sum(counts.values())
    assert abs((rows["income"] == ">50K").mean() - share) < 0.1


# ---------------------------------------------------------------------------------------------------- DTGAN_G
FAST_G = dict(get_model_class("dtgan-g").fast_params)


def test_dtgan_g_generator_sees_the_rows_only_through_the_sanitizer(small, adult_schema, monkeypatch):
    """Every generator step is a charged sanitizer step whose hook clips and noises the discriminator's gradient on
    the generated rows (one call per step, at most B rows); the ledger holds the shard event at the calibrated sigma
    and composes to at most the target, close to it (the calibration spends what is left)."""
    from dp_accounting import dp_event

    from dpsynth.privacy.sanitizer import GradientSanitizer

    calls = []
    real = GradientSanitizer.sanitize

    def spy(self, grad):
        calls.append(tuple(grad.shape))
        return real(self, grad)

    monkeypatch.setattr(GradientSanitizer, "sanitize", spy)
    model = get_model_class("dtgan-g")(**FAST_G).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    assert 0.9 <= model.epsilon_ <= 1.0
    entry = next(e for e in model.ledger_.entries if e.phase == "generator")
    info = model.budget_["phases"]["generator"]
    assert entry.mechanism == "gradient-sanitizer" and entry.count == info["steps_taken"] == FAST_G["generator_steps"]
    assert len(calls) == entry.count and all(shape[0] <= FAST_G["batch_size"] for shape in calls)
    assert entry.params["n_shards"] == FAST_G["n_shards"] and entry.params["noise_multiplier"] > 1
    event = entry.event
    assert isinstance(event, dp_event.SampledWithoutReplacementDpEvent)
    assert event.sample_size == 1 and event.source_dataset_size == FAST_G["n_shards"]
    assert event.event.noise_multiplier == pytest.approx(info["noise_multiplier"] / math.sqrt(FAST_G["batch_size"]))



# ---------------------------------------------------------------------------------------------------- DP-SACTGAN
FAST_S = dict(get_model_class("dp-sactgan").fast_params)


def test_attention_critic_has_a_gradient_penalty_and_no_batch_statistics():
    """The penalty differentiates the critic's input gradient (a double backward through attention), and a row's
    score does not depend on the other rows of the batch (layer normalisation only)."""
    from dpsynth.models._conditional_gan import batched_wgan_gp_loss
    from dpsynth.models.networks.ctgan import AttentionCritic, AttentionGenerator

    torch.manual_seed(0)
    blocks = [(0, 3), (3, 5), (5, 9), (9, 11)]  # three columns and a condition block
    critic = AttentionCritic(blocks, 8, 2, 2)
    rows = torch.randn(16, 11)
    other = rows.clone()
    other[3] = torch.randn(11)
    keep = torch.arange(16) != 3
    assert torch.allclose(critic(rows)[keep], critic(other)[keep], atol=1e-6)
    assert torch.allclose(critic(rows[5]), critic(rows)[5], atol=1e-6)  # one example at a time gives the same
    units = (torch.randn(16, 9), torch.randn(16, 9), torch.randn(16, 2), torch.randn(16, 9))
    loss = batched_wgan_gp_loss(critic, units, 10.0)
    grads = torch.autograd.grad(loss, list(critic.parameters()), allow_unused=True)
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    generator = AttentionGenerator(4, 2, blocks[:3], 8, 2, 1)
    assert generator(torch.randn(5, 4), torch.randn(5, 2)).shape == (5, 9)


def test_dp_sactgan_generates_the_same_rows_whatever_its_sampling_batch(small, adult_schema):
    """Sampling runs the generator on ``generate_batch`` rows at a time (512 for the attention generator, for the
    cache): with no batch statistics, the batch size changes no generated value."""
    cls = get_model_class("dp-sactgan")
    model = cls(**FAST_S).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0, progress=False)
    assert cls.generate_batch < DTGANGenerator.generate_batch
    n = 3 * cls.generate_batch + 7  # a ragged last batch
    by_default = model._generate(n, torch.Generator().manual_seed(5))
    model.generate_batch = 4 * cls.generate_batch  # one batch holds every row
    in_one_batch = model._generate(n, torch.Generator().manual_seed(5))
    np.testing.assert_allclose(by_default, in_one_batch, rtol=1e-4, atol=1e-5)


def test_the_written_out_attention_softmax_equals_torch_softmax_in_value_and_gradients():
    """Values, first and second derivatives (the penalty's double backward) equal torch.softmax's, also for scores
    large enough to overflow exp without the shift."""
    from dpsynth.models.networks.ctgan import _softmax_last

    torch.manual_seed(1)
    scores = (torch.randn(3, 2, 15, 15, dtype=torch.float64) * 40.0 + 300.0).requires_grad_(True)
    weights = torch.randn(3, 2, 15, 15, dtype=torch.float64)
    ours, theirs = _softmax_last(scores), torch.softmax(scores, dim=-1)
    torch.testing.assert_close(ours, theirs)
    g_ours, = torch.autograd.grad((ours * weights).sum(), scores, create_graph=True)
    g_theirs, = torch.autograd.grad((theirs * weights).sum(), scores, create_graph=True)
    torch.testing.assert_close(g_ours, g_theirs)
    h_ours, = torch.autograd.grad(g_ours.pow(2).sum(), scores)
    h_theirs, = torch.autograd.grad(g_theirs.pow(2).sum(), scores)
    torch.testing.assert_close(h_ours, h_theirs)


def test_dp_sactgan_single_discriminator_is_accounted_at_q_one(small, adult_schema):
    """n_shards=1 (seed 000's one discriminator on all rows): no amplification, the plain Gaussian of multiplier
    sigma / sqrt(B) per step, with a warning; the calibration then needs far more noise than with shards."""
    from dp_accounting import dp_event

    with pytest.warns(UserWarning, match="no subsampling amplification"):
        one = get_model_class("dp-sactgan")(**{**FAST_S, "n_shards": 1}).fit(small, epsilon=1.0, delta=1e-5,
                                                                             schema=adult_schema, seed=0)
    entry = next(e for e in one.ledger_.entries if e.phase == "generator")
    assert isinstance(entry.event, dp_event.GaussianDpEvent)
    assert 0.9 <= one.epsilon_ <= 1.0
    sharded = get_model_class("dp-sactgan")(**FAST_S).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    assert (one.budget_["phases"]["generator"]["noise_multiplier"]
            > 1.5 * sharded.budget_["phases"]["generator"]["noise_multiplier"])


def test_pacgan_packs_the_shard_discriminators(adult_small, adult_schema):
    """pac = 2: each discriminator scores packs of two rows (input width doubled, one score per pack) for both
    sanitized-generator models; a batch that is not a multiple of pac is refused up front."""
    import torch

    from dpsynth.errors import InputError
    from dpsynth.models import get_model_class
    from dpsynth.models._conditional_gan import Conditions
    from dpsynth.models.networks.ctgan import Packed

    for name in ("dtgan-g", "dp-sactgan"):
        cls = get_model_class(name)
        model = cls(**{**cls.fast_params, "pac": 2}).fit(adult_small, epsilon=1.0, delta=1e-5, schema=adult_schema,
                                                         seed=0)
        assert len(model.sample(50, seed=1)) == 50 and model.ledger_.epsilon() <= 1.0 + 1e-9
        data_dim, cond_dim = model.transformer_.output_dim, Conditions(model.transformer_).dim
        critic = model._new_critic(data_dim, cond_dim, (8,), pac=2)
        assert isinstance(critic, Packed) and critic(torch.zeros(6, data_dim + cond_dim)).shape == (3,)
        with pytest.raises(InputError, match="multiple of pac"):
            cls(**{**cls.fast_params, "pac": 3}).fit(adult_small, epsilon=1.0, delta=1e-5, schema=adult_schema)
