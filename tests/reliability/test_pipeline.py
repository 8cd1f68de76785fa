"""The main pipeline on a table it never saw, without a schema (issue 15): fit with DP discovery, sample,
evaluate with a binary text target. DP discovery keeps a two-valued column binary (no "__other__" slot its
counts cannot tell from empty), and evaluation copes with labels only the synthetic table holds."""

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
    assert model.schema_["y"].categories == ("no", "yes") and model.schema_["y"].kind == "binary"
    synthetic = model.sample(seed=1)
    assert set(synthetic["y"].dropna()) <= {"no", "yes"}
    synthetic.loc[:49, "y"] = "__other__"  # a label the real table lacks (e.g. a schema with an other slot)
    result = dpsynth.evaluate(real.iloc[:3000], synthetic, real_test=real.iloc[3000:], target="y",
                              metrics=["ml_efficacy"], seeds=(0,), n_jobs=1)
    table = result.table
    f1 = table[(table["metric"] == "ml_efficacy.f1.synthetic")]["value"]
    assert len(f1) and np.isfinite(f1.to_numpy(dtype=float)).all()
    assert ((0 <= f1) & (f1 <= 1)).all()
