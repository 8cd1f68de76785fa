"""The tables of seeds 002 (DTGAN) and 000 (DP-SACTGAN) on the datasets we have, next to the papers' numbers
(issue 19).

Models: ``dtgan-d`` (DTGAN_D), ``dtgan-g`` (DTGAN_G), ``dp-sactgan`` (DP-SACTGAN); ``--epsilon inf`` trains the same
networks without DP, the papers' non-private references (TGAN for seed 002, CTAB-GAN+ for seed 000). Datasets:
Adult (official train / test split and the schema dpsynth ships; seed 002 re-splits 39k / 9k), Loan (Thera Bank,
80 / 20 split as seed 002's 4k / 1k), King County (80 / 20). Credit (ULB's credit-card fraud table, seed 002's
third dataset) is not available offline: seed 002's averages are over Adult and Loan only, so they are not the
paper's averages over three tables. Loan and King have no shipped schema: the one
:func:`~dpsynth.data.inference.infer_schema` proposes is taken as public (the papers assume public metadata; a real
release would declare it or pay for DP discovery).

Printed per (dataset, model, epsilon), mean over ``--seeds``:

- seed 002 Table 3, *ML utility*: decision tree, random forest, logistic regression and MLP (scikit-learn
  defaults; logistic regression with 1,000 iterations so it converges), features min-max scaled and one-hot, each
  trained on the real training split and on the synthetic rows (the DP row count: never the exact size of the
  private split), tested on the real test split; the differences
  real - synthetic of accuracy (in %), F1, ROC AUC and average precision (APR), averaged over the four classifiers;
- seed 002 Table 4 / seed 000 Tables 3-4, *statistical similarity*: Avg-JSD (Jensen-Shannon *distance*, base 2, of
  each categorical column's frequencies, as in the CTAB-GAN evaluation code both seeds use), Avg-WD (1-Wasserstein
  distance of each numeric column, min-max scaled with the real bounds) and Diff-Corr (Frobenius norm of the
  difference of the association matrices: Pearson, Theil's U, correlation ratio);
- seed 000 Table 1 (Adult, logistic regression: accuracy %, AUC, F1 differences) and Table 2 (King, Ridge
  regression on min-max scaled features and price: MAE, explained variance and R2 differences, absolute);
- dpsynth's own yardstick: the mean 2-way TVD (numbers cut at the real deciles), fit time, ledger epsilon.

``--privacy`` adds seed 002 Table 5 at epsilon 1 through :func:`dpsynth.assess_risk`: the shadow-model membership
attack (Stadler's groundhog, naive and correlation features; privacy gain = (1 - P_fake) / 2, 0.25 = the attacker
learns nothing) and the linear-regression attribute inference on age (privacy gain (P_real - P_fake) / 2). The
shadow attack refits the model dozens of times: those fits use the model's ``fast_params`` (small networks, few
steps) unless ``--shadow-params default``, and a reduced shadow design (``--shadow-sets``, ``--shadow-targets``,
``--shadow-reps``, ``--sets-per-fit``); both are printed. Seed 002's design (1,000 / 200 sets, 5 targets x 5
repetitions) is about 3,000 fits a model: 12 hours for ``dtgan-d`` on Loan at 15 s a fit.

Examples::

    python benchmarks/gan_family_tables.py --datasets loan --models dtgan-d --epsilon 1 --seeds 0
    python benchmarks/gan_family_tables.py --datasets adult,loan,king --epsilon 1,100,inf --seeds 0,1,2
    python benchmarks/gan_family_tables.py --datasets loan --models dtgan-d,dtgan-g --privacy --epsilon 1

File datasets are read from ``DPSYNTH_DATA``. ``--out FILE.csv`` also writes every per-seed row.

Measured 2026-11-26 (one seed, 2 cores; the README section "The seeds' own tables" has the full rows)::

    Loan  eps 1   dtgan-d d_AUC 0.289 d_F1 0.599 JSD 0.012 WD 0.038 Diff-Corr 2.10 tvd2 0.156  (paper DTGAN_D 0.302 ...)
    Loan  eps 1   dtgan-g d_AUC 0.562 d_F1 0.838 JSD 0.011 WD 0.041 Diff-Corr 1.93 tvd2 0.149
    Loan  eps inf dtgan-g d_AUC 0.130 d_F1 0.440 JSD 0.005 WD 0.005 Diff-Corr 1.06 tvd2 0.074  (paper TGAN 0.042 ...)
    Adult eps 1   dp-sactgan LR |d AUC| 0.598, WD 0.004, JSD 0.024, Diff Cor 2.28           (paper 0.026, 0.015, ...)
    King  eps inf dp-sactgan Ridge |d R2| 0.244, Diff Cor 3.09                            (paper CTAB-GAN+ 0.222, 3.31)
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
import warnings

import numpy as np
import pandas as pd

# the papers' numbers and our models' names in their tables: one copy, in dpsynth.bench.papers
from dpsynth.bench.papers import (
    GAN_PAPER_NAME,
    SEED000_ADULT_LR,
    SEED000_KING_RIDGE,
    SEED000_SIMILARITY,
    SEED002_PRIVACY,
    SEED002_SIMILARITY,
    SEED002_UTILITY,
)

MODELS = ("dtgan-d", "dtgan-g", "dp-sactgan")
DATASETS = ("adult", "loan", "king")


# ---------------------------------------------------------------------------------------------- data
def load(name: str, seed: int):
    """(train, test, public schema, target, positive class or None for regression)."""
    from dpsynth import datasets
    from dpsynth.data.inference import infer_schema

    data = datasets.load(name)
    if name == "adult":
        return data.train, data.test, datasets.schema("adult"), "income", ">50K"
    frame = data.train.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    cut = int(round(0.8 * len(frame)))
    train, test = frame.iloc[:cut].reset_index(drop=True), frame.iloc[cut:].reset_index(drop=True)
    target = datasets.REGISTRY[name].target
    schema = infer_schema(train, target=target, warn=False).reviewed()
    return train, test, schema, target, (None if name == "king" else 1)


def kinds_of(schema) -> dict[str, str]:
    return {c.name: "categorical" if c.kind in ("categorical", "binary") else "numeric" for c in schema.columns}


def _labels(s: pd.Series) -> pd.Series:
    return s.astype("object").where(s.notna(), "?").astype(str).str.strip().str.rstrip(".")


def design(train: pd.DataFrame, test: pd.DataFrame, kinds: dict[str, str], target: str):
    """Min-max scaled numbers (real-train-free: bounds of the union, as a fixed pre-processing) and one-hot
    categories over the union of both frames' categories."""
    feats = [c for c in train.columns if c != target]
    both = pd.concat([train[feats], test[feats]], keys=["a", "b"])
    parts = []
    for c in feats:
        if kinds[c] == "categorical":
            parts.append(pd.get_dummies(_labels(both[c]), prefix=c, dtype=float))
        else:
            v = pd.to_numeric(both[c], errors="coerce").astype(float)
            v = v.fillna(v.median())
            span = (v.max() - v.min()) or 1.0
            parts.append(((v - v.min()) / span).rename(c))
    x = pd.concat(parts, axis=1).to_numpy(dtype=np.float32)
    return x[: len(train)], x[len(train):]


# ---------------------------------------------------------------------------------------------- metrics
def classifier_scores(train, test, kinds, target, positive, seed, which=("dt", "rf", "lr", "mlp")) -> dict:
    """Accuracy (%), F1, AUC, APR per classifier trained on ``train`` and tested on ``test``."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, average_precision_score, f1_score, roc_auc_score
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier

    x_tr, x_te = design(train, test, kinds, target)
    y_tr = (_labels(train[target]) == str(positive)).to_numpy().astype(int)
    y_te = (_labels(test[target]) == str(positive)).to_numpy().astype(int)
    build = {"dt": lambda: DecisionTreeClassifier(random_state=seed),
             "rf": lambda: RandomForestClassifier(random_state=seed, n_jobs=2),
             "lr": lambda: LogisticRegression(max_iter=1000),
             "mlp": lambda: MLPClassifier(random_state=seed)}
    out = {}
    for name in which:
        if len(np.unique(y_tr)) < 2:  # a constant synthetic label: score the constant predictor
            p = np.full(len(y_te), float(y_tr[0]) if len(y_tr) else 0.0)
        else:
            clf = build[name]()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf.fit(x_tr, y_tr)
            p = clf.predict_proba(x_te)[:, 1]
        pred = (p >= 0.5).astype(int)
        out[name] = {"acc": 100 * accuracy_score(y_te, pred), "f1": f1_score(y_te, pred, zero_division=0),
                     "auc": roc_auc_score(y_te, p) if len(np.unique(p)) > 1 else 0.5,
                     "apr": average_precision_score(y_te, p)}
    return out


def ridge_scores(train, test, kinds, target) -> dict:
    """Seed 000 Table 2: Ridge on min-max scaled features, the target min-max scaled by the test split's bounds."""
    from sklearn.linear_model import Ridge
    from sklearn.metrics import explained_variance_score, mean_absolute_error, r2_score

    x_tr, x_te = design(train, test, kinds, target)
    y_te = pd.to_numeric(test[target], errors="coerce").astype(float).to_numpy()
    lo, span = np.nanmin(y_te), (np.nanmax(y_te) - np.nanmin(y_te)) or 1.0
    y_tr = pd.to_numeric(train[target], errors="coerce").astype(float).fillna(np.nanmedian(y_te)).to_numpy()
    y_tr = (y_tr - lo) / span
    y_te = (y_te - lo) / span
    pred = Ridge().fit(x_tr, y_tr).predict(x_te)
    return {"mae": mean_absolute_error(y_te, pred), "evs": explained_variance_score(y_te, pred),
            "r2": r2_score(y_te, pred)}


def similarity(real: pd.DataFrame, synth: pd.DataFrame, kinds: dict[str, str]) -> dict:
    from dpsynth.evaluation.similarity import association_matrix, js_distance, scaled_wasserstein

    jsd, wd = [], []
    for c, kind in kinds.items():
        if kind == "categorical":
            a, b = _labels(real[c]).value_counts(), _labels(synth[c]).value_counts()
            idx = a.index.union(b.index)
            jsd.append(js_distance(a.reindex(idx, fill_value=0).to_numpy(), b.reindex(idx, fill_value=0).to_numpy()))
        else:
            wd.append(scaled_wasserstein(real[c], synth[c]))
    diff = association_matrix(real, kinds).to_numpy() - association_matrix(synth, kinds).to_numpy()
    return {"avg_jsd": float(np.nanmean(jsd)) if jsd else math.nan, "avg_wd": float(np.nanmean(wd)) if wd else math.nan,
            "diff_corr": float(np.linalg.norm(np.nan_to_num(diff)))}


def tvd2(real: pd.DataFrame, synth: pd.DataFrame, kinds: dict[str, str]) -> float:
    from dpsynth.evaluation.unsupervised import decile_bins

    codes = {c: (_labels(real[c]).to_numpy(), _labels(synth[c]).to_numpy()) if kinds[c] == "categorical"
             else decile_bins(real[c], synth[c], "numeric") for c in kinds}
    a = pd.DataFrame({c: codes[c][0] for c in kinds})
    b = pd.DataFrame({c: codes[c][1] for c in kinds})
    out = []
    for pair in itertools.combinations(kinds, 2):
        p = a.groupby(list(pair)).size() / len(a)
        q = b.groupby(list(pair)).size() / max(len(b), 1)
        out.append(0.5 * float(p.sub(q, fill_value=0).abs().sum()))
    return float(np.mean(out))


# ---------------------------------------------------------------------------------------------- runner
def run_one(dataset: str, model_name: str, epsilon: float, seed: int, params: dict, cache: dict,
            progress: bool) -> dict:
    from dpsynth.models import get_model_class

    train, test, schema, target, positive = cache.setdefault(("data", dataset), load(dataset, 0))
    kinds = kinds_of(schema)
    model = get_model_class(model_name)(**params)
    t0 = time.perf_counter()
    model.fit(train, epsilon=epsilon, delta=1e-5, schema=schema, seed=seed, progress=progress)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    synth = model.sample(seed=seed + 1000)  # the DP row count (about the training split's size, as both seeds)
    row = {"dataset": dataset, "model": model_name, "epsilon": epsilon, "seed": seed, "fit_s": fit_s,
           "sample_s": time.perf_counter() - t0, "ledger_eps": model.ledger_.epsilon()}
    row.update(similarity(train, synth, kinds))
    row["tvd2"] = tvd2(train, synth, kinds)
    if positive is not None:
        real = cache.setdefault(("real", dataset), classifier_scores(train, test, kinds, target, positive, 0))
        fake = classifier_scores(synth, test, kinds, target, positive, seed)
        for metric in ("acc", "f1", "auc", "apr"):
            row[f"d_{metric}"] = float(np.mean([real[c][metric] - fake[c][metric] for c in real]))
        for metric in ("acc", "f1", "auc"):
            row[f"lr_d_{metric}"] = abs(real["lr"][metric] - fake["lr"][metric])
    else:
        real = cache.setdefault(("ridge", dataset), ridge_scores(train, test, kinds, target))
        fake = ridge_scores(synth, test, kinds, target)
        for metric in ("mae", "evs", "r2"):
            row[f"ridge_d_{metric}"] = abs(real[metric] - fake[metric])
    return row


def run_privacy(dataset: str, model_name: str, seed: int, shadow_params: str, shadow_sets: int, cache: dict,
                progress: bool, *, targets: int = 2, repetitions: int = 1, sets_per_fit: int = 0,
                workers: int = 2) -> dict:
    """Seed 002 Table 5 at epsilon 1 through dpsynth.assess_risk (see the module docstring)."""
    from dpsynth.attacks import assess_risk
    from dpsynth.attacks.shadow import ModelFactory, ShadowConfig
    from dpsynth.models import get_model_class

    train, test, schema, target, _ = cache.setdefault(("data", dataset), load(dataset, 0))
    sensitive = next(c for c in train.columns if c.lower() == "age")
    cls = get_model_class(model_name)
    params = dict(cls.fast_params or {}) if shadow_params == "fast" else {}
    rng = np.random.default_rng(seed)
    # seed 002: 5,000 real rows, 4,900 to train the generator and 100 to test the attribute inference
    rows = train.iloc[rng.choice(len(train), size=min(4900, len(train)), replace=False)].reset_index(drop=True)
    control = test.iloc[rng.choice(len(test), size=min(100, len(test)), replace=False)].reset_index(drop=True)
    model = cls().fit(rows, epsilon=1.0, delta=1e-5, schema=schema, seed=seed, progress=progress)
    synth = model.sample(seed=seed + 1)  # the DP row count, never len(rows)
    shadow = ShadowConfig(reference_size=min(4000, len(rows) - 10), synthetic_size=400, n_train_sets=shadow_sets,
                          n_test_sets=max(2, shadow_sets // 4), n_targets=targets, n_repetitions=repetitions,
                          sets_per_fit=sets_per_fit or max(1, shadow_sets // 8))
    factory = ModelFactory(model_name, epsilon=1.0, delta=1e-5, schema=schema, **params)
    res = assess_risk(rows, synth, control=control, generator=factory, sensitive=sensitive,
                      attacks=["attribute_linear_regression", "shadow_groundhog"], shadow=shadow, seed=seed,
                      progress=progress, executor=workers)
    gain = {r.attack: r.metrics["privacy_gain"] for r in res.results if "privacy_gain" in r.metrics}
    none = type("NoEstimate", (), {"value": math.nan, "ci": None})()
    naive, corr, attr = (gain.get(k, none) for k in ("shadow_groundhog_naive", "shadow_groundhog_correlation",
                                                      "attribute_linear_regression"))
    return {"dataset": dataset, "model": model_name, "seed": seed,
            "naive": naive.value, "correlation": corr.value, "attribute": attr.value,
            "ci": "; ".join(f"{k} [{e.ci[0]:.3f}, {e.ci[1]:.3f}]" for k, e in
                            (("naive", naive), ("corr", corr), ("attr", attr)) if e.ci is not None),
            "shadow": f"{shadow_params} params, |R| {shadow.reference_size}, {shadow.n_train_sets} / "
                      f"{shadow.n_test_sets} sets of 400 rows, {shadow.sets_per_fit} a fit, "
                      f"{shadow.n_targets} targets x {shadow.n_repetitions} repetitions"}


# ---------------------------------------------------------------------------------------------- printing
def _mean(rows: list[dict], key: str) -> float:
    v = [r[key] for r in rows if key in r and r[key] is not None and not (isinstance(r[key], float)
                                                                         and math.isnan(r[key]))]
    return float(np.mean(v)) if v else math.nan


def _f(v: float, digits: int = 3) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def print_tables(rows: list[dict]) -> None:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["model"], r["epsilon"]), []).append(r)
    print("\nPer dataset (mean over seeds); d_* = real - synthetic, averaged over DT / RF / LR / MLP")
    head = ["dataset", "model", "eps", "seeds", "fit_s", "d_acc%", "d_f1", "d_auc", "d_apr", "avg_jsd", "avg_wd",
            "diff_corr", "tvd2", "ledger_eps"]
    print("  ".join(f"{h:>10}" for h in head))
    for (ds, m, eps), g in groups.items():
        vals = [ds, m, f"{eps:g}", str(len(g)), _f(_mean(g, "fit_s"), 0)] + [
            _f(_mean(g, k), 1 if k == "d_acc" else 3) for k in ("d_acc", "d_f1", "d_auc", "d_apr", "avg_jsd",
                                                                  "avg_wd", "diff_corr", "tvd2", "ledger_eps")]
        print("  ".join(f"{v:>10}" for v in vals))

    print("\nSeed 002 Tables 3-4 (ours: mean over Adult and Loan, the two of its three datasets we have; paper: "
          "Adult, Credit, Loan)")
    print(f"{'model':>12} {'eps':>5} | {'acc%':>6} {'AUC':>6} {'APR':>6} {'F1':>6} | {'JSD':>6} {'WD':>6} "
          f"{'Corr':>6} || paper: {'acc%':>6} {'AUC':>6} {'APR':>6} {'F1':>6} | {'JSD':>6} {'WD':>6} {'Corr':>6}")
    for m in sorted({r["model"] for r in rows}):
        for eps in sorted({r["epsilon"] for r in rows}):
            g = [r for r in rows if r["model"] == m and r["epsilon"] == eps and r["dataset"] in ("adult", "loan")]
            if not g:
                continue
            per_ds = [[r for r in g if r["dataset"] == d] for d in ("adult", "loan")]
            per_ds = [d for d in per_ds if d]
            mean = {k: float(np.nanmean([_mean(d, k) for d in per_ds])) for k in
                    ("d_acc", "d_auc", "d_apr", "d_f1", "avg_jsd", "avg_wd", "diff_corr")}
            name = GAN_PAPER_NAME.get((m, math.isinf(eps)), m)
            pu = SEED002_UTILITY.get((name, eps if not math.isinf(eps) else math.inf), (math.nan,) * 4)
            ps = SEED002_SIMILARITY.get((name, eps if not math.isinf(eps) else math.inf), (math.nan,) * 3)
            ours = [_f(mean["d_acc"], 1)] + [_f(mean[k]) for k in ("d_auc", "d_apr", "d_f1", "avg_jsd", "avg_wd",
                                                                    "diff_corr")]
            paper = [_f(pu[0], 1)] + [_f(v) for v in pu[1:]] + [_f(v) for v in ps]
            print(f"{m:>12} {eps:>5g} | " + " ".join(f"{v:>6}" for v in ours[:4]) + " | "
                  + " ".join(f"{v:>6}" for v in ours[4:]) + " || " + f"{name:>6} " + " ".join(
                      f"{v:>6}" for v in paper[:4]) + " | " + " ".join(f"{v:>6}" for v in paper[4:]))

    print("\nSeed 000 Tables 1-4 (epsilon 1; CTAB-GAN+ = our --epsilon inf)")
    for m in sorted({r["model"] for r in rows}):
        for eps in sorted({r["epsilon"] for r in rows}):
            name = GAN_PAPER_NAME.get((m, math.isinf(eps)), m)
            a = [r for r in rows if r["model"] == m and r["epsilon"] == eps and r["dataset"] == "adult"]
            k = [r for r in rows if r["model"] == m and r["epsilon"] == eps and r["dataset"] == "king"]
            if a:
                p1, p3 = SEED000_ADULT_LR.get(name), SEED000_SIMILARITY["adult"].get(name)
                print(f"  Adult {m} eps {eps:g}: LR |d acc%| {_f(_mean(a, 'lr_d_acc'), 2)} |d AUC| "
                      f"{_f(_mean(a, 'lr_d_auc'))} |d F1| {_f(_mean(a, 'lr_d_f1'))}; WD {_f(_mean(a, 'avg_wd'))} "
                      f"JSD {_f(_mean(a, 'avg_jsd'))} Diff Cor {_f(_mean(a, 'diff_corr'))}"
                      + (f"   (paper {name}: {p1[0]:.2f} {p1[1]:.3f} {p1[2]:.3f}; {p3[0]:.3f} {p3[1]:.3f} {p3[2]:.3f})"
                         if p1 and p3 else ""))
            if k:
                p2, p4 = SEED000_KING_RIDGE.get(name), SEED000_SIMILARITY["king"].get(name)
                print(f"  King  {m} eps {eps:g}: Ridge |d MAE| {_f(_mean(k, 'ridge_d_mae'), 4)} |d EVS| "
                      f"{_f(_mean(k, 'ridge_d_evs'))} |d R2| {_f(_mean(k, 'ridge_d_r2'))}; WD {_f(_mean(k, 'avg_wd'))} "
                      f"JSD {_f(_mean(k, 'avg_jsd'))} Diff Cor {_f(_mean(k, 'diff_corr'))}"
                      + (f"   (paper {name}: {p2[0]:.4f} {p2[1]:.3f} {p2[2]:.3f}; {p4[0]:.3f} {p4[1]:.3f} {p4[2]:.3f})"
                         if p2 and p4 else ""))


def print_privacy(rows: list[dict]) -> None:
    print("\nSeed 002 Table 5 (epsilon 1; privacy gain, 0.25 = the membership attacker learns nothing)")
    print(f"{'dataset':>8} {'model':>12} | {'naive':>6} {'corr':>6} {'attr':>7} || paper {'naive':>6} {'corr':>6} "
          f"{'attr':>7} | shadow design")
    for r in rows:
        paper = SEED002_PRIVACY.get(GAN_PAPER_NAME.get((r["model"], False), ""), (math.nan,) * 3)
        print(f"{r['dataset']:>8} {r['model']:>12} | {_f(r['naive']):>6} {_f(r['correlation']):>6} "
              f"{_f(r['attribute'], 4):>7} || {'':5} {_f(paper[0]):>6} {_f(paper[1]):>6} {_f(paper[2], 4):>7} | "
              f"{r['shadow']}")
        if r.get("ci"):
            print(f"{'':>22}   95% intervals: {r['ci']}")


def main(argv: list[str] | None = None) -> None:
    import torch
    from adult_quality import _parse_value  # this folder is on sys.path when run as a script

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--epsilon", default="1,100", help="comma-separated; 'inf' = the non-private reference")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--param", action="append", default=[], help="key=value hyper-parameter for every model")
    ap.add_argument("--privacy", action="store_true", help="also seed 002 Table 5 at epsilon 1")
    ap.add_argument("--privacy-only", action="store_true", help="only seed 002 Table 5")
    ap.add_argument("--shadow-params", choices=("fast", "default"), default="fast")
    ap.add_argument("--shadow-sets", type=int, default=80, help="shadow training sets (test sets: a quarter)")
    ap.add_argument("--shadow-targets", type=int, default=2, help="target rows (seed 002: 5)")
    ap.add_argument("--shadow-reps", type=int, default=1, help="repetitions per target (seed 002: 5)")
    ap.add_argument("--sets-per-fit", type=int, default=0,
                    help="synthetic sets drawn from each shadow fit (0: an eighth of --shadow-sets)")
    ap.add_argument("--workers", type=int, default=2, help="processes for the shadow fits")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--out", default="", help="write the per-seed rows to this CSV")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    params = dict(p.split("=", 1) for p in args.param)
    params = {k: _parse_value(v) for k, v in params.items()}
    models, datasets = args.models.split(","), args.datasets.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    cache: dict = {}
    rows: list[dict] = []
    if not args.privacy_only:
        from dpsynth.models import get_model_class

        for ds, m, eps, seed in itertools.product(datasets, models, args.epsilon.split(","), seeds):
            if not get_model_class(m).supports_dp and math.isfinite(float(eps)):
                continue  # a non-private reference (ctab-gan-plus): epsilon = inf only
            row = run_one(ds, m, float(eps), seed, params, cache, args.progress)
            rows.append(row)
            print(f"[{ds} {m} eps {eps} seed {seed}] fit {row['fit_s']:.0f} s, tvd2 {row['tvd2']:.3f}, "
                  f"diff_corr {row['diff_corr']:.3f}", flush=True)
        print_tables(rows)
    privacy = []
    if args.privacy or args.privacy_only:
        for ds, m, seed in itertools.product([d for d in datasets if d != "king"], models, seeds):
            privacy.append(run_privacy(ds, m, seed, args.shadow_params, args.shadow_sets, cache, args.progress,
                                       targets=args.shadow_targets, repetitions=args.shadow_reps,
                                       sets_per_fit=args.sets_per_fit, workers=args.workers))
            print(f"[privacy {ds} {m} seed {seed}] done", flush=True)
        print_privacy(privacy)
    if args.out:
        import os
        import tempfile

        folder = os.path.dirname(os.path.abspath(args.out))
        with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".tmp", delete=False) as fh:
            pd.DataFrame(rows + privacy).to_csv(fh, index=False)
        os.replace(fh.name, args.out)


if __name__ == "__main__":
    main()
