"""The main pipeline on a table it never saw, without a schema (issue 15): fit with DP discovery, sample,
evaluate with a binary text target whose DP-discovered column carries an "__other__" slot."""

from __future__ import annotations

import numpy as np
import pandas as pd

import dpsynth
from dpsynth.models import get_model_class


def test_binary_text_target_with_an_other_slot_evaluates():
    rng = np.random.default_rng(0)
    n = 4000
    x = rng.normal(size=n)
    real = pd.DataFrame({"x": x.round(3), "k": rng.integers(0, 5, n),
                         "y": np.where(x + rng.normal(scale=0.5, size=n) > 0.3, "yes", "no")})
    model = get_model_class("marginals")().fit(real, epsilon=1.0, delta=1e-5, seed=0)
    assert "__other__" in model.schema_["y"].categories  # rows of unreleased values would go there
    synthetic = model.sample(seed=1)
    synthetic.loc[:49, "y"] = "__other__"  # force the case: some synthetic rows hold the slot
    result = dpsynth.evaluate(real.iloc[:3000], synthetic, real_test=real.iloc[3000:], target="y",
                              metrics=["ml_efficacy"], seeds=(0,), n_jobs=1)
    table = result.table
    f1 = table[(table["metric"] == "ml_efficacy.f1.synthetic")]["value"]
    assert len(f1) and np.isfinite(f1.to_numpy(dtype=float)).all()
    assert ((0 <= f1) & (f1 <= 1)).all()
