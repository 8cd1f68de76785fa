"""Audit (DESIGN.md §1 rule 7): eps_LB <= epsilon for the DP marginals model in an audit that CAN fail (its largest
achievable eps_LB exceeds the claim), a broken variant (noise off) and the non-private mode that do fail it, and
audits without power that say so."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsynth.attacks.audit import (
    audit_model,
    audit_schema,
    craft_canary,
    max_achievable_eps_lb,
    novelty_rules,
    parse_model_spec,
)
from dpsynth.attacks.shadow import ModelFactory
from dpsynth.errors import InputError

# small enough that 16 fits (~0.5 s each) can refute it: a perfect attack on 8 + 8 fits gives eps_LB 0.535
CLAIM = 0.3
N_FITS = 16


class ForgotTheNoise:
    """A deliberately broken 'epsilon = CLAIM' marginals model: it fits without noise (epsilon = inf)."""

    def __call__(self, train: pd.DataFrame, seed: int, n: int | None = None, schema=None) -> pd.DataFrame:
        from dpsynth.models.marginals import Marginals

        model = Marginals().fit(train, epsilon=math.inf, delta=0.0, schema=schema, seed=seed)
        return model.sample(n or len(train), seed=seed + 1)


def copy_generator(train: pd.DataFrame, seed: int, n: int | None = None) -> pd.DataFrame:
    """Releases (a shuffle of) its training rows: the most leaky generator, and a cheap one."""
    n = len(train) if n is None else n
    return train.sample(n, replace=n > len(train), random_state=seed).reset_index(drop=True)


class DataDependentEpsilon(ModelFactory):
    """A model whose ledger epsilon depends on its training rows: 0.5, but 2.0 when the row count is odd."""

    class _Model:
        def __init__(self, train):
            self.train, self.epsilon_ = train, 2.0 if len(train) % 2 else 0.5

        def sample(self, n, seed=None):
            return copy_generator(self.train, seed or 0, n)

    def fit(self, train_df, seed, *, progress=False):
        return self._Model(train_df)


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], n), "size": rng.integers(0, 10, n)})


def fixed_generator(train: pd.DataFrame, seed: int, n: int | None = None) -> pd.DataFrame:
    """Ignores its training rows: leaks nothing."""
    return _table(len(train) if n is None else n, 1)


@pytest.fixture(scope="module")
def small_table():
    return _table(400, 0)


def test_parse_model_spec():
    assert parse_model_spec("marginals") == ("marginals", {})
    assert parse_model_spec("dp-tldm:epochs=3,clip=per_example,lr=0.001") == (
        "dp-tldm", {"epochs": 3, "clip": "per_example", "lr": 0.001})
    with pytest.raises(InputError, match="key=value"):
        parse_model_spec("marginals:epochs")


def test_max_achievable_eps_lb_pins():
    # perfect attacks: Clopper-Pearson at alpha 0.05 (both rates at alpha/2), and the one-run bound
    bound = max_achievable_eps_lb("in-out", alpha=0.05, delta=1e-5, n_pos=10, n_neg=10)
    assert bound == pytest.approx(0.8068, abs=1e-3)
    assert max_achievable_eps_lb("in-out", alpha=0.05, delta=1e-5, n_pos=5, n_neg=5) == 0.0
    assert max_achievable_eps_lb("one-run", alpha=0.05, delta=1e-5, m=40, guesses=15) == pytest.approx(1.508, abs=1e-3)


def test_canary_is_novel_with_the_public_schema(adult, adult_schema):
    train, _ = adult
    base = train.sample(200, random_state=0)
    canary = craft_canary(base, adult_schema)
    assert list(canary.columns) == list(base.columns) and len(canary) == 1
    assert len(novelty_rules(base, canary)) >= 5  # several columns carry values D0 lacks


def test_without_a_schema_the_audit_declares_room_for_its_canary(adult):
    train, _ = adult
    base = train.sample(200, random_state=0).reset_index(drop=True)
    schema = audit_schema(base)
    canary = craft_canary(base, schema)
    rules = {c: op for c, op, _ in novelty_rules(base, canary)}
    assert set(rules) == set(base.columns)  # every column: a fresh category, or a number above D0's range
    for col in schema.columns:
        value = canary[col.name].iloc[0]
        if col.is_discrete:
            assert value in col.categories and value not in set(base[col.name])
        else:
            assert base[col.name].max() < value <= col.upper
    schema.validate(pd.concat([base, canary], ignore_index=True))


def test_no_novel_value_means_no_power(small_table):
    from dpsynth.data.schema import Column, Schema

    full = Schema((Column("colour", "categorical", categories=("blue", "green", "red")),
                   Column("size", "integer", lower=0, upper=9)))
    # every category present and the numeric bound reached: the canary holds no value D0 lacks. A generator that
    # leaks nothing passes - but the audit must not call that "consistent"
    audit = audit_model(fixed_generator, small_table, epsilon=1.0, schema=full, mode="in-out", attack="hamming",
                        n_fits=40, executor="sequential")
    assert audit.novel_values == 0 and audit.max_eps_lb > 1.0 and audit.eps_lb == 0.0
    assert audit.verdict == "no-power" and not audit.has_power and audit.passed
    assert "cannot detect a violation at this size: the canary has no value the base table lacks" in str(audit)
    assert "consistent" not in str(audit)
    # the same data without a schema: the audit's own canary is new, and the copying generator is caught
    audit = audit_model(copy_generator, small_table, epsilon=1.0, mode="in-out", attack="novelty", n_fits=40,
                        executor="sequential")
    assert audit.novel_values == 2 and audit.has_power and audit.verdict == "exceeds"
    assert audit.eps_lb == pytest.approx(audit.max_eps_lb) and audit.eps_lb > 1.0


def test_too_few_fits_means_no_power(small_table):
    audit = audit_model(copy_generator, small_table, epsilon=1.0, mode="in-out", n_fits=20, executor="sequential")
    assert audit.max_eps_lb < 1.0 and audit.verdict == "no-power" and audit.passed
    assert f"max achievable eps_LB = {audit.max_eps_lb:.3f} < epsilon 1.000" in str(audit)


@pytest.fixture(scope="module")
def dp_audit(adult):
    train, _ = adult
    # schema=None: the audit declares the schema and its canary; pre-registered "novelty" attack on all 20 fits
    return audit_model("marginals", train, epsilon=CLAIM, delta=1e-5, mode="in-out", attack="novelty",
                       n_fits=N_FITS, executor="sequential", seed=0)


def test_dp_marginals_audit_can_fail_and_passes(dp_audit):
    assert dp_audit.max_eps_lb > CLAIM  # a leak would be caught: this assertion and the next can fail
    assert dp_audit.has_power and dp_audit.eps_lb <= dp_audit.epsilon <= CLAIM + 1e-9
    assert dp_audit.verdict == "consistent" and "consistent with ledger epsilon" in str(dp_audit)
    assert sum(dp_audit.counts.values()) == N_FITS


def test_broken_variant_fails_the_same_audit(adult, dp_audit):
    train, _ = adult
    audit = audit_model(ForgotTheNoise(), train, epsilon=CLAIM, delta=1e-5, mode="in-out", attack="novelty",
                        n_fits=N_FITS, executor="sequential", seed=0)
    # every guess right (the largest eps_LB these fits allow), where the DP run stays at or below its claim
    assert audit.eps_lb == pytest.approx(audit.max_eps_lb) and dp_audit.eps_lb <= CLAIM < audit.eps_lb
    assert audit.verdict == "exceeds" and "EXCEEDS" in str(audit)


def test_the_secure_samplers_pass_the_same_audit(adult, adult_schema):
    """The release path of ``--noise secure`` (OpenDP's discrete Gaussian) under the audit above: powered, within
    its claim (a sampler that added too little noise would be caught as ForgotTheNoise is)."""
    pytest.importorskip("opendp")
    train, _ = adult
    audit = audit_model("marginals", train, epsilon=CLAIM, delta=1e-5, mode="in-out", attack="novelty",
                        n_fits=N_FITS, executor="sequential", seed=0, noise="secure")
    assert audit.max_eps_lb > CLAIM and audit.has_power
    assert audit.eps_lb <= audit.epsilon <= CLAIM + 1e-9 and audit.verdict == "consistent"
    assert "fits with noise='secure'" in audit.notes
    factory = ModelFactory("marginals", epsilon=1.0, delta=1e-5, schema=adult_schema, noise="secure")
    assert factory.fit(train.head(500), 0).fit_info_["noise"] == "secure" and "noise='secure'" in repr(factory)


def test_claimed_epsilon_is_the_largest_over_all_fits(small_table):
    gen = DataDependentEpsilon("marginals", epsilon=0.5, delta=1e-5)
    # D0 has 200 rows (epsilon 0.5); with the canary 201 rows (epsilon 2.0): the claim is 2.0, not D0's 0.5
    audit = audit_model(gen, small_table, epsilon=0.5, mode="in-out", n_fits=8, executor="sequential")
    assert audit.epsilon == 2.0


def test_auto_mode_times_a_fit_and_picks_one_run_when_in_out_is_too_slow(small_table):
    fast = audit_model(copy_generator, small_table, epsilon=1.0, n_fits=8, n_synthetic=400, executor="sequential")
    assert fast.mode == "in-out" and "auto: the one-run fit took" in fast.notes
    slow = audit_model(copy_generator, small_table, epsilon=1.0, n_canaries=20, n_synthetic=400, budget_seconds=0.0,
                       executor="sequential")
    assert slow.mode == "one-run" and slow.n_fits == 1 and "over the 0 min budget" in slow.notes


def test_one_run_mode_dp_passes_and_non_private_is_caught(adult):
    train, _ = adult
    common = {"mode": "one-run", "n_canaries": 100, "n_synthetic": 20_000, "executor": "sequential", "seed": 0}
    leaky = audit_model("marginals", train, epsilon=math.inf, delta=0.0, **common)
    dp = audit_model("marginals", train, epsilon=1.0, delta=1e-5, **common)
    assert dp.max_eps_lb > 1.0 and dp.has_power  # 20 guesses, all right, would give 1.82
    assert dp.eps_lb <= dp.epsilon <= 1.0 + 1e-9
    assert leaky.counts["correct"] == leaky.counts["guesses"] == 20 and leaky.eps_lb > 1.0 + dp.eps_lb


@pytest.mark.slow(reason="the audit at full size: many fits")
def test_dp_marginals_audit_full(adult, adult_schema):
    train, _ = adult
    audit = audit_model("marginals", train, epsilon=1.0, delta=1e-5, schema=adult_schema, mode="in-out",
                        n_fits=200, seed=3)
    assert audit.max_eps_lb > 1.0 and audit.eps_lb <= audit.epsilon <= 1.0 + 1e-9


def test_audit_input_errors(adult):
    train, _ = adult
    with pytest.raises(InputError, match="mode"):
        audit_model("marginals", train, mode="twice")
    with pytest.raises(InputError, match="n_fits"):
        audit_model("marginals", train, n_fits=2)
    with pytest.raises(InputError, match="attack"):
        audit_model("marginals", train, attack="density")
    with pytest.raises(InputError, match="n_guesses"):
        audit_model("marginals", train, n_canaries=10, n_guesses=11)
