"""PATE-GAN and PATE-CTGAN (issue 20): disjoint teachers, noisy votes charged to the ledger, a student that never
sees a real row.

The contract runs in tests/models/test_contract.py and the canary-tag audit in tests/attacks/test_attack_contract.py;
the vote mechanism itself (sensitivity, events, charging before release) in tests/privacy/test_pate.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from dp_accounting import dp_event
from scipy import stats

from dpsynth.models import get_model_class, model_phases
from dpsynth.models import pate_gan as pate_gan_module
from dpsynth.models.pate_ctgan import PATECTGAN
from dpsynth.models.pate_gan import PATEGAN, TeacherEnsemble
from dpsynth.privacy import pate

FAST = dict(PATEGAN.fast_params)


@pytest.fixture(scope="module")
def small(adult):
    train, _ = adult
    return train.sample(1000, random_state=4).reset_index(drop=True)


def test_teachers_are_independent():
    """Teacher t's logits and gradients depend on its own parameters and its own input rows only."""
    torch.manual_seed(0)
    ensemble = TeacherEnsemble(5, 7, (4,))
    x = torch.randn(5, 3, 7)
    base = ensemble(x).detach()
    x2 = x.clone()
    x2[2] += 1.0  # teacher 2's rows change
    changed = (ensemble(x2).detach() - base).abs().amax(1) > 0
    assert changed.tolist() == [False, False, True, False, False]
    ensemble(x2)[2].sum().backward()
    touched = [(w.grad.abs().amax(dim=(1, 2)) > 0).tolist() for w in ensemble.weights]
    assert all(t == [False, False, True, False, False] for t in touched)
    shared = ensemble(torch.randn(3, 7))  # the same rows for every teacher: one logit row per teacher
    assert shared.shape == (5, 3)


def test_every_query_is_charged_and_the_budget_is_used(small, adult_schema):
    assert get_model_class("pate-gan") is PATEGAN and model_phases("pate-gan") == ("metadata", "pate")
    model = PATEGAN(**FAST).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    entries = [e for e in model.ledger_.entries if e.phase == "pate"]
    settings = model.budget_["phases"]["pate"]
    queries = FAST["iterations"] * 3 * FAST["batch_size"]  # student_iters = 3
    assert sum(e.count for e in entries) == queries == settings["queries"]
    scale = settings["vote_noise_std"]  # soft votes: a sum of probabilities, sensitivity 1
    assert all(e.event == dp_event.GaussianDpEvent(scale) for e in entries)
    assert 0.95 < model.ledger_.epsilon() <= 1.0 + 1e-9
    # the teacher count follows the DP row count (the exact one is never read for it)
    assert settings["n_teachers"] == FAST["n_teachers"]
    auto = PATEGAN()
    assert auto.teachers_for(32_561.4) == 651 and auto.teachers_for(100.0) == 10 and auto.teachers_for(1e8) == 1000


def test_student_labels_carry_the_calibrated_noise(small, adult_schema, monkeypatch):
    """Statistical test of the released labels: each differs from the teachers' plain majority with probability
    Phi(-|v_real - v_fake| / (sqrt 2 s)). A missing noise term (no flips) or a wrong scale fails it."""
    calls = []
    real = pate.noisy_argmax

    def spy(votes, **kw):
        labels = real(votes, **kw)
        calls.append((votes.clone(), labels.clone(), kw["noise_scale"]))
        return labels

    monkeypatch.setattr(pate_gan_module, "noisy_argmax", spy)
    PATEGAN(**{**FAST, "votes": "argmax", "iterations": 60, "batch_size": 64, "n_teachers": 200}).fit(
        small, epsilon=3.0, delta=1e-5, schema=adult_schema, seed=1)
    votes = torch.cat([v for v, _, _ in calls])
    labels = torch.cat([lab for _, lab, _ in calls]).numpy()
    scale = calls[0][2]
    gap = (votes[:, 1] - votes[:, 0]).numpy()
    majority = (gap > 0).astype(int)
    flip_p = stats.norm.cdf(-np.abs(gap) / (math.sqrt(2) * scale))
    flips = (labels != majority) & (gap != 0)
    expected, var = flip_p[gap != 0].sum(), (flip_p * (1 - flip_p))[gap != 0].sum()
    assert flips.sum() > 0
    assert abs(flips.sum() - expected) < 5 * math.sqrt(var), (flips.sum(), expected)


def test_soft_votes_carry_the_calibrated_noise(small, adult_schema, monkeypatch):
    """The released soft-vote sums minus the exact sums of the teachers' probabilities are N(0, s^2): a
    Kolmogorov-Smirnov test against the calibrated s (a missing noise term, or a wrong scale, fails it)."""
    calls = []
    real = pate.noisy_vote_sum

    def spy(scores, **kw):
        released = real(scores, **kw)
        calls.append((released - scores.double().clamp(0, 1).sum(0), kw["noise_scale"]))
        return released

    monkeypatch.setattr(pate_gan_module, "noisy_vote_sum", spy)
    model = PATEGAN(**{**FAST, "iterations": 30}).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=2)
    noise = torch.cat([n for n, _ in calls]).numpy()
    scale = model.budget_["phases"]["pate"]["vote_noise_std"]
    assert all(s == scale for _, s in calls) and len(noise) == 30 * 3 * FAST["batch_size"]
    assert stats.kstest(noise / scale, "norm").pvalue > 1e-3


def test_non_private_mode_records_exact_votes(small, adult_schema):
    model = PATEGAN(**FAST).fit(small, epsilon=math.inf, delta=1e-5, schema=adult_schema, seed=0)
    assert math.isinf(model.epsilon_) and model.budget_["phases"]["pate"]["vote_noise_std"] == 0.0
    assert all(isinstance(e.event, dp_event.NonPrivateDpEvent) for e in model.ledger_.entries)
    assert len(model.sample(50, seed=0)) == 50


# ---------------------------------------------------------------------------------------------- pate-ctgan
def test_pate_ctgan_conditions_are_read_off_each_teachers_rows(small, adult_schema, tmp_path):
    """PATE-CTGAN: the teachers' real rows carry a condition taken from the row itself (one of its own categories),
    so a teacher's input stays a function of its partition; the votes are charged as PATE-GAN's."""
    assert get_model_class("pate-ctgan") is PATECTGAN and model_phases("pate-ctgan") == ("metadata", "pate")
    fast = dict(PATECTGAN.fast_params)
    model = PATECTGAN(**fast).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    settings = model.budget_["phases"]["pate"]
    entries = [e for e in model.ledger_.entries if e.phase == "pate"]
    assert sum(e.count for e in entries) == fast["iterations"] * 3 * fast["batch_size"] == settings["queries"]
    assert all(e.event == dp_event.GaussianDpEvent(settings["vote_noise_std"]) for e in entries)
    assert 0.95 < model.ledger_.epsilon() <= 1.0 + 1e-9

    rows = torch.as_tensor(model.transformer_.transform(small.head(60)), dtype=torch.float32).reshape(3, 20, -1)
    seen = model._with_conditions(rows, torch.Generator().manual_seed(0))
    d, conditions = rows.shape[2], model.conditions_
    assert seen.shape == (3, 20, d + conditions.dim) and torch.equal(seen[..., :d], rows)
    cond = seen[..., d:].reshape(60, -1)
    flat = rows.reshape(60, d)
    assert torch.equal(cond.sum(1), torch.ones(60))  # one category of one column per row
    for j, span in enumerate(conditions.spans):  # the chosen category is the row's own
        block = cond[:, conditions.offsets[j]:conditions.offsets[j + 1]]
        chosen = block.sum(1) > 0
        assert torch.equal(block[chosen], flat[chosen, span.start:span.end])
    loaded = PATECTGAN.load(model.save(tmp_path / "pate-ctgan.dpsynth"))
    assert loaded.sample(200, seed=3).equals(model.sample(200, seed=3))
