"""Small mixed-type tables for the evaluation tests (seconds, not minutes)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def make_table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, size=n)
    hours = np.clip(rng.normal(40, 10, size=n), 1, 99).round(1)
    color = rng.choice(["red", "green", "blue"], size=n, p=[0.5, 0.3, 0.2])
    kids = rng.integers(0, 4, size=n)  # numeric with few levels: categorical by the dtype rule
    score = 0.05 * (age - 50) + 0.04 * (hours - 40) + (color == "red") * 0.8 + rng.normal(0, 0.7, size=n)
    label = np.where(score > 0.3, "yes", "no")
    return pd.DataFrame({"age": age, "hours": hours, "color": color, "kids": kids, "label": label})


@pytest.fixture(scope="session")
def real() -> pd.DataFrame:
    return make_table(400, 0)


@pytest.fixture(scope="session")
def real_test() -> pd.DataFrame:
    return make_table(200, 1)


@pytest.fixture()
def two_samples() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two independent samples of one population (1,000 rows each)."""
    return make_table(1000, 0), make_table(1000, 7)
