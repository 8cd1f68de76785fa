"""Secure noise for the training models (DP-SGD, the sanitized generator, PATE, DP-EM, the poster DP-GAN): the
claims of dpsynth/privacy/secure_noise.py's docstring about the cryptographic generator.

The statistical tests draw from the operating system's generator, which takes no seed: each accepts at p > 1e-6 (a
false alarm once in a million runs) and is checked against a plausible mistake that it rejects far below that
(modulo reduction without rejection, a missing tie-break, a batch drawn from the seeded stream).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from scipy import stats

from dpsynth.errors import InputError
from dpsynth.privacy import secure_noise
from dpsynth.privacy.secure_noise import (
    secure_integers,
    secure_normal,
    secure_poisson_indices,
    secure_uniform,
    use_noise,
)

pytest.importorskip("opendp")  # use_noise("secure") needs it (the metadata's counts, PATE's votes)

P_ACCEPT = 1e-6


@pytest.fixture
def words(monkeypatch):
    """The counts of 64-bit words each call asks of the cryptographic generator (a spy on it)."""
    asked = []
    real = secure_noise._secure_words
    monkeypatch.setattr(secure_noise, "_secure_words", lambda count: asked.append(count) or real(count))
    return asked


def test_secure_normals_follow_the_normal_law_and_are_not_seeded():
    draws = secure_normal((400, 500), 2.5)
    assert draws.shape == (400, 500) and draws.dtype == np.float64
    assert stats.kstest(draws.ravel() / 2.5, "norm").pvalue > P_ACCEPT
    assert stats.kstest(draws.ravel() / 2.0, "norm").pvalue < 1e-9  # the wrong scale is caught
    # the variance of 200,000 draws: within 5 standard errors of std^2 (relative s.e. sqrt(2 / n))
    assert abs(draws.var() / 6.25 - 1) < 5 * math.sqrt(2 / draws.size)
    # rows and columns independent: lag-1 correlation of the flat stream near 0
    flat = draws.ravel()
    assert abs(np.corrcoef(flat[:-1], flat[1:])[0, 1]) < 5 / math.sqrt(flat.size)
    assert not np.array_equal(secure_normal(8, 1.0), secure_normal(8, 1.0))
    assert np.array_equal(secure_normal((3, 2), 0.0), np.zeros((3, 2)))
    assert secure_uniform(10_000).min() >= 0 and secure_uniform(10_000).max() < 1
    with pytest.raises(InputError, match="std must be a finite number >= 0"):
        secure_normal(3, -1.0)


def test_secure_integers_are_uniform_with_the_top_words_rejected():
    assert set(np.unique(secure_integers(7, 7_000))) == set(range(7))
    assert stats.chisquare(np.bincount(secure_integers(7, 70_000), minlength=7)).pvalue > P_ACCEPT
    # high = 3 * 2^61: the 64-bit words from 2 high up (a quarter of them) are rejected. Reduced modulo high
    # without rejection they would land in the first two thirds of range(high): shares 3/8, 3/8, 2/8.
    high = 3 * 2 ** 61
    draws = secure_integers(high, 30_000)
    assert draws.min() >= 0 and draws.max() < high
    thirds = np.bincount((draws // 2 ** 61).astype(int), minlength=3)
    assert stats.chisquare(thirds).pvalue > P_ACCEPT
    assert stats.chisquare(thirds, f_exp=[11_250, 11_250, 7_500]).pvalue < 1e-9  # what no rejection would give
    assert np.array_equal(secure_integers(1, 5), np.zeros(5, dtype=np.int64))
    for high in (0, 2 ** 63):
        with pytest.raises(InputError, match="1 <= high < 2"):
            secure_integers(high, 3)


@pytest.mark.parametrize("rate", [0.004, 0.03, 0.6])
def test_secure_poisson_batches_keep_each_index_independently_at_the_rate(rate):
    n, draws = 1_000, 3_000
    kept = np.zeros(n)
    pairs = 0
    sizes = []
    for _ in range(draws):
        idx = secure_poisson_indices(n, rate)
        assert np.all(np.diff(idx) > 0) and (not len(idx) or (idx[0] >= 0 and idx[-1] < n))
        kept[idx] += 1
        pairs += np.isin([0, 1], idx).all()  # the first two indices kept together
        sizes.append(len(idx))
    # each index kept at the rate (a chi-square over the indices), the batch size Binomial(n, rate)
    expected = draws * rate
    chi2 = ((kept - expected) ** 2 / (expected * (1 - rate))).sum()
    assert stats.chi2.sf(chi2, n) > P_ACCEPT
    assert abs(np.mean(sizes) - n * rate) < 5 * math.sqrt(n * rate * (1 - rate) / draws)
    assert abs(np.var(sizes) / (n * rate * (1 - rate)) - 1) < 5 * math.sqrt(2 / draws) + 0.02
    # independence: two given indices kept together at rate^2
    assert abs(pairs - draws * rate ** 2) < 5.5 * math.sqrt(draws * rate ** 2) + 1
    assert np.array_equal(secure_poisson_indices(5, 1.0), np.arange(5)) and not len(secure_poisson_indices(5, 0.0))


def test_a_bad_poisson_rate_is_refused_without_naming_the_row_count():
    """The row count is private (DESIGN.md section 1, rule 8): the one-line error names the rate only."""
    with pytest.raises(InputError, match="rate=1.5") as err:
        secure_poisson_indices(32_561, 1.5)
    assert "32561" not in str(err.value) and "32,561" not in str(err.value)


def test_the_dp_sgd_engine_draws_noise_and_batches_from_the_cryptographic_generator(words):
    """Inside ``use_noise("secure")`` DP-SGD's noise and Poisson batches come from secure_noise (counted), never
    from the seeded torch generator; outside it, from the generator (reproducible)."""
    from dpsynth.privacy.dpsgd import gaussian_noise
    from dpsynth.privacy.sampling import PoissonSampler

    gen = torch.Generator().manual_seed(0)
    sampler = PoissonSampler(5_000, 0.02, steps=2, generator=gen)
    with use_noise("secure"):
        noise = gaussian_noise(torch.Size([300, 40]), 1.5, gen)
        batch = sampler.draw()
    assert noise.dtype == torch.get_default_dtype() and noise.shape == (300, 40)
    assert stats.kstest(noise.numpy().ravel() / 1.5, "norm").pvalue > P_ACCEPT
    assert batch.dtype == torch.int64 and len(words) >= 3
    state = gen.get_state()
    assert torch.equal(state, torch.Generator().manual_seed(0).get_state())  # the seeded stream was not touched
    a = gaussian_noise(torch.Size([4]), 1.0, torch.Generator().manual_seed(1))
    assert torch.equal(a, gaussian_noise(torch.Size([4]), 1.0, torch.Generator().manual_seed(1)))


class _TorchSamplersRefused:
    """The torch module as one dpsynth module sees it, except that the samplers named fail."""

    def __init__(self, refused: set[str]):
        self._refused = refused

    def __getattr__(self, name):
        if name in self._refused:
            raise AssertionError(f"torch.{name} drew private randomness")
        return getattr(torch, name)


@pytest.fixture
def torch_noise_refused(monkeypatch):
    """Every torch draw of a mechanism's randomness (DP-SGD and sanitizer noise, Poisson batches, shards, PATE's
    vote noise, DP-EM's statistics noise) fails; the seeded draws of post-processing (latents, initial weights,
    PATE's and DP-SGD's fixed groups) stay."""
    from dpsynth.models import dp_syn
    from dpsynth.privacy import dpsgd, pate, sampling, sanitizer

    for module, names in ((dpsgd, {"normal"}), (pate, {"normal"}), (sampling, {"rand", "binomial", "randint"}),
                          (sanitizer, {"randint"})):
        monkeypatch.setattr(module, "torch", _TorchSamplersRefused(names))
    real = dp_syn.release_statistics

    def em_release(stats, **kw):  # DP-EM's noise draw is torch.randn inside release_statistics
        monkeypatch.setattr(dp_syn, "torch", _TorchSamplersRefused({"randn"}))
        try:
            return real(stats, **kw)
        finally:
            monkeypatch.setattr(dp_syn, "torch", torch)

    monkeypatch.setattr(dp_syn, "release_statistics", em_release)


TRAINING_MODELS = {  # one model per noise path: (what it draws, hyper-parameters beyond its fast_params)
    "dp-tldm": ("DP-SGD noise and Poisson batches", {}),
    "dtgan-g": ("the sanitizer's noise and its shards", {}),
    "pate-gan": ("PATE's Gaussian noisy argmax (discrete Gaussian votes)", {"votes": "argmax"}),
    "pate-ctgan": ("PATE's soft vote sums (the default votes)", {}),
    "dp-syn": ("DP-EM's statistics", {}),
}


@pytest.mark.parametrize("name", list(TRAINING_MODELS))
def test_a_secure_training_fit_draws_every_noise_securely(name, adult_small, torch_noise_refused, words,
                                                          discrete_draws, tmp_path):
    """A fit without a schema (the metadata phase by OpenDP: integer counts) and then the model's own mechanism: no
    torch sampler of a mechanism's randomness is called, the cryptographic generator is, every discrete Gaussian is
    recorded as one, the ledger is within its target (by PLD where DP-SGD carries it), the model file says so. The
    same fit with the default noise trips the guards (so they are live). (NumPy's samplers are not refused here: the
    mode-specific encoding draws each row's mode with Gumbel noise, a per-row transformation before DP-SGD, whose
    guarantee holds for any such draw.)"""
    from dpsynth.models import get_model_class
    from dpsynth.models.base import Synthesizer

    cls = get_model_class(name)
    what, params = TRAINING_MODELS[name]
    model = cls(**{**cls.fast_params, **params})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(adult_small, epsilon=1.0, delta=1e-5, seed=0, noise="secure", progress=False)
    assert words, what
    for col in model.schema_.columns:  # the metadata's counts as OpenDP drew them
        hist = model.metadata_.histograms[col.name]
        noisy = hist.unclipped() if col.is_discrete else hist.bin_noise(model.metadata_.sigma)[0]
        assert np.array_equal(noisy, np.round(noisy)), col.name
    discrete_draws.check(model.ledger_)  # the metadata's (and PATE argmax's) discrete Gaussians recorded as such
    assert 0.9 < model.ledger_.epsilon() <= 1.0 + 1e-9  # the calibration met the ledger (not refused, not far below)
    if name == "dp-tldm":  # the metadata's discrete Gaussians and DP-SGD compose by PLD, tighter than RDP
        assert model.ledger_.epsilon() == model.ledger_.epsilon("pld") < 0.95 * model.ledger_.epsilon("rdp")
    path = tmp_path / "secure.dpsynth"
    model.save(path)
    assert Synthesizer.load(path).fit_info_["noise"] == "secure"
    assert len(model.sample(100, seed=1)) == 100
    with pytest.raises(AssertionError, match="drew private randomness"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls(**{**cls.fast_params, **params}).fit(adult_small, epsilon=1.0, delta=1e-5, seed=0, progress=False)


def test_pates_secure_argmax_adds_discrete_gaussian_votes_and_breaks_ties_at_random():
    from dpsynth.privacy.ledger import PrivacyLedger
    from dpsynth.privacy.pate import noisy_argmax

    ledger = PrivacyLedger(target_epsilon=1e6, target_delta=1e-5, accountant="rdp")
    gen = torch.Generator().manual_seed(0)
    # two classes with equal votes and noise small enough that most noisy counts still tie: without a random
    # tie-break the first class would win every tie (about 0.99 of the queries instead of 0.5)
    votes = torch.full((4_000, 2), 5.0)
    with use_noise("secure"):
        labels = noisy_argmax(votes, mechanism="gaussian", noise_scale=0.3, ledger=ledger, phase="pate",
                              generator=gen)
    assert stats.binomtest(int(labels.sum()), len(labels), 0.5).pvalue > P_ACCEPT
    # a clear majority still wins (the tie-break keeps every strict order of the integer noisy counts)
    with use_noise("secure"):
        clear = noisy_argmax(torch.tensor([[9.0, 3.0]] * 200), mechanism="gaussian", noise_scale=0.3,
                             ledger=ledger, phase="pate", generator=gen)
    assert int(clear.sum()) == 0
    entries = len(ledger.entries)
    with use_noise("secure"), pytest.raises(InputError, match="Gaussian noisy argmax"):
        noisy_argmax(votes, mechanism="laplace", noise_scale=2.0, ledger=ledger, phase="pate", generator=gen)
    assert len(ledger.entries) == entries  # refused before it was charged


def test_an_rdp_only_ledger_is_calibrated_by_rdp_whatever_accountant_is_asked():
    from dp_accounting import dp_event

    from dpsynth.errors import BudgetExceededError
    from dpsynth.privacy.calibration import calibrate_noise
    from dpsynth.privacy.ledger import PrivacyLedger

    def ledger(accountant):
        out = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5, accountant=accountant)
        out.spend(dp_event.GaussianDpEvent(20.0), phase="metadata", mechanism="a count")
        return out

    def steps(sigma):
        return dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(sigma)),
                                            500)

    kw = dict(target_epsilon=1.0, delta=1e-5, sample_rate=0.01, steps=500)
    rdp_only = ledger("rdp")
    sigma = calibrate_noise(**kw, accountant="pld", ledger=rdp_only)
    assert sigma == calibrate_noise(**kw, accountant="rdp", ledger=rdp_only)
    rdp_only.spend(steps(sigma), phase="dpsgd", mechanism="steps")  # within the target
    assert rdp_only.epsilon() <= 1.0
    pld = calibrate_noise(**kw, accountant="pld", ledger=ledger("best"))  # where PLD counts, its tighter sigma
    assert pld < 0.97 * sigma
    with pytest.raises(BudgetExceededError):  # which the RDP-only ledger would refuse
        ledger("rdp").spend(steps(pld), phase="dpsgd", mechanism="steps")


def test_the_poster_gan_trains_with_secure_noise(words):
    import networkx as nx

    from dpsynth.graphs import release_degrees

    release = release_degrees(nx.karate_club_graph(), epsilon=1.0, method="node-dp-poster-gan", noise="secure",
                              seed=0, gan_params={"steps": 5})
    assert words  # the DP-SGD noise came from the cryptographic generator
    assert release.ledger.accountant == "pld" and 0.9 < release.ledger.epsilon() <= 1.0 + 1e-9
    words.clear()
    release_degrees(nx.karate_club_graph(), epsilon=1.0, method="node-dp-poster-gan", seed=0,
                    gan_params={"steps": 5})
    assert not words
