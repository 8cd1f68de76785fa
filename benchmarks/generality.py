"""Generality benchmark (issue 16): every DP model on real tables it was never tuned for, at one epsilon.

For each table of the dataset registry (Adult aside: the seed datasets King County, Loan, California housing,
Cardio and Wine, and the tables scikit-learn, statsmodels and vega_datasets ship), split 80/20 (seeded), then per
model and per schema mode:

- ``none``: the training split written to CSV and fitted as ``dpsynth fit FILE.csv`` does (every cell read as
  text, kinds, bounds and categories discovered with DP: ``dtypes="private"``);
- ``public``: the schema :func:`~dpsynth.data.inference.infer_schema` proposes, taken as public (the best case: a
  data owner who knows each column's exact domain), with the dtypes pandas infers;

and reports: columns kept / all, fit time, the DP row count sampled, XGBoost AUC (classification; macro
one-vs-rest for several classes) or R2 (regression) trained on the synthetic rows and tested on the real hold-out,
and the mean total variation distance of all 1-way and of (up to 300 random) 2-way marginals between the
synthetic rows and the real training rows, on the columns the model kept (numbers cut at the real deciles, missing
values a bin of their own, unseen synthetic categories one bin). The ``real`` row trains XGBoost on the real
training split; the ``marginals`` model (independent DP histograms) is the baseline every DP model must beat on
both AUC/R2 and 2-way TVD. A fit that is refused (for instance a table too small for DP discovery) is listed with
its one-line reason.

Examples::

    pip install -e ".[eval,bench]"
    python benchmarks/generality.py                                   # every table, every model (long)
    python benchmarks/generality.py --tables loan,wine --models marginals,dp-tldm --schema none

Measured on 2026-11-25 (one seed, 2 cores, about an hour for the whole grid): the table is in the README
("Generality"). In short, every table fits without a schema or is refused up front with the pre-flight estimate;
the independent-marginals floor keeps the lowest 2-way TVD on all 13 tables; the deep models win on AUC/R2 where
the table has signal and come within 0.004-0.010 of the floor's 2-way TVD at 16,000-56,000 rows.

File datasets are read from ``DPSYNTH_DATA`` (default: ``../shared/datasets`` beside the repository, where the
project keeps them). Results are printed as a table and, with ``--out``, written as CSV.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from dpsynth.evaluation.unsupervised import decile_bins

TABLES = ("loan", "king", "housing", "cardio", "wine", "breast_cancer", "digits", "fertility", "fair", "randhie",
          "cars", "seattle_weather", "airports")
MODELS = ("marginals", "aim", "mst", "dp-tldm", "dp-auto-gan")
MAX_PAIRS = 300


# ---------------------------------------------------------------------------------------------- data
def load_split(name: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    from dpsynth import datasets

    frame = datasets.load(name).train
    frame = frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    cut = int(round(0.8 * len(frame)))
    return frame.iloc[:cut].reset_index(drop=True), frame.iloc[cut:].reset_index(drop=True)


def as_csv_reads(frame: pd.DataFrame, folder: Path, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(text frame, pandas-typed frame) of ``frame`` written to CSV and read back, as the CLI reads a file."""
    from dpsynth._io import read_table

    path = folder / f"{name}.csv"
    frame.to_csv(path, index=False)
    return read_table(path, as_text=True), read_table(path)


# ---------------------------------------------------------------------------------------------- metrics
def _codes(real: pd.Series, other: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Bin codes of one column in both tables: real deciles for numbers, categories as text otherwise; missing
    values -1; synthetic categories the real column lacks share one code."""
    if pd.api.types.is_numeric_dtype(real.dtype):
        return decile_bins(real, other, "numeric")
    r = [None if pd.isna(v) else str(v) for v in real]
    s = [None if pd.isna(v) else str(v) for v in other]
    cats = {c: i for i, c in enumerate(dict.fromkeys(v for v in r if v is not None))}
    unseen = len(cats)
    return (np.array([-1 if v is None else cats[v] for v in r], dtype=np.int64),
            np.array([-1 if v is None else cats.get(v, unseen) for v in s], dtype=np.int64))


def _tvd(a: np.ndarray, b: np.ndarray) -> float:
    pa = pd.Series(a).value_counts(normalize=True)
    pb = pd.Series(b).value_counts(normalize=True)
    joined = pd.concat([pa, pb], axis=1).fillna(0.0)
    return float(0.5 * np.abs(joined.iloc[:, 0] - joined.iloc[:, 1]).sum())


def marginal_tvds(real: pd.DataFrame, synthetic: pd.DataFrame, seed: int) -> tuple[float, float]:
    cols = [c for c in real.columns if c in synthetic.columns]
    codes = {c: _codes(real[c], synthetic[c]) for c in cols}
    tvd1 = float(np.mean([_tvd(*codes[c]) for c in cols])) if cols else math.nan
    pairs = list(itertools.combinations(cols, 2))
    if len(pairs) > MAX_PAIRS:
        pick = np.random.default_rng(seed).choice(len(pairs), MAX_PAIRS, replace=False)
        pairs = [pairs[i] for i in sorted(pick)]
    big = 1 << 20
    tvd2 = [_tvd(codes[a][0] * big + codes[b][0], codes[a][1] * big + codes[b][1]) for a, b in pairs]
    return tvd1, (float(np.mean(tvd2)) if tvd2 else math.nan)


def _design(train: pd.DataFrame, test: pd.DataFrame, features: list[str], numeric: set[str]):
    both = pd.concat([train[features], test[features]], keys=["a", "b"])
    parts = []
    for c in features:
        if c in numeric:
            parts.append(pd.to_numeric(both[c], errors="coerce").astype(float).rename(c).to_frame())
        else:
            text = both[c].astype("object").where(both[c].notna(), "<missing>").map(str)
            parts.append(pd.get_dummies(text, prefix=c, dtype=float))
    x = pd.concat(parts, axis=1).to_numpy(dtype=np.float32)
    return x[: len(train)], x[len(train):]


def ml_score(train: pd.DataFrame, test: pd.DataFrame, target: str | None, task: str, real: pd.DataFrame,
             seed: int) -> tuple[float, str]:
    """(AUC or R2, note) of XGBoost trained on ``train`` and tested on the real ``test`` rows."""
    from sklearn.metrics import r2_score, roc_auc_score
    from xgboost import XGBClassifier, XGBRegressor

    if target is None or task not in ("classification", "regression"):
        return math.nan, "no target"
    if target not in train.columns:
        return math.nan, "target excluded"
    numeric = {c for c in real.columns if pd.api.types.is_numeric_dtype(real[c].dtype)}
    features = [c for c in train.columns if c != target and c in test.columns]
    test = test[test[target].notna()]
    train = train[train[target].notna()]
    if not features or len(train) < 2:
        return math.nan, "no feature or no labelled row"
    x_tr, x_te = _design(train, test, features, numeric)
    if task == "regression":
        y_tr = pd.to_numeric(train[target], errors="coerce").astype(float).to_numpy()
        keep = np.isfinite(y_tr)
        model = XGBRegressor(n_estimators=200, max_depth=6, learning_rate=0.1, n_jobs=2, random_state=seed)
        model.fit(x_tr[keep], y_tr[keep])
        return float(r2_score(test[target].astype(float).to_numpy(), model.predict(x_te))), ""
    y_tr_text = train[target].map(str).to_numpy()
    y_te_text = test[target].map(str).to_numpy()
    classes = np.unique(y_te_text)
    seen = np.unique(y_tr_text)
    if len(seen) < 2:
        return 0.5, "one class in the training rows"
    index = {c: i for i, c in enumerate(seen)}
    model = XGBClassifier(n_estimators=200, max_depth=6, learning_rate=0.1, n_jobs=2, random_state=seed)
    model.fit(x_tr, np.array([index[c] for c in y_tr_text]))
    proba = model.predict_proba(x_te)
    full = np.zeros((len(x_te), len(classes)))
    for j, c in enumerate(classes):
        if c in index:
            full[:, j] = proba[:, index[c]]
    if len(classes) == 2:
        return float(roc_auc_score(y_te_text == classes[1], full[:, 1])), ""
    full = full / np.clip(full.sum(axis=1, keepdims=True), 1e-12, None)
    return float(roc_auc_score(y_te_text, full, multi_class="ovr", average="macro", labels=classes)), "macro ovr"


# ---------------------------------------------------------------------------------------------- runs
def run_one(name: str, model_name: str, mode: str, epsilon: float, seed: int, folder: Path,
            params: dict | None = None, metadata_share: float | None = None) -> dict:
    from dpsynth.data.inference import infer_schema
    from dpsynth.datasets import REGISTRY
    from dpsynth.errors import DPSynthError
    from dpsynth.models import get_model_class

    info = REGISTRY[name]
    train, test = load_split(name, seed)
    text_train, typed_train = as_csv_reads(train, folder, f"{name}-train")
    _, typed_test = as_csv_reads(test, folder, f"{name}-test")
    out = {"table": name, "rows": len(train), "cols": train.shape[1], "model": model_name, "schema": mode}
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls = get_model_class(model_name)
            known = set(cls._param_names())
            model = cls(**{k: v for k, v in (params or {}).items() if k in known})
            if mode == "none":
                model.fit(text_train, epsilon=epsilon, delta=1e-5, seed=seed, dtypes="private",
                          metadata_share=metadata_share)
            else:
                schema = infer_schema(typed_train, target=info.target, warn=False).reviewed()
                model.fit(typed_train, epsilon=epsilon, delta=1e-5, schema=schema, seed=seed,
                          metadata_share=metadata_share)
            fit_s = time.perf_counter() - start
            synthetic = model.sample(seed=seed)
    except DPSynthError as exc:
        return {**out, "kept": 0, "fit_s": time.perf_counter() - start, "note": str(exc).splitlines()[0][:160]}
    score, note = ml_score(synthetic, typed_test, info.target, info.task, typed_train, seed)
    tvd1, tvd2 = marginal_tvds(typed_train, synthetic, seed)
    return {**out, "kept": len(model.schema_.names), "fit_s": fit_s, "n_synth": len(synthetic),
            "const": collapsed_columns(typed_train, synthetic), "score": score, "tvd1": tvd1, "tvd2": tvd2,
            "eps": model.ledger_.epsilon(), "note": note}


def collapsed_columns(real: pd.DataFrame, synthetic: pd.DataFrame) -> int:
    """Columns that hold one value in the synthetic rows but several in the real ones (a collapsed model)."""
    return sum(1 for c in synthetic.columns if c in real.columns
               and synthetic[c].nunique(dropna=False) <= 1 < real[c].nunique(dropna=False))


def run_real(name: str, seed: int, folder: Path) -> dict:
    from dpsynth.datasets import REGISTRY

    info = REGISTRY[name]
    train, test = load_split(name, seed)
    _, typed_train = as_csv_reads(train, folder, f"{name}-train")
    _, typed_test = as_csv_reads(test, folder, f"{name}-test")
    score, note = ml_score(typed_train, typed_test, info.target, info.task, typed_train, seed)
    return {"table": name, "rows": len(train), "cols": train.shape[1], "model": "real", "schema": "-",
            "kept": train.shape[1], "score": score, "tvd1": 0.0, "tvd2": 0.0, "note": note}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", default=",".join(TABLES))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--schema", default="none,public", help="none, public or both (comma-separated)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--metadata-share", type=float, default=None,
                        help="share of epsilon for the metadata phase (DP discovery, DP histograms); default: each "
                        "model's own (Synthesizer.default_metadata_share)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a model hyper-parameter (JSON value), given to every model that has it; repeatable")
    parser.add_argument("--out", help="also write the results as CSV")
    args = parser.parse_args()
    params = {}
    for item in args.param:
        key, _, value = item.partition("=")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    default_data = Path(__file__).resolve().parents[2] / "shared" / "datasets"
    if "DPSYNTH_DATA" not in os.environ and default_data.is_dir():
        os.environ["DPSYNTH_DATA"] = str(default_data)
    import torch

    torch.set_num_threads(args.threads)
    rows = []
    header = (f"{'table':<16}{'rows':>7}{'cols':>5} {'model':<12}{'schema':<7}{'kept':>5}{'const':>6}{'fit_s':>8}"
              f"{'score':>8}"
              f"{'tvd1':>8}{'tvd2':>8}  note")
    print(header, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in args.tables.split(","):
            jobs = [("real", "-")] + [(m, s) for m in args.models.split(",") for s in args.schema.split(",")]
            for model_name, mode in jobs:
                r = (run_real(name, args.seed, folder) if model_name == "real"
                     else run_one(name, model_name, mode, args.epsilon, args.seed, folder, params,
                                     args.metadata_share))
                rows.append(r)
                if args.out:  # after every run: a crash or a kill loses nothing measured so far
                    pd.DataFrame(rows).to_csv(args.out, index=False)
                print(f"{r['table']:<16}{r['rows']:>7}{r['cols']:>5} {r['model']:<12}{r['schema']:<7}{r['kept']:>5}"
                      f"{r.get('const', 0):>6}"
                      f"{r.get('fit_s', math.nan):>8.1f}{r.get('score', math.nan):>8.3f}{r.get('tvd1', math.nan):>8.3f}"
                      f"{r.get('tvd2', math.nan):>8.3f}  {r.get('note', '')}", flush=True)


if __name__ == "__main__":
    main()
