"""The non-private CTGAN reference (issue 20): training-by-sampling's index, the packed gradient penalty, the
non-private-only contract and a dependency it must learn. The packaged contract runs in test_contract.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from dpsynth.data.schema import Column, Schema
from dpsynth.data.transformers.base import Span
from dpsynth.errors import InputError
from dpsynth.models import get_model_class, model_phases
from dpsynth.models.ctgan import CTGAN, RowsByCategory, _pack_penalty


def _span(start: int, end: int) -> Span:
    return Span(column="c", start=start, end=end, activation="softmax", role="category")


def test_rows_by_category_draws_uniformly_among_the_rows_holding_the_category():
    slots = np.array([0, 1, 1, 2, 1, 0, 1, 1])  # category 1 at rows 1, 2, 4, 6, 7; category 3 never
    x = torch.zeros(len(slots), 5)
    x[np.arange(len(slots)), slots] = 1.0
    x[:, 4] = 1.0  # a second, one-slot span
    index = RowsByCategory(x, [_span(0, 4), _span(4, 5)])
    gen = torch.Generator().manual_seed(0)
    drawn = index.draw(torch.full((40_000,), 1), gen).numpy()
    assert set(np.unique(drawn)) == {1, 2, 4, 6, 7}
    freq = np.bincount(drawn, minlength=8)[[1, 2, 4, 6, 7]] / len(drawn)
    assert np.allclose(freq, 0.2, atol=0.01)  # uniform: 5 sd of a proportion over 40,000 draws is 0.01
    assert set(index.draw(torch.full((500,), 3), gen).numpy()) == set(range(8))  # nobody holds it: any row
    assert set(index.draw(torch.full((100,), 4), gen).numpy()) == set(range(8))  # everybody holds it
    assert (index.draw(torch.tensor([0, 2] * 50), gen).numpy()[1::2] == 3).all()  # the only row with slot 2


def test_real_batch_pairs_each_real_row_with_a_condition_it_holds():
    """The real half of a discriminator batch: the fake half's conditions, shuffled, each beside a row holding it;
    a table without categorical columns gets uniform rows and its (empty) conditions unchanged."""
    from types import SimpleNamespace

    slots = np.array([0, 1, 1, 2, 1, 0, 1, 2])
    x = torch.zeros(len(slots), 3)
    x[np.arange(len(slots)), slots] = 1.0
    index = RowsByCategory(x, [_span(0, 3)])
    gen = torch.Generator().manual_seed(0)
    wanted = np.array([0, 1, 2] * 100)
    cond = torch.eye(3)[wanted]
    real, real_cond = index.real_batch(x, cond, SimpleNamespace(output_index=wanted), gen)
    assert torch.equal(real, real_cond)  # each row holds exactly the condition it is paired with
    assert not torch.equal(real_cond, cond)  # shuffled against the fake half
    assert torch.equal(real_cond.sum(0), cond.sum(0))  # the same conditions
    empty = torch.zeros(50, 0)
    rows, same = index.real_batch(x, empty, None, gen)
    assert same is empty and rows.shape == (50, 3)


def test_pack_penalty_is_the_packs_gradient_norm():
    """For a linear critic of packs, w . pack, the gradient with respect to a pack is w everywhere, so the penalty
    is (||w|| - 1)^2 whatever the rows; with pac = 1 each row's gradient is w's slice."""
    torch.manual_seed(0)
    width, pac = 3, 4
    w = torch.randn(pac * width)

    def critic(rows):
        return rows.reshape(-1, pac * width) @ w

    real, fake = torch.randn(8, width), torch.randn(8, width)
    got = _pack_penalty(critic, real, fake, pac, torch.Generator().manual_seed(1))
    assert got.item() == pytest.approx((w.norm().item() - 1.0) ** 2, rel=1e-5)


def test_ctgan_is_a_non_private_reference(adult, adult_schema, tmp_path):
    train, _ = adult
    small = train.sample(600, random_state=0).reset_index(drop=True)
    assert get_model_class("ctgan") is CTGAN and not CTGAN.supports_dp and model_phases("ctgan") == ("metadata", "gan")
    with pytest.raises(InputError, match="non-private baseline"):
        CTGAN(**CTGAN.fast_params).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema)
    with pytest.raises(InputError, match="multiple of pac"):
        CTGAN(batch_size=505).fit(small, epsilon=math.inf, delta=1e-5, schema=adult_schema)
    model = CTGAN(**CTGAN.fast_params).fit(small, epsilon=math.inf, delta=1e-5, schema=adult_schema, seed=0)
    assert {e.phase for e in model.ledger_.entries} == {"metadata", "gan"}
    assert model.budget_["phases"]["gan"]["steps"] == 2 * (600 // 40)
    rows = model.sample(300, seed=4)
    assert list(rows.columns) == list(small.columns) and len(rows) == 300
    loaded = CTGAN.load(model.save(tmp_path / "ctgan.dpsynth"))
    pd.testing.assert_frame_equal(loaded.sample(300, seed=4), rows)


def test_ctgan_learns_a_rare_categorys_partner():
    """Training-by-sampling's point: a category held by 5% of rows, always with its own partner in another column,
    is generated with that partner (and the common ones with theirs)."""
    rng = np.random.default_rng(0)
    n = 2000
    a = np.where(rng.random(n) < 0.05, "rare", rng.choice(["x", "y"], n))
    partner = {"rare": "r", "x": "p", "y": "q"}
    frame = pd.DataFrame({"a": a, "b": [partner[v] for v in a], "v": rng.normal(size=n)})
    schema = Schema([Column("a", "categorical", categories=("rare", "x", "y")),
                     Column("b", "categorical", categories=("p", "q", "r")),
                     Column("v", "continuous", lower=-5.0, upper=5.0)], provenance="public")
    model = CTGAN(epochs=80, batch_size=200, noise_dim=16, generator_hidden=(64,), critic_hidden=(64,),
                  generator_learning_rate=1e-3, critic_learning_rate=1e-3, max_modes=3)
    model.fit(frame, epsilon=math.inf, delta=1e-5, schema=schema, seed=0)
    rows = model.sample(4000, seed=1)
    rare = rows[rows["a"] == "rare"]
    assert 0.02 < len(rare) / len(rows) < 0.10
    assert (rare["b"] == "r").mean() > 0.8  # measured 0.96 (0.64 after 40 epochs)
    assert (rows["b"] == rows["a"].map(partner)).mean() > 0.9  # measured 0.99
