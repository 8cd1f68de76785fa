"""Distribution-based unsupervised metrics (seed 003 §4 and App. C.2; seed 001 §2.2-2.4).

* ``marginal.tvd1`` — 1-way feature marginal (seed 003 C.2.1 "1-Way Feature Marginal (Histogram)"): total
  variation distance ``sum |p - q| / 2`` between the real and synthetic histograms of a column (categories;
  or 20 equal-width bins over the real range, plus overflow bins) — the histograms the report draws.
* ``marginal.tvd_k{k}`` — k-way marginal TVD, NIST style (seed 003 C.2 "3-Way Marginal"): each column is
  binned as ``floor((x - min_R) * 100 / (max_R - min_R))`` with the real min / max (categorical columns: one
  bin per category; missing values: a bin of their own); the score is the TVD between the joint bin
  frequencies, i.e. half the l1 sum of the paper (so it lies in [0, 1]). Averaged over random column subsets
  (``Limits.kway_subsets``); spread = std over subsets.
* ``marginal.tvd_q2`` — the 2-way marginal TVD at the resolution of deciles, on the same column pairs as
  ``marginal.tvd_k2``: each number cut at its real deciles (equal quantiles merge, so a spike such as a mass of
  zeros is one bin), categories and missing values as above. NIST's 100 bins per number measure detail that no
  release at epsilon <= 1 can hold (a 100 x 100 table per pair); deciles measure the joint such a release can
  carry, as Adult's and the generality benchmarks do.
* ``dimwise.probability`` — dimension-wise probability (seed 003 §4.1, C.2.1): for every one-hot dimension
  (column = category) the proportion of rows in it, real vs synthetic; the row holds ``|p_real - p_synth|``,
  the figure the scatter.
* ``diversity.jsd`` / ``diversity.kl_mu`` — diversity (seed 003 §4.2, Table 2) per categorical column and
  summed over them (subject ``(sum)``, as the paper's "All"): the Jensen-Shannon divergence with the mixture
  ``M = (P + Q)/2`` (natural log; the paper writes ``KL(P||Q)/2 + KL(Q||P)/2``, which is undefined when the
  supports differ, while calling it "always defined": we use the standard, always-defined JSD), and the
  mu-smoothed KL ``sum_{x in supp P} (P(x) + mu) log((P(x) + mu)/(Q(x) + mu))`` with ``mu = exp(-1/(1 - p1))``,
  ``p1`` the largest real category probability (undefined when ``p1 = 1``).
* ``pca.tvd`` — 2-way PCA marginal (seed 003 C.2.1): PCA fitted on the encoded real rows, synthetic rows
  projected with the *same* projection; the score is the TVD of 20x20-bin histograms on the plane (real
  range plus overflow); the figure is the scatter.
* ``bhattacharyya`` — Bhattacharyya distance ``-ln sum sqrt(p q)`` per column on the 1-way histogram bins
  (seed 001 §2.2); undefined (infinite) when the histograms do not overlap.
* ``correlation.pearson_diff`` — Frobenius norm of the difference of the Pearson correlation matrices of the
  continuous columns (seed 001 Fig. 2); the figure shows both.

Means and sums over columns name, in their note, every column left out because its value is undefined.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from dpsynth.evaluation._prep import hist_pair, labels_fast, numeric
from dpsynth.evaluation.result import Row, aggregate, row, undefined

__all__ = ["tvd", "nist_bins", "kway_tvd", "kl_mu", "diversity_jsd", "bhattacharyya", "pca_projection", "run"]

HIST_BINS = 20
NIST_BINS = 100
PCA_BINS = 20


def tvd(p, q) -> float:
    """Total variation distance of two probability vectors on the same bins: ``sum |p - q| / 2``."""
    return float(0.5 * np.sum(np.abs(np.asarray(p, dtype=float) - np.asarray(q, dtype=float))))


def nist_bins(real: pd.Series, synthetic: pd.Series, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Integer bin codes of one column in both tables, NIST style (see module docstring)."""
    if kind == "categorical":
        codes, _ = pd.factorize(np.concatenate([labels_fast(real), labels_fast(synthetic)]))
        return codes[: len(real)], codes[len(real):]
    x, y = numeric(real), numeric(synthetic)
    fx = x[np.isfinite(x)]
    lo, hi = (fx.min(), fx.max()) if fx.size else (0.0, 0.0)
    span = hi - lo

    def binned(v: np.ndarray) -> np.ndarray:
        if span > 0:
            b = np.floor((v - lo) * NIST_BINS / span)
        else:  # constant real column: one bin for its value, one each side
            b = np.sign(v - lo)
        return np.where(np.isnan(v), np.iinfo(np.int64).min, np.nan_to_num(b)).astype(np.int64)

    return binned(x), binned(y)


def decile_bins(real: pd.Series, synthetic: pd.Series, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Integer bin codes of one column in both tables: numbers cut at the real deciles (see module docstring)."""
    if kind == "categorical":
        return nist_bins(real, synthetic, kind)
    x, y = numeric(real), numeric(synthetic)
    fx = x[np.isfinite(x)]
    inner = np.unique(np.quantile(fx, np.linspace(0, 1, 11)))[1:-1] if fx.size else np.zeros(0)

    def binned(v: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(v), -1, np.searchsorted(inner, v, side="right")).astype(np.int64)

    return binned(x), binned(y)


def kway_tvd(real_codes: list[np.ndarray], synth_codes: list[np.ndarray]) -> float:
    """TVD between the joint frequencies of several binned columns (code arrays, one per column)."""
    r = pd.DataFrame({i: c for i, c in enumerate(real_codes)})
    s = pd.DataFrame({i: c for i, c in enumerate(synth_codes)})
    pr = r.value_counts(normalize=True, sort=False)
    ps = s.value_counts(normalize=True, sort=False)
    joined = pd.concat([pr.rename("r"), ps.rename("s")], axis=1).fillna(0.0)
    return tvd(joined["r"].to_numpy(), joined["s"].to_numpy())


def kl_mu(p, q) -> tuple[float, float]:
    """(mu-smoothed KL divergence D^mu_KL(P || Q), mu) with mu = exp(-1/(1 - max P)); NaN if max P = 1."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    p1 = float(p.max())
    if p1 >= 1.0:
        return math.nan, 0.0
    mu = math.exp(-1.0 / (1.0 - p1))
    s = p > 0
    return float(np.sum((p[s] + mu) * np.log((p[s] + mu) / (q[s] + mu)))), mu


def diversity_jsd(p, q) -> float:
    """Jensen-Shannon divergence with natural logarithms, in [0, ln 2]."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    m = (p + q) / 2

    def kl(a: np.ndarray) -> float:
        s = a > 0
        return float(np.sum(a[s] * np.log(a[s] / m[s])))

    return max(0.0, kl(p) / 2 + kl(q) / 2)


def bhattacharyya(p, q) -> float:
    """Bhattacharyya distance ``-ln sum sqrt(p q)``; ``inf`` when the histograms do not overlap."""
    bc = float(np.sum(np.sqrt(np.asarray(p, dtype=float) * np.asarray(q, dtype=float))))
    return math.inf if bc <= 0 else max(0.0, -math.log(min(bc, 1.0)))


def pca_projection(real_x: np.ndarray, synth_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project both matrices on the first two principal components of ``real_x`` (centred on the real mean)."""
    mean, comps = _pca_fit([real_x])
    return (real_x - mean) @ comps, (synth_x - mean) @ comps


def _pca_fit(chunks) -> tuple[np.ndarray, np.ndarray]:
    """Mean and top-2 principal directions from row chunks (float64 sums, so memory is one chunk)."""
    n, total, outer = 0, None, None
    for x in chunks:
        x = np.asarray(x, dtype=np.float64)
        total = x.sum(axis=0) if total is None else total + x.sum(axis=0)
        outer = x.T @ x if outer is None else outer + x.T @ x
        n += len(x)
    mean = total / n
    cov = (outer - n * np.outer(mean, mean)) / max(n - 1, 1)
    vals, vecs = np.linalg.eigh(cov)
    comps = vecs[:, np.argsort(vals)[::-1][:2]]
    comps *= np.where(comps[np.argmax(np.abs(comps), axis=0), range(comps.shape[1])] < 0, -1, 1)  # fix signs
    return mean, comps


def _chunks(enc, df: pd.DataFrame, size: int = 100_000):
    for start in range(0, len(df), size):
        yield enc.transform(df.iloc[start:start + size])


def _hist2d_tvd(a: np.ndarray, b: np.ndarray) -> float:
    edges = [np.linspace(a[:, k].min(), a[:, k].max() + 1e-12, PCA_BINS + 1) for k in range(2)]
    edges = [np.concatenate([[-np.inf], e, [np.inf]]) for e in edges]
    ha, _, _ = np.histogram2d(a[:, 0], a[:, 1], bins=edges)
    hb, _, _ = np.histogram2d(b[:, 0], b[:, 1], bins=edges)
    return tvd(ha.ravel() / ha.sum(), hb.ravel() / hb.sum())


def _kway_rows(ctx) -> list[Row]:
    cols = list(ctx.kinds)
    codes = {c: nist_bins(ctx.real[c], ctx.synthetic[c], ctx.kinds[c]) for c in cols}
    rows = []
    for k in (2, 3):
        if len(cols) < k:
            rows.append(undefined(f"marginal.tvd_k{k}", "(all)", f"the table has fewer than {k} columns"))
            continue
        subsets = list(itertools.combinations(cols, k))
        if len(subsets) > ctx.limits.kway_subsets:
            pick = ctx.rng(10 + k).choice(len(subsets), size=ctx.limits.kway_subsets, replace=False)
            subsets = [subsets[i] for i in sorted(pick)]
        values = [kway_tvd([codes[c][0] for c in sub], [codes[c][1] for c in sub]) for sub in subsets]
        rows.append(row(f"marginal.tvd_k{k}", "(all)", values,
                        note=f"mean over {len(values)} random {k}-column subsets; spread = std over subsets"))
        if k == 2:
            deciles = {c: decile_bins(ctx.real[c], ctx.synthetic[c], ctx.kinds[c]) for c in cols}
            values = [kway_tvd([deciles[c][0] for c in sub], [deciles[c][1] for c in sub]) for sub in subsets]
            rows.append(row("marginal.tvd_q2", "(all)", values,
                            note=f"numbers at their real deciles; mean over {len(values)} random 2-column subsets; "
                            "spread = std over subsets"))
    return rows


def run(ctx) -> tuple[list[Row], dict]:
    rows: list[Row] = []
    hists: dict[str, dict] = {}
    dim_points: list[list] = []
    tvds, bds, jsds, kls = {}, {}, {}, {}
    for c, kind in ctx.kinds.items():
        labels, p, q = hist_pair(ctx.real[c], ctx.synthetic[c], kind, bins=HIST_BINS)
        hists[c] = {"kind": kind, "bins": labels, "real": p, "synthetic": q}
        tvds[c] = tvd(p, q)
        rows.append(row("marginal.tvd1", c, tvds[c]))
        bds[c] = bhattacharyya(p, q)
        rows.append(row("bhattacharyya", c, bds[c]) if math.isfinite(bds[c]) else
                    undefined("bhattacharyya", c, "histograms do not overlap: the distance is infinite"))
        if kind != "categorical":
            continue
        for lab, a, b in zip(labels, p, q):
            dim_points.append([f"{c}={lab}", float(a), float(b)])
            rows.append(row("dimwise.probability", f"{c}={lab}", abs(float(a) - float(b))))
        jsds[c] = diversity_jsd(p, q)
        rows.append(row("diversity.jsd", c, jsds[c]))
        kls[c], mu = kl_mu(p, q)
        rows.append(row("diversity.kl_mu", c, kls[c], note=f"mu = {mu:.3g}") if math.isfinite(kls[c]) else
                    undefined("diversity.kl_mu", c, "real column has one category (p1 = 1): mu = exp(-inf) = 0"))
    rows.append(aggregate("marginal.tvd1", tvds))
    rows.append(aggregate("bhattacharyya", bds))
    if jsds:
        rows.append(aggregate("diversity.jsd", jsds, how="sum", subject="(sum)", over="categorical columns"))
        rows.append(aggregate("diversity.kl_mu", kls, how="sum", subject="(sum)", over="categorical columns"))
    if dim_points:
        rows.append(row("dimwise.probability", "(all)", float(np.mean([abs(a - b) for _, a, b in dim_points])),
                        note="mean |p_real - p_synthetic| over one-hot dimensions"))
    rows += _kway_rows(ctx)
    figures = {"histograms": hists, "dimwise_probability": dim_points}
    rows_pca, figures["pca"] = _pca(ctx)
    rows += rows_pca
    rows_corr, figures["correlation"] = _correlation(ctx)
    rows += rows_corr
    return rows, figures


def _pca(ctx) -> tuple[list[Row], dict]:
    enc = ctx.encoder()
    if enc.width < 2:
        return [undefined("pca.tvd", "(all)", "fewer than two encoded dimensions")], {}
    mean, comps = _pca_fit(_chunks(enc, ctx.real))
    a = np.vstack([(x - mean) @ comps for x in _chunks(enc, ctx.real)])
    b = np.vstack([(x - mean) @ comps for x in _chunks(enc, ctx.synthetic)])
    rng = ctx.rng(21)
    cap = ctx.limits.pca_points
    ia = rng.choice(len(a), size=min(cap, len(a)), replace=False)
    ib = rng.choice(len(b), size=min(cap, len(b)), replace=False)
    fig = {"real": a[ia].round(4), "synthetic": b[ib].round(4)}
    return [row("pca.tvd", "(all)", _hist2d_tvd(a, b), note="20x20 bins on the real PCA plane")], fig


def _correlation(ctx) -> tuple[list[Row], dict]:
    cont = [c for c, k in ctx.kinds.items() if k != "categorical"]
    if len(cont) < 2:
        return [undefined("correlation.pearson_diff", "(all)", "fewer than two continuous columns")], {}
    from dpsynth.evaluation.similarity import matrix_diff_row

    mats = []
    for frame in (ctx.real, ctx.synthetic):
        m = pd.DataFrame({c: numeric(frame[c]) for c in cont}).corr()
        mats.append(m)
    return [matrix_diff_row("correlation.pearson_diff", *mats)], {
        "columns": cont, "real": mats[0].to_numpy(), "synthetic": mats[1].to_numpy()}
