"""Shadow-model (groundhog) attack, feature sets and executors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsynth.attacks.features import FeatureDomain, correlation_features, extract, histogram_features, naive_features
from dpsynth.attacks.shadow import GroundhogAttack, ModelFactory, ShadowConfig, call_generator
from dpsynth.errors import InputError
from dpsynth.executor import LocalExecutor, SequentialExecutor, get_executor


def copy_generator(train: pd.DataFrame, seed: int, n: int | None = None) -> pd.DataFrame:
    """The worst generator: releases its training rows (shuffled, repeated up to n)."""
    n = n or len(train)
    reps = -(-n // len(train))
    shuffled = pd.concat([train.sample(frac=1.0, random_state=seed + i) for i in range(reps)])
    return shuffled.iloc[:n].reset_index(drop=True)


def test_feature_sets_shapes_and_values():
    ref = pd.DataFrame({"x": np.arange(100.0), "c": ["a"] * 60 + ["b"] * 30 + ["z"] * 10})
    dom = FeatureDomain(ref, n_bins=4)
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0, np.nan], "c": ["a", "a", "b", None]})
    naive = naive_features(df, dom)
    # mean, median, variance, missing share of x; then #categories, most and least frequent category of c
    assert naive[:4] == pytest.approx([2.0, 2.0, 2.0 / 3.0, 0.25])
    assert naive[4:].tolist() == [3.0, 0.0, 1.0]  # a (index 0) most, b (1) and missing tie -> first least
    hist = histogram_features(df, dom)
    assert hist.sum() == pytest.approx(2.0)  # one distribution per column
    corr = correlation_features(df, dom)
    assert len(corr) == math.comb(1 + 4, 2)  # x plus one-hot a, b, z, other
    assert set(extract(df, dom, ["naive", "histogram"])) == {"naive", "histogram"}
    with pytest.raises(InputError, match="Feature sets"):
        extract(df, dom, ["bogus"])


def test_config_presets_and_validation():
    paper = ShadowConfig.paper()
    assert (paper.reference_size, paper.synthetic_size, paper.n_train_sets, paper.n_test_sets) == (4000, 400, 1000, 200)
    assert (paper.n_targets, paper.n_repetitions) == (5, 5)
    assert ShadowConfig.from_preset("fast").n_train_sets < paper.n_train_sets
    with pytest.raises(InputError, match="positive integer"):
        ShadowConfig(synthetic_size=0)
    with pytest.raises(InputError, match="preset"):
        ShadowConfig.from_preset("slow")


def test_copy_generator_is_detected(adult):
    train, _ = adult
    ref = train.sample(1000, random_state=0).reset_index(drop=True)
    cfg = ShadowConfig(reference_size=300, synthetic_size=300, n_train_sets=40, n_test_sets=20, n_targets=2,
                       n_repetitions=1, sets_per_fit=5)
    res = GroundhogAttack(ref, copy_generator, config=cfg, executor="sequential", seed=0,
                          features=("naive", "histogram")).evaluate_all()
    best = max(res.values(), key=lambda r: r.value)
    assert best.metric("accuracy") >= 0.8 and best.metric("privacy_gain") < 0.15
    assert best.attack.startswith("shadow_groundhog_")


def test_marginals_shadow_runs_in_worker_processes(adult, adult_schema):
    train, _ = adult
    factory = ModelFactory("marginals", epsilon=math.inf, delta=0.0, schema=adult_schema)
    cfg = ShadowConfig(reference_size=200, synthetic_size=100, n_train_sets=8, n_test_sets=4, n_targets=1,
                       n_repetitions=1, sets_per_fit=2)
    r = GroundhogAttack(train.sample(600, random_state=1), factory, config=cfg, executor=LocalExecutor(2),
                        seed=1).evaluate()
    assert r.kind == "membership" and 0.0 <= r.value <= 1.0 and r.n_targets == 4


def test_call_generator_checks_output():
    with pytest.raises(InputError, match="at least 10 rows"):
        call_generator(lambda df, seed: df.head(3), pd.DataFrame({"a": range(5)}), 0, 10)
    out = call_generator(copy_generator, pd.DataFrame({"a": range(5)}), 0, 10)
    assert len(out) == 10


def test_executors_keep_order():
    items = [4.0, 9.0, 16.0, 25.0]
    assert SequentialExecutor().map(math.sqrt, items) == [2.0, 3.0, 4.0, 5.0]
    assert LocalExecutor(2).map(math.sqrt, items) == [2.0, 3.0, 4.0, 5.0]
    assert isinstance(get_executor(None), LocalExecutor) and get_executor(None).max_workers == 2
    assert isinstance(get_executor("sequential"), SequentialExecutor)
    with pytest.raises(InputError, match="executor"):
        get_executor("cluster")
    with pytest.raises(InputError, match="max_workers"):
        LocalExecutor(0)


def test_local_executor_keeps_order_when_jobs_finish_out_of_order():
    items = [0.4, 0.0, 0.2, 0.0]  # the first job sleeps longest, so results arrive out of order
    assert LocalExecutor(2).map(_sleep_then_echo, items) == items


def _sleep_then_echo(x: float) -> float:
    import time

    time.sleep(x)
    return x


def test_local_executor_works_from_a_script_without_a_main_guard(tmp_path):
    """The README's API example pasted into a file has no ``if __name__ == "__main__":`` guard; worker
    processes must not re-run it (with multiprocessing 'spawn' they did, and died: BrokenProcessPool)."""
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text("import math\nfrom dpsynth.attacks import LocalExecutor\nprint('top level')\n"
                      "print(LocalExecutor(2).map(math.sqrt, [4.0, 9.0, 16.0]))\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["top level", "[2.0, 3.0, 4.0]"]
