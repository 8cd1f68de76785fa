"""Attribute inference: seed 002's linear-regression attack with its privacy gain, and the nearest-neighbour
attack (anonymeter's, re-exported from :mod:`dpsynth.attacks.anonymeter_wrap`).

Linear-regression attack (seed 002 §4.2.2 after Stadler et al. 2022): the attacker knows every column but a
numeric ``sensitive`` one, fits a least-squares model y ~ N(x'beta, sigma^2) on the synthetic data (G_Train),
and the same model on the real training data (R_Train) stands for the attacker with raw data. For each real
test record P(correct) is the model's posterior probability of the record's true value - the mass of
N(x'beta, sigma^2) on the cell of width ``resolution`` around it (resolution 1 on an integer column such as
Adult's age: to first order the Gaussian density Stadler et al. report). Then

    PG = (P_real - P_fake) / 2,  P_real / P_fake the average over test records with the R_Train / G_Train model

(higher = more private; 0 = the synthetic data lets the attacker infer as well as the raw data). Test records
are the control set (seed 002's R_Test) when given, else training rows (stated in the result's notes).
P_real, P_fake and PG come with percentile-bootstrap intervals over the test records (2,000 resamples of the
per-record probabilities, paired so PG's interval keeps their correlation; seeded by ``seed``, 0 when None):
they state how well the test records pin down the averages for the two fitted models; the randomness of the
fits themselves (of the synthetic data) is not in them - repeat the release for that.

The headline risk compares the synthetic-data attacker's success on training rows and on control rows
(seed 004 eq. 1; success = guess within 5% relative error, anonymeter's criterion); without control rows it
is measured over the naive attacker who always guesses the synthetic mean.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.stats import norm

from dpsynth.attacks._encoding import check_same_columns
from dpsynth.attacks.anonymeter_wrap import InferenceRisk
from dpsynth.attacks.base import Attack, Estimate, Result
from dpsynth.attacks.stats import privacy_gain, relative_risk_interval, wilson_interval
from dpsynth.errors import InputError

__all__ = ["GaussianLinearModel", "LinearRegressionAttributeAttack", "NearestNeighbourAttributeAttack",
           "bootstrap_gain"]

NearestNeighbourAttributeAttack = InferenceRisk


class GaussianLinearModel:
    """Least squares y ~ N(X beta, sigma^2) with a design fixed by the frame it is fitted on."""

    def __init__(self, frame: pd.DataFrame, sensitive: str) -> None:
        known = frame.drop(columns=[sensitive])
        self.numeric = [c for c in known.columns if pd.api.types.is_numeric_dtype(known[c])
                        and not pd.api.types.is_bool_dtype(known[c])]
        self.medians = {c: float(pd.to_numeric(known[c], errors="coerce").median()) for c in self.numeric}
        self.levels = {c: list(pd.unique(known[c].dropna().astype(str)))[:100] for c in known.columns
                       if c not in self.numeric}
        self.sensitive = sensitive
        x = self.design(frame)
        y = pd.to_numeric(frame[sensitive], errors="coerce").to_numpy(float)
        ok = ~np.isnan(y)
        if ok.sum() < 2:
            raise InputError(f"Column '{sensitive}' has fewer than 2 numeric values to regress on.")
        self.beta, *_ = np.linalg.lstsq(x[ok], y[ok], rcond=None)
        resid = y[ok] - x[ok] @ self.beta
        dof = max(int(ok.sum()) - np.linalg.matrix_rank(x[ok]), 1)
        self.sigma = max(float(np.sqrt((resid @ resid) / dof)), 1e-9)

    def design(self, frame: pd.DataFrame) -> np.ndarray:
        cols = [np.ones(len(frame))]
        for c in self.numeric:
            v = pd.to_numeric(frame[c], errors="coerce").to_numpy(float)
            cols.append(np.where(np.isnan(v), self.medians[c], v))
        for c, levels in self.levels.items():
            s = frame[c].astype(str)
            cols.extend((s == lv).to_numpy(float) for lv in levels[1:])
        return np.column_stack(cols)

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        return self.design(frame) @ self.beta

    def p_correct(self, frame: pd.DataFrame, resolution: float) -> np.ndarray:
        mu = self.predict(frame)
        y = pd.to_numeric(frame[self.sensitive], errors="coerce").to_numpy(float)
        h = resolution / 2.0
        return norm.cdf((y + h - mu) / self.sigma) - norm.cdf((y - h - mu) / self.sigma)


def bootstrap_gain(p_real: np.ndarray, p_fake: np.ndarray, *, confidence: float, seed: int,
                   n_boot: int = 2000) -> dict[str, tuple[float, float]]:
    """Percentile-bootstrap intervals of mean(p_real), mean(p_fake) and PG over paired per-record probabilities."""
    p_real, p_fake = np.asarray(p_real, dtype=float), np.asarray(p_fake, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(p_real), size=(n_boot, len(p_real)))
    real, fake = p_real[idx].mean(axis=1), p_fake[idx].mean(axis=1)
    q = [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0]
    def ci(v):
        return (float(np.quantile(v, q[0])), float(np.quantile(v, q[1])))
    return {"p_real": ci(real), "p_fake": ci(fake), "privacy_gain": ci((real - fake) / 2.0)}


def _hits(guess: np.ndarray, truth: np.ndarray, tol: float = 0.05) -> int:
    return int((np.abs(guess - truth) <= tol * np.abs(truth)).sum())


class LinearRegressionAttributeAttack(Attack):
    """Seed 002's attribute-inference attack; see the module docstring."""

    name: ClassVar[str] = "attribute_linear_regression"
    kind: ClassVar[str] = "attribute"

    def __init__(self, train: pd.DataFrame, synthetic: pd.DataFrame, *, sensitive: str,
                 control: pd.DataFrame | None = None, n_targets: int = 1000, resolution: float | None = None,
                 confidence: float = 0.95, seed: int | None = None) -> None:
        check_same_columns(synthetic, train, *(() if control is None else (control,)), names=("train", "control"))
        if sensitive not in synthetic.columns:
            raise InputError(f"sensitive must be a column of the data. Found {sensitive!r}.")
        if not pd.api.types.is_numeric_dtype(train[sensitive]) or pd.api.types.is_bool_dtype(train[sensitive]):
            raise InputError(f"The linear-regression attack needs a numeric sensitive column; '{sensitive}' is "
                             f"{train[sensitive].dtype}. Use the nearest-neighbour attack for categories.")
        if resolution is not None and not resolution > 0:
            raise InputError(f"resolution must be > 0. Found {resolution}.")
        cols = list(synthetic.columns)
        self.train, self.synthetic = train[cols].reset_index(drop=True), synthetic[cols].reset_index(drop=True)
        self.control = None if control is None else control[cols].reset_index(drop=True)
        self.sensitive, self.n_targets, self.resolution = sensitive, n_targets, resolution
        self.confidence, self.seed = confidence, seed

    def _sample(self, df: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        df = df[pd.to_numeric(df[self.sensitive], errors="coerce").notna()]
        n = min(self.n_targets, len(df))
        return df.iloc[rng.choice(len(df), size=n, replace=False)].reset_index(drop=True)

    def evaluate(self) -> Result:
        rng = np.random.default_rng(self.seed)
        y_train = pd.to_numeric(self.train[self.sensitive], errors="coerce").dropna()
        res = self.resolution
        if res is None:
            res = 1.0 if np.allclose(y_train, np.round(y_train)) else float(y_train.std() / 100.0 or 1.0)
        real_model = GaussianLinearModel(self.train, self.sensitive)
        syn_model = GaussianLinearModel(self.synthetic, self.sensitive)
        members = self._sample(self.train, rng)
        tests = members if self.control is None else self._sample(self.control, rng)
        p_real_i, p_fake_i = real_model.p_correct(tests, res), syn_model.p_correct(tests, res)
        p_real, p_fake = float(p_real_i.mean()), float(p_fake_i.mean())
        pg = privacy_gain(p_fake, p_real=p_real)
        cis = bootstrap_gain(p_real_i, p_fake_i, confidence=self.confidence, seed=0 if self.seed is None else self.seed)

        truth_m = pd.to_numeric(members[self.sensitive]).to_numpy(float)
        k_train, n_train = _hits(syn_model.predict(members), truth_m), len(members)
        if self.control is not None:
            truth_c = pd.to_numeric(tests[self.sensitive]).to_numpy(float)
            k_ctrl, n_ctrl = _hits(syn_model.predict(tests), truth_c), len(tests)
            baseline_name = "success rate on control rows (seed 004 eq. 1)"
        else:
            k_ctrl = _hits(np.full(n_train, float(pd.to_numeric(self.synthetic[self.sensitive]).mean())), truth_m)
            n_ctrl = n_train
            baseline_name = "success rate of guessing the synthetic mean"
        rr, rr_ci = relative_risk_interval(k_train, n_train, k_ctrl, n_ctrl, confidence=self.confidence)
        metrics = {
            "privacy_gain": Estimate(pg, cis["privacy_gain"]),
            "p_real": Estimate(p_real, cis["p_real"]),
            "p_fake": Estimate(p_fake, cis["p_fake"]),
            "success_rate": Estimate(k_train / n_train, wilson_interval(k_train, n_train, confidence=self.confidence)),
            "control_rate" if self.control is not None else "baseline_rate":
                Estimate(k_ctrl / n_ctrl, wilson_interval(k_ctrl, n_ctrl, confidence=self.confidence)),
            "relative_risk": Estimate(rr, rr_ci),
        }
        where = "control rows (R_Test)" if self.control is not None else "training rows (no control given)"
        return Result(
            attack=self.name, kind=self.kind, value=max(0.0, rr), ci=(max(0.0, rr_ci[0]), max(0.0, rr_ci[1])),
            baseline=k_ctrl / n_ctrl, baseline_name=baseline_name, metrics=metrics, n_targets=n_train,
            confidence=self.confidence,
            notes=f"secret '{self.sensitive}'; P_real/P_fake over {len(tests)} {where}, cell width {res:g}",
            details={"sigma_real": real_model.sigma, "sigma_synthetic": syn_model.sigma, "resolution": res},
        )
