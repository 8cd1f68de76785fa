"""Seed 001's DP-GAN for graphs (Lu & Yu 2017, §2.5), with the accounting its construction implies.

The poster turns one graph into a "table": rows are the vectorised adjacency matrices (upper triangles) of the
graph under random node permutations, and a GAN whose discriminator is trained with DP-SGD learns them "as if
rows were independent people". They are not. Every row holds every node and every edge, so two neighbouring
graphs differ in **every row**:

* neighbouring relation here: **node replacement** — one node's incident edges rewired arbitrarily, the node
  count ``n`` kept (the construction needs a fixed row width ``n (n - 1) / 2``, so ``n`` is public; add/remove
  node-DP would need a public cap and a DP node count on top). Edge-DP neighbours are a special case.
* per-step sensitivity: with per-example clipping at ``C`` the sum over a batch of ``B`` rows moves by up to
  ``2 B C`` (each row can change completely), and Poisson or uniform subsampling amplifies nothing, since every
  sampled row is affected. We use **batch clipping** instead: the batch's mean discriminator gradient (real and
  generated terms) is clipped to ``C`` as one vector, so any change of the batch moves it by at most ``2 C``;
  Gaussian noise of std ``2 C z`` makes each step a Gaussian mechanism of noise multiplier ``z``, and ``steps``
  steps compose without amplification (``z`` calibrated by the ledger so the composition meets the target).
  Equivalently, the poster's subsampled accounting understates epsilon by the factor the amplification claimed.
* the generator sees only the DP discriminator (post-processing); the permutations are drawn independently of
  the graph; the released degree histogram is the mean over ``n_samples`` generated graphs (post-processing),
  rounded to ``n`` nodes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpsynth.errors import InputError
from dpsynth.privacy.ledger import PrivacyLedger

__all__ = ["poster_gan_histogram", "permuted_adjacency_rows", "privatize_batch_gradient", "POSTER_GAN_DEFAULTS"]

POSTER_GAN_DEFAULTS: dict[str, Any] = {"steps": 1000, "batch_size": 64, "rows": 1000, "clip": 1.0, "hidden": 128,
                                       "noise_dim": 32, "learning_rate": 2e-4, "n_samples": 100}
MAX_TRAINING_BYTES = 2 * 1024**3  # the stacked permuted adjacency rows are held in memory (float32)


def permuted_adjacency_rows(adjacency: np.ndarray, rows: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` upper triangles (strictly above the diagonal) of ``P A P^T`` for uniform random permutations P."""
    n = len(adjacency)
    upper = np.triu_indices(n, k=1)
    out = np.empty((rows, len(upper[0])), dtype=np.float32)
    for i in range(rows):
        perm = rng.permutation(n)
        out[i] = adjacency[np.ix_(perm, perm)][upper]
    return out


def privatize_batch_gradient(grads, clip: float, noise_multiplier: float, generator) -> None:
    """In place: scale the gradient tensors ``grads`` (together, one vector) to L2 norm at most ``clip``, then add
    N(0, (2 clip z)^2) to every coordinate: the Gaussian mechanism for a vector whose value on any two batches
    differs by at most ``2 clip`` (module docstring). The noise is DP-SGD's draw (the cryptographic generator's
    under ``noise="secure"``)."""
    import torch

    from dpsynth.privacy.dpsgd import gaussian_noise

    norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
    factor = min(1.0, clip / (float(norm) + 1e-12))
    for g in grads:
        g.mul_(factor).add_(gaussian_noise(g.shape, 2 * clip * noise_multiplier, generator).to(g.dtype))


def _degree_histograms(edge_rows: np.ndarray, n: int) -> np.ndarray:
    """Degree histogram (length n) of each generated upper-triangle row."""
    upper = np.triu_indices(n, k=1)
    hist = np.zeros((len(edge_rows), n))
    for i, row in enumerate(edge_rows):
        a = np.zeros((n, n))
        a[upper] = row
        degrees = (a + a.T).sum(1).astype(int)
        hist[i] = np.bincount(degrees, minlength=n)[:n]
    return hist


def poster_gan_histogram(adjacency: np.ndarray, ledger: PrivacyLedger, rng: np.random.Generator,
                         **params: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """Train the poster's DP-GAN on permuted copies of ``adjacency`` under ``ledger`` (module docstring) and return
    (released degree histogram of length n, the parameters used including the noise multiplier)."""
    import torch
    from torch import nn

    from dpsynth.privacy.mechanisms import calibrate_gaussian_queries, gaussian_event

    unknown = set(params) - set(POSTER_GAN_DEFAULTS)
    if unknown:
        raise InputError(f"Unknown poster-gan parameter(s): {', '.join(sorted(unknown))}.")
    p = {**POSTER_GAN_DEFAULTS, **params}
    n = len(adjacency)
    if n < 3:
        raise InputError(f"The poster's DP-GAN needs at least 3 nodes. Found {n}.")
    steps, batch, clip = int(p["steps"]), int(p["batch_size"]), float(p["clip"])
    width = n * (n - 1) // 2
    if 4 * width * int(p["rows"]) > MAX_TRAINING_BYTES:
        raise InputError(f"The poster's DP-GAN stacks {p['rows']} permuted adjacency rows of {width:,} entries "
                         f"({4 * width * int(p['rows']) / 1024**3:.1f} GiB) for {n:,} nodes: beyond its "
                         f"{MAX_TRAINING_BYTES // 1024**3} GiB limit; it is made for small graphs.")
    z = calibrate_gaussian_queries(ledger, steps)
    ledger.spend(gaussian_event(z), phase="poster-gan", mechanism="batch-clipped DP-SGD step (no amplification)",
                 count=steps, sensitivity=2 * clip, neighbouring="node replacement")
    seed = int(rng.integers(2**62))
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed + 1)
        generator = nn.Sequential(nn.Linear(p["noise_dim"], p["hidden"]), nn.ReLU(), nn.Linear(p["hidden"], width))
        critic = nn.Sequential(nn.Linear(width, p["hidden"]), nn.LeakyReLU(0.2), nn.Linear(p["hidden"], 1))
    data = torch.from_numpy(permuted_adjacency_rows(adjacency, int(p["rows"]), rng))
    g_opt = torch.optim.Adam(generator.parameters(), lr=p["learning_rate"])
    d_opt = torch.optim.Adam(critic.parameters(), lr=p["learning_rate"])
    bce = nn.BCEWithLogitsLoss()
    ones, zeros = torch.ones(batch, 1), torch.zeros(batch, 1)
    for _ in range(steps):
        real = data[torch.randint(len(data), (batch,), generator=gen)]
        with torch.no_grad():
            fake = torch.sigmoid(generator(torch.randn(batch, p["noise_dim"], generator=gen)))
        d_opt.zero_grad(set_to_none=True)
        (bce(critic(real), ones) + bce(critic(fake), zeros)).backward()
        privatize_batch_gradient([q.grad for q in critic.parameters()], clip, z, gen)
        d_opt.step()
        g_opt.zero_grad(set_to_none=True)
        fake = torch.sigmoid(generator(torch.randn(batch, p["noise_dim"], generator=gen)))
        bce(critic(fake), ones).backward()
        g_opt.step()
    with torch.no_grad():
        probs = torch.sigmoid(generator(torch.randn(int(p["n_samples"]), p["noise_dim"], generator=gen)))
        edges = torch.bernoulli(probs, generator=gen).numpy()
    mean = _degree_histograms(edges, n).mean(0)
    whole = np.floor(mean).astype(np.int64)  # n nodes, largest remainders first
    whole[np.argsort(-(mean - whole))[: n - whole.sum()]] += 1
    return whole, {**p, "noise_multiplier": z, "sensitivity": 2 * clip,
                   "noise_std": 2 * clip * z if math.isfinite(z) else 0.0}
