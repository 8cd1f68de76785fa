"""Tables and plots from a results file (``dpsynth bench report results.duckdb``).

The summary has one row per (dataset, model, epsilon, delta) with the number of recorded runs by status and, over
the seeds that succeeded, mean ± std of the headline numbers: the ledger's epsilon, XGBoost's score trained on
synthetic and tested on real rows (AUC for a categorical target, R2 for a numeric one), the mean 1-way and 2-way
marginal TVD, fit seconds, peak memory, the number of columns the release kept (``kept``) and, when the spec ran
attacks, the highest attack risk of the release (``risk_max``: the largest headline risk over the attacks, each in
[0, 1]). ``--metric NAME`` adds any metric of the tidy evaluation table (mean over its subjects; ``NAME:SUBJECT``
one subject), and ``--markdown`` prints the table as Markdown (how the README's tables are made). The HTML page
(dpsynth's report template) holds the table, the failures with their errors, and one figure per dataset: each
headline metric against epsilon, a line per model, error bars over seeds, and, with attacks, utility (XGBoost AUC
or R2) against risk, a point per (model, epsilon).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

__all__ = ["HEADLINE", "markdown", "metric_and_subject", "summary", "write_html"]

#: column -> (metric, subject or None for the mean over subjects)
HEADLINE = {
    "auc_xgb": ("ml_efficacy.auc.synthetic", "xgb"),
    "r2_xgb": ("ml_efficacy.r2.synthetic", "xgb"),
    "tvd1": ("marginal.tvd1", None),
    "tvd2": ("marginal.tvd_k2", "(all)"),
    "tvd2q": ("marginal.tvd_q2", "(all)"),
}
_RUN_COLUMNS = {"eps_spent": "ledger_epsilon", "fit_s": "fit_s", "peak_mb": "peak_mb"}


def _per_run(runs: pd.DataFrame, metrics: pd.DataFrame, extra: Sequence[str]) -> pd.DataFrame:
    """One row per successful run with the headline numbers as columns."""
    ok = runs[runs["status"] == "ok"].copy()
    wanted = {**HEADLINE, **{name: metric_and_subject(name) for name in extra}}
    for column, (metric, subject) in wanted.items():
        rows = metrics[metrics["metric"] == metric]
        if subject is not None:
            rows = rows[rows["subject"] == subject]
        ok[column] = ok["key"].map(rows.groupby("key")["value"].mean())
    kept = metrics[metrics["metric"] == "columns.kept"]  # how many columns a fit without a schema released
    ok["kept"] = ok["key"].map(kept.groupby("key")["value"].mean())
    risks = metrics[metrics["metric"].str.startswith("risk.") & metrics["metric"].str.endswith(".risk")]
    ok["risk_max"] = ok["key"].map(risks.groupby("key")["value"].max())
    return ok


def metric_and_subject(name: str) -> tuple[str, str | None]:
    """``--metric`` as given: ``METRIC`` (the mean over its subjects) or ``METRIC:SUBJECT`` (one subject, e.g.
    ``ml_efficacy.auc.synthetic:lr``, logistic regression's AUC)."""
    metric, _, subject = name.partition(":")
    return metric, (subject or None)


def markdown(table: pd.DataFrame) -> str:
    """``table`` as a Markdown (GitHub) table, cells as printed, ``|`` escaped: for a README."""
    def row(cells) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([row(table.columns), row(["---"] * len(table.columns)), *(row(r) for r in table.itertuples(
        index=False))])


def _fmt(values: pd.Series) -> str:
    values = values.dropna().astype(float)
    if values.empty:
        return "-"
    if values.map(math.isinf).any():  # the non-private mode's ledger: no mean to take
        return "inf" if (values == math.inf).all() else "mixed inf"
    if len(values) == 1:
        return f"{values.iloc[0]:.4g}"
    return f"{values.mean():.4g} ± {values.std(ddof=0):.2g}"


def summary(runs: pd.DataFrame, metrics: pd.DataFrame, extra: Sequence[str] = ()) -> pd.DataFrame:
    """The summary table (module docstring); columns whose every cell is empty are dropped."""
    if runs.empty:
        return pd.DataFrame()
    per = _per_run(runs, metrics, extra)
    keys = ["dataset", "label", "epsilon", "delta"]
    out = []
    for group, all_runs in runs.groupby(keys, sort=True, dropna=False):
        row = dict(zip(keys, group))
        counts = all_runs["status"].value_counts()
        row["runs"] = " ".join(f"{counts[s]} {s}" for s in sorted(counts.index))
        good = per[(per[keys] == pd.Series(group, index=keys)).all(axis=1)] if not per.empty else per
        for column in [*_RUN_COLUMNS, "kept", *HEADLINE, "risk_max", *extra]:
            source = _RUN_COLUMNS.get(column, column)
            row[column] = _fmt(good[source]) if source in good else "-"
        out.append(row)
    table = pd.DataFrame(out)
    table["epsilon"] = table["epsilon"].map(lambda e: "inf" if math.isinf(e) else f"{e:g}")
    keep = [c for c in table.columns if not (table[c] == "-").all()]
    return table[keep]


def failures(runs: pd.DataFrame) -> pd.DataFrame:
    bad = runs[runs["status"] != "ok"]
    return bad[["dataset", "label", "epsilon", "delta", "seed", "status", "error"]].reset_index(drop=True)


def figures(runs: pd.DataFrame, metrics: pd.DataFrame):
    """One matplotlib figure per dataset: each headline metric that has values against epsilon, a line per
    model (mean over seeds, error bars one std); infinite epsilon is the right-most tick."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per = _per_run(runs, metrics, ())
    out = {}
    for dataset, rows in per.groupby("dataset"):
        columns = [c for c in HEADLINE if rows[c].notna().any()]
        if not columns:
            continue
        epsilons = sorted(rows["epsilon"].unique())
        ticks = {e: i for i, e in enumerate(epsilons)}
        fig, axes = plt.subplots(1, len(columns), figsize=(3.6 * len(columns), 3.0), squeeze=False)
        for ax, column in zip(axes[0], columns):
            for label, by_model in rows.groupby("label"):
                stats = by_model.groupby("epsilon")[column].agg(["mean", "std"]).reset_index()
                ax.errorbar([ticks[e] for e in stats["epsilon"]], stats["mean"], yerr=stats["std"].fillna(0.0),
                            marker="o", capsize=3, label=label)
            ax.set_xticks(list(ticks.values()), ["inf" if math.isinf(e) else f"{e:g}" for e in epsilons])
            ax.set_xlabel("epsilon")
            ax.set_title(column, fontsize=9)
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"{dataset}", fontsize=10)
        fig.tight_layout()
        out[dataset] = fig
        utility = next((c for c in ("auc_xgb", "r2_xgb") if rows[c].notna().any()), None)
        if utility is None or not rows["risk_max"].notna().any():
            continue
        fig, ax = plt.subplots(figsize=(4.2, 3.2))
        for (label, epsilon), group in rows.groupby(["label", "epsilon"]):
            ax.errorbar(group["risk_max"].mean(), group[utility].mean(), xerr=group["risk_max"].std(ddof=0),
                        yerr=group[utility].std(ddof=0), marker="o", capsize=3,
                        label=f"{label}, eps {'inf' if math.isinf(epsilon) else f'{epsilon:g}'}")
        ax.set_xlabel("highest attack risk")
        ax.set_ylabel(utility)
        ax.legend(fontsize=7)
        fig.suptitle(f"{dataset}: utility against risk", fontsize=10)
        fig.tight_layout()
        out[f"{dataset}: utility against risk"] = fig
    return out


def write_html(path: str | Path, runs: pd.DataFrame, metrics: pd.DataFrame, *, extra: Sequence[str] = (),
               title: str = "dpsynth bench") -> Path:
    from html import escape

    from dpsynth.evaluation.figures import to_data_uri
    from dpsynth.evaluation.report import table_html, write_report

    table = summary(runs, metrics, extra)
    sections = [("Summary (mean ± std over seeds)",
                 table_html(table.to_dict(orient="records"), list(table.columns)) if not table.empty else
                 "<p>No run recorded.</p>")]
    bad = failures(runs)
    if not bad.empty:
        sections.append(("Runs that did not finish", table_html(bad.to_dict(orient="records"), list(bad.columns))))
    for name, fig in figures(runs, metrics).items():
        title = name if ":" in name else f"{name}: metrics against epsilon"
        sections.append((title, f'<img alt="{escape(title)}" src="{to_data_uri(fig)}">'))
    return write_report(path, None, extra_sections=sections, title=title)
