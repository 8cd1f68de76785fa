"""``evaluate``: every utility metric of the five seeds in one call (DESIGN §4)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from dpsynth.errors import InputError
from dpsynth.evaluation._prep import Encoder, capped_order, check_frames, infer_kinds, row_keys
from dpsynth.evaluation.result import EvaluationResult, Row

_LOG = logging.getLogger("dpsynth.evaluation")

__all__ = ["GROUPS", "Limits", "Context", "evaluate"]

#: metric groups, in the order they run; ``metrics="all"`` runs every one.
GROUPS = ("similarity", "unsupervised", "quality", "dimwise_prediction", "ml_efficacy")


@dataclass(frozen=True)
class Limits:
    """Row caps for the expensive parts (performance settings: they change variance, not definitions).

    Every cap draws a seeded subsample of the rows by content (:func:`._prep.capped_order`: a table and any
    reordering of it give the same rows); the cheap per-column metrics always use all rows.

    * ``per_column_rows`` — training rows per per-column model (seed 003 dimension-wise prediction,
      seed 004 per-column utility) and per table; test rows are capped at the same number.
    * ``discriminator_rows`` — rows per table for the seed-004 real-vs-synthetic classifier (and at most as
      many per half for its real-vs-real noise floor).
    * ``pca_points`` — points per table drawn in the PCA scatter (the projection uses all real rows).
    * ``kway_subsets`` — random column subsets for the k-way marginal TVD (all of them when fewer).
    """

    per_column_rows: int = 5000
    discriminator_rows: int = 20000
    pca_points: int = 2000
    kway_subsets: int = 50

    def __post_init__(self) -> None:
        for name in ("per_column_rows", "discriminator_rows", "pca_points", "kway_subsets"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 10:
                raise InputError(f"Limits.{name} must be an integer >= 10. Found {value!r}.")


@dataclass
class Context:
    """What every metric group reads: the aligned frames, kinds, target, seeds and shared caches."""

    real: pd.DataFrame
    synthetic: pd.DataFrame
    real_test: pd.DataFrame | None
    kinds: dict[str, str]
    target: str | None
    seeds: tuple[int, ...]
    limits: Limits
    executor: Any = 2  # how model fits run (dpsynth.executor.get_executor); performance only
    models: tuple[str, ...] = ("dt", "rf", "lr", "mlp", "xgb")
    _cache: dict[str, Any] = field(default_factory=dict)

    def encoder(self) -> Encoder:
        if "encoder" not in self._cache:
            self._cache["encoder"] = Encoder(self.real, self.kinds)
        return self._cache["encoder"]

    def association(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Association matrices (real, synthetic) of :func:`.similarity.association_matrix`, computed once."""
        if "association" not in self._cache:
            from dpsynth.evaluation.similarity import association_matrix

            self._cache["association"] = (association_matrix(self.real, self.kinds),
                                          association_matrix(self.synthetic, self.kinds))
        return self._cache["association"]

    def rng(self, salt: int = 0) -> np.random.Generator:
        return np.random.default_rng([self.seeds[0], salt])

    def holdout_split(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """A seeded 80/20 split of the real training rows (used when no real test set is given)."""
        if "holdout" not in self._cache:
            perm = self.rng(7).permutation(len(self.real))
            cut = max(1, int(round(0.8 * len(self.real))))
            self._cache["holdout"] = (self.real.iloc[np.sort(perm[:cut])], self.real.iloc[np.sort(perm[cut:])])
        return self._cache["holdout"]

    def keys(self, frame: pd.DataFrame) -> np.ndarray:
        """Content keys of ``frame``'s rows (:func:`._prep.row_keys`), computed once per frame."""
        cache = self._cache.setdefault("keys", {})
        if id(frame) not in cache:  # the frame is kept beside its keys, so its id cannot be reused
            cache[id(frame)] = (frame, row_keys(frame, self.kinds))
        return cache[id(frame)][1]

    def capped(self, frame: pd.DataFrame, cap: int | None, salt: int) -> pd.DataFrame:
        """At most ``cap`` rows of ``frame`` chosen and ordered by a seeded hash of their content."""
        salt_value = self.rng(salt).integers(0, 2**63, dtype=np.int64).item()
        return frame.iloc[capped_order(self.keys(frame), cap, salt_value)]


def _groups(metrics: str | Sequence[str]) -> list[str]:
    if isinstance(metrics, str):
        metrics = list(GROUPS) if metrics == "all" else [metrics]
    unknown = [m for m in metrics if m not in GROUPS]
    if unknown:
        raise InputError(f"metrics must be 'all' or a list drawn from {list(GROUPS)}. Found {unknown}.")
    return [g for g in GROUPS if g in metrics]


def _run_group(name: str, ctx: Context) -> tuple[list[Row], dict]:
    from dpsynth.evaluation import dimwise, ml_efficacy, quality, similarity, unsupervised

    module = {"similarity": similarity, "unsupervised": unsupervised, "quality": quality,
              "dimwise_prediction": dimwise, "ml_efficacy": ml_efficacy}[name]
    return module.run(ctx)


def evaluate(
    real_train: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    real_test: pd.DataFrame | None = None,
    schema=None,
    target: str | None = None,
    metrics: str | Sequence[str] = "all",
    seeds: Sequence[int] = (0, 1, 2),
    limits: Limits | None = None,
    executor: Any = None,
    progress: bool = False,
    n_jobs: int | None = None,
    ml_models: Sequence[str] | None = None,
) -> EvaluationResult:
    """Score ``synthetic`` against ``real_train`` (and ``real_test``) with every metric of the seeds.

    Args:
        real_train: the real rows the generator was trained on; the reference for categories and bounds.
        synthetic: the synthetic table (same columns; extra columns are ignored).
        real_test: real rows the generator never saw, for train-synthetic-test-real scores. Without it the
            ML efficacy and per-column prediction scores use a hold-out of ``real_train`` (noted in the table).
        schema: a :class:`~dpsynth.data.schema.Schema`; its kinds (and target) override dtype-based kinds.
        target: the column for ML efficacy (default: ``schema.target``); without one, ML efficacy is reported
            as undefined with the reason.
        metrics: ``"all"`` or a list of groups from :data:`GROUPS`.
        seeds: model seeds for ML efficacy (spread = std over them); the first seeds every subsample.
        limits: row caps for the expensive parts (:class:`Limits`); performance only.
        executor: how the model fits run: a worker count, ``"local"`` (2 worker processes, the default),
            ``"sequential"`` or any object with ``.map`` (:mod:`dpsynth.executor`, as the attacks take it); each
            fit is single-threaded; performance only. ``n_jobs=k`` is the same as ``executor=k``.
        progress: a progress bar over the metric groups (stderr) and one line per group at INFO level
            (``logging`` logger ``dpsynth.evaluation``).
        ml_models: the ML efficacy models, a subset of ``dt, rf, lr, mlp, xgb`` (default all; e.g. ``["xgb"]``
            on a large table, where the random forest and the MLP take minutes).

    Returns:
        :class:`~dpsynth.evaluation.result.EvaluationResult`: ``.table`` with columns metric, subject, value,
        spread, n_seeds, note (an undefined value is NaN with the reason in ``note``), ``.figures`` with plot
        data, ``.info`` with the settings and per-group timings.
    """
    columns = check_frames(real_train, synthetic, real_test)
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise InputError("seeds must list at least one integer. Found an empty list.")
    if target is None and schema is not None:
        target = getattr(schema, "target", None)
    if target is not None and target not in columns:
        raise InputError(f"target must be a column of the real data. Found {target!r}; columns: {columns}.")
    models = _ml_models(ml_models)
    real = real_train[columns].reset_index(drop=True)
    ctx = Context(real=real, synthetic=synthetic[columns].reset_index(drop=True),
                  real_test=None if real_test is None else real_test[columns].reset_index(drop=True),
                  kinds=infer_kinds(real, schema), target=target, seeds=seeds, limits=limits or Limits(),
                  executor=_executor(executor, n_jobs), models=models)
    rows: list[Row] = []
    figures: dict[str, Any] = {}
    timings: dict[str, float] = {}
    groups = list(_groups(metrics))
    bar = tqdm(groups, desc="evaluate", disable=not progress, leave=False)
    for group in bar:
        bar.set_postfix_str(group)
        start = time.perf_counter()
        group_rows, group_figures = _run_group(group, ctx)
        timings[group] = round(time.perf_counter() - start, 3)
        rows += group_rows
        figures.update(group_figures)
        if progress:
            _LOG.info("%s: %d rows in %.1f s", group, len(group_rows), timings[group])
    bar.close()
    info = {"columns": columns, "kinds": ctx.kinds, "target": target, "seeds": list(seeds), "ml_models": list(models),
            "n_real": len(real), "n_synthetic": len(ctx.synthetic),
            "n_real_test": None if real_test is None else len(real_test),
            "limits": ctx.limits.__dict__, "seconds": timings}
    return EvaluationResult.from_rows(rows, figures, info)


def _ml_models(ml_models: Sequence[str] | None) -> tuple[str, ...]:
    from dpsynth.evaluation.ml_efficacy import MODELS

    if ml_models is None:
        return MODELS
    if isinstance(ml_models, str):
        ml_models = [ml_models]
    chosen = tuple(dict.fromkeys(str(m) for m in ml_models))
    unknown = [m for m in chosen if m not in MODELS]
    if unknown or not chosen:
        raise InputError(f"ml_models must be a non-empty list drawn from {list(MODELS)}. Found {list(ml_models)}.")
    return chosen


def _executor(executor: Any, n_jobs: int | None) -> Any:
    from dpsynth.executor import get_executor

    if n_jobs is not None:
        if executor is not None:
            raise InputError("give executor= or n_jobs=, not both.")
        executor = max(1, int(n_jobs))
    return get_executor(executor)
