"""Large epsilons never run away (issue 15): above EPSILON_MAX a clear refusal, below it a bounded fast path (the
"best" accountant answers with RDP alone once that exceeds twice PLD_MAX_EPSILON; PLD there took minutes and GBs)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsynth.errors import InputError
from dpsynth.models import get_model_class
from dpsynth.privacy import accounting
from dpsynth.privacy.accounting import EPSILON_MAX, PLD_MAX_EPSILON, epsilon_of


def _table(n=2000):
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.integers(0, 9, n), "b": rng.choice(["x", "y", "z"], n)})


@pytest.mark.parametrize("epsilon", [EPSILON_MAX * 1.001, 7000.0, 1e9, 1e308])
def test_epsilon_above_the_maximum_is_refused_at_once(epsilon):
    with pytest.raises(InputError, match=r"epsilon must be at most 1000.*inf for the explicit non-private mode"):
        get_model_class("marginals")().fit(_table(), epsilon=epsilon, delta=1e-5)


def test_cli_refuses_a_huge_epsilon_in_one_line(tmp_path, capsys):
    from dpsynth.cli import main

    data = tmp_path / "d.csv"
    _table().to_csv(data, index=False)
    assert main(["fit", str(data), "--epsilon", "1e9", "--out", str(tmp_path / "m.dpsynth")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "at most 1000" in err and not (tmp_path / "m.dpsynth").exists()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("epsilon", [100.0, EPSILON_MAX])
def test_large_epsilon_fits_without_pld(epsilon, monkeypatch, tmp_path):
    real_pld = accounting._pld_epsilon

    def guarded(event, delta):  # PLD may still be asked about small epsilons, never on the fast path
        value = real_pld(event, delta)
        assert value <= 4 * PLD_MAX_EPSILON, f"PLD computed at epsilon {value}"
        return value

    accounting._epsilon_memo.cache_clear()
    monkeypatch.setattr(accounting, "_pld_epsilon", guarded)
    model = get_model_class("marginals")().fit(_table(), epsilon=epsilon, delta=1e-5, seed=0)
    ledger = model.ledger_.to_dict()
    assert 0.9 * epsilon <= model.ledger_.epsilon() <= epsilon
    assert ledger["epsilon_pld"] is None and ledger["epsilon_rdp"] == pytest.approx(ledger["epsilon"])
    str(model.ledger_)  # the Gaussian-DP view does not overflow
    assert model.save(tmp_path / "m.dpsynth").exists()  # the ledger's JSON holds no inf/nan


def test_fast_path_is_an_upper_bound_and_small_epsilons_still_use_pld():
    from dp_accounting import dp_event

    small = [(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)), 1000)]
    best = epsilon_of(small, 1e-5)
    assert best == pytest.approx(min(epsilon_of(small, 1e-5, accountant="pld"),
                                     epsilon_of(small, 1e-5, accountant="rdp")))
    assert best < epsilon_of(small, 1e-5, accountant="rdp")  # PLD is tighter here, and used
    large = [(dp_event.GaussianDpEvent(0.05), 3)]
    assert epsilon_of(large, 1e-5) == epsilon_of(large, 1e-5, accountant="rdp") > 2 * PLD_MAX_EPSILON
    assert math.isfinite(epsilon_of(large, 1e-5))
