"""Negative control for audits: every Gaussian noise term of dpsynth switched off, the ledgers unchanged.

Inside ``noise_off()`` a fit runs its normal finite-epsilon code path (calibration, ledger events, clipping,
partition-selection thresholds) but the noise draws return zeros:

- ``dpsynth.privacy.mechanisms.gaussian_counts``: the DP counts of metadata discovery, private dtypes and the
  marginals / histogram queries (partition selection draws through it too);
- ``dpsynth.privacy.dpsgd.gaussian_noise``: the noise added to DP-SGD's clipped sums.

The ledger still claims its epsilon, so an audit with power must answer ``exceeds``; one that answers
``consistent`` here could not catch a forgotten noise term. Test-only: it lives in tests/, not in the library, so no
user can switch the noise off.

Modules that imported ``gaussian_counts`` by name hold their own reference, so every loaded ``dpsynth`` module
attribute bound to the original function is patched (and restored on exit).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

import numpy as np
import torch

from dpsynth.privacy import dpsgd, mechanisms


def _exact_counts(counts, *, sigma, rng):
    return np.asarray(counts, dtype=float).copy()


def _no_noise(shape, std, generator):
    return torch.zeros(shape)


@contextmanager
def noise_off():
    """Zero every Gaussian noise draw of dpsynth's mechanisms while keeping their events in the ledgers."""
    originals = {mechanisms.gaussian_counts: _exact_counts, dpsgd.gaussian_noise: _no_noise}
    _swap(originals)
    try:
        yield
    finally:
        # also restores modules first imported inside the block (they bound the replacement)
        _swap({new: old for old, new in originals.items()})


def _swap(mapping) -> None:
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "dpsynth" or name.startswith("dpsynth.")):
            continue
        for attr, value in list(vars(module).items()):
            if callable(value) and any(value is old for old in mapping):
                setattr(module, attr, mapping[value])
