"""Shared black-box one-run canary audit for the deep models (Steinke, Nasr, Jagielski 2023).

Construction (real Adult rows only, nothing crafted):

- the base table D0 is ``n_base`` training rows whose ``native-country`` is United-States;
- the m canaries are one real row (train or test split) for each OTHER ``native-country`` of the public schema,
  so each canary carries a signature D0 lacks and no other canary shares: its own country;
- each canary is included independently w.p. 1/2 (:class:`CanaryAudit`), the model is fitted on D0 plus the
  included canaries, and ``n_synth`` rows are sampled.

Score of canary j: the number of synthetic rows with canary j's country, plus (as a tie-break in [0, 1)) the
similarity of the nearest synthetic row to canary j (fraction of columns equal; numbers within 5% of the schema
range). Guesses: "in" for the top ``k`` = 15 scores and no "out" guess (abstaining is allowed by the one-run
bound): an excluded canary leaves no trace, but neither does an included one the model happens not to reproduce
(a GAN drops some modes), so the bottom of the ranking carries no signal. ``eps_lower_bound_one_run`` at
p = 0.05, delta = 1e-5: with m = 40 and 15 guesses, 15 correct give 1.51 (the largest possible), 14 give 0.95,
13 give 0.56, so a claim of epsilon = 1 is rejected only by 15 correct guesses out of 15. A model that learns which
rare countries occur in its training rows (the non-private modes do) is caught; an (eps, delta)-DP model cannot
be, beyond eps (with probability >= 0.95).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from dpsynth.privacy.audit import AuditResult, CanaryAudit

SIGNATURE = "native-country"
HOME = "United-States"


def canary_setup(adult, schema, *, n_base: int = 800, seed: int = 0):
    """(audit, canaries, training frame): D0 + the included canaries. Deterministic in ``seed``."""
    train, test = adult
    base = train[train[SIGNATURE] == HOME].sample(n_base, random_state=seed + 2).reset_index(drop=True)
    pool = pd.concat([train, test], ignore_index=True)
    countries = [c for c in schema[SIGNATURE].categories if c != HOME]
    canaries = pd.concat(
        [pool[pool[SIGNATURE] == c].sample(1, random_state=seed + 3) for c in countries], ignore_index=True
    )
    audit = CanaryAudit(len(canaries), generator=torch.Generator().manual_seed(seed))
    data = pd.concat([base, canaries[audit.included.numpy()]], ignore_index=True)
    return audit, canaries, data


def canary_scores(synth: pd.DataFrame, canaries: pd.DataFrame, schema) -> np.ndarray:
    """Rows carrying canary j's country, plus the nearest synthetic row's similarity to canary j (in [0, 1))."""
    synth = synth[list(canaries.columns)]
    count = np.array([(synth[SIGNATURE].astype(str) == str(c)).sum() for c in canaries[SIGNATURE]], dtype=float)
    equal = np.zeros((len(canaries), len(synth)))
    for col in canaries.columns:
        column = schema[col]
        if getattr(column, "upper", None) is not None and getattr(column, "lower", None) is not None:
            scale = float(column.upper - column.lower) or 1.0
            s = pd.to_numeric(synth[col], errors="coerce").to_numpy(float)
            c = pd.to_numeric(canaries[col], errors="coerce").to_numpy(float)
            equal += np.abs(c[:, None] - s[None, :]) <= 0.05 * scale
        else:
            s = synth[col].astype(str).to_numpy()
            c = canaries[col].astype(str).to_numpy()
            equal += c[:, None] == s[None, :]
    nearest = equal.max(1) / (len(canaries.columns) + 1)
    return count + nearest


def run_audit(fit, adult, schema, *, n_synth: int = 20_000, k: int = 15, delta: float = 1e-5, seed: int = 0):
    """Fit with ``fit(frame)`` -> model, sample, score: (AuditResult, model, scores, included)."""
    audit, canaries, data = canary_setup(adult, schema, seed=seed)
    model = fit(data)
    synth = model.sample(n_synth, seed=seed)
    scores = canary_scores(synth, canaries, schema)
    result: AuditResult = audit.lower_bound(scores, k_plus=k, k_minus=0, delta=delta)
    return result, model, scores, audit.included.numpy()
