"""The seed papers' main tables as benchmark grids: ``dpsynth bench --paper NAME --results R.duckdb`` (issue 22).

Each paper is a grid (run by :func:`~dpsynth.bench.runner.run_bench`, so it resumes and stores like any spec)
and a comparison that prints our numbers beside the published ones, ``ours (paper)``, with the paper's metric
definitions as dpsynth's evaluation computes them:

- ``dp-tldm`` (seed 004, Tables 2-3): resemblance, discriminability and utility (0-100, ``quality`` group) of
  CTGAN, the Gaussian copula, TabDDPM and TLDM (DP-TLDM without DP) at epsilon inf, and DP-CTGAN, DP-TabDDPM and
  DP-TLDM at seed 004's privacy level (separation 0.1 = mu-GDP with mu 0.3563; we fit at the (epsilon, 1e-5) that
  mu implies, about 1.37, which our ledger proves) on Adult, Cardio, Loan and Housing. CopulaGAN and ADS-GAN (no
  dpsynth model) are printed with their published numbers only.
- ``dp-auto-gan`` (seed 003, Tables 2-3, Adult): diversity (JSD and mu-smoothed KL of marital-status and race,
  and summed over 8 categorical columns) and random-forest accuracy on income trained on synthetic rows, for
  DP-auto-GAN, DP-WGAN and DP-VAE at epsilon 0.36 / 0.51 / 1.01 and DP-SYN at 0.5 / 0.8 / 1.4. The paper drops
  fnlwgt and merges education-num into education; we fit the whole table.
- ``unified`` (seed 001, the Wine experiment): DP-DNN, DP-GAN and DP-GAN-DNN over epsilon 0.1 / 1 / 10 and delta
  1e-5 / 1e-3, random-forest accuracy trained on synthetic and tested on real rows, Bhattacharyya distance. The
  poster's numbers are only in its figures: ours are printed alone.

- ``dtgan`` (seed 002, Tables 3-4): DTGAN_D (``dtgan-d``) and DTGAN_G (``dtgan-g``) at epsilon 1 and 100, and
  the paper's non-private reference TGAN as ``dtgan-g`` at epsilon inf (the same networks, one discriminator, no
  DP), on Adult and Loan. ML utility: the differences real - synthetic of accuracy (%), AUC, average precision
  and F1, averaged over a decision tree, a random forest, logistic regression and an MLP (dpsynth's
  ``ml_efficacy``: scikit-learn defaults on min-max scaled, one-hot features; its differences are absolute,
  the paper's signed, which agree wherever the real-trained model is the better one); similarity: Avg-JSD (the
  Jensen-Shannon *distance* of the categorical columns, the square root of dpsynth's ``similarity.jsd``
  divergence, as in the CTAB-GAN code the seed uses), Avg-WD and Diff-Corr. The paper averages over Adult,
  Credit and Loan; Credit (ULB's fraud table) is not available offline, so the ``mean`` rows average Adult and
  Loan, and the paper's three-table numbers beside them are a loose reference.
- ``dp-sactgan`` (seed 000, Tables 1-4): DP-SACTGAN at epsilon 1 and the paper's non-private CTAB-GAN+ as
  ``dp-sactgan`` at epsilon inf, on Adult (logistic regression: accuracy %, AUC and F1 differences) and King
  County (Ridge: MAE of the target min-max scaled by the test split's range, explained variance and R2
  differences); WD, JSD (distance) and Diff Cor on both.

``benchmarks/gan_family_tables.py`` computes the same tables outside the bench (and seed 002's Table 5, the
privacy gains, which need the shadow attack's refits).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpsynth.bench.spec import BenchSpec, parse_spec
from dpsynth.errors import InputError

__all__ = ["PAPERS", "paper_spec", "compare"]

# ---------------------------------------------------------------------------------------------- published numbers
#: seed 004 Tables 2 (epsilon = inf) and 3 (separation 0.1): (resemblance, discriminability, utility); lines 187-206
#: and 416-431 of the seed's text. "dp-tldm@inf" is the paper's TLDM (DP-TLDM trained without DP).
SEED004 = {
    ("loan", "CopulaGAN"): (92, 95, 70), ("loan", "ctgan"): (92, 85, 93), ("loan", "ADS-GAN"): (93, 95, 73),
    ("loan", "gaussian-copula"): (86, 82, 78), ("loan", "tabddpm"): (98, 100, 97),
    ("housing", "CopulaGAN"): (94, 90, 62), ("housing", "ctgan"): (94, 92, 64), ("housing", "ADS-GAN"): (93, 87, 74),
    ("housing", "gaussian-copula"): (91, 84, 32), ("housing", "tabddpm"): (96, 98, 93),
    ("adult", "CopulaGAN"): (93, 97, 81), ("adult", "ctgan"): (90, 79, 83), ("adult", "ADS-GAN"): (88, 59, 83),
    ("adult", "gaussian-copula"): (80, 50, 56), ("adult", "tabddpm"): (96, 98, 98),
    ("cardio", "CopulaGAN"): (87, 93, 96), ("cardio", "ctgan"): (84, 68, 97), ("cardio", "ADS-GAN"): (90, 71, 100),
    ("cardio", "gaussian-copula"): (81, 63, 86), ("cardio", "tabddpm"): (95, 99, 100),
    ("loan", "dp-tldm@inf"): (96, 98, 100), ("loan", "dp-ctgan"): (40, 11, 54), ("loan", "dp-tabddpm"): (40, 9, 55),
    ("loan", "dp-tldm"): (63, 57, 63),
    ("housing", "dp-tldm@inf"): (98, 98, 85), ("housing", "dp-ctgan"): (37, 9, 21),
    ("housing", "dp-tabddpm"): (47, 9, 8), ("housing", "dp-tldm"): (86, 81, 30),
    ("adult", "dp-tldm@inf"): (95, 88, 100), ("adult", "dp-ctgan"): (44, 10, 49),
    ("adult", "dp-tabddpm"): (49, 9, 48), ("adult", "dp-tldm"): (77, 63, 58),
    ("cardio", "dp-tldm@inf"): (100, 95, 100), ("cardio", "dp-ctgan"): (53, 14, 51),
    ("cardio", "dp-tabddpm"): (43, 9, 71), ("cardio", "dp-tldm"): (86, 50, 91),
}
SEED004_MU = 0.3563  # separation 0.1 (seed 004 §5.3)
SEED004_NONPRIVATE = ("ctgan", "gaussian-copula", "tabddpm", "dp-tldm")  # dp-tldm at inf: the paper's TLDM
SEED004_DP = ("dp-ctgan", "dp-tabddpm", "dp-tldm")
SEED004_DATASETS = ("adult", "cardio", "loan", "housing")

#: seed 003 Table 2 (Adult; lines 316-324): (model, epsilon) -> (JSD marital, JSD race, JSD all, KL_mu marital,
#: KL_mu race, KL_mu all); "all" sums the 8 categorical columns other than education
SEED003_DIVERSITY = {
    ("dp-auto-gan", 0.36): (.025, .021, 0.33, .019, .125, 0.81),
    ("dp-auto-gan", 0.51): (.043, .014, 0.23, .053, .064, 0.48),
    ("dp-auto-gan", 1.01): (.014, .016, 0.19, .005, .089, 0.53),
    ("dp-wgan", 0.36): (.119, .081, 1.29, .165, .262, 5.26),
    ("dp-wgan", 0.51): (.624, .053, 2.41, 1.16, .465, 6.39),
    ("dp-wgan", 1.01): (.136, .040, 0.73, .290, .277, 1.53),
    ("dp-vae", 0.36): (.139, .095, 0.80, .207, .315, 2.52),
    ("dp-vae", 0.51): (.043, .031, 0.44, .044, .102, 1.17),
    ("dp-vae", 1.01): (.021, .011, 0.23, .017, .038, 0.58),
    ("dp-syn", 0.5): (.017, .053, 0.25, .017, .465, 0.99),
    ("dp-syn", 0.8): (.013, .053, 0.27, .011, .465, 1.00),
    ("dp-syn", 1.4): (.017, .053, 0.28, .012, .465, 1.02),
}
#: seed 003 Table 3 (lines 370-374): random-forest accuracy (%) on salary; DP-WGAN's are quoted from Frigerio et al.
SEED003_RF = {("real", math.inf): 84.53, ("dp-auto-gan", math.inf): 79.18, ("dp-auto-gan", 1.01): 79.19,
              ("dp-auto-gan", 0.51): 78.68, ("dp-auto-gan", 0.36): 74.66, ("dp-wgan", math.inf): 76.7,
              ("dp-wgan", 7.0): 76.0, ("dp-wgan", 3.0): 75.3}
SEED003_EPSILONS = {"dp-auto-gan": (0.36, 0.51, 1.01), "dp-wgan": (0.36, 0.51, 1.01), "dp-vae": (0.36, 0.51, 1.01),
                    "dp-syn": (0.5, 0.8, 1.4)}
SEED003_COLUMNS = ("workclass", "marital-status", "occupation", "relationship", "race", "sex", "native-country",
                   "income")

UNIFIED_MODELS = ("dp-dnn", "dp-gan", "dp-gan-dnn")

#: seed 002 Table 3 (differences real - synthetic, averaged over Adult, Credit, Loan and the 4 classifiers)
SEED002_UTILITY = {  # (method, epsilon): (accuracy %, AUC, APR, F1)
    ("DTGAN_D", 1): (16.1, 0.302, 0.483, 0.34), ("DTGAN_D", 100): (13.0, 0.265, 0.475, 0.262),
    ("DTGAN_G", 1): (32.3, 0.377, 0.604, 0.454), ("DTGAN_G", 100): (13.7, 0.387, 0.565, 0.374),
    ("TGAN", math.inf): (2.6, 0.042, 0.143, 0.097),
}
#: seed 002 Table 4 (Avg JSD, Avg WD, Diff. Corr.; averaged over the three datasets)
SEED002_SIMILARITY = {
    ("DTGAN_D", 1): (0.246, 0.063, 4.168), ("DTGAN_D", 100): (0.127, 0.047, 3.648),
    ("DTGAN_G", 1): (0.376, 0.189, 3.065), ("DTGAN_G", 100): (0.389, 0.174, 3.21),
    ("TGAN", math.inf): (0.028, 0.01, 1.607),
}
#: seed 002 Table 5 at epsilon 1 (naive, correlation membership privacy gain; attribute inference privacy gain)
SEED002_PRIVACY = {"DTGAN_D": (0.266, 0.248, 0.037), "DTGAN_G": (0.245, 0.26, 0.038), "TGAN": (0.238, 0.233, 2e-4)}
SEED002_CLASSIFIERS = ("dt", "rf", "lr", "mlp")
#: seed 000 Tables 1-4 at epsilon 1 (CTAB-GAN+ is non-private in the paper)
SEED000_ADULT_LR = {"DP-SACTGAN": (4.084, 0.0261, 0.0251), "CTAB-GAN+": (5.047, 0.0560, 0.0804)}  # ACC %, AUC, F1
SEED000_KING_RIDGE = {"DP-SACTGAN": (0.0114, 0.165, 0.214), "CTAB-GAN+": (0.0420, 0.208, 0.222)}  # MAE, EVS, R2
SEED000_SIMILARITY = {  # dataset: method: (WD, JSD, Diff Cor)
    "adult": {"DP-SACTGAN": (0.0149, 0.101, 0.849), "CTAB-GAN+": (0.0154, 0.0803, 1.257)},
    "king": {"DP-SACTGAN": (0.0298, 0.103, 2.631), "CTAB-GAN+": (0.0314, 0.133, 3.311)},
}
#: our models in the two papers' tables (epsilon inf: the papers' non-private references)
GAN_PAPER_NAME = {("dtgan-d", False): "DTGAN_D", ("dtgan-g", False): "DTGAN_G", ("dtgan-d", True): "TGAN",
                  ("dtgan-g", True): "TGAN", ("dp-sactgan", False): "DP-SACTGAN", ("dp-sactgan", True): "CTAB-GAN+",
                  ("ctab-gan-plus", True): "CTAB-GAN+"}


@dataclass(frozen=True)
class Paper:
    title: str
    groups: Callable[[tuple[str, ...]], list[dict]]  # datasets -> spec parts (models x epsilons of one kind)
    datasets: tuple[str, ...]
    table: Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame]


def _value(metrics: pd.DataFrame, key: str, metric: str, subject: str) -> float:
    hit = metrics[(metrics["key"] == key) & (metrics["metric"] == metric) & (metrics["subject"] == subject)]
    return float(hit["value"].iloc[0]) if len(hit) and pd.notna(hit["value"].iloc[0]) else math.nan


def _cell(ours: list[float], paper: float | None, digits: int) -> str:
    values = [v for v in ours if not math.isnan(v)]
    text = f"{np.mean(values):.{digits}f}" if values else "-"
    return text if paper is None or (isinstance(paper, float) and math.isnan(paper)) else f"{text} ({paper:g})"


def _eps(e: float) -> str:
    return "inf" if math.isinf(e) else f"{e:.3g}"


# ---------------------------------------------------------------------------------------------- seed 004
def _seed004_groups(datasets):
    from dpsynth.privacy.gdp import gdp_epsilon

    common = {"datasets": list(datasets), "metrics": ["quality"], "deltas": [1e-5], "seeds": [0, 1, 2]}
    return [{**common, "models": list(SEED004_NONPRIVATE), "epsilons": ["inf"]},
            {**common, "models": list(SEED004_DP), "epsilons": [round(gdp_epsilon(SEED004_MU, 1e-5), 4)]}]


def _seed004_table(runs, metrics):
    rows = []
    ok = runs[runs["status"] == "ok"]
    for (dataset, model, epsilon), group in ok.groupby(["dataset", "model", "epsilon"], sort=True):
        name = f"{model}@inf" if model == "dp-tldm" and math.isinf(epsilon) else model
        paper = SEED004.get((dataset, name), (math.nan,) * 3)
        row = {"dataset": dataset, "model": name, "epsilon": _eps(epsilon), "seeds": len(group)}
        for i, part in enumerate(("resemblance", "discriminability", "utility")):
            row[f"{part} (paper)"] = _cell([_value(metrics, k, f"quality.{part}", "(all)") for k in group["key"]],
                                           paper[i], 0)
        rows.append(row)
    for (dataset, name), paper in SEED004.items():
        if name in ("CopulaGAN", "ADS-GAN") and dataset in set(ok["dataset"]):
            rows.append({"dataset": dataset, "model": f"{name} (paper only)", "epsilon": "inf", "seeds": 0,
                         **{f"{p} (paper)": f"- ({v})" for p, v in
                            zip(("resemblance", "discriminability", "utility"), paper)}})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------- seed 003
def _seed003_groups(datasets):
    return [{"datasets": list(datasets), "models": [model], "epsilons": list(eps), "deltas": [1e-5],
             "metrics": ["unsupervised", "ml_efficacy"], "seeds": [0, 1, 2]} for model, eps in SEED003_EPSILONS.items()]


def _seed003_table(runs, metrics):
    rows = []
    for (model, epsilon), group in runs[runs["status"] == "ok"].groupby(["model", "epsilon"], sort=True):
        per_run = []
        for key in group["key"]:
            jsd = [_value(metrics, key, "diversity.jsd", c) for c in SEED003_COLUMNS]
            kl = [_value(metrics, key, "diversity.kl_mu", c) for c in SEED003_COLUMNS]
            per_run.append([jsd[1], jsd[4], float(np.sum(jsd)), kl[1], kl[4], float(np.sum(kl)),
                            100 * _value(metrics, key, "ml_efficacy.accuracy.synthetic", "rf")])
        paper = (*SEED003_DIVERSITY.get((model, epsilon), (math.nan,) * 6), SEED003_RF.get((model, epsilon), math.nan))
        names = ("JSD marital", "JSD race", "JSD all 8", "KL_mu marital", "KL_mu race", "KL_mu all 8", "RF acc %")
        row = {"model": model, "epsilon": _eps(epsilon), "seeds": len(group)}
        for i, name in enumerate(names):
            row[f"{name} (paper)"] = _cell([r[i] for r in per_run], paper[i], 1 if name == "RF acc %" else 3)
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------- seed 001
def _unified_groups(datasets):
    return [{"datasets": list(datasets), "models": list(UNIFIED_MODELS), "epsilons": [0.1, 1, 10],
             "deltas": [1e-5, 1e-3], "metrics": ["unsupervised", "ml_efficacy"], "seeds": list(range(10))}]


def _unified_table(runs, metrics):
    rows = []
    for (dataset, model, epsilon, delta), group in runs[runs["status"] == "ok"].groupby(
            ["dataset", "model", "epsilon", "delta"], sort=True):
        accuracy = [_value(metrics, k, "ml_efficacy.accuracy.synthetic", "rf") for k in group["key"]]
        bhatt = [metrics[(metrics["key"] == k) & (metrics["metric"] == "bhattacharyya")]["value"].mean()
                 for k in group["key"]]
        rows.append({"dataset": dataset, "model": model, "epsilon": _eps(epsilon), "delta": f"{delta:g}",
                     "seeds": len(group), "RF accuracy": f"{np.nanmean(accuracy):.3f} ± {np.nanstd(accuracy):.3f}",
                     "Bhattacharyya": f"{np.nanmean(bhatt):.3f} ± {np.nanstd(bhatt):.3f}"})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------- seeds 002 and 000
def _metric(metrics: pd.DataFrame, key: str, metric: str) -> pd.Series:
    """``metric``'s values of run ``key`` by subject."""
    hit = metrics[(metrics["key"] == key) & (metrics["metric"] == metric)]
    return pd.Series(hit["value"].to_numpy(dtype=float), index=hit["subject"].to_numpy())


def _similarity(metrics: pd.DataFrame, key: str) -> tuple[float, float, float]:
    """(Avg-JSD as a distance, Avg-WD, Diff-Corr) of one run, from the per-column rows."""
    def columns(values: pd.Series) -> pd.Series:
        return values[[not str(s).startswith("(") for s in values.index]]

    jsd = np.sqrt(columns(_metric(metrics, key, "similarity.jsd")).clip(lower=0))
    wd = columns(_metric(metrics, key, "similarity.wasserstein"))
    return (float(jsd.mean()) if len(jsd) else math.nan, float(wd.mean()) if wd.notna().any() else math.nan,
            _value(metrics, key, "similarity.association_diff", "(all)"))


def _mean_or_nan(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else math.nan


def _dtgan_groups(datasets):
    common = {"datasets": list(datasets), "metrics": ["ml_efficacy", "similarity"], "deltas": [1e-5],
              "seeds": [0, 1, 2]}
    return [{**common, "models": ["dtgan-d", "dtgan-g"], "epsilons": [1, 100]},
            {**common, "models": ["dtgan-g"], "epsilons": ["inf"]}]


def _dtgan_run(metrics: pd.DataFrame, key: str) -> list[float]:
    def diff(score: str) -> float:
        values = _metric(metrics, key, f"ml_efficacy.{score}.diff").reindex(list(SEED002_CLASSIFIERS))
        return float(values.mean()) if values.notna().any() else math.nan

    return [100 * diff("accuracy"), diff("auc"), diff("ap"), diff("f1"), *_similarity(metrics, key)]


_DTGAN_NAMES = ("d acc %", "d AUC", "d APR", "d F1", "Avg-JSD", "Avg-WD", "Diff-Corr")


def _dtgan_table(runs, metrics):
    per_run = {key: _dtgan_run(metrics, key) for key in runs.loc[runs["status"] == "ok", "key"]}
    ok = runs[runs["status"] == "ok"]
    rows = []
    for (model, epsilon), by_model in ok.groupby(["model", "epsilon"], sort=True):
        name = GAN_PAPER_NAME.get((model, math.isinf(epsilon)), model)
        paper = (*SEED002_UTILITY.get((name, epsilon), (math.nan,) * 4),
                 *SEED002_SIMILARITY.get((name, epsilon), (math.nan,) * 3))
        mean_label = f"mean of {by_model['dataset'].nunique()}"
        for dataset, group in [*by_model.groupby("dataset", sort=True), (mean_label, by_model)]:
            row = {"dataset": dataset, "model": f"{model} ({name})", "epsilon": _eps(epsilon), "seeds": len(group)}
            for i, column in enumerate(_DTGAN_NAMES):
                values = [per_run[k][i] for k in group["key"]]
                if dataset != mean_label:
                    row[column] = _cell(values, None, 1 if i == 0 else 3)
                else:  # the mean over datasets of the per-dataset means, beside the paper's average
                    means = [_mean_or_nan([per_run[k][i] for k in g["key"]]) for _, g in group.groupby("dataset")]
                    row[column] = _cell(means, paper[i], 1 if i == 0 else 3)
            rows.append(row)
    return pd.DataFrame(rows).rename(columns={c: f"{c} (paper)" for c in _DTGAN_NAMES})


def _sactgan_groups(datasets):
    return [{"datasets": list(datasets), "metrics": ["ml_efficacy", "similarity"], "deltas": [1e-5],
             "seeds": [0, 1, 2], "models": ["dp-sactgan"], "epsilons": [1, "inf"]}]


def _test_range(dataset: str) -> float:
    """max - min of the target on the bench's test split of ``dataset`` (seed 000 scales King's price by it)."""
    from dpsynth.bench.worker import prepare_data

    run = parse_spec({"name": "range", "models": ["marginals"], "datasets": [dataset], "epsilons": [1],
                      "metrics": ["ml_efficacy"]}).runs[0]
    _, test, _, target = prepare_data(run)
    values = pd.to_numeric(test[target], errors="coerce")
    return float(values.max() - values.min()) or 1.0


def _sactgan_table(runs, metrics):
    ok = runs[runs["status"] == "ok"]
    rows = []
    for (dataset, model, epsilon), group in ok.groupby(["dataset", "model", "epsilon"], sort=True):
        name = GAN_PAPER_NAME.get((model, math.isinf(epsilon)), model)
        row = {"dataset": dataset, "model": f"{model} ({name})", "epsilon": _eps(epsilon), "seeds": len(group)}
        if dataset == "king":
            span = _test_range("king")
            scores = [("d MAE (scaled)", "mae", 1 / span), ("d EVS", "evs", 1.0), ("d R2", "r2", 1.0)]
            paper = SEED000_KING_RIDGE.get(name, (math.nan,) * 3)
        else:
            scores = [("LR d acc %", "accuracy", 100.0), ("LR d AUC", "auc", 1.0), ("LR d F1", "f1", 1.0)]
            paper = SEED000_ADULT_LR.get(name, (math.nan,) * 3) if dataset == "adult" else (math.nan,) * 3
        for (column, score, scale), published in zip(scores, paper):
            values = [scale * _value(metrics, k, f"ml_efficacy.{score}.diff", "lr") for k in group["key"]]
            row[f"{column} (paper)"] = _cell(values, published, 2 if scale == 100.0 else 4)
        similarity = [_similarity(metrics, k) for k in group["key"]]
        published = SEED000_SIMILARITY.get(dataset, {}).get(name, (math.nan,) * 3)
        for i, column in enumerate(("WD", "JSD", "Diff Cor")):
            j = {"WD": 1, "JSD": 0, "Diff Cor": 2}[column]
            row[f"{column} (paper)"] = _cell([s[j] for s in similarity], published[i], 4 if i < 2 else 3)
        rows.append(row)
    return pd.DataFrame(rows).fillna("")  # Adult has no Ridge cells, King no logistic-regression ones


PAPERS = {
    "dp-tldm": Paper("seed 004 (DP-TLDM), Tables 2-3", _seed004_groups, SEED004_DATASETS, _seed004_table),
    "dp-auto-gan": Paper("seed 003 (DP-auto-GAN), Tables 2-3", _seed003_groups, ("adult",), _seed003_table),
    "unified": Paper("seed 001 (unified DP-GAN framework), Wine", _unified_groups, ("wine",), _unified_table),
    "dtgan": Paper("seed 002 (DTGAN), Tables 3-4; Credit not available offline", _dtgan_groups, ("adult", "loan"),
                   _dtgan_table),
    "dp-sactgan": Paper("seed 000 (DP-SACTGAN), Tables 1-4", _sactgan_groups, ("adult", "king"), _sactgan_table),
}


def paper_spec(name: str, *, datasets: list[str] | None = None, seeds: list[int] | None = None,
               models: list[str] | None = None) -> BenchSpec:
    """The grid of paper ``name`` (optionally fewer datasets, other seeds, a subset of its models)."""
    if name not in PAPERS:
        raise InputError(f"--paper must be one of {', '.join(PAPERS)}. Found {name!r}.")
    paper = PAPERS[name]
    if datasets and set(datasets) - set(paper.datasets):
        raise InputError(f"{name} runs on {', '.join(paper.datasets)}. Found {', '.join(datasets)}.")
    runs = []
    for part in paper.groups(tuple(datasets or paper.datasets)):
        if models:
            part = {**part, "models": [m for m in part["models"] if m in models]}
            if not part["models"]:
                continue
        if seeds is not None:
            part = {**part, "seeds": list(seeds)}
        runs += parse_spec({"name": f"paper-{name}", "eval_seeds": [0], **part}).runs
    if not runs:
        raise InputError(f"No run left: the models of {name} are not among {models}.")
    return BenchSpec(f"paper-{name}", runs)


def compare(name: str, runs: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """Ours beside the paper's numbers, from a results file's runs of ``paper_spec(name)``."""
    mine = runs[runs["spec"] == f"paper-{name}"]
    if mine.empty:
        return pd.DataFrame()
    return PAPERS[name].table(mine, metrics[metrics["key"].isin(mine["key"])])
