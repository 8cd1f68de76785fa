"""ML efficacy: train on synthetic, test on real (TSTR), beside the same model trained on real data.

Definitions (seed 002 §4.2.1, seed 000 §5.1):

* Features: every column but the target, one-hot encoded (categories of the real training data) and min-max
  scaled with the real bounds (seed 002: "we apply Min-Max normalisation as pre-processing step"), so every
  model, the scale-sensitive MLP and logistic regression / Ridge included, sees inputs in [0, 1] on the real
  data (synthetic values outside the real range stay outside).
* Models, scikit-learn defaults as in seed 002 (decision tree ``dt``, random forest ``rf``, logistic
  regression ``lr`` with ``max_iter=1000`` so it converges, multi-layer perceptron ``mlp`` with
  ``early_stopping=True``: it stops when 10% of its training rows, held out, stop improving; the default 200
  epochs dominated the run time; on a training table that cannot spare that split, a few rows or a class seen
  once, it trains without, noted) plus XGBoost ``xgb`` (DESIGN §6, 100 trees, hist, and 80% of the rows and
  columns per tree, so that its seed matters and the spread over seeds measures something). For a numeric
  target: the regressor of each family, with Ridge in place of logistic regression (seed 000 King / Ridge);
  the MLP and Ridge learn the target standardised with the mean / std of their own training target and
  predict on the original scale (an MLP fitted to a raw target of size 1e6 does not train: R2 -11).
* Classification scores on the real test set: accuracy, F1, ROC AUC and average precision. Binary targets use
  the class that is rarer in the real training data as the positive class; multi-class targets use macro F1,
  one-vs-rest macro AUC and macro average precision.
* Regression scores: mean absolute error ``mae``, explained variance ``evs`` and ``r2``.
* ``ml_efficacy.<score>.real`` / ``.synthetic`` are the scores of the model trained on real / synthetic rows;
  ``.diff`` is ``|real - synthetic|`` per seed (the seeds' tables), averaged; spread = std over seeds.
  Logistic regression / Ridge are deterministic and fitted once (``n_seeds`` = 1, noted).
* Undefined values get a reason; AUC / AP need both classes in the test labels and a model that ranks rows,
  R2 and explained variance need a non-constant test target. Training labels of one class give the constant
  predictor of that class: its accuracy and F1 are reported (noted), its AUC and AP are undefined.

Both training tables are put in the content-hash order of :func:`._prep.capped_order` before fitting, so a
reordered copy of the real rows trains the same models (identical data scores a difference of exactly 0).
Seeds: each seed fits every model once on each table (``random_state=seed``); logistic regression / Ridge
are deterministic and fitted once.

Without ``real_test`` the real training data is split 80/20: the real model trains on 80%, both are tested on
the 20% (which the generator may have seen: the note says so).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn import metrics as skm
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from dpsynth.evaluation._parallel import run_tasks
from dpsynth.evaluation._prep import labels_fast, numeric
from dpsynth.evaluation.result import Row, row, undefined

__all__ = ["MODELS", "CLASSIFICATION_SCORES", "REGRESSION_SCORES", "make_model", "classification_scores",
           "regression_scores", "run"]

MODELS = ("dt", "rf", "lr", "mlp", "xgb")
DETERMINISTIC = ("lr",)
CLASSIFICATION_SCORES = ("accuracy", "f1", "auc", "ap")
REGRESSION_SCORES = ("mae", "evs", "r2")


def make_model(name: str, task: str, seed: int, n_jobs: int):
    """A fresh, unfitted model of family ``name`` for ``task`` ("classification" or "regression")."""
    from xgboost import XGBClassifier, XGBRegressor

    cls = task == "classification"
    if name == "dt":
        return (DecisionTreeClassifier if cls else DecisionTreeRegressor)(random_state=seed)
    if name == "rf":
        return (RandomForestClassifier if cls else RandomForestRegressor)(random_state=seed, n_jobs=n_jobs)
    if name == "lr":
        return LogisticRegression(max_iter=1000) if cls else _scaled_target(Ridge())
    if name == "mlp":
        return MLPClassifier(random_state=seed, early_stopping=True) if cls else _scaled_target(
            MLPRegressor(random_state=seed, early_stopping=True))
    if name == "xgb":
        kw = dict(n_estimators=100, tree_method="hist", n_jobs=n_jobs, random_state=seed, verbosity=0,
                  subsample=0.8, colsample_bytree=0.8)
        return XGBClassifier(**kw) if cls else XGBRegressor(**kw)
    raise ValueError(f"Unknown model {name!r}; known: {MODELS}.")


def _scaled_target(model) -> TransformedTargetRegressor:
    """``model`` fitted to the standardised training target, predicting on the original scale."""
    return TransformedTargetRegressor(regressor=model, transformer=StandardScaler())


def classification_scores(y_true: np.ndarray, proba: np.ndarray, classes: np.ndarray,
                          positive: str | None) -> dict[str, tuple[float, str]]:
    """Scores from class probabilities ``proba`` (columns follow ``classes``); each is (value, reason)."""
    pred = classes[np.argmax(proba, axis=1)]
    out: dict[str, tuple[float, str]] = {"accuracy": (float(np.mean(pred == y_true)), "")}
    present = np.unique(y_true)
    if positive is not None:  # binary
        # F1 of the positive class as indicators: a predicted label the real data lacks (e.g. "__other__" of a
        # DP-discovered column, present only in synthetic rows) is simply not the positive class
        out["f1"] = (float(skm.f1_score(y_true == positive, pred == positive, zero_division=0)), "")
        if len(present) < 2:
            reason = f"test labels contain one class ({present[0]!r}): AUC and AP are undefined"
            out["auc"] = out["ap"] = (np.nan, reason)
        else:
            score = proba[:, list(classes).index(positive)] if positive in classes else np.zeros(len(y_true))
            out["auc"] = (float(skm.roc_auc_score(y_true == positive, score)), "")
            out["ap"] = (float(skm.average_precision_score(y_true == positive, score)), "")
        return out
    out["f1"] = (float(skm.f1_score(y_true, pred, average="macro", zero_division=0)), "")
    aucs, aps = [], []
    for k, c in enumerate(classes):
        truth = y_true == c
        if 0 < truth.sum() < len(truth):
            aucs.append(skm.roc_auc_score(truth, proba[:, k]))
            aps.append(skm.average_precision_score(truth, proba[:, k]))
    reason = "" if aucs else "test labels contain one class: AUC and AP are undefined"
    out["auc"] = (float(np.mean(aucs)) if aucs else np.nan, reason)
    out["ap"] = (float(np.mean(aps)) if aps else np.nan, reason)
    return out


def regression_scores(y_true: np.ndarray, pred: np.ndarray) -> dict[str, tuple[float, str]]:
    """MAE, explained variance and R2; the last two are undefined for a constant test target."""
    out = {"mae": (float(np.mean(np.abs(y_true - pred))), "")}
    if np.var(y_true) == 0:
        reason = "real test target is constant: R2 and explained variance are undefined (0/0)"
        out["evs"] = out["r2"] = (np.nan, reason)
    else:
        out["evs"] = (float(skm.explained_variance_score(y_true, pred)), "")
        out["r2"] = (float(skm.r2_score(y_true, pred)), "")
    return out


def _fit_scores(name, task, seed, n_jobs, X, y, X_test, y_test, classes_all, positive):
    """Scores ``{score: (value, note)}`` of one model trained on (X, y); a note with a NaN says why."""
    if len(y) == 0 or len(y_test) == 0:
        which = "training" if len(y) == 0 else "real test"
        reason = f"no {which} rows with a target value (all missing): nothing to fit or score"
        return {s: (np.nan, reason) for s in (REGRESSION_SCORES if task == "regression" else CLASSIFICATION_SCORES)}
    if task == "regression":
        model, note = _model_for(name, task, seed, n_jobs, y)
        return _noted(regression_scores(y_test, model.fit(X, y).predict(X_test)), note)
    present = np.unique(y)
    if len(present) < 2:
        return _constant_scores(present[0], y_test, classes_all, positive)
    codes = np.searchsorted(present, y)
    model, note = _model_for(name, task, seed, n_jobs, codes)
    proba_known = model.fit(X, codes).predict_proba(X_test)
    proba = np.zeros((len(X_test), len(classes_all)))
    proba[:, np.searchsorted(classes_all, present)] = proba_known
    return _noted(classification_scores(y_test, proba, classes_all, positive), note)


def _model_for(name, task, seed, n_jobs, y) -> tuple[object, str]:
    """``make_model``, with the MLP's early stopping off when ``y`` is too small to hold out its 10% (a DP row
    count can make a synthetic table of a few rows): then the note says so."""
    model = make_model(name, task, seed, n_jobs)
    if name != "mlp" or _can_hold_out(y, task):
        return model, ""
    model.set_params(**{"regressor__early_stopping" if task == "regression" else "early_stopping": False})
    return model, f"MLP without early stopping: {len(y)} training rows cannot spare a 10% validation split"


def _can_hold_out(y: np.ndarray, task: str) -> bool:
    """Whether scikit-learn's early stopping can split off ``ceil(0.1 n)`` validation rows, two or more (stratified
    for a binary target: every class twice or more, each side at least one row of every class; asked of every
    classifier, which is stricter than scikit-learn's unstratified split for more classes)."""
    n_val = math.ceil(0.1 * len(y))
    if task == "regression":
        return n_val >= 2 and len(y) - n_val >= 2
    counts = np.unique(y, return_counts=True)[1]
    return n_val >= 2 and counts.min() >= 2 and min(n_val, len(y) - n_val) >= len(counts)


def _noted(scores: dict[str, tuple[float, str]], note: str) -> dict[str, tuple[float, str]]:
    return {k: (v, "; ".join(filter(None, [why, note]))) for k, (v, why) in scores.items()} if note else scores


def _constant_scores(label, y_test, classes_all, positive) -> dict[str, tuple[float, str]]:
    """Training labels of one class: the constant predictor of that class, whose accuracy and F1 are well
    defined; AUC and AP rank rows by score, and a constant score ranks nothing."""
    proba = np.zeros((len(y_test), len(classes_all)))
    proba[:, list(classes_all).index(label)] = 1.0
    out = classification_scores(y_test, proba, classes_all, positive)
    note = f"training labels contain one class ({label!r}): constant predictor"
    undefined_note = note + ", no ranking: AUC and AP are undefined"
    out["accuracy"] = (out["accuracy"][0], note)
    out["f1"] = (out["f1"][0], note)
    out["auc"] = out["ap"] = (np.nan, undefined_note)
    return out


def _training_data(ctx, target: str, task: str) -> tuple[dict, tuple, str]:
    """({"real": (X, y), "synthetic": (X, y)}, (X_test, y_test, classes_all, positive), note)."""
    train, test, note = ctx.real, ctx.real_test, ""
    if test is None:
        train, test = ctx.holdout_split()
        note = "no real_test: tested on a 20% hold-out of real_train (the generator may have seen it)"
    # training rows in content-hash order: a reordered copy of the real rows trains the very same models
    train, synthetic = ctx.capped(train, None, 61), ctx.capped(ctx.synthetic, None, 61)
    enc = ctx.encoder()
    feats = enc.columns_except(target)
    frames = (train, synthetic, test)
    X_real, X_syn, X_test = (enc.transform(f, columns=feats) for f in frames)
    if task == "classification":
        y_real, y_syn, y_test = (labels_fast(f[target]).astype(str).astype(object) for f in frames)
        classes_all = np.unique(np.concatenate([y_real, y_syn, y_test]).astype(str)).astype(object)
        counts = {c: np.sum(y_real == c) for c in np.unique(y_real)}
        positive = min(counts, key=counts.get) if len(counts) == 2 else None
    else:  # rows without a target value cannot be scored or learnt from
        keep = [np.isfinite(numeric(f[target])) for f in frames]
        X_real, X_syn, X_test = X_real[keep[0]], X_syn[keep[1]], X_test[keep[2]]
        y_real, y_syn, y_test = (numeric(f[target])[k] for f, k in zip(frames, keep))
        classes_all, positive = None, None
    return {"real": (X_real, y_real), "synthetic": (X_syn, y_syn)}, (X_test, y_test, classes_all, positive), note


def run(ctx) -> tuple[list[Row], dict]:
    """Rows ``ml_efficacy.<score>.{real,synthetic,diff}`` per model; figure ``ml_efficacy``."""
    target = ctx.target
    if target is None:
        return [undefined("ml_efficacy", "(all)", "no target column: pass target= or a schema with a target")], {}
    task = "classification" if ctx.kinds[target] == "categorical" else "regression"
    scores = CLASSIFICATION_SCORES if task == "classification" else REGRESSION_SCORES
    data, test, note = _training_data(ctx, target, task)
    plan = [(name, seed, src) for name in ctx.models
            for seed in (ctx.seeds[:1] if name in DETERMINISTIC else ctx.seeds) for src in data]
    results = run_tasks(_task, [(name, task, seed, *data[src], *test) for name, seed, src in plan], ctx.executor)
    by_key = dict(zip(plan, results))
    rows: list[Row] = []
    fig: dict[str, dict[str, list]] = {}
    for name in ctx.models:
        seeds = ctx.seeds[:1] if name in DETERMINISTIC else ctx.seeds
        extra = "deterministic model: one fit" if name in DETERMINISTIC and len(ctx.seeds) > 1 else ""
        for s in scores:
            per = {src: [by_key[(name, seed, src)][s] for seed in seeds] for src in data}
            per["diff"] = [(abs(a[0] - b[0]), "") for a, b in zip(per["real"], per["synthetic"])]
            for src in ("real", "synthetic", "diff"):
                sources = ("real", "synthetic") if src == "diff" else (src,)
                why = list(dict.fromkeys(f"{o}-trained: {r}" for o in sources for _, r in per[o] if r))
                rows.append(row(f"ml_efficacy.{s}.{src}", name, [v for v, _ in per[src]],
                                note="; ".join(filter(None, [note, extra, *why]))))
            values = [[v for v, _ in per[src]] for src in data]
            fig.setdefault(s, {})[name] = [_stat(v, np.mean) for v in values] + [_stat(v, _std) for v in values]
    return rows, {"ml_efficacy": {"task": task, "target": target, "scores": fig,
                                  "layout": "mean real, mean synthetic, std real, std synthetic (over seeds)"}}


def _task(name, task, seed, X, y, X_test, y_test, classes_all, positive):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return _fit_scores(name, task, seed, 1, X, y, X_test, y_test, classes_all, positive)


def _std(values: np.ndarray) -> float:
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def _stat(values: list[float], fn) -> float | None:
    """``fn`` of the finite values (None when there is none), for the figure."""
    finite = np.array([v for v in values if np.isfinite(v)], dtype=float)
    return float(fn(finite)) if finite.size else None
