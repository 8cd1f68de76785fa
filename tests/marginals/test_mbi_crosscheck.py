"""Cross-check of dpsynth's NumPy graphical model against private-pgm (mbi 2.x): the same noisy measurements give the
same estimated marginals. mbi needs JAX and numpy >= 2, so this runs in CI's second pass (newest numpy) and skips
where mbi is not installed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpsynth.marginals.graphical_model import MarkovRandomField

mbi = pytest.importorskip("mbi")


@pytest.mark.parametrize("cliques", [[(0, 1), (1, 2), (2, 3), (0,)], [(0, 1), (1, 2), (0, 2), (3,)]])
def test_same_measurements_same_estimate_as_mbi(cliques, noisy_problem):
    import jax

    jax.config.update("jax_enable_x64", True)
    from mbi import estimation

    sizes, measurements = noisy_problem(cliques)
    names, n, sigma = "abcd", 1000, 5.0
    measured = [(m.clique, m.y) for m in measurements]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        domain = mbi.Domain(list(names), sizes)
        linear = [mbi.LinearMeasurement(y.ravel(), tuple(names[a] for a in c), stddev=sigma) for c, y in measured]
        theirs = estimation.MirrorDescent().estimate(domain, linear, known_total=float(n), iters=3000)
    ours = MarkovRandomField(sizes, cliques, float(n))
    ours.estimate(measurements, iterations=3000, tol=1e-12)
    for c, _ in measured:
        expected = np.asarray(theirs.project(tuple(names[a] for a in c)).datavector()).reshape(ours.project(c).shape)
        np.testing.assert_allclose(ours.project(c), expected, atol=0.05 * sigma)
