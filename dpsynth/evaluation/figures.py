"""Render the plot data of an :class:`~dpsynth.evaluation.result.EvaluationResult` as embedded PNG images.

Every function returns a ``data:image/png;base64,...`` URI (matplotlib, Agg backend, no display needed), so the
HTML report is one self-contained file. Figures are drawn only from ``result.figures`` (plain numbers).
"""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np

__all__ = ["render_all", "to_data_uri", "histogram", "heatmaps", "pca_scatter", "dimwise_probability",
           "dimwise_prediction", "ml_efficacy", "degree_distribution"]

REAL, SYNTH = "#1f77b4", "#ff7f0e"


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def to_data_uri(fig) -> str:
    """PNG bytes of a matplotlib figure as a base64 data URI; closes the figure."""
    plt = _plt()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def histogram(name: str, h: dict[str, Any], max_bins: int = 25) -> str:
    """Bar chart of one column's real vs synthetic histogram (categorical: the most frequent bins)."""
    plt = _plt()
    labels, p, q = list(h["bins"]), np.asarray(h["real"], float), np.asarray(h["synthetic"], float)
    if len(labels) > max_bins:  # keep the largest bins by real + synthetic mass
        keep = np.sort(np.argsort(-(p + q))[:max_bins])
        labels, p, q = [labels[i] for i in keep], p[keep], q[keep]
    fig, ax = plt.subplots(figsize=(4.2, 2.8))
    x = np.arange(len(labels))
    ax.bar(x - 0.2, p, width=0.4, color=REAL, label="real")
    ax.bar(x + 0.2, q, width=0.4, color=SYNTH, label="synthetic")
    ax.set_xticks(x)
    ax.set_xticklabels([str(lab)[:14] for lab in labels], rotation=60, ha="right", fontsize=6)
    ax.set_title(name, fontsize=9)
    ax.set_ylabel("share of rows", fontsize=7)
    ax.tick_params(axis="y", labelsize=7)
    ax.legend(fontsize=7)
    return to_data_uri(fig)


def heatmaps(data: dict[str, Any], title: str) -> str:
    """Real, synthetic and |difference| matrices side by side on one colour scale."""
    plt = _plt()
    cols = list(data["columns"])
    real = np.asarray(data["real"], float)
    synth = np.asarray(data["synthetic"], float)
    lo = -1.0 if np.nanmin(np.r_[real.ravel(), synth.ravel(), 0.0]) < 0 else 0.0
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8), layout="constrained")
    for ax, mat, label in zip(axes, (real, synth, np.abs(real - synth)), ("real", "synthetic", "|real - synthetic|")):
        is_diff = label.startswith("|")
        im = ax.imshow(mat, vmin=0.0 if is_diff else lo, vmax=1.0, cmap="coolwarm" if lo < 0 else "viridis")
        ax.set_title(f"{title}: {label}", fontsize=9)
        ax.set_xticks(range(len(cols)))
        ax.set_yticks(range(len(cols)))
        ax.set_xticklabels([c[:12] for c in cols], rotation=90, fontsize=6)
        ax.set_yticklabels([c[:12] for c in cols], fontsize=6)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return to_data_uri(fig)


def pca_scatter(data: dict[str, Any]) -> str:
    """Real and synthetic rows on the first two principal components of the real data (seed 003)."""
    plt = _plt()
    a, b = np.asarray(data["real"], float), np.asarray(data["synthetic"], float)
    fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharex=True, sharey=True)
    for ax, pts, label, color in ((axes[0], a, "real", REAL), (axes[1], b, "synthetic", SYNTH)):
        ax.scatter(pts[:, 0], pts[:, 1], s=3, alpha=0.35, color=color)
        ax.set_title(f"2-way PCA marginal: {label}", fontsize=9)
        ax.set_xlabel("PC 1 (fitted on real)", fontsize=8)
    axes[0].set_ylabel("PC 2", fontsize=8)
    return to_data_uri(fig)


def _diag(ax, lo: float = 0.0, hi: float = 1.0) -> None:
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls="--")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)


def dimwise_probability(points: list[list]) -> str:
    """Scatter of per-category proportions, real (x) vs synthetic (y); y = x is perfect (seed 003 Fig. 2)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    x = np.array([p[1] for p in points], float)
    y = np.array([p[2] for p in points], float)
    ax.scatter(x, y, s=12, color=SYNTH, edgecolor="k", linewidth=0.3)
    _diag(ax)
    ax.set_xlabel("proportion in real", fontsize=8)
    ax.set_ylabel("proportion in synthetic", fontsize=8)
    ax.set_title("Dimension-wise probability", fontsize=9)
    return to_data_uri(fig)


def dimwise_prediction(points: list[list]) -> str:
    """Scatter of per-column scores trained on real (x) vs synthetic (y), one colour per score (seed 003 Fig. 4)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.8, 4.5))
    colors = {"f1": "#1f77b4", "auc": "#2ca02c", "r2": "#d62728"}
    lo = 0.0
    undefined_x: list[float] = []
    for score, color in colors.items():
        pts = [(p[3], p[4]) for p in points if p[2] == score and p[3] is not None]
        if not pts:
            continue
        xs = np.array([a for a, _ in pts], float)
        ys = np.array([np.nan if b is None else b for _, b in pts], float)
        lo = min(lo, float(np.nanmin(np.r_[xs, ys, 0.0])))
        ok = np.isfinite(ys)
        ax.scatter(xs[ok], ys[ok], s=18, color=color, label=score, edgecolor="k", linewidth=0.3)
        undefined_x.extend(xs[~ok])
    if undefined_x:  # the paper's brown points: no model could be trained on the synthetic column
        ax.scatter(undefined_x, np.full(len(undefined_x), max(lo, -1.0)), s=30, marker="x", color="#8c564b",
                   label="undefined on synthetic")
    _diag(ax, max(lo, -1.0), 1.0)
    ax.set_xlabel("score, trained on real", fontsize=8)
    ax.set_ylabel("score, trained on synthetic", fontsize=8)
    ax.set_title("Dimension-wise prediction", fontsize=9)
    ax.legend(fontsize=7)
    return to_data_uri(fig)


def ml_efficacy(data: dict[str, Any]) -> str:
    """Grouped bars: each model's scores trained on real vs on synthetic, error bars = std over seeds."""
    plt = _plt()
    scores = data["scores"]
    fig, axes = plt.subplots(1, len(scores), figsize=(3.2 * len(scores), 3), squeeze=False)

    def column(values: list[list], k: int) -> np.ndarray:  # older files hold only the two means
        return np.array([np.nan if len(v) <= k or v[k] is None else v[k] for v in values], float)

    for ax, (score, per_model) in zip(axes[0], scores.items()):
        models, values = list(per_model), list(per_model.values())
        x = np.arange(len(models))
        for shift, k, color, label in ((-0.2, 0, REAL, "trained on real"), (0.2, 1, SYNTH, "trained on synthetic")):
            err = np.nan_to_num(column(values, k + 2))
            ax.bar(x + shift, column(values, k), width=0.4, color=color, label=label, yerr=err, capsize=3,
                   error_kw={"elinewidth": 1})
        ax.set_xticks(x)
        ax.set_xticklabels(models, fontsize=8)
        ax.set_title(score, fontsize=9)
    axes[0][0].legend(fontsize=7)
    return to_data_uri(fig)


def degree_distribution(data: dict[str, Any]) -> str:
    """True vs released node-degree distributions (seed 001 §2.5)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(np.asarray(data["true"], float), "o-", color=REAL, label="true")
    for i, q in enumerate(data["released"]):
        ax.plot(np.asarray(q, float), ".-", color=SYNTH, alpha=0.6, label="released" if i == 0 else None)
    ax.set_xlabel("degree", fontsize=8)
    ax.set_ylabel("share of nodes", fontsize=8)
    ax.legend(fontsize=7)
    return to_data_uri(fig)


def render_all(figures: dict[str, Any]) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """``[(section title, intro, [(caption, data URI), ...]), ...]`` for every figure present."""
    out: list[tuple[str, str, list[tuple[str, str]]]] = []
    if figures.get("ml_efficacy"):
        out.append(("ML efficacy (train on synthetic, test on real)",
                    f"Target: {figures['ml_efficacy']['target']}. Bars: mean over seeds; error bars: std over seeds.",
                    [("scores", ml_efficacy(figures["ml_efficacy"]))]))
    if figures.get("histograms"):
        out.append(("1-way histograms: real vs synthetic", "Categories, or 20 bins over the real range.",
                    [(name, histogram(name, h)) for name, h in figures["histograms"].items()]))
    if figures.get("association"):
        out.append(("Association matrices", "Pearson / Theil's U / correlation ratio (seeds 000, 002).",
                    [("association", heatmaps(figures["association"], "association"))]))
    if figures.get("correlation"):
        out.append(("Correlation matrices", "Pearson, continuous columns (seed 001).",
                    [("correlation", heatmaps(figures["correlation"], "Pearson"))]))
    if figures.get("pca"):
        out.append(("2-way PCA marginal", "Projection fitted on real rows (seed 003).",
                    [("pca", pca_scatter(figures["pca"]))]))
    dim = []
    if figures.get("dimwise_probability"):
        dim.append(("dimension-wise probability", dimwise_probability(figures["dimwise_probability"])))
    if figures.get("dimwise_prediction"):
        dim.append(("dimension-wise prediction", dimwise_prediction(figures["dimwise_prediction"])))
    if dim:
        out.append(("Dimension-wise scatter plots", "Points on y = x are perfect (seed 003).", dim))
    if figures.get("degree_distribution"):
        out.append(("Degree distribution", "Seed 001 §2.5.",
                    [("degrees", degree_distribution(figures["degree_distribution"]))]))
    return out
