"""Fixtures shared by the graphical-model tests."""

from __future__ import annotations

import numpy as np
import pytest

from dpsynth.marginals.graphical_model import Measurement


@pytest.fixture
def noisy_problem():
    """``make(cliques, sigma=5.0)`` -> (sizes, measurements): noisy count tables (noise sd ``sigma``) of ``cliques``
    from 1,000 correlated rows over four attributes of sizes 3, 4, 2, 3; the same rows and noise on every call."""

    def make(cliques, sigma: float = 5.0):
        rng = np.random.default_rng(0)
        sizes, n = [3, 4, 2, 3], 1000
        data = rng.integers(0, 2, size=(n, 4))
        data[:, 1] = (data[:, 0] + rng.integers(0, 3, n)) % 4
        data[:, 2] = (data[:, 1] > 1).astype(int)
        data[:, 3] = (data[:, 2] + rng.integers(0, 2, n)) % 3
        measurements = []
        for c in cliques:
            table = np.zeros([sizes[a] for a in c])
            np.add.at(table, tuple(data[:, a] for a in c), 1)
            measurements.append(Measurement(c, table + rng.normal(0, sigma, table.shape), sigma))
        return sizes, measurements

    return make
