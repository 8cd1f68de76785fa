"""Audit: eps_LB <= epsilon for the DP marginals model; the non-private mode and a broken variant show the
audit's power (DESIGN.md §1 rule 7)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dpsynth.attacks.audit import audit_model, craft_canary, novelty_rules, parse_model_spec
from dpsynth.errors import InputError


class ForgotTheNoise:
    """A deliberately broken 'epsilon = 1' marginals model: it fits without noise (epsilon = inf)."""

    def __init__(self, schema):
        self.schema = schema

    def __call__(self, train: pd.DataFrame, seed: int, n: int | None = None) -> pd.DataFrame:
        from dpsynth.models.marginals import MarginalsSynthesizer

        model = MarginalsSynthesizer().fit(train, epsilon=math.inf, delta=0.0, schema=self.schema, seed=seed)
        return model.sample(n or len(train), seed=seed + 1)


def test_parse_model_spec():
    assert parse_model_spec("marginals") == ("marginals", {})
    assert parse_model_spec("dp-tldm:epochs=3,clip=per_example,lr=0.001") == (
        "dp-tldm", {"epochs": 3, "clip": "per_example", "lr": 0.001})
    with pytest.raises(InputError, match="key=value"):
        parse_model_spec("marginals:epochs")


def test_canary_is_novel(adult, adult_schema):
    train, _ = adult
    base = train.sample(200, random_state=0)
    canary = craft_canary(base, adult_schema)
    assert list(canary.columns) == list(base.columns) and len(canary) == 1
    rules = novelty_rules(base, canary)
    assert len(rules) >= 5  # several columns carry values D0 lacks


def test_non_private_marginals_audit_has_power(adult, adult_schema):
    train, _ = adult
    audit = audit_model("marginals", train, epsilon=math.inf, delta=0.0, schema=adult_schema, n_fits=200,
                        executor="sequential", seed=0)
    assert audit.eps_lb > 2.0 and audit.passed  # inf claimed: passes, but the attack clearly works


def test_broken_variant_fails_the_audit(adult, adult_schema):
    train, _ = adult
    audit = audit_model(ForgotTheNoise(adult_schema), train, epsilon=1.0, delta=1e-5, schema=adult_schema,
                        n_fits=200, executor="sequential", seed=1)
    assert audit.eps_lb > 1.5 and not audit.passed
    assert "EXCEEDS" in str(audit)


def test_dp_marginals_audit_is_below_epsilon(adult, adult_schema):
    train, _ = adult
    # smoke-sized (each DP fit spends ~1 s in noise calibration); the 200-fit version is marked slow
    audit = audit_model("marginals", train, epsilon=1.0, delta=1e-5, schema=adult_schema, n_fits=10,
                        executor=2, seed=0)
    assert audit.epsilon <= 1.0 + 1e-9 and audit.eps_lb <= audit.epsilon and audit.passed
    assert set(audit.counts) == {"tp", "fn", "fp", "tn"} and sum(audit.counts.values()) == 5


@pytest.mark.slow
def test_dp_marginals_audit_full(adult, adult_schema):
    train, _ = adult
    audit = audit_model("marginals", train, epsilon=1.0, delta=1e-5, schema=adult_schema, n_fits=200, seed=3)
    assert audit.eps_lb <= 1.0


def test_one_run_mode(adult, adult_schema):
    train, test = adult
    audit = audit_model("marginals", train, epsilon=math.inf, delta=0.0, schema=adult_schema, mode="one-run",
                        pool=test, n_canaries=100, seed=0)
    assert audit.mode == "one-run" and audit.eps_lb >= 0.0 and audit.n_fits == 1


def test_audit_input_errors(adult):
    train, _ = adult
    with pytest.raises(InputError, match="mode"):
        audit_model("marginals", train, mode="twice")
    with pytest.raises(InputError, match="n_fits"):
        audit_model("marginals", train, n_fits=2)
