"""Dimension-wise prediction (seed 003 §4.1-4.2 and App. C.2.1 "Dimension-Wise Prediction").

For every column ``k``: a model predicts ``k`` from all other columns; one copy is trained on real rows and one
on synthetic rows, and both are tested on real rows the generator did not see (``real_test``; without it a
hold-out of ``real_train``, noted). Train on synthetic, test on original: points near ``y = x`` are good.

* categorical columns: random forest (50 trees; the paper uses a random forest "as in [21]"), scored with
  micro-averaged F1 (``dimwise.prediction.f1``, equal to accuracy) and, for two-category columns, AUROC
  (``dimwise.prediction.auc``);
* continuous columns: Lasso regression (``alpha=0.01`` on the target standardised with real mean / std;
  inputs one-hot / min-max encoded as everywhere), scored with R2 (``dimwise.prediction.r2``).

Rows ``dimwise.prediction.<score>.real`` / ``.synthetic`` per column. Undefined, with the reason: a column
whose training rows hold one category ("no diversity", the paper's brown points), AUROC when the test rows
hold one class, R2 when the test target is constant. Training and test rows are capped at
``Limits.per_column_rows`` (seeded subsample).
"""

from __future__ import annotations

import numpy as np
from sklearn import metrics as skm
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import Lasso

from dpsynth.evaluation._parallel import run_tasks
from dpsynth.evaluation._prep import labels_fast, numeric
from dpsynth.evaluation.result import Row, row, undefined

__all__ = ["run", "predict_column"]


def predict_column(kind: str, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, y_test: np.ndarray, *,
                   seed: int, n_jobs: int, y_center: float = 0.0, y_scale: float = 1.0) -> dict[str, tuple[float, str]]:
    """Scores ``{name: (value, reason)}`` of one column model trained on (X, y) and tested on the test rows."""
    if kind == "categorical":
        classes = np.unique(y)
        if len(classes) < 2:
            reason = f"training rows hold one category ({classes[0]!r}): no diversity, no classifier"
            return {"f1": (np.nan, reason), "auc": (np.nan, reason)}
        model = RandomForestClassifier(n_estimators=50, random_state=seed, n_jobs=n_jobs).fit(X, y)
        out = {"f1": (float(skm.f1_score(y_test, model.predict(X_test), average="micro")), "")}
        test_classes = np.unique(y_test)
        if len(test_classes) == 2:
            pos = test_classes[1]
            proba = model.predict_proba(X_test)
            score = proba[:, list(model.classes_).index(pos)] if pos in model.classes_ else np.zeros(len(y_test))
            out["auc"] = (float(skm.roc_auc_score(y_test == pos, score)), "")
        elif len(test_classes) < 2:
            out["auc"] = (np.nan, "test rows hold one category: AUROC is undefined")
        return out
    if np.var(y_test) == 0:
        return {"r2": (np.nan, "test target is constant: R2 is undefined (0/0)")}
    model = Lasso(alpha=0.01).fit(X, (y - y_center) / y_scale)
    return {"r2": (float(skm.r2_score(y_test, model.predict(X_test) * y_scale + y_center)), "")}


def run(ctx) -> tuple[list[Row], dict]:
    enc = ctx.encoder()
    cap = ctx.limits.per_column_rows
    test, note = ctx.real_test, ""
    train = ctx.real
    if test is None:
        train, test = ctx.holdout_split()
        note = "no real_test: tested on a 20% hold-out of real_train (the generator may have seen it)"
    train, synth, test = ctx.capped(train, cap, 31), ctx.capped(ctx.synthetic, cap, 31), ctx.capped(test, cap, 33)
    full = {name: enc.transform(f) for name, f in (("real", train), ("synthetic", synth), ("test", test))}
    rows: list[Row] = []
    points: list[list] = []
    plan, tasks = [], []
    for col, kind in ctx.kinds.items():
        block = enc.blocks[col]
        keep = np.r_[0:block.start, block.stop:enc.width]
        X = {k: v[:, keep] for k, v in full.items()}
        if kind == "categorical":
            y = {k: labels_fast(f[col]).astype(str)
                 for k, f in (("real", train), ("synthetic", synth), ("test", test))}
            center, scale = 0.0, 1.0
        else:
            y = {k: numeric(f[col]) for k, f in (("real", train), ("synthetic", synth), ("test", test))}
            for k in y:
                ok = np.isfinite(y[k])
                X[k], y[k] = X[k][ok], y[k][ok]
            center = float(np.mean(y["real"])) if y["real"].size else 0.0
            scale = float(np.std(y["real"])) or 1.0
        for src in ("real", "synthetic"):
            plan.append((col, src))
            if len(y[src]) == 0 or len(y["test"]) == 0:
                tasks.append(None)
                continue
            tasks.append((kind, X[src], y[src], X["test"], y["test"], ctx.seeds[0], center, scale))
    results = run_tasks(_predict, [t for t in tasks if t is not None], ctx.executor)
    it = iter(results)
    out = {key: (next(it) if t is not None else {"r2": (np.nan, "no non-missing values to train or test on")})
           for key, t in zip(plan, tasks)}
    for col, kind in ctx.kinds.items():
        res = {src: out[(col, src)] for src in ("real", "synthetic")}
        for score in sorted(res["real"].keys() | res["synthetic"].keys()):
            vals = {}
            for src in ("real", "synthetic"):
                value, reason = res[src].get(score, (np.nan, f"{src}-trained model has no {score}"))
                vals[src] = value
                rows.append(row(f"dimwise.prediction.{score}.{src}", col, value, note=reason or note)
                            if np.isfinite(value) else undefined(f"dimwise.prediction.{score}.{src}", col, reason))
            points.append([col, kind, score, _num(vals["real"]), _num(vals["synthetic"])])
    return rows, {"dimwise_prediction": points}


def _predict(kind, X, y, X_test, y_test, seed, center, scale):
    return predict_column(kind, X, y, X_test, y_test, seed=seed, n_jobs=1, y_center=center, y_scale=scale)


def _num(v: float) -> float | None:
    return float(v) if np.isfinite(v) else None
