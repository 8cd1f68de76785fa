"""Secure noise: the count mechanisms' randomness drawn by OpenDP instead of NumPy (``fit(..., noise="secure")``).

Why: NumPy's Gaussian and Gumbel samplers are floating-point transformations of a seedable PCG64 stream. That is
fine for research but not for a release an attacker studies: a float sampler's output can carry the low-order bits of
the exact count it was added to (Mironov 2012 for the Laplace mechanism; Jin et al. 2022 for Gaussian samplers of
several DP libraries), and PCG64 is not a cryptographic generator. OpenDP samples exactly, from the operating
system's cryptographic generator (OpenSSL), with arbitrary-precision arithmetic.

What changes under ``noise="secure"`` (the context :func:`use_noise` that ``Synthesizer.fit`` opens):

- every Gaussian count query (:func:`dpsynth.privacy.mechanisms.gaussian_counts`: the metadata phase's row count,
  bounds, histograms, profiles and partition selection, and every marginal measurement) adds **discrete Gaussian** noise
  ``N_Z(0, sigma^2)`` (Canonne, Kamath and Steinke 2020) to the integer counts: the noisy counts are integers;
- the exponential mechanism of AIM / MST (:func:`dpsynth.marginals.mechanisms.select`) is OpenDP's exact noisy
  max with Gumbel noise of scale ``2 * sensitivity / epsilon`` (the Gumbel-max form of the same mechanism, whose
  zCDP cost OpenDP reports as ``epsilon^2 / 8``, checked before each draw);
- each count query is recorded as a :class:`~dpsynth.privacy.events.DiscreteGaussianDpEvent` and calibrated as one:
  the PLD accountant takes dp-accounting's PLD of the discrete Gaussian (its (epsilon, delta) profile is not the
  continuous one: at sigma 1 it is the larger), the RDP accountant its zCDP bound ``D^2 / (2 sigma^2)`` at integer
  sensitivity ``D`` (CKS20; OpenDP's own privacy map says the same and is checked before each draw), so the ledger
  composes by the tighter of the two as with NumPy noise. Until 2026-12-08 the counts were recorded as continuous
  Gaussians and the ledger composed by RDP only, which cost a secure DP-SGD fit about 9% more noise;
- partition selection's threshold comes from the discrete Gaussian's own tail (:func:`discrete_selection_threshold`).

The graph degree releases (:func:`dpsynth.graphs.release_degrees`, ``noise="secure"``) add **discrete Laplace**
noise (OpenDP) to their integer statistics, recorded as dp-accounting's ``DiscreteLaplaceDpEvent`` and composed by
PLD (pure epsilon-DP; the RDP accountant does not take that event).

The training-based models (DP-SGD, the sanitized generator of DTGAN_G, PATE, DP-EM, the poster DP-GAN) add
continuous Gaussian noise to float sums (clipped gradients, soft votes, EM statistics) millions of times a fit:
OpenDP's exact float Gaussian draws about 16,000 numbers a second on one core, hours for one DP-SGD fit. Under
``noise="secure"`` their randomness comes instead from the operating system's cryptographic generator
(``os.urandom``), never from a seedable stream:

- :func:`secure_normal`: each N(0, std^2) entry is the sum of ``NORMAL_PARTS`` = 4 independent Box-Muller normals of
  the same std, divided by 2 (same law). Summing normals is Holohan and Braghin's (2021) defence against the
  floating-point attacks on a single Box-Muller draw, the one Opacus' ``secure_mode`` takes; it is a mitigation,
  not OpenDP's exactness, which stays with the count queries above. The one exception is PATE's noisy argmax: its
  votes are integer counts, so they get OpenDP's discrete Gaussian like every count query (a tie between classes
  broken uniformly at random, post-processing);
- :func:`secure_poisson_indices`: DP-SGD's Poisson batches (the accountant's amplification assumes the batch is
  secret: a batch drawn from a known seed is not), by geometric gaps between kept indices;
- :func:`secure_integers`: DTGAN_G's shard of each row and shard of each step (its amplification by sampling).

The continuous noise is recorded as before (a Gaussian as a Gaussian), and the ledger composes it with the counts'
discrete Gaussians by the tighter of PLD and RDP, so a DP-SGD fit under secure noise gets the noise it gets with
NumPy's (:mod:`dpsynth.privacy.accounting` says how the discrete Gaussian's PLD stays tight over
the thousands of them PATE's secure argmax draws).

Post-processing (the generator's sampling, decoding numbers inside their bins) and the rest of training's
randomness keep NumPy / torch and the fit's seed: initial weights, and the draws that meet the private rows inside a
step (a mode-specific encoding's mode of each row, diffusion noise, a VAE's latents). DP-SGD's argument averages over
those (i.i.d. per row), so they too must stay unknown to an attacker: a release leaves its seed out or keeps it
secret. The fit is not reproducible from its seed (the secure noise cannot be seeded).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
from collections.abc import Iterator

import numpy as np

from dpsynth.errors import InputError, PrivacyError

__all__ = ["NOISE_MODES", "noise_mode", "use_noise", "check_noise", "discrete_gaussian", "discrete_laplace",
           "gumbel_max", "discrete_gaussian_sf", "discrete_selection_threshold", "discrete_selection_delta",
           "secure_uniform", "secure_normal", "secure_integers", "secure_poisson_indices"]

NOISE_MODES = ("numpy", "secure")

_MODE: contextvars.ContextVar[str] = contextvars.ContextVar("dpsynth_noise", default="numpy")
# the largest integer a float64 holds exactly: counts beyond it cannot be passed on as integers
_EXACT_INT = 2 ** 53


def check_noise(noise: str) -> str:
    if noise not in NOISE_MODES:
        raise InputError(f"noise must be one of {', '.join(NOISE_MODES)}. Found {noise!r}.")
    return noise


def noise_mode() -> str:
    """``"numpy"`` (default) or ``"secure"``: the noise of the fit running in this context."""
    return _MODE.get()


@contextlib.contextmanager
def use_noise(noise: str) -> Iterator[None]:
    """Run the block with ``noise`` as the count mechanisms' noise (checks that OpenDP is there first)."""
    check_noise(noise)
    if noise == "secure":
        _opendp()
    token = _MODE.set(noise)
    try:
        yield
    finally:
        _MODE.reset(token)


@functools.lru_cache(maxsize=1)
def _opendp():
    try:
        import opendp.prelude as dp
    except ImportError as exc:
        raise InputError("noise='secure' draws its noise with OpenDP: pip install 'dpsynth[secure]' "
                         "(or pip install opendp).") from exc
    # OpenDP gates the constructors used here (make_gaussian on integers, make_noisy_max) behind its "contrib"
    # flag: proven in its documentation but not yet vetted by its own review. A process-wide switch of OpenDP's.
    dp.enable_features("contrib")
    return dp


def discrete_gaussian(counts: np.ndarray, sigma: float) -> np.ndarray:
    """``counts`` (integer-valued; sensitivity 1 in the L2 norm) plus discrete Gaussian noise ``N_Z(0, sigma^2)``
    per cell, drawn by OpenDP; integer-valued floats of the same shape. Refuses non-integer counts (the mechanism is
    defined on integers) and checks OpenDP's zCDP cost against the ``1 / (2 sigma^2)`` the ledger records."""
    return _integer_noise(counts, sigma, "discrete Gaussian", lambda dp, space: dp.m.make_gaussian(*space, scale=sigma),
                          "l2_distance", sensitivity=1, recorded_cost=lambda: 1.0 / (2.0 * sigma ** 2))


def discrete_laplace(values: np.ndarray, scale: float, sensitivity: int) -> np.ndarray:
    """Integer ``values`` (of integer L1 sensitivity ``sensitivity``) plus discrete Laplace noise, ``P(x) ~
    exp(-|x| / scale)`` per entry, drawn by OpenDP: ``sensitivity / scale``-DP (pure), checked against OpenDP's
    map. The graph degree releases' secure noise (:mod:`dpsynth.graphs.degrees`)."""
    return _integer_noise(values, scale, "discrete Laplace", lambda dp, space: dp.m.make_laplace(*space, scale=scale),
                          "l1_distance", sensitivity=int(sensitivity), recorded_cost=lambda: sensitivity / scale)


def _integer_noise(values, scale: float, what: str, make, metric: str, *, sensitivity: int,
                   recorded_cost) -> np.ndarray:
    """``values`` plus OpenDP's integer noise of ``scale`` (``make(dp, space)`` builds the mechanism on integer
    vectors under ``metric``), after checking the inputs and OpenDP's cost at ``sensitivity`` against the
    ledger's ``recorded_cost()`` (evaluated once ``scale`` is known to be positive)."""
    values = np.asarray(values, dtype=float)
    if not (scale > 0 and math.isfinite(scale)):
        raise InputError(f"the {what}'s scale must be a finite number > 0. Found {scale!r}.")
    if not np.all(np.isfinite(values)) or np.any(values != np.round(values)) or np.any(np.abs(values) > _EXACT_INT):
        raise PrivacyError(f"noise='secure' adds {what} noise to integer counts; these values are not integers.")
    if values.size == 0:
        return values.copy()
    dp = _opendp()
    mechanism = make(dp, (dp.vector_domain(dp.atom_domain(T="i64")), getattr(dp, metric)(T="i64")))
    _check_cost(float(mechanism.map(sensitivity)), recorded_cost(), what)
    noisy = mechanism(values.astype(np.int64).ravel().tolist())
    return np.asarray(noisy, dtype=float).reshape(values.shape)


def gumbel_max(scores: np.ndarray, epsilon: float, sensitivity: float) -> int:
    """Index drawn by the exponential mechanism ``P(r) ~ exp(epsilon * score_r / (2 * sensitivity))``, as OpenDP's
    exact noisy max with Gumbel noise of scale ``2 * sensitivity / epsilon`` (scores may move either way between
    neighbours: OpenDP's non-monotonic L-infinity distance). Checks OpenDP's zCDP cost against ``epsilon^2 / 8``."""
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float, monotonic=False)
    mechanism = dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=2.0 * sensitivity / epsilon)
    _check_cost(float(mechanism.map(float(sensitivity))), epsilon ** 2 / 8.0, "noisy max")
    return int(mechanism([float(s) for s in np.asarray(scores, dtype=float)]))


def _check_cost(opendp_cost: float, recorded_cost: float, what: str) -> None:
    """OpenDP's own privacy map (rho, or epsilon for the Laplace) must not exceed what the ledger recorded (it rounds
    up: a relative 1e-6 slack)."""
    if opendp_cost > recorded_cost * (1 + 1e-6):
        raise PrivacyError(f"OpenDP reports a cost of {opendp_cost:.6g} for the {what} against {recorded_cost:.6g} "
                           "recorded in the ledger: not drawn.")


# ---------------------------------------------------------------------- the discrete Gaussian's tail
_MAX_TAIL_SIGMA = 1e5  # the tail table holds 40 sigma entries: 4 million at most


@functools.lru_cache(maxsize=8)
def _tail_table(sigma: float) -> np.ndarray:
    """``tails[k] = P[X >= k]`` for ``X ~ N_Z(0, sigma^2)`` and ``k = 0 .. 40 sigma`` (the mass beyond is below
    1e-340: zero in float64)."""
    if not (0 < sigma <= _MAX_TAIL_SIGMA):
        raise InputError(f"noise='secure' computes the discrete Gaussian's tail for sigma in (0, {_MAX_TAIL_SIGMA:g}]."
                         f" Found {sigma!r}.")
    xs = np.arange(0, int(math.ceil(40.0 * sigma)) + 2, dtype=float)
    weights = np.exp(-xs ** 2 / (2.0 * sigma ** 2))
    total = 2.0 * weights.sum() - weights[0]  # the negative side mirrors the positive one
    return np.cumsum(weights[::-1])[::-1] / total  # summed from the far end: small tails keep their digits


def discrete_gaussian_sf(k: int, sigma: float) -> float:
    """``P[X >= k]`` for ``X ~ N_Z(0, sigma^2)`` and an integer ``k`` (for ``k <= 0`` by symmetry,
    ``1 - P[X >= 1 - k]``)."""
    tails, k = _tail_table(float(sigma)), int(k)
    if k <= 0:
        return 1.0 - (float(tails[1 - k]) if 1 - k < len(tails) else 0.0)
    return float(tails[k]) if k < len(tails) else 0.0


def discrete_selection_threshold(sigma: float, delta: float) -> float:
    """The smallest integer threshold ``T >= 1`` such that a key of true count 1 clears it (its noisy count, an
    integer, ``>= T``) with probability at most ``delta`` under discrete Gaussian noise: ``P[X >= T - 1] <= delta``."""
    if not (0 < delta < 0.5):
        raise InputError(f"selection delta must be in (0, 0.5). Found {delta}.")
    tails = _tail_table(float(sigma))
    return float(int(np.argmax(tails <= delta)) + 1)  # tails fall to 0.0 <= delta at the end; tails[0] > 0.5


def discrete_selection_delta(sigma: float, threshold: float) -> float:
    """Probability that a key of true count 1 clears ``threshold`` under discrete Gaussian noise (noisy counts are
    integers, so clearing ``threshold`` is reaching ``ceil(threshold)``)."""
    return discrete_gaussian_sf(int(math.ceil(threshold)) - 1, sigma)


# ---------------------------------------------------------------------- the training models' noise (module docstring)
#: independent Box-Muller normals summed (and scaled back) into one secure normal draw: Holohan and Braghin (2021)
NORMAL_PARTS = 4


def _secure_words(count: int) -> np.ndarray:
    """``count`` independent uniform 64-bit words from the operating system's cryptographic generator."""
    return np.frombuffer(os.urandom(8 * int(count)), dtype=np.uint64)


def secure_uniform(count: int) -> np.ndarray:
    """``count`` uniforms on the grid ``{k 2^-53 : 0 <= k < 2^53}`` of [0, 1) (every float64 of that spacing equally
    likely), from the operating system's cryptographic generator."""
    return (_secure_words(count) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def secure_normal(shape, std: float) -> np.ndarray:
    """An array of ``shape`` with i.i.d. N(0, std^2) entries (float64), from the cryptographic generator: each entry
    is ``(z_1 + ... + z_4) / 2`` for independent Box-Muller normals ``z_i ~ N(0, std^2)`` (module docstring)."""
    std = float(std)
    if not (std >= 0 and math.isfinite(std)):
        raise InputError(f"the secure normal's std must be a finite number >= 0. Found {std!r}.")
    shape = tuple(int(s) for s in np.atleast_1d(shape)) if np.ndim(shape) else (int(shape),)
    n = math.prod(shape)
    if std == 0 or n == 0:
        return np.zeros(shape)
    pairs = -(-n * NORMAL_PARTS // 2)  # each Box-Muller pair of uniforms gives two independent normals
    radius = np.sqrt(-2.0 * np.log1p(-secure_uniform(pairs)))  # 1 - u in (0, 1]: the log is finite
    angle = (2.0 * math.pi) * secure_uniform(pairs)
    normals = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])[: n * NORMAL_PARTS]
    return (std / math.sqrt(NORMAL_PARTS) * normals.reshape(NORMAL_PARTS, n).sum(axis=0)).reshape(shape)


def secure_integers(high: int, count: int) -> np.ndarray:
    """``count`` i.i.d. uniform integers of ``range(high)`` (int64) from the cryptographic generator: 64-bit words
    reduced modulo ``high`` after rejecting the top ``2^64 mod high`` words (which would favour small values)."""
    high, count = int(high), int(count)
    if not 1 <= high < 2 ** 63 or count < 0:
        raise InputError(f"secure integers need 1 <= high < 2^63 and count >= 0. Found high={high}, count={count}.")
    limit = (2 ** 64 // high) * high  # the words below it map evenly onto range(high)
    out = np.empty(count, dtype=np.int64)
    filled = 0
    while filled < count:
        words = _secure_words(count - filled + 8)
        if limit < 2 ** 64:
            words = words[words < np.uint64(limit)]
        take = min(len(words), count - filled)
        out[filled:filled + take] = (words[:take] % np.uint64(high)).astype(np.int64)
        filled += take
    return out


def secure_poisson_indices(n: int, rate: float) -> np.ndarray:
    """Poisson subsampling of ``range(n)`` from the cryptographic generator: each index kept independently with
    probability ``rate``; the kept indices, sorted (int64). Drawn as the geometric gaps between kept indices
    (``P[gap >= g] = (1 - rate)^g``, ``gap = floor(log U / log(1 - rate))`` for a uniform U in (0, 1]), so it costs
    O(n rate) draws, not one per index."""
    n, rate = int(n), float(rate)
    if n < 0 or not 0.0 <= rate <= 1.0:
        # ``n`` is the private row count: the message names the rate only (DESIGN.md section 1, rule 8)
        raise InputError(f"Poisson subsampling needs a rate in [0, 1] and a row count >= 0. Found rate={rate!r}.")
    if rate == 1.0:
        return np.arange(n, dtype=np.int64)
    if rate == 0.0 or n == 0:
        return np.empty(0, dtype=np.int64)
    log_keep_out = math.log1p(-rate)
    chunks, last = [], -1  # ``last``: the position of the last index drawn (kept or, at the end, beyond n)
    while last < n - 1:
        expected = (n - 1 - last) * rate
        m = int(expected + 6.0 * math.sqrt(expected) + 16)
        gaps = np.floor(np.log1p(-secure_uniform(m)) / log_keep_out)
        positions = last + np.cumsum(np.minimum(gaps, n) + 1.0)  # capped: no overflow, still beyond n
        chunks.append(positions[positions < n].astype(np.int64))
        last = int(min(positions[-1], n))
    return np.concatenate(chunks)
