"""Seed 004's discriminability score (§3.2): can a classifier tell real rows from synthetic ones?

**Definition** (seed 004 §3.2): an XGBoost classifier learns to label rows real (0) or synthetic (1); with
``p`` its predicted probability of "synthetic" on rows it was not trained on, the paper's score is "one minus
the mean-absolute error" between ``p`` and 0.5. That would lie in [50, 100] while the paper's tables reach 9,
so the error is normalised by its maximum 0.5::

    quality.discriminability = 100 * (1 - 2 * mean |p - 0.5|)

100 = the classifier cannot tell the tables apart (p = 0.5 everywhere); 0 = it is certain on every row.

**What dpsynth adds, and why** (the paper gives no classifier settings or sampling):

* *Balanced, content-consistent rows.* ``n = min(len(real), len(synthetic), Limits.discriminator_rows)`` rows
  of each table, chosen by a seeded hash of row content (:func:`._prep.capped_order`), so the prior is 0.5 and
  a table and any reordering of it yield the same rows: an identical table scores exactly 100 at any cap.
  (Drawing the same random *positions* from both tables did not: a shuffled copy of a 400-row table capped at
  300 rows scored 62.6.)
* *Out-of-fold probabilities, folds grouped by content* (3 folds): identical rows of the two tables never sit
  on both sides of a split. A copy of a training row is a privacy matter, measured by the attacks, not a
  resemblance one. With every content balanced, every tree leaf holds as many real as synthetic rows, so
  ``p`` is exactly 0.5.
* *An early-stopped classifier.* A default XGBoost (100 trees of depth 6, learning rate 0.3) memorises
  noise: two independent samples of one population (Adult) scored 65 at 2,000 and 82 at 10,000 rows per
  table, so the score measured the table size as much as the data. Here trees (depth 6, learning rate 0.1,
  80% of the columns each) are added only while the log-loss on a held-out 20% of the training groups
  improves (patience 20, at most 300 trees). With no signal it stops after the first tree and ``p`` stays
  near 0.5 (same-population Adult samples: 94 at 500 rows, 99 at 2,000 and 10,000), while differences are
  still found (Adult with every column shuffled on its own: 37 at 500 rows, 22 at 2,000, 16 at 10,000;
  two clouds 10 standard deviations apart: 2). A larger ``min_child_weight`` damped the noise no better
  and capped the confidence on small tables (the clouds scored 20).
* *The noise floor, reported.* ``quality.discriminability.real_vs_real`` is the same score for two disjoint
  random halves of the real training rows, ``m = min(n, len(real) // 2)`` rows each: what a synthetic table
  as good as fresh real data would score at this size. Read the main score against it.

Seeds: the first evaluation seed fixes the row choice, the folds, the early-stopping split and XGBoost's
column sampling; the score is deterministic given the seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold

from dpsynth.evaluation._parallel import run_tasks
from dpsynth.evaluation._prep import row_keys
from dpsynth.evaluation.result import Row, row, undefined

__all__ = ["score_from_proba", "discriminability", "discriminability_many", "rows"]

N_FOLDS = 3
MAX_TREES = 300
PATIENCE = 20
HELD_OUT = 0.2


def score_from_proba(proba) -> float:
    """``100 * (1 - 2 * mean |p - 0.5|)`` of out-of-fold probabilities ``p`` (module docstring)."""
    p = np.asarray(proba, dtype=float)
    return float(100.0 * (1.0 - 2.0 * np.mean(np.abs(p - 0.5))))


def _classifier(seed: int, *, early_stopping: bool):
    from xgboost import XGBClassifier

    kw = {"n_estimators": MAX_TREES if early_stopping else 50, "max_depth": 6, "learning_rate": 0.1,
          "colsample_bytree": 0.8, "tree_method": "hist", "n_jobs": 1, "random_state": seed, "verbosity": 0,
          "base_score": 0.5, "eval_metric": "logloss"}
    if early_stopping:
        kw["early_stopping_rounds"] = PATIENCE
    return XGBClassifier(**kw)


def _fold_proba(X: np.ndarray, y: np.ndarray, groups: np.ndarray, X_test: np.ndarray, seed: int) -> np.ndarray:
    """P(synthetic) for ``X_test`` from a classifier trained on (X, y), early-stopped on held-out groups."""
    if len(np.unique(y)) < 2:  # nothing to learn from one class: no opinion
        return np.full(len(X_test), 0.5)
    uniq = np.unique(groups)
    held_groups = np.random.default_rng(seed).choice(uniq, size=max(1, int(HELD_OUT * len(uniq))), replace=False)
    held = np.isin(groups, held_groups)
    if len(np.unique(y[held])) == 2 and len(np.unique(y[~held])) == 2:
        model = _classifier(seed, early_stopping=True)
        model.fit(X[~held], y[~held], eval_set=[(X[held], y[held])], verbose=False)
    else:  # too few rows to hold any out (a handful of rows): a small fixed ensemble
        model = _classifier(seed, early_stopping=False).fit(X, y)
    return model.predict_proba(X_test)[:, 1]


def discriminability_many(pairs: list[tuple[np.ndarray, np.ndarray, np.ndarray]], *, seed: int,
                          executor: Any = "sequential") -> list[float]:
    """:func:`discriminability` of several (real_x, synth_x, groups) pairs, all folds run as one batch."""
    tasks, where = [], []
    for k, (real_x, synth_x, groups) in enumerate(pairs):
        X = np.vstack([real_x, synth_x])
        y = np.r_[np.zeros(len(real_x)), np.ones(len(synth_x))]
        n_splits = min(N_FOLDS, len(np.unique(groups)))
        if n_splits < 2:
            continue
        for tr, te in GroupKFold(n_splits=n_splits).split(X, y, groups):
            tasks.append((X[tr], y[tr], groups[tr], X[te], seed))
            where.append((k, te))
    results = run_tasks(_fold_proba, tasks, executor)
    probas = [np.full(len(r) + len(s), 0.5) for r, s, _ in pairs]
    for (k, te), p in zip(where, results):
        probas[k][te] = p
    return [score_from_proba(p) for p in probas]


def discriminability(real_x: np.ndarray, synth_x: np.ndarray, groups: np.ndarray, *, seed: int,
                     executor: Any = "sequential") -> float:
    """The score of the module docstring for encoded real and synthetic rows; ``groups`` labels row content
    (rows with equal labels are kept in one fold)."""
    return discriminability_many([(real_x, synth_x, groups)], seed=seed, executor=executor)[0]


def _groups(ctx, a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
    return pd.factorize(np.concatenate([row_keys(a, ctx.kinds), row_keys(b, ctx.kinds)]))[0]


def rows(ctx) -> list[Row]:
    """``quality.discriminability`` and its noise floor ``quality.discriminability.real_vs_real``."""
    n = min(len(ctx.real), len(ctx.synthetic), ctx.limits.discriminator_rows)
    real, synth = ctx.capped(ctx.real, n, 51), ctx.capped(ctx.synthetic, n, 51)
    enc = ctx.encoder()
    pairs = [(enc.transform(real), enc.transform(synth), _groups(ctx, real, synth))]
    m = min(n, len(ctx.real) // 2)
    if m >= 10:
        perm = ctx.rng(53).permutation(len(ctx.real))
        half_a, half_b = ctx.real.iloc[perm[:m]], ctx.real.iloc[perm[m:2 * m]]
        pairs.append((enc.transform(half_a), enc.transform(half_b), _groups(ctx, half_a, half_b)))
    scores = discriminability_many(pairs, seed=ctx.seeds[0], executor=ctx.executor)
    subsample = "" if n == len(ctx.real) == len(ctx.synthetic) else " (balanced subsample)"
    floor = f"; real-vs-real noise floor at {m} rows: {scores[1]:.1f}" if m >= 10 else ""
    out = [row("quality.discriminability", "(all)", scores[0], note=f"{n} rows per table{subsample}{floor}")]
    if m >= 10:
        out.append(row("quality.discriminability.real_vs_real", "(all)", scores[1],
                       note=f"two disjoint random halves of real_train, {m} rows each: the score's noise floor"))
    else:
        out.append(undefined("quality.discriminability.real_vs_real", "(all)",
                             f"real_train has {len(ctx.real)} rows: too few for two halves of 10 rows"))
    return out
