"""One call for the privacy risk of a synthetic release: :func:`assess_risk` -> :class:`RiskResult`.

Attacks (names usable in ``attacks=``):

========================== ============ =====================================================================
name                       needs        what it measures
========================== ============ =====================================================================
closest_distance_hamming   control      membership from the nearest synthetic record (attributes that differ)
closest_distance_l2        control      membership from the nearest synthetic record (encoded L2)
density                    control      membership from p_syn / p_ref (DOMIAS)
gan_leaks                  control      membership, GAN-Leaks full black-box, calibrated
attribute_linear_regression numeric col seed 002's attribute inference + privacy gain
attribute_nearest_neighbour             anonymeter's inference of ``sensitive`` (residual over control)
singling_out_univariate                 anonymeter singling out, 1-column predicates
singling_out_multivariate               anonymeter singling out, 3-column predicates
linkability                             anonymeter linkability of two halves of the columns
shadow_groundhog           generator    Stadler's shadow-model attack (3 feature sets; ``attacks="all"``)
========================== ============ =====================================================================

"default" runs every attack but the shadow one; "all" adds it when a generator is given (without one it is
listed in ``skipped`` with the reason). Membership
attacks need non-members: ``control`` rows from the same population that were *not* used for training (seed
004 §3.5); without them they are skipped (reported in ``skipped``). The default attacks run in parallel
through the executor (2 local processes unless told otherwise).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpsynth.attacks.base import Estimate, Result
from dpsynth.errors import InputError
from dpsynth.executor import get_executor

__all__ = ["ALL_ATTACKS", "DEFAULT_ATTACKS", "MEMBERSHIP_ATTACKS", "RiskResult", "assess_risk"]

MEMBERSHIP_ATTACKS = ("closest_distance_hamming", "closest_distance_l2", "density", "gan_leaks")
DEFAULT_ATTACKS = MEMBERSHIP_ATTACKS + (
    "attribute_linear_regression", "attribute_nearest_neighbour",
    "singling_out_univariate", "singling_out_multivariate", "linkability",
)
ALL_ATTACKS = DEFAULT_ATTACKS + ("shadow_groundhog",)
# rough relative cost on Adult (seconds, 1 core) used only to schedule the longest attacks first
_COST = {"singling_out_multivariate": 100, "attribute_nearest_neighbour": 50, "density": 35, "linkability": 30,
         "closest_distance_hamming": 15, "singling_out_univariate": 15, "attribute_linear_regression": 7,
         "gan_leaks": 5, "closest_distance_l2": 4}


@dataclass
class RiskResult:
    """Results of :func:`assess_risk`: one :class:`Result` per attack, skipped attacks with reasons."""

    results: list[Result]
    skipped: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def __getitem__(self, attack: str) -> Result:
        for r in self.results:
            if r.attack == attack:
                return r
        raise KeyError(attack)

    @property
    def table(self) -> pd.DataFrame:
        """Tidy: one row per (attack, metric) with value and interval; metric "risk" is the headline."""
        rows = []
        for r in self.results:
            rows.append(dict(attack=r.attack, kind=r.kind, metric="risk", value=r.value, ci_low=r.ci[0],
                             ci_high=r.ci[1], n_targets=r.n_targets))
            for name, est in r.metrics.items():
                if name == "risk":
                    continue
                lo, hi = est.ci if est.ci is not None else (math.nan, math.nan)
                rows.append(dict(attack=r.attack, kind=r.kind, metric=name, value=est.value, ci_low=lo,
                                 ci_high=hi, n_targets=r.n_targets))
        return pd.DataFrame(rows, columns=["attack", "kind", "metric", "value", "ci_low", "ci_high", "n_targets"])

    @property
    def summary(self) -> pd.DataFrame:
        """One row per attack: risk, its interval, the baseline and the notes."""
        return pd.DataFrame(
            [dict(attack=r.attack, kind=r.kind, risk=r.value, ci_low=r.ci[0], ci_high=r.ci[1], baseline=r.baseline,
                  n_targets=r.n_targets, seconds=self.timings.get(r.attack, math.nan), notes=r.notes)
             for r in self.results],
            columns=["attack", "kind", "risk", "ci_low", "ci_high", "baseline", "n_targets", "seconds", "notes"])

    def worst(self, kind: str | None = None) -> Result | None:
        """The highest-risk result (of one kind), as seed 004 reports for membership."""
        pool = [r for r in self.results if kind is None or r.kind == kind]
        return max(pool, key=lambda r: r.value) if pool else None

    def to_dict(self) -> dict[str, Any]:
        return {"results": [r.to_dict() for r in self.results], "skipped": dict(self.skipped),
                "settings": _plain(self.settings), "timings": {k: float(v) for k, v in self.timings.items()}}

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """JSON text (written atomically to ``path`` when given)."""
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False)
        if path is not None:
            from dpsynth._io import atomic_write_text

            atomic_write_text(path, text + "\n")
        return text

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RiskResult:
        def est(d):
            return Estimate(float("nan") if d["value"] is None else float(d["value"]),
                            None if d["ci"] is None else tuple(d["ci"]), d.get("level"))

        results = [Result(attack=d["attack"], kind=d["kind"], value=d["value"], ci=tuple(d["ci"]),
                          baseline=d["baseline"], baseline_name=d["baseline_name"],
                          metrics={k: est(v) for k, v in d["metrics"].items()}, n_targets=d["n_targets"],
                          confidence=d["confidence"], notes=d["notes"], details=d["details"])
                   for d in data["results"]]
        return cls(results, dict(data.get("skipped", {})), dict(data.get("settings", {})),
                   dict(data.get("timings", {})))

    def to_html_section(self) -> str:
        """An HTML fragment (chart + tables + definitions) for the report, next to utility."""
        from dpsynth.attacks._html import risk_section

        return risk_section(self)


# ---------------------------------------------------------------------------------------------- assess_risk
def assess_risk(
    real_train: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    control: pd.DataFrame | None = None,
    generator: Callable[..., pd.DataFrame] | None = None,
    attacks: str | Sequence[str] = "default",
    sensitive: str | None = None,
    n_targets: int = 1000,
    shadow: Any = "fast",
    executor: Any = None,
    confidence: float = 0.95,
    seed: int = 0,
    progress: bool = False,
) -> RiskResult:
    """Run the privacy attacks on a release; see the module docstring for the attack list.

    ``real_train``: the rows the generator was fitted on; ``synthetic``: the release; ``control``: real rows
    of the same population *not* used for training; ``generator``: a picklable ``(train_df, seed, n=...)``
    factory (e.g. :class:`~dpsynth.attacks.shadow.ModelFactory`) for the shadow attack; ``sensitive``: the
    secret column of the attribute attacks (default: "age" if present, else the first numeric column);
    ``n_targets``: records attacked per attack (seed 004 uses 1,000); ``shadow``: "fast", "paper" or a
    :class:`~dpsynth.attacks.shadow.ShadowConfig`.
    """
    names = _resolve_attacks(attacks, generator)
    for label, df in (("real_train", real_train), ("synthetic", synthetic), ("control", control)):
        if df is not None and (not isinstance(df, pd.DataFrame) or len(df) == 0):
            raise InputError(f"{label} must be a non-empty pandas DataFrame.")
    if isinstance(n_targets, bool) or not isinstance(n_targets, int) or n_targets < 10:
        raise InputError(f"n_targets must be an integer >= 10. Found {n_targets!r}.")
    cols = list(synthetic.columns)
    from dpsynth.attacks._encoding import check_same_columns

    check_same_columns(synthetic, real_train, *(() if control is None else (control,)),
                       names=("real_train", "control"))
    real_train, control = real_train[cols], None if control is None else control[cols]
    sensitive = _default_sensitive(real_train) if sensitive is None else sensitive
    if sensitive is not None and sensitive not in cols:
        raise InputError(f"sensitive must be a column of the data. Found {sensitive!r}.")

    skipped: dict[str, str] = {}
    if attacks == "all" and generator is None:  # say so: "all" must not quietly mean "default"
        skipped["shadow_groundhog"] = "needs a generator (give generator=..., or --model on the command line)"
    tasks, rng = [], np.random.default_rng(seed)
    mia = _membership_split(real_train, control, n_targets, rng) if control is not None else None
    for name in names:
        if name == "shadow_groundhog":
            continue
        if name in MEMBERSHIP_ATTACKS and mia is None:
            skipped[name] = "needs control rows (non-members from the same population)"
            continue
        if name.startswith("attribute_") and sensitive is None:
            skipped[name] = "no sensitive column (give sensitive=...)"
            continue
        if name == "attribute_linear_regression" and not _is_numeric(real_train[sensitive]):
            skipped[name] = f"needs a numeric sensitive column; '{sensitive}' is not"
            continue
        tasks.append((name, real_train, synthetic, control, mia, sensitive, n_targets, confidence, seed))

    tasks.sort(key=lambda t: _COST.get(t[0], 0), reverse=True)  # longest first: better load balance
    ex = get_executor(executor)
    outs = ex.map(_run_task, tasks, desc="attacks", progress=progress) if tasks else []
    results, timings = [], {}
    for (name, *_), (res, seconds, error) in zip(tasks, outs):
        if error is not None:
            skipped[name] = error
            continue
        results.append(res)
        timings[res.attack] = seconds
    results.sort(key=lambda r: names.index(r.attack) if r.attack in names else len(names))
    if "shadow_groundhog" in names:
        from dpsynth.attacks.shadow import GroundhogAttack

        t0 = time.perf_counter()
        reference = real_train if control is None else pd.concat([control, real_train], ignore_index=True)
        shadow_res = GroundhogAttack(reference, generator, config=shadow, executor=ex, progress=progress,
                                     confidence=confidence, seed=seed).evaluate_all()
        for r in shadow_res.values():
            results.append(r)
            timings[r.attack] = (time.perf_counter() - t0) / len(shadow_res)
    settings = dict(attacks=list(names), n_targets=n_targets, sensitive=sensitive, seed=seed, confidence=confidence,
                    n_train=len(real_train), n_synthetic=len(synthetic),
                    n_control=0 if control is None else len(control),
                    executor=repr(ex), shadow=str(shadow))
    return RiskResult(results, skipped, settings, timings)


def _resolve_attacks(attacks: str | Sequence[str], generator: Any) -> list[str]:
    if attacks == "default":
        return list(DEFAULT_ATTACKS)
    if attacks == "all":
        return list(ALL_ATTACKS) if generator is not None else list(DEFAULT_ATTACKS)
    if isinstance(attacks, str):
        attacks = [a.strip() for a in attacks.split(",") if a.strip()]
    unknown = [a for a in attacks if a not in ALL_ATTACKS]
    if unknown or not attacks:
        raise InputError(f"attacks must be 'default', 'all' or names among {list(ALL_ATTACKS)}. Found {list(attacks)}.")
    if "shadow_groundhog" in attacks and generator is None:
        raise InputError("The shadow_groundhog attack needs a generator (e.g. ModelFactory('marginals', ...)).")
    return list(dict.fromkeys(attacks))


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _default_sensitive(df: pd.DataFrame) -> str | None:
    if "age" in df.columns:
        return "age"
    numeric = [c for c in df.columns if _is_numeric(df[c]) and df[c].nunique() > 20]
    return numeric[0] if numeric else (df.columns[-1] if len(df.columns) > 1 else None)


def _membership_split(train: pd.DataFrame, control: pd.DataFrame, n_targets: int, rng: np.random.Generator):
    """Balanced members / non-members; the rest of the control set is the density attacks' reference."""
    n = min(n_targets, len(train), len(control) // 2 if len(control) >= 100 else len(control))
    if n < 10:
        return None
    nm = rng.choice(len(control), size=n, replace=False)
    members = train.iloc[rng.choice(len(train), size=n, replace=False)].reset_index(drop=True)
    rest = np.setdiff1d(np.arange(len(control)), nm)
    reference = control.iloc[rest].reset_index(drop=True) if len(rest) >= 50 else None
    return members, control.iloc[nm].reset_index(drop=True), reference


def _run_task(task: tuple) -> tuple[Result | None, float, str | None]:
    name, train, synthetic, control, mia, sensitive, n_targets, confidence, seed = task
    t0 = time.perf_counter()
    try:
        attack = _build(name, train, synthetic, control, mia, sensitive, n_targets, confidence, seed)
        res = attack.evaluate()
    except InputError as exc:
        return None, time.perf_counter() - t0, str(exc)
    return res, time.perf_counter() - t0, None


def _build(name, train, synthetic, control, mia, sensitive, n_targets, confidence, seed):
    from dpsynth.attacks import anonymeter_wrap as aw
    from dpsynth.attacks import membership as mm
    from dpsynth.attacks.attribute import LinearRegressionAttributeAttack

    if name in MEMBERSHIP_ATTACKS:
        cls = {"closest_distance_hamming": mm.ClosestDistanceHamming, "closest_distance_l2": mm.ClosestDistanceL2,
               "density": mm.DensityMIA, "gan_leaks": mm.GanLeaksMIA}[name]
        members, non_members, reference = mia
        return cls(members, non_members, synthetic, reference=reference, confidence=confidence, seed=seed)
    common = dict(control=control, confidence=confidence, seed=seed)
    if name == "attribute_linear_regression":
        return LinearRegressionAttributeAttack(train, synthetic, sensitive=sensitive, n_targets=n_targets, **common)
    n_attacks = min(n_targets, 500)  # anonymeter's default number of attacks
    if name == "attribute_nearest_neighbour":
        return aw.InferenceRisk(train, synthetic, secret=sensitive, n_attacks=n_attacks, **common)
    if name == "linkability":
        return aw.LinkabilityRisk(train, synthetic, n_attacks=n_attacks, **common)
    mode = name.removeprefix("singling_out_")
    return aw.SinglingOutRisk(train, synthetic, mode=mode, n_attacks=n_attacks, **common)


def _plain(obj: Any) -> Any:
    from dpsynth.attacks.base import jsonable

    return jsonable(obj)
