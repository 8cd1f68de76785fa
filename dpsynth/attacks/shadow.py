"""Shadow-model membership inference: Stadler et al.'s "groundhog" attack (seed 002 §4.2.2, seed 004 §3.4).

The attacker has black-box access to the generator (a picklable factory ``(train_df, seed, n=...) -> frame``)
and reference data R from the population. For a target record t it fits the generator many times on R
(label 0) and on R + t (label 1), cuts each fit's output into synthetic sets of r rows, summarises each set
(:mod:`dpsynth.attacks.features`: naive, histogram, correlation) and trains a random forest to tell the
labels apart. The attack is judged on synthetic sets from *fresh* fits on the same R (never seen in training; each
repetition draws a new R), and reports
:func:`~dpsynth.attacks.base.membership_result` pooled over targets and repetitions, with P_fake the forest's
average probability of the correct label (Stadler's ProbSuccess; privacy gain = (1 - P_fake)/2).

Seed 002 defaults (``ShadowConfig.paper()``): |R| = 4,000, r = 400, 1,000 training and 200 test sets,
5 targets x 5 repetitions. One deviation, stated: seed 002 draws all sets of a label from one fit; we refit
every ``sets_per_fit`` sets so the forest learns the target's effect, not one fit's noise. Sets cut from
one fit share its randomness, so intervals are t-intervals over per-fit means (the fit is the unit), not
binomial intervals over sets. ``ShadowConfig.fast()`` runs in minutes with cheap generators. Targets default to
outliers of R (the most vulnerable records, as in Stadler et al.).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from dpsynth.attacks._encoding import TableEncoder
from dpsynth.attacks.base import Attack, Result, membership_result
from dpsynth.attacks.features import FEATURE_SETS, FeatureDomain, extract
from dpsynth.errors import InputError
from dpsynth.executor import get_executor

__all__ = ["GroundhogAttack", "ModelFactory", "ShadowConfig", "call_generator", "select_targets"]


@dataclass(frozen=True)
class ShadowConfig:
    """Sizes of the shadow experiment (validated on construction)."""

    reference_size: int = 4000
    synthetic_size: int = 400
    n_train_sets: int = 1000
    n_test_sets: int = 200
    n_targets: int = 5
    n_repetitions: int = 5
    sets_per_fit: int = 10
    train_size: int | None = None  # None: fit on all of R (seed 002); an int: a fresh subset per fit (Stadler)
    n_estimators: int = 100

    def __post_init__(self) -> None:
        for name in ("reference_size", "synthetic_size", "n_train_sets", "n_test_sets", "n_targets",
                     "n_repetitions", "sets_per_fit", "n_estimators"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"ShadowConfig.{name} must be a positive integer. Found {v!r}.")
        if self.n_train_sets < 4 or self.n_test_sets < 2:
            raise InputError(
                f"Need >= 4 training and >= 2 test sets. Found {self.n_train_sets} and {self.n_test_sets}.")
        if self.train_size is not None and not (1 <= self.train_size <= self.reference_size):
            raise InputError(f"train_size must be in [1, reference_size]. Found {self.train_size}.")

    @classmethod
    def paper(cls) -> ShadowConfig:
        """Seed 002 §4.2.2 settings."""
        return cls()

    @classmethod
    def fast(cls) -> ShadowConfig:
        """Minutes, not hours: smaller R, fewer sets, 3 targets x 2 repetitions."""
        return cls(reference_size=1000, synthetic_size=400, n_train_sets=200, n_test_sets=60, n_targets=3,
                   n_repetitions=2, sets_per_fit=10)

    @classmethod
    def from_preset(cls, preset: str | ShadowConfig) -> ShadowConfig:
        if isinstance(preset, ShadowConfig):
            return preset
        if preset not in ("paper", "fast"):
            raise InputError(f"Shadow preset must be 'paper' or 'fast'. Found {preset!r}.")
        return cls.paper() if preset == "paper" else cls.fast()


class ModelFactory:
    """Picklable generator built from a registered dpsynth model: fit on ``train_df``, sample ``n`` rows.

    ``ModelFactory("marginals", epsilon=1.0, delta=1e-5, bins=16)``; ``n`` defaults to the model's DP row count
    (never ``len(train_df)``, which a DP release must not publish). ``noise``: the fits' noise (``"numpy"`` or
    ``"secure"``, :mod:`dpsynth.privacy.secure_noise`), so an audit can test the release's own samplers.
    """

    def __init__(self, model: str, *, epsilon: float, delta: float, schema: Any = None, noise: str = "numpy",
                 **hyperparams: Any) -> None:
        self.model, self.epsilon, self.delta, self.schema = model, float(epsilon), float(delta), schema
        self.noise = noise
        self.hyperparams = dict(hyperparams)

    def build(self):
        from dpsynth.models import get_model_class

        cls = get_model_class(self.model)
        try:
            return cls(**self.hyperparams)
        except TypeError as exc:
            raise InputError(f"Bad hyper-parameter for model '{self.model}': {exc}.") from exc

    def fit(self, train_df: pd.DataFrame, seed: int | None, *, progress: bool = False):
        return self.build().fit(train_df, epsilon=self.epsilon, delta=self.delta, schema=self.schema, seed=seed,
                                progress=progress, noise=self.noise)

    def __call__(self, train_df: pd.DataFrame, seed: int | None = None, *, n: int | None = None) -> pd.DataFrame:
        model = self.fit(train_df, seed)
        return model.sample(None if n is None else int(n), seed=None if seed is None else seed + 1)

    def __repr__(self) -> str:
        kw = "".join(f", {k}={v!r}" for k, v in self.hyperparams.items())
        noise = "" if self.noise == "numpy" else f", noise={self.noise!r}"
        return f"ModelFactory({self.model!r}, epsilon={self.epsilon}, delta={self.delta}{noise}{kw})"


def call_generator(generator: Callable[..., pd.DataFrame], train_df: pd.DataFrame, seed: int, n: int, *,
                   schema: Any = None) -> pd.DataFrame:
    """Call a generator with ``n=`` when it accepts it (and ``schema=`` when given and it names that argument);
    check it returned at least ``n`` rows."""
    try:
        params = inspect.signature(generator).parameters
        takes_n = "n" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())
        takes_schema = schema is not None and "schema" in params
    except (TypeError, ValueError):
        takes_n = takes_schema = False
    kwargs: dict[str, Any] = {"n": n} if takes_n else {}
    if takes_schema:
        kwargs["schema"] = schema
    out = generator(train_df, seed, **kwargs)
    if not isinstance(out, pd.DataFrame) or len(out) < n:
        got = len(out) if isinstance(out, pd.DataFrame) else type(out).__name__
        raise InputError(f"The generator must return a DataFrame with at least {n} rows. Found {got}.")
    return out


def _shadow_job(job: tuple) -> dict[str, np.ndarray]:
    generator, train_df, seed, r, n_sets, domain, features = job
    syn = call_generator(generator, train_df, seed, r * n_sets).reset_index(drop=True)
    rows = [extract(syn.iloc[i * r:(i + 1) * r], domain, features) for i in range(n_sets)]
    return {f: np.vstack([row[f] for row in rows]) for f in features}


def select_targets(data: pd.DataFrame, n: int, *, how: str = "outliers", seed: int | None = None) -> list[int]:
    """Positions of ``n`` target rows: the farthest from their nearest neighbour ("outliers") or random."""
    if n > len(data):
        raise InputError(f"Cannot pick {n} targets from {len(data)} rows.")
    rng = np.random.default_rng(seed)
    if how == "random":
        return sorted(rng.choice(len(data), size=n, replace=False).tolist())
    if how != "outliers":
        raise InputError(f"Target selection must be 'outliers' or 'random'. Found {how!r}.")
    pool = rng.choice(len(data), size=min(len(data), 2000), replace=False)
    x = TableEncoder(data).numeric_matrix(data.iloc[pool])
    d2 = (x * x).sum(1)[:, None] + (x * x).sum(1)[None, :] - 2 * x @ x.T
    np.fill_diagonal(d2, np.inf)
    return sorted(pool[np.argsort(-d2.min(axis=1))[:n]].tolist())


class GroundhogAttack(Attack):
    """Stadler et al.'s shadow-model attack; see the module docstring."""

    name: ClassVar[str] = "shadow_groundhog"
    kind: ClassVar[str] = "membership"

    def __init__(
        self,
        reference: pd.DataFrame,
        generator: Callable[..., pd.DataFrame],
        *,
        targets: pd.DataFrame | None = None,
        config: str | ShadowConfig = "fast",
        features: Sequence[str] = ("naive", "histogram", "correlation"),
        target_selection: str = "outliers",
        executor: Any = None,
        progress: bool = False,
        confidence: float = 0.95,
        seed: int | None = None,
    ) -> None:
        self.config = ShadowConfig.from_preset(config)
        bad = [f for f in features if f not in FEATURE_SETS]
        if bad or not features:
            raise InputError(f"features must be a non-empty subset of {sorted(FEATURE_SETS)}. Found {list(features)}.")
        if not callable(generator):
            raise InputError(f"generator must be callable (train_df, seed, n=...) -> DataFrame. Found {generator!r}.")
        self.reference = reference.reset_index(drop=True)
        if targets is None:
            pos = select_targets(self.reference, self.config.n_targets, how=target_selection, seed=seed)
            self.targets = self.reference.iloc[pos].reset_index(drop=True)
            self.pool = self.reference.drop(index=pos).reset_index(drop=True)
        else:
            self.targets = targets[list(reference.columns)].reset_index(drop=True)
            self.pool = self.reference
        if len(self.pool) < self.config.reference_size:
            self.config = replace(self.config, reference_size=len(self.pool),
                                  train_size=None if self.config.train_size is None
                                  else min(self.config.train_size, len(self.pool)))
        self.generator, self.features = generator, tuple(features)
        self.executor, self.progress, self.confidence, self.seed = executor, progress, confidence, seed

    # ------------------------------------------------------------------ jobs
    def _jobs(self, target: pd.DataFrame, base: pd.DataFrame, rng: np.random.Generator, domain: FeatureDomain,
              n_sets: int):
        cfg = self.config
        fits = 2 * math.ceil(n_sets / (2 * cfg.sets_per_fit))
        jobs, labels = [], []
        for i in range(fits):
            train = base if cfg.train_size is None else base.iloc[rng.choice(len(base), cfg.train_size, replace=False)]
            label = i % 2
            if label:
                train = pd.concat([train, target], ignore_index=True)
            seed = int(rng.integers(2**31 - 1))
            jobs.append((self.generator, train.reset_index(drop=True), seed, cfg.synthetic_size, cfg.sets_per_fit,
                         domain, self.features))
            labels += [label] * cfg.sets_per_fit
        return jobs, np.asarray(labels)

    def _run_one(self, t: int, rep: int, domain: FeatureDomain, executor) -> dict[str, tuple]:
        from sklearn.ensemble import RandomForestClassifier

        cfg = self.config
        rng = np.random.default_rng([self.seed if self.seed is not None else 0, t, rep])
        target = self.targets.iloc[[t]]
        # one R per (target, repetition), shared by the training and the (fresh) test fits
        base = self.pool.iloc[rng.choice(len(self.pool), size=cfg.reference_size, replace=False)]
        train_jobs, y_train = self._jobs(target, base, rng, domain, cfg.n_train_sets)
        test_jobs, y_test = self._jobs(target, base, rng, domain, cfg.n_test_sets)
        outs = executor.map(_shadow_job, train_jobs + test_jobs, desc=f"shadow fits t{t} r{rep}",
                            progress=self.progress)
        res = {}
        for f in self.features:
            x = np.vstack([o[f] for o in outs])
            x = np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
            n_tr = len(y_train)
            clf = RandomForestClassifier(n_estimators=cfg.n_estimators, n_jobs=1,
                                         random_state=int(rng.integers(2**31 - 1)))
            clf.fit(x[:n_tr], y_train)
            proba = clf.predict_proba(x[n_tr:])
            p_in = proba[:, list(clf.classes_).index(1)] if 1 in clf.classes_ else np.zeros(len(y_test))
            p_correct = np.where(y_test == 1, p_in, 1.0 - p_in)
            res[f] = (y_test, p_in, p_correct, np.repeat(np.arange(len(test_jobs)), cfg.sets_per_fit))
        return res

    # ------------------------------------------------------------------ evaluate
    def evaluate_all(self) -> dict[str, Result]:
        """One result per feature set (fits are shared between feature sets)."""
        domain = FeatureDomain(self.reference)
        executor = get_executor(self.executor)
        pooled: dict[str, list] = {f: [] for f in self.features}
        for t in range(len(self.targets)):
            for rep in range(self.config.n_repetitions):
                for f, out in self._run_one(t, rep, domain, executor).items():
                    pooled[f].append((t, rep, *out))
        results = {}
        for f, parts in pooled.items():
            y = np.concatenate([p[2] for p in parts])
            p_in = np.concatenate([p[3] for p in parts])
            p_ok = np.concatenate([p[4] for p in parts])
            fits = np.concatenate([f"{p[0]}/{p[1]}/" + p[5].astype(str).astype(object) for p in parts])
            per_target = {}
            for t in range(len(self.targets)):
                acc = [float(np.mean((p[3] >= 0.5) == (p[2] == 1))) for p in parts if p[0] == t]
                per_target[str(t)] = float(np.mean(acc))
            results[f] = membership_result(
                f"{self.name}_{f}", y == 1, p_in >= 0.5, p_in, p_correct=p_ok, clusters=fits,
                confidence=self.confidence,
                notes=(f"{len(self.targets)} targets x {self.config.n_repetitions} repetitions, "
                       f"{self.config.n_train_sets} train / {self.config.n_test_sets} test sets of "
                       f"{self.config.synthetic_size} rows, |R| = {self.config.reference_size}, {f} features"),
                details={"per_target_accuracy": per_target, "worst_target_accuracy": max(per_target.values()),
                         "config": self.config.__dict__},
            )
        return results

    def evaluate(self) -> Result:
        """The strongest feature set's result (highest risk)."""
        return max(self.evaluate_all().values(), key=lambda r: r.value)
