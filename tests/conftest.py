from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))  # tests/noise_off.py is importable as `noise_off`
# One torch thread: the tests' networks are tiny, and two intra-op threads on two shared cores spin more than they
# compute (tests/models/test_dp_tldm.py beside another job on 2 cores, 2026-11-27: 537 s wall and 319 CPU-s with
# two threads, 142 s and 58 CPU-s with one).
torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")  # and the same in the CLI / worker processes the tests start


_MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): one test process per core this process may run on, at most
    ``_MAX_WORKERS`` - each holds torch, the datasets and the session fixtures (~1 GB), so a many-core machine with
    little memory must not start one per core. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still overrides; ``-n 0`` runs
    in one process."""
    override = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if override:
        return int(override)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(_MAX_WORKERS, cores))


def pytest_collection_modifyitems(config, items):
    """Tests marked ``anonymeter`` skip where anonymeter (the [risk] extra) is not installed: CI's second pass runs
    on the newest numpy, which anonymeter does not support."""
    import importlib.util

    if importlib.util.find_spec("anonymeter") is not None:
        return
    skip = pytest.mark.skip(reason="anonymeter is not installed (pip install 'dpsynth[risk]')")
    for item in items:
        if "anonymeter" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def adult():
    from dpsynth import datasets

    data = datasets.load("adult")
    return data.train, data.test


@pytest.fixture(scope="session")
def adult_schema():
    from dpsynth import datasets

    return datasets.schema("adult")


@pytest.fixture(scope="session")
def adult_small(adult):
    train, _ = adult
    return train.sample(2000, random_state=0).reset_index(drop=True)


@pytest.fixture(scope="session")
def spark():
    """A local Spark session (2 cores, no UI); skips where pyspark or Java is missing."""
    pytest.importorskip("pyspark")
    import shutil

    if shutil.which("java") is None:
        pytest.skip("the Spark backend needs Java")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("dpsynth-tests").config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def pandas_loader_refused(monkeypatch):
    """Make ``dpsynth.datasets.load_table`` fail: a CLI fit that hands a file to an engine must never read its rows
    into pandas."""
    import dpsynth.datasets

    def refuse(*args, **kwargs):
        raise AssertionError("the CLI loaded the private table into pandas")

    monkeypatch.setattr(dpsynth.datasets, "load_table", refuse)
