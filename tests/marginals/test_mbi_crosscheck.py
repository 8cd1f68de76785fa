"""Cross-check of dpsynth's NumPy graphical model against private-pgm (mbi 2.x): the same noisy measurements give the
same estimated marginals. mbi needs JAX and numpy >= 2, so this runs in CI's second pass (newest numpy) and skips
where mbi is not installed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpsynth.marginals.graphical_model import MarkovRandomField, Measurement

mbi = pytest.importorskip("mbi")


@pytest.mark.parametrize("cliques", [[(0, 1), (1, 2), (2, 3), (0,)], [(0, 1), (1, 2), (0, 2), (3,)]])
def test_same_measurements_same_estimate_as_mbi(cliques):
    import jax

    jax.config.update("jax_enable_x64", True)
    from mbi import estimation

    rng = np.random.default_rng(0)
    sizes, names, n, sigma = [3, 4, 2, 3], "abcd", 1000, 5.0
    data = rng.integers(0, 2, size=(n, 4))
    data[:, 1] = (data[:, 0] + rng.integers(0, 3, n)) % 4
    data[:, 2] = (data[:, 1] > 1).astype(int)
    data[:, 3] = (data[:, 2] + rng.integers(0, 2, n)) % 3
    measured = []
    for c in cliques:
        table = np.zeros([sizes[a] for a in c])
        np.add.at(table, tuple(data[:, a] for a in c), 1)
        measured.append((c, table + rng.normal(0, sigma, table.shape)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        domain = mbi.Domain(list(names), sizes)
        linear = [mbi.LinearMeasurement(y.ravel(), tuple(names[a] for a in c), stddev=sigma) for c, y in measured]
        theirs = estimation.MirrorDescent().estimate(domain, linear, known_total=float(n), iters=3000)
    ours = MarkovRandomField(sizes, cliques, float(n))
    ours.estimate([Measurement(c, y, sigma) for c, y in measured], iterations=3000, tol=1e-12)
    for c, _ in measured:
        expected = np.asarray(theirs.project(tuple(names[a] for a in c)).datavector()).reshape(ours.project(c).shape)
        np.testing.assert_allclose(ours.project(c), expected, atol=0.05 * sigma)
