"""The packaged contract (dpsynth.check_synthesizer) catches broken models, and the estimator API it checks works.

Each broken model below is the independent-marginals model with one defect; the contract must name the defect.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dpsynth
from dpsynth import DPTLDM, DPAutoGAN, Marginals, PrivacyBudget
from dpsynth.errors import InputError, NotFittedError
from dpsynth.models.checks import check_synthesizer


@pytest.fixture(scope="module")
def table(adult):
    return adult[0].sample(600, random_state=3).reset_index(drop=True)


class _MutatesInput(Marginals):
    def fit(self, data, *args, **kwargs):
        data["age"] = 0  # writes into the caller's frame
        return super().fit(data, *args, **kwargs)


class _UndeclaredPhase(Marginals):
    phases = ("metadata",)  # records "marginals" too


class _ChangesItsParameter(Marginals):
    def __init__(self, *, reuse_metadata: bool = True):
        self.reuse_metadata = not reuse_metadata


class _IgnoresTheSampleSeed(Marginals):
    def _sample(self, n, *, rng):
        return super()._sample(n, rng=np.random.default_rng())


class _NoValidation(Marginals):
    def check_params(self):  # accepts anything
        return None


@pytest.mark.parametrize("broken, message", [
    (_MutatesInput, "changed the caller's frame"),
    (_UndeclaredPhase, "not among the model's declared phases"),
    (_ChangesItsParameter, "get_params"),
    (_IgnoresTheSampleSeed, "same sample seed gave different rows"),
    (_NoValidation, "set_params"),
])
def test_the_contract_names_each_defect(broken, message, table, adult_schema, tmp_path):
    broken.name = "marginals"  # same registry name: the file round trip resolves to Marginals, not the subclass
    with pytest.raises(AssertionError, match=message):
        check_synthesizer(broken, table, adult_schema, tmp_path, non_private=False)


def test_the_contract_passes_a_sound_model_with_its_defaults(table, adult_schema):
    model = check_synthesizer(Marginals(), table, adult_schema)  # an instance: its own parameters
    assert isinstance(model, Marginals) and model.ledger_.epsilon() <= 1.0


def test_model_classes_are_importable_from_the_package():
    assert dpsynth.get_model_class("dp-tldm") is DPTLDM and dpsynth.get_model_class("dp-auto-gan") is DPAutoGAN
    assert dpsynth.get_model_class("marginals") is Marginals
    assert DPTLDM.__doc__ and "latent diffusion" in DPTLDM.__doc__
    assert callable(dpsynth.evaluate) and dpsynth.evaluate is dpsynth.evaluation.evaluate


def test_clone_and_set_params_follow_scikit_learn():
    from sklearn.base import clone

    model = DPAutoGAN(gan_epochs=3.0, critic_hidden=[8, 4])
    assert model.critic_hidden == (8, 4)  # lists from JSON or the CLI become tuples
    copy = clone(model)
    assert copy is not model and copy.get_params() == model.get_params()
    assert model.set_params(gan_epochs=5.0, autoencoder_batch_size=64) is model
    assert model.gan_epochs == 5.0 and model.autoencoder_batch_size == 64
    before = model.get_params()
    with pytest.raises(InputError, match="no hyper-parameter ae_steps"):
        model.set_params(ae_steps=10)
    with pytest.raises(InputError, match="gan_epochs"):
        model.set_params(gan_epochs=-1.0, critic_iters=2)  # one bad value: nothing is set
    with pytest.raises(InputError, match="autoencoder_batch_size"):
        model.set_params(autoencoder_batch_size=0)
    assert model.get_params() == before
    with pytest.raises(NotFittedError):
        clone(model).sample(3)


def test_privacy_budget_is_one_frozen_validated_value(table, adult_schema):
    budget = PrivacyBudget(1.0, 1e-5)
    assert budget.metadata_share is None and not budget.non_private and PrivacyBudget(math.inf, 1e-5).non_private
    with pytest.raises(AttributeError):
        budget.epsilon = 2.0  # frozen
    for bad, field in (((0.0, 1e-5), "epsilon"), ((1.0, 1.0), "delta"), ((1.0, 1e-5, 1.0), "metadata_share"),
                       ((True, 1e-5), "booleans"), (("1", 1e-5), "text")):
        with pytest.raises(InputError, match=field):
            PrivacyBudget(*bad)
    a = Marginals().fit(table, PrivacyBudget(1.0, 1e-5, 0.2), schema=adult_schema, seed=0)
    b = Marginals().fit(table, epsilon=1.0, delta=1e-5, metadata_share=0.2, schema=adult_schema, seed=0)
    pd.testing.assert_frame_equal(a.sample(100, seed=1), b.sample(100, seed=1))  # the same fit
    assert a.fit_info_["metadata_share"] == 0.2
    with pytest.raises(InputError, match="not both"):
        Marginals().fit(table, budget, delta=1e-5)
    with pytest.raises(InputError, match="needs a privacy budget"):
        Marginals().fit(table, schema=adult_schema)
    with pytest.raises(InputError, match="PrivacyBudget"):
        Marginals().fit(table, (1.0, 1e-5), schema=adult_schema)


def test_metadata_share_left_to_the_model_is_its_public_default(table, adult_schema):
    """A budget without a share takes the model's documented default (0.1; 0.3 for the deep models, whose marginals
    are mapped onto the DP histograms): recorded in fit_info_, spent by the metadata phase, and the same fit as
    passing that share explicitly; an explicit share always wins."""
    from dpsynth.models import get_model_class

    assert Marginals.default_metadata_share == 0.1
    assert {get_model_class(n).default_metadata_share for n in ("dp-tldm", "dp-auto-gan")} == {0.3}
    assert {get_model_class(n).default_metadata_share for n in ("aim", "mst")} == {0.1}
    cls = get_model_class("dp-auto-gan")
    fast = dict(cls.fast_params)
    auto = cls(**fast).fit(table, PrivacyBudget(1.0, 1e-5), seed=0)  # no schema: DP discovery spends the share
    given = cls(**fast).fit(table, epsilon=1.0, delta=1e-5, metadata_share=0.3, seed=0)
    assert auto.fit_info_["metadata_share"] == 0.3
    assert 0.27 <= auto.ledger_.phases()["metadata"] <= 0.3 * (1 + 1e-6)
    pd.testing.assert_frame_equal(auto.sample(100, seed=1), given.sample(100, seed=1))
    explicit = cls(**fast).fit(table, epsilon=1.0, delta=1e-5, metadata_share=0.1, schema=adult_schema, seed=0)
    assert explicit.fit_info_["metadata_share"] == 0.1
