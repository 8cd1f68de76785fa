"""Seed 004's quality scores (§3.2), each on a 0-100 scale where 100 is perfect.

**Resemblance** (``quality.resemblance``) is the mean of five similarities, each reported too:

* ``quality.column_similarity`` — per column, the correlation between the real and synthetic column. The
  rows of two tables are not paired, so both columns are aligned by rank: numeric columns compare their
  quantile functions (1,000 levels) with Pearson's r; categorical columns compare their sorted label
  sequences at the same levels with Theil's U(real | synthetic). Negative values count as 0.
* ``quality.correlation_similarity`` — Pearson's r between the off-diagonal entries of the real and
  synthetic association matrices (Pearson / Theil's U / correlation ratio, :mod:`.similarity`); 1 when they
  are equal, negative values count as 0.
* ``quality.statistical_similarity`` — per numeric column, Spearman's rho between the vectors (min, max,
  median, mean, standard deviation) of real and synthetic; negative values count as 0.
* ``quality.js_similarity`` — per column, 1 - Jensen-Shannon distance (base 2) on the 1-way histogram bins.
* ``quality.ks_similarity`` — per column, 1 - Kolmogorov-Smirnov distance (numeric: two-sample KS statistic;
  categorical: largest CDF gap over the categories in real-frequency order).

**Discriminability** (``quality.discriminability``, with its real-vs-real noise floor
``quality.discriminability.real_vs_real``): ``100 * (1 - 2 * mean |p - 0.5|)`` of out-of-fold XGBoost
real-vs-synthetic probabilities; definition, and what dpsynth changed and why, in :mod:`.discriminability`.

**Undefined columns.** A continuous column that is all missing in the synthetic table but not in the real one
is as dissimilar as a column can be: it scores 0 in the column, statistical and KS similarities, and the
mean's note names it. A column whose real values are all missing has no reference: it is left out of the
mean and the note names it too (never a silent perfect score).

**Utility** (``quality.utility``): for each column, XGBoost predicts it from the rest; 3 folds of the real
rows; per fold one model trained on the other real folds and one on the matching synthetic folds, both
tested on the held-out real fold. Score per fold: macro F1 (categorical) or D2 absolute error clipped to
[0, 1] (continuous); the column's score is the 90th percentile over folds; the column's utility is
``min(synthetic / real, 1)`` (undefined when the real score is 0; 0, with a note, when no model can be
trained on the synthetic column: it has no values); ``quality.utility`` is 100 x the mean. Folds follow the
content-hash order of the capped rows (:func:`._prep.capped_order`), so a reordered copy of the real table
gets the same folds and the same models. Rows are capped at ``Limits.per_column_rows`` per table; a
categorical target keeps its 9 most frequent real categories and merges the rest into one "other" class (so a
41-category column costs 10 trees per round, not 41: a speed cap that changes the task only for rare
categories).

Seeds: the first evaluation seed fixes the capped rows, the folds and XGBoost's ``random_state``; every
quality score is deterministic given it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import ks_2samp, spearmanr
from sklearn import metrics as skm

from dpsynth.evaluation._parallel import run_tasks
from dpsynth.evaluation._prep import hist_pair, labels_fast, numeric
from dpsynth.evaluation.discriminability import discriminability
from dpsynth.evaluation.discriminability import rows as discriminability_rows
from dpsynth.evaluation.discriminability import score_from_proba as discriminability_score
from dpsynth.evaluation.result import Row, aggregate, row, undefined
from dpsynth.evaluation.similarity import js_distance, theils_u

__all__ = ["column_similarity", "statistical_similarity", "ks_similarity", "correlation_similarity",
           "column_utility", "discriminability", "discriminability_score", "run"]

MAX_CLASSES = 10
OTHER = "<other>"
LEVELS = np.linspace(0.0005, 0.9995, 1000)


def column_similarity(real: pd.Series, synthetic: pd.Series, kind: str) -> float:
    """Rank-aligned correlation of one column (module docstring), in [0, 1]; NaN if a side is empty."""
    if kind == "categorical":
        a, b = labels_fast(real), labels_fast(synthetic)
        order = {c: i for i, c in enumerate(pd.Series(a).value_counts().index)}
        ra = np.sort(pd.Series(a).map(order).to_numpy(dtype=float))
        rb = np.sort(pd.Series(b).map(order).fillna(len(order)).to_numpy(dtype=float))
        qa, qb = ra[(LEVELS * len(ra)).astype(int)], rb[(LEVELS * len(rb)).astype(int)]
        return theils_u(qa.astype(int), qb.astype(int))
    x, y = numeric(real), numeric(synthetic)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if x.size == 0 or y.size == 0:
        return float("nan")
    qx, qy = np.quantile(x, LEVELS), np.quantile(y, LEVELS)
    if np.array_equal(qx, qy):
        return 1.0
    if qx.std() == 0 or qy.std() == 0:
        return 0.0
    return float(max(np.corrcoef(qx, qy)[0, 1], 0.0))


def _stats(v: np.ndarray) -> np.ndarray:
    return np.array([v.min(), v.max(), np.median(v), v.mean(), v.std()])


def statistical_similarity(real: pd.Series, synthetic: pd.Series) -> float:
    """Spearman's rho of (min, max, median, mean, std), clipped at 0; 1 for equal statistics."""
    x, y = numeric(real), numeric(synthetic)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if x.size == 0 or y.size == 0:
        return float("nan")
    a, b = _stats(x), _stats(y)
    if np.allclose(a, b):
        return 1.0
    rho = spearmanr(a, b).statistic
    return float(max(rho, 0.0)) if np.isfinite(rho) else 0.0


def ks_similarity(real: pd.Series, synthetic: pd.Series, kind: str) -> float:
    """1 - Kolmogorov-Smirnov distance (module docstring)."""
    if kind == "categorical":
        _, p, q = hist_pair(real, synthetic, "categorical")
        return float(1.0 - np.max(np.abs(np.cumsum(p) - np.cumsum(q))))
    x, y = numeric(real), numeric(synthetic)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if x.size == 0 or y.size == 0:
        return float("nan")
    return float(1.0 - ks_2samp(x, y).statistic)


def correlation_similarity(real_m: pd.DataFrame, synth_m: pd.DataFrame) -> float:
    """Pearson's r between off-diagonal association entries (undefined entries count as 0), clipped at 0."""
    mask = ~np.eye(len(real_m), dtype=bool)
    a, b = np.nan_to_num(real_m.to_numpy()[mask]), np.nan_to_num(synth_m.to_numpy()[mask])
    if np.allclose(a, b):
        return 1.0
    if a.size < 2 or a.std() == 0 or b.std() == 0:
        return 0.0
    return float(max(np.corrcoef(a, b)[0, 1], 0.0))


def _xgb(task: str, n_jobs: int, seed: int, n_estimators: int = 50):
    from xgboost import XGBClassifier, XGBRegressor

    kw = dict(n_estimators=n_estimators, max_depth=6, tree_method="hist", n_jobs=n_jobs, random_state=seed,
              verbosity=0)
    return XGBClassifier(base_score=0.5, **kw) if task == "classification" else XGBRegressor(**kw)


_SYNTH_MISSING = "scored 0: synthetic column is all missing (the real one is not)"


def _resemblance(ctx) -> list[Row]:
    per: dict[str, dict[str, float]] = {k: {} for k in ("column_similarity", "statistical_similarity",
                                                         "js_similarity", "ks_similarity")}
    worst: dict[str, dict[str, str]] = {k: {} for k in per}
    for c, kind in ctx.kinds.items():
        real, synth = ctx.real[c], ctx.synthetic[c]
        _, p, q = hist_pair(real, synth, kind)
        per["js_similarity"][c] = 1.0 - js_distance(p, q)
        names = ["column_similarity", "ks_similarity"] + ([] if kind == "categorical" else ["statistical_similarity"])
        if kind != "categorical" and np.isfinite(numeric(real)).any() and not np.isfinite(numeric(synth)).any():
            for name in names:  # the worst value each similarity can take, not a silent omission
                per[name][c], worst[name][c] = 0.0, _SYNTH_MISSING
            continue
        per["column_similarity"][c] = column_similarity(real, synth, kind)
        per["ks_similarity"][c] = ks_similarity(real, synth, kind)
        if kind != "categorical":
            per["statistical_similarity"][c] = statistical_similarity(real, synth)
    rows = [aggregate(f"quality.{name}", vals, scale=100.0, caveats=worst[name]) if vals else
            undefined(f"quality.{name}", "(all)", "no column it applies to (it needs a continuous column)")
            for name, vals in per.items()]
    real_m, synth_m = ctx.association()
    rows.append(row("quality.correlation_similarity", "(all)", 100.0 * correlation_similarity(real_m, synth_m)))
    parts = [r.value for r in rows if np.isfinite(r.value)]
    rows.append(row("quality.resemblance", "(all)", float(np.mean(parts)), note=f"mean of {len(parts)} similarities"))
    return rows


def _utility(ctx) -> list[Row]:
    cap = ctx.limits.per_column_rows
    real, synth = ctx.capped(ctx.real, cap, 41), ctx.capped(ctx.synthetic, cap, 41)
    enc = ctx.encoder()
    xr, xs = enc.transform(real), enc.transform(synth)
    fr, fs = np.arange(len(real)) % 3, np.arange(len(synth)) % 3  # rows are in content-hash (random) order
    plan, tasks = [], []
    for col, kind in ctx.kinds.items():
        b = enc.blocks[col]
        keep = np.r_[0:b.start, b.stop:enc.width]
        task = "classification" if kind == "categorical" else "regression"
        if kind == "categorical":
            yr, ys = _top_classes(labels_fast(real[col]).astype(str), labels_fast(synth[col]).astype(str))
        else:
            yr, ys = numeric(real[col]), numeric(synth[col])
        for k in range(3):
            test = fr == k
            for src, X, y, folds in (("real", xr, yr, fr), ("synthetic", xs, ys, fs)):
                plan.append((col, src))
                tasks.append((task, X[folds != k][:, keep], y[folds != k], xr[test][:, keep], yr[test], ctx.seeds[0]))
    results = run_tasks(_fold_score, tasks, ctx.executor)
    rows, ratios, caveats = [], {}, {}
    for col in ctx.kinds:
        scores = {src: [v for (c, s), v in zip(plan, results) if c == col and s == src]
                  for src in ("real", "synthetic")}
        ratios[col], note = column_utility(scores["real"], scores["synthetic"])
        if np.isfinite(ratios[col]) and note:
            caveats[col] = note
        rows.append(row("quality.column_utility", col, 100.0 * ratios[col], note=note))
    rows.append(aggregate("quality.utility", ratios, scale=100.0, caveats=caveats))
    return rows


def column_utility(real_scores, synthetic_scores) -> tuple[float, str]:
    """(``min(p90(synthetic) / p90(real), 1)``, note) of per-fold scores (module docstring).

    Undefined (NaN, with the reason) when the real-trained score is 0 or undefined; 0, with a note, when no
    synthetic-trained score is defined (no synthetic values to train on: the worst utility, not a silent 0).
    """
    def p90(v) -> float:
        v = np.asarray(v, dtype=float)
        return float(np.nanpercentile(v, 90)) if np.isfinite(v).any() else np.nan

    s_real, s_syn = p90(real_scores), p90(synthetic_scores)
    if not np.isfinite(s_real) or s_real <= 0:
        return np.nan, "real-trained score is 0 or undefined: no ratio"
    if not np.isfinite(s_syn):
        return 0.0, "scored 0: no synthetic-trained model (no synthetic values to train on)"
    return min(s_syn / s_real, 1.0), ""


def _top_classes(yr: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep the MAX_CLASSES - 1 most frequent real categories; merge the rest into one "other" class."""
    counts = pd.Series(yr).value_counts()
    if len(counts) <= MAX_CLASSES:
        return yr, ys
    top = set(counts.index[: MAX_CLASSES - 1])
    return (np.where(np.isin(yr, list(top)), yr, OTHER), np.where(np.isin(ys, list(top)), ys, OTHER))


def _fold_score(task: str, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, y_test: np.ndarray, seed: int) -> float:
    if task == "regression":
        ok, ok_t = np.isfinite(y), np.isfinite(y_test)
        if ok.sum() == 0 or ok_t.sum() == 0 or np.all(y_test[ok_t] == y_test[ok_t][0]):
            return np.nan
        pred = _xgb(task, 1, seed).fit(X[ok], y[ok]).predict(X_test[ok_t])
        return float(np.clip(skm.d2_absolute_error_score(y_test[ok_t], pred), 0.0, 1.0))
    classes = np.unique(y)
    if len(classes) < 2:  # a constant model: still a (degenerate) predictor with a score
        pred = np.full(len(y_test), classes[0] if len(classes) else "")
    else:
        codes = np.searchsorted(classes, y)
        pred = classes[_xgb(task, 1, seed).fit(X, codes).predict(X_test).astype(int)]
    return float(skm.f1_score(y_test, pred, average="macro", zero_division=0))


def run(ctx) -> tuple[list[Row], dict]:
    """Rows ``quality.*``: the five similarities and resemblance, discriminability (with its real-vs-real
    noise floor), per-column utility and utility."""
    return _resemblance(ctx) + discriminability_rows(ctx) + _utility(ctx), {}
