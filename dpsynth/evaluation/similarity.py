"""Statistical similarity (seeds 000 §5.2 and 002 §4.2.1): JSD, Wasserstein, association matrices.

* ``similarity.jsd`` — per categorical column, the Jensen-Shannon **divergence** with base-2 logarithms
  between the real and synthetic category frequencies: ``JSD(P, Q) = KL(P || M)/2 + KL(Q || M)/2`` with
  ``M = (P + Q)/2``. Symmetric, in [0, 1], 0 iff P = Q (seed 002: "symmetric and bounded between 0 and 1").
* ``similarity.wasserstein`` — per continuous column, the 1-Wasserstein distance between the empirical
  distributions after min-max scaling **with the real bounds** (seed 002: "calculated after performing a
  min-max normalisation"), so 0 is perfect and 1 means a shift by the whole real range.
* ``similarity.association_diff`` — the L2 (Frobenius) norm of the difference between the real and
  synthetic association matrices (seed 002 "Diff. Corr.", seed 000 "Diff Cor"): Pearson correlation for
  continuous pairs, Theil's uncertainty coefficient U(row | column) for categorical pairs and the correlation
  ratio for mixed pairs, as in the dython library the seeds use. 1 on the diagonal. An entry that is
  undefined (a constant column) counts as 0 and the row's note says how many there were.

Missing values are a category of their own in categorical columns and are left out (pairwise) in
continuous ones. A column whose Wasserstein distance is undefined (all missing in the synthetic table, or in
the real one) has a row saying why, and the mean's note names it (:func:`.result.aggregate`): a broken column
never reads as a perfect mean. All three are linear in the number of rows (after an O(n log n) sort for Wasserstein).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import wasserstein_distance

from dpsynth.evaluation._prep import hist_pair, labels_fast, numeric
from dpsynth.evaluation.result import Row, aggregate, row, undefined

__all__ = ["js_divergence", "js_distance", "theils_u", "correlation_ratio", "association_matrix",
           "scaled_wasserstein", "run"]


def _kl2(p: np.ndarray, q: np.ndarray) -> float:
    mask = p > 0
    return float(np.sum(p[mask] * np.log2(p[mask] / q[mask])))


def js_divergence(p, q) -> float:
    """Base-2 Jensen-Shannon divergence of two probability vectors on the same bins (in [0, 1])."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2
    return float(min(max(_kl2(p, m) / 2 + _kl2(q, m) / 2, 0.0), 1.0))


def js_distance(p, q) -> float:
    """Base-2 Jensen-Shannon distance: the square root of :func:`js_divergence` (a metric, in [0, 1])."""
    return float(np.sqrt(js_divergence(p, q)))


def _codes(labels: np.ndarray) -> np.ndarray:
    return pd.factorize(labels)[0]


def _entropy_counts(counts: np.ndarray) -> float:
    counts = counts[counts > 0].astype(float)
    p = counts / counts.sum()
    return float(-np.sum(p * np.log(p)))


def theils_u(x, y) -> float:
    """Theil's uncertainty coefficient U(x | y) = (H(x) - H(x | y)) / H(x), in [0, 1]; 1 when H(x) = 0.

    The fraction of the entropy of ``x`` explained by knowing ``y`` (dython's ``theils_u(x, y)``).
    """
    return _theils_u_codes(_codes(np.asarray(x, dtype=object)), _codes(np.asarray(y, dtype=object)))


def _theils_u_codes(cx: np.ndarray, cy: np.ndarray) -> float:
    hx = _entropy_counts(np.bincount(cx))
    if hx == 0.0:
        return 1.0
    joint = np.bincount(cx * (cy.max() + 1) + cy)
    h_xy = _entropy_counts(joint) - _entropy_counts(np.bincount(cy))  # H(x | y) = H(x, y) - H(y)
    return float(min(max((hx - h_xy) / hx, 0.0), 1.0))


def correlation_ratio(categories, values) -> float:
    """Correlation ratio eta = sqrt(between-group variance / total variance) of ``values`` grouped by
    ``categories``; in [0, 1]. NaN when ``values`` is constant (undefined); missing values are dropped."""
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    v, c = v[ok], _codes(np.asarray(categories, dtype=object)[ok])
    if v.size == 0:
        return float("nan")
    total = float(np.sum((v - v.mean()) ** 2))
    if total <= 0:
        return float("nan")
    n = np.bincount(c).astype(float)
    means = np.bincount(c, weights=v) / np.maximum(n, 1)
    between = float(np.sum(n * (means - v.mean()) ** 2))
    return float(np.sqrt(min(between / total, 1.0)))


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size < 2 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def association_matrix(df: pd.DataFrame, kinds: dict[str, str]) -> pd.DataFrame:
    """Square matrix of pairwise associations (definitions in the module docstring); NaN where undefined."""
    cols = list(kinds)
    cat = {c: _codes(labels_fast(df[c])) for c in cols if kinds[c] == "categorical"}
    num = {c: numeric(df[c]) for c in cols if kinds[c] != "categorical"}
    out = np.eye(len(cols))
    for i, a in enumerate(cols):
        for j, b in enumerate(cols):
            if i == j:
                continue
            if a in cat and b in cat:
                out[i, j] = _theils_u_codes(cat[a], cat[b])
            elif a in num and b in num:
                out[i, j] = out[j, i] if j < i else _pearson(num[a], num[b])
            elif a in cat:
                out[i, j] = correlation_ratio(cat[a], num[b])
            else:
                out[i, j] = correlation_ratio(cat[b], num[a])
    return pd.DataFrame(out, index=cols, columns=cols)


def scaled_wasserstein(real, synthetic) -> float:
    """1-Wasserstein distance after min-max scaling both samples with the real bounds; NaN if either is empty."""
    x, y = numeric(pd.Series(real)), numeric(pd.Series(synthetic))
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if x.size == 0 or y.size == 0:
        return float("nan")
    lo, span = x.min(), (x.max() - x.min()) or 1.0
    return float(wasserstein_distance((x - lo) / span, (y - lo) / span))


def matrix_diff_row(metric: str, a: pd.DataFrame, b: pd.DataFrame) -> Row:
    """Frobenius norm of ``a - b`` with undefined entries counted as 0 (and said so in the note)."""
    undefined_entries = int(np.sum(~np.isfinite(a.to_numpy()) | ~np.isfinite(b.to_numpy())))
    diff = np.nan_to_num(a.to_numpy()) - np.nan_to_num(b.to_numpy())
    note = (f"{undefined_entries} undefined entries (constant or all-missing columns) counted as 0"
            if undefined_entries else "")
    return row(metric, "(all)", float(np.linalg.norm(diff)), note=note)


def _wasserstein_reason(real: pd.Series, synthetic: pd.Series) -> str:
    x, y = numeric(real), numeric(synthetic)
    if not np.isfinite(x).any():
        return "real column has no non-missing values: no scale, Wasserstein undefined"
    if not np.isfinite(y).any():
        return "synthetic column is all missing (the real one is not): maximally dissimilar, Wasserstein undefined"
    return ""


def run(ctx) -> tuple[list[Row], dict]:
    """Rows ``similarity.jsd``, ``similarity.wasserstein`` (per column and mean) and
    ``similarity.association_diff``; figure ``association`` (both matrices). A column left out of a mean is
    named in the mean's note (:func:`.result.aggregate`)."""
    rows: list[Row] = []
    jsds: dict[str, float] = {}
    wds: dict[str, float] = {}
    for c, kind in ctx.kinds.items():
        if kind == "categorical":
            _, p, q = hist_pair(ctx.real[c], ctx.synthetic[c], "categorical")
            jsds[c] = js_divergence(p, q)
            rows.append(row("similarity.jsd", c, jsds[c]))
            continue
        reason = _wasserstein_reason(ctx.real[c], ctx.synthetic[c])
        wds[c] = float("nan") if reason else scaled_wasserstein(ctx.real[c], ctx.synthetic[c])
        rows.append(undefined("similarity.wasserstein", c, reason) if reason
                    else row("similarity.wasserstein", c, wds[c]))
    if jsds:
        rows.append(aggregate("similarity.jsd", jsds, over="categorical columns"))
    if wds:
        rows.append(aggregate("similarity.wasserstein", wds, over="continuous columns"))
    real_m, synth_m = ctx.association()
    rows.append(matrix_diff_row("similarity.association_diff", real_m, synth_m))
    figures = {"association": {"columns": list(real_m.columns), "real": real_m.to_numpy(),
                               "synthetic": synth_m.to_numpy()}}
    return rows, figures
