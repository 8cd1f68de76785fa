"""PATE noisy argmax: events (L1 sensitivity 2 / L2 sqrt 2), charged before release, correct argmax."""

from __future__ import annotations

import math

import pytest
import torch
from dp_accounting import dp_event

from dpsynth.errors import BudgetExceededError, InputError
from dpsynth.privacy import PrivacyLedger, noisy_argmax, pate_event, teacher_partition, teacher_votes


def test_events_use_vote_histogram_sensitivity():
    assert pate_event("laplace", 4.0) == dp_event.LaplaceDpEvent(2.0)  # scale / L1 sensitivity 2
    assert pate_event("gaussian", 3.0) == dp_event.GaussianDpEvent(3.0 / math.sqrt(2))
    with pytest.raises(InputError):
        pate_event("exponential", 1.0)


def test_laplace_query_costs_two_over_b():
    ledger = PrivacyLedger(target_epsilon=10, target_delta=1e-5)
    votes = teacher_votes(torch.randint(3, (20, 1)), 3)
    noisy_argmax(votes, mechanism="laplace", noise_scale=4.0, ledger=ledger, phase="pate",
                 generator=torch.Generator().manual_seed(0))
    assert ledger.entries[0].count == 1
    assert ledger.epsilon() == pytest.approx(0.5, abs=2e-3)  # one query: pure 2/b-DP


def test_all_queries_charged_and_budget_checked_before_release():
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5, accountant="rdp")
    votes = teacher_votes(torch.randint(2, (10, 5)), 2)
    with pytest.raises(BudgetExceededError):
        noisy_argmax(votes, mechanism="gaussian", noise_scale=1.0, ledger=ledger, phase="pate",
                     generator=torch.Generator())
    assert ledger.entries == []


def test_argmax_is_right_with_clear_consensus_and_votes_are_counted():
    preds = torch.zeros(50, 30, dtype=torch.long)
    preds[:, 10:] = 2
    votes = teacher_votes(preds, 3)
    assert votes.sum(1).eq(50).all() and votes[0, 0] == 50
    ledger = PrivacyLedger(target_epsilon=50, target_delta=1e-5)
    labels = noisy_argmax(votes, mechanism="gaussian", noise_scale=5.0, ledger=ledger, phase="pate",
                          generator=torch.Generator().manual_seed(1))
    assert labels[:10].eq(0).all() and labels[10:].eq(2).all()
    assert ledger.entries[0].count == 30


def test_teacher_partition_is_disjoint_and_uniform():
    part = teacher_partition(7000, 7, torch.Generator().manual_seed(0))
    counts = torch.bincount(part)
    assert len(counts) == 7 and counts.sum() == 7000  # one teacher per row
    assert counts.min() > 850 and counts.max() < 1150


def test_soft_vote_sum_is_charged_per_query_through_an_allowance():
    """A training loop's allowance records each answered query (sensitivity-1 Gaussian); a query the allowance
    cannot cover, or one of another event, is refused before any answer is released."""
    from dpsynth.errors import PrivacyError
    from dpsynth.privacy.pate import noisy_vote_sum

    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5, accountant="rdp")
    scores = torch.rand(7, 5)
    allowance = ledger.allowance(dp_event.GaussianDpEvent(50.0), phase="pate", mechanism="votes", max_steps=8)
    assert allowance.allowed == 8
    out = noisy_vote_sum(scores, noise_scale=50.0, ledger=allowance, phase="pate", generator=torch.Generator())
    assert out.shape == (5,) and ledger.entries[0].count == 5
    with pytest.raises(BudgetExceededError):
        noisy_vote_sum(scores, noise_scale=50.0, ledger=allowance, phase="pate", generator=torch.Generator())
    assert ledger.entries[0].count == 5
    with pytest.raises(PrivacyError):
        noisy_vote_sum(scores[:, :1], noise_scale=10.0, ledger=allowance, phase="pate", generator=torch.Generator())
    # on a ledger directly: sensitivity 1, so the event is the plain Gaussian of the noise scale
    direct = PrivacyLedger(target_epsilon=10.0, target_delta=1e-5)
    noisy_vote_sum(scores, noise_scale=40.0, ledger=direct, phase="pate", generator=torch.Generator())
    assert direct.entries[0].event == dp_event.GaussianDpEvent(40.0) and direct.entries[0].count == 5
