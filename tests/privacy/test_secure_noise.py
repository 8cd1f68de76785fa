"""Secure noise (``fit(..., noise="secure")``): one test per claim of dpsynth/privacy/secure_noise.py's docstring.

Each statistical test is set so that the mechanism it checks passes and a plausible mistake fails: the noise left
out, the continuous Gaussian in place of the discrete one, permute-and-flip (OpenDP's pure-DP noisy max) in place of
the exponential mechanism, the continuous tail in place of the discrete one.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dpsynth.errors import InputError, PrivacyError
from dpsynth.privacy.mechanisms import gaussian_counts, selection_delta, selection_threshold
from dpsynth.privacy.secure_noise import (
    discrete_gaussian,
    discrete_gaussian_sf,
    discrete_selection_threshold,
    gumbel_max,
    noise_mode,
    use_noise,
)

pytest.importorskip("opendp")

SECURE_MODELS = ["marginals", "mst", "aim", "batch-aim"]


def _pmf(sigma: float, reach: int) -> tuple[np.ndarray, np.ndarray]:
    """The discrete Gaussian's probabilities on -reach..reach, normalised over a range 40 sigma wide."""
    wide = int(40 * sigma) + reach
    xs = np.arange(-wide, wide + 1)
    w = np.exp(-xs.astype(float) ** 2 / (2 * sigma ** 2))
    keep = np.abs(xs) <= reach
    return xs[keep], w[keep] / w.sum()


@pytest.mark.parametrize("sigma", [0.7, 4.5])
def test_discrete_gaussian_counts_are_integers_with_the_discrete_gaussians_law(sigma):
    """Chi-square of 20,000 draws against N_Z(0, sigma^2)'s probabilities: accepted; the continuous Gaussian rounded
    to integers (a different law at sigma 0.7) and no noise are rejected by the same test."""
    counts = np.tile(np.arange(50), 400).astype(float)
    with use_noise("secure"):
        noisy = gaussian_counts(counts, sigma=sigma, rng=np.random.default_rng(0))
    noise = noisy - counts
    assert np.array_equal(noise, np.round(noise))
    xs, p = _pmf(sigma, reach=int(4 * sigma) + 1)

    def chi2_p(sample):
        observed = np.array([(sample == x).sum() for x in xs] + [(np.abs(sample) > xs[-1]).sum()], float)
        expected = np.append(p, max(1 - p.sum(), 1e-12)) * len(sample)
        mask = expected > 5
        observed, expected = observed[mask], expected[mask] * observed[mask].sum() / expected[mask].sum()
        return stats.chisquare(observed, expected).pvalue

    assert chi2_p(noise) > 1e-6  # OpenDP's draws take no seed: a false alarm 1 run in a million
    assert chi2_p(np.zeros_like(noise)) < 1e-12
    if sigma < 1:
        rounded = np.round(np.random.default_rng(1).normal(0, sigma, size=len(noise)))
        assert chi2_p(rounded) < 1e-12


def test_discrete_gaussian_refuses_counts_that_are_not_integers_and_checks_opendps_cost():
    with pytest.raises(PrivacyError, match="integer counts"):
        discrete_gaussian(np.array([1.0, 2.5]), 3.0)
    with pytest.raises(InputError, match="scale must be a finite number > 0"):
        discrete_gaussian(np.array([1.0]), 0.0)
    import opendp.prelude as dp

    space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64")
    for sigma in (0.5, 3.3, 466.0):  # the rho the ledger records for GaussianDpEvent(sigma) under RDP
        assert dp.m.make_gaussian(*space, scale=sigma).map(1) == pytest.approx(1 / (2 * sigma ** 2), rel=1e-9)


def test_gumbel_max_draws_the_exponential_mechanism():
    """6,000 selections among four scores against P(r) ~ exp(epsilon score_r / (2 sensitivity)): accepted; the
    probabilities of permute-and-flip (report noisy max with exponential noise) are rejected by the same test."""
    scores, epsilon, sensitivity = np.array([0.0, 1.0, 2.0, 0.5]), 1.0, 1.0
    picks = np.bincount([gumbel_max(scores, epsilon, sensitivity) for _ in range(6_000)], minlength=4)
    p = np.exp(epsilon * scores / (2 * sensitivity))
    p /= p.sum()
    assert stats.chisquare(picks, p * picks.sum()).pvalue > 1e-6  # unseeded: a false alarm 1 run in a million
    import opendp.prelude as dp

    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float, monotonic=False)
    flip = dp.m.make_noisy_max(*space, dp.max_divergence(), scale=2 * sensitivity / epsilon)
    other = np.bincount([flip(list(scores)) for _ in range(6_000)], minlength=4)
    assert stats.chisquare(other, p * other.sum()).pvalue < 1e-9


def test_discrete_tail_and_the_selection_threshold_it_gives():
    sigma = 2.5
    xs, p = _pmf(sigma, reach=200)
    for k in (-3, 0, 1, 4, 9):
        assert discrete_gaussian_sf(k, sigma) == pytest.approx(p[xs >= k].sum(), rel=1e-9)
    for delta in (0.05, 1e-4, 1e-9):
        t = discrete_selection_threshold(sigma, delta)
        assert t == int(t) and discrete_gaussian_sf(int(t) - 1, sigma) <= delta < discrete_gaussian_sf(int(t) - 2,
                                                                                                   sigma)
    # the mechanisms' functions switch with the noise: inside a secure fit the discrete tail, outside the continuous
    with use_noise("secure"):
        assert selection_threshold(sigma, 1e-4) == discrete_selection_threshold(sigma, 1e-4)
        assert selection_delta(sigma, 11.0) == discrete_gaussian_sf(10, sigma)
    assert selection_threshold(sigma, 1e-4) == pytest.approx(1 + sigma * stats.norm.isf(1e-4))
    assert noise_mode() == "numpy"
    # a key of true count 1 is released at the rate the ledger's extra delta says (20,000 draws, delta 0.05)
    threshold = discrete_selection_threshold(sigma, 0.05)
    with use_noise("secure"):
        released = gaussian_counts(np.ones(20_000), sigma=sigma, rng=np.random.default_rng(0)) >= threshold
    rate = discrete_gaussian_sf(int(threshold) - 1, sigma)
    assert abs(released.mean() - rate) < 5.5 * math.sqrt(rate * (1 - rate) / 20_000)  # unseeded: 5.5 sds


class _FloatNoiseRefused(np.random.Generator):
    """A NumPy generator whose float noise samplers fail: what a secure fit must never call."""

    def normal(self, *args, **kwargs):
        raise AssertionError("NumPy's Gaussian sampler was called")

    def gumbel(self, *args, **kwargs):
        raise AssertionError("NumPy's Gumbel sampler was called")


@pytest.fixture
def float_noise_refused(monkeypatch):
    def guarded(seed=None):
        return seed if isinstance(seed, np.random.Generator) else _FloatNoiseRefused(np.random.PCG64(seed))

    monkeypatch.setattr(np.random, "default_rng", guarded)


@pytest.mark.parametrize("name", SECURE_MODELS)
def test_a_secure_fit_draws_every_noise_with_opendp_and_records_it(name, adult_small, float_noise_refused,
                                                                    discrete_draws, tmp_path):
    """Without a schema (DP discovery: row count, bounds, histograms, partition selection) and then every
    measurement and selection of the model: no NumPy noise sampler is called, the released counts are integers, every
    discrete Gaussian drawn is recorded as one, the ledger is within its target (by RDP where the selections' zCDP
    events are; by PLD, tighter, for ``marginals``' counts alone), and the model file says so. The same fit with
    NumPy noise trips the guard (so the guard is live)."""
    from dpsynth.models import get_model_class
    from dpsynth.models.base import Synthesizer

    cls = get_model_class(name)
    model = cls(**cls.fast_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(adult_small, epsilon=1.0, delta=1e-5, seed=0, noise="secure")
    discrete_draws.check(model.ledger_)
    ledger = model.ledger_
    if name != "marginals":  # the guard saw selections too
        assert any(e.mechanism.startswith("select") for e in ledger.entries)
        assert ledger.epsilon() == ledger.epsilon("rdp") <= 1.0 + 1e-9  # zCDP selections: RDP only
    else:
        assert 0.99 < ledger.epsilon() == ledger.epsilon("pld") < 0.95 * ledger.epsilon("rdp")
    _assert_integer_releases(model)
    path = tmp_path / "secure.dpsynth"
    model.save(path)
    assert Synthesizer.load(path).fit_info_["noise"] == "secure"
    assert len(model.sample(seed=1)) == model.row_count_
    with pytest.raises(AssertionError, match="NumPy's"):
        cls(**cls.fast_params).fit(adult_small, epsilon=1.0, delta=1e-5, seed=0)


def _assert_integer_releases(model) -> None:
    """The metadata's counts as OpenDP drew them: integers (each histogram's unclipped cells and row total; the DP
    row count is their pool with the row-count query, a weighted mean, so not one)."""
    for col in model.schema_.columns:
        hist = model.metadata_.histograms[col.name]
        noisy = hist.unclipped() if col.is_discrete else hist.bin_noise(model.metadata_.sigma)[0]
        assert np.array_equal(noisy, np.round(noisy)), col.name
        assert hist.row_total is None or hist.row_total == int(hist.row_total), col.name
    assert any(h.row_total is not None for h in model.metadata_.histograms.values())


def test_a_secure_fit_counted_in_duckdb(adult_small, float_noise_refused, discrete_draws, tmp_path):
    """The engine path: discovery and the measurements counted by DuckDB from a Parquet file, noised by OpenDP."""
    pytest.importorskip("duckdb")
    from dpsynth.models import get_model_class

    path = tmp_path / "rows.parquet"
    adult_small.to_parquet(path)
    model = get_model_class("batch-aim")(backend="duckdb", **get_model_class("batch-aim").fast_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(path, epsilon=1.0, delta=1e-5, seed=0, noise="secure")
    assert model.ledger_.epsilon() <= 1.0 + 1e-9
    discrete_draws.check(model.ledger_)
    _assert_integer_releases(model)
    assert any(e.mechanism.startswith("select") for e in model.ledger_.entries)


def test_a_secure_fit_counted_in_spark(adult_small, spark, float_noise_refused, discrete_draws, tmp_path):
    """The same through Spark (local mode; skipped where pyspark or Java is missing): a Spark DataFrame, DP discovery
    in Spark SQL, OpenDP's noise."""
    from dpsynth.models import get_model_class

    path = tmp_path / "rows.parquet"
    adult_small.to_parquet(path)
    model = get_model_class("mst")(backend="spark", **get_model_class("mst").fast_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(spark.read.parquet(str(path)), epsilon=1.0, delta=1e-5, seed=0, noise="secure")
    assert model.ledger_.epsilon() <= 1.0 + 1e-9
    discrete_draws.check(model.ledger_)
    _assert_integer_releases(model)
    assert any(e.mechanism.startswith("select") for e in model.ledger_.entries)


def test_secure_noise_is_refused_for_a_model_that_draws_noise_of_its_own_before_any_budget(adult_small):
    """Every built-in model's mechanisms are dpsynth.privacy's (tests/privacy/test_secure_training_noise.py); a
    model flagged ``secure_noise = False`` (a plug-in drawing its own noise) is refused before its ledger exists."""
    from dpsynth.models import get_model_class

    class OwnNoise(get_model_class("marginals")):
        name = "own-noise"
        secure_noise = False

    model = OwnNoise()
    with pytest.raises(InputError, match="noise='secure' covers .*aim, batch-aim.*dp-tldm.*Found model 'own-noise'"):
        model.fit(adult_small, epsilon=1.0, delta=1e-5, noise="secure")
    assert not hasattr(model, "ledger_")
    assert OwnNoise().fit(adult_small, epsilon=float("inf"), delta=1e-5, noise="secure").ledger_.non_private  # no noise
    with pytest.raises(InputError, match="noise must be one of numpy, secure"):
        get_model_class("mst")().fit(adult_small, epsilon=1.0, delta=1e-5, noise="opendp")


def test_dpsynth_fit_noise_secure_through_the_cli(adult_small, tmp_path, capsys):
    from dpsynth.cli import main

    data = tmp_path / "rows.csv"
    adult_small.to_csv(data, index=False)
    out = tmp_path / "m.dpsynth"
    assert main(["fit", str(data), "--model", "mst", "--epsilon", "1", "--noise", "secure", "--out", str(out),
                 "--quiet"]) == 0
    assert main(["info", str(out)]) == 0
    assert "noise secure (OpenDP" in capsys.readouterr().out
