"""Singling out, linkability and nearest-neighbour inference through the ``anonymeter`` library (Giomi et al.
2023; seed 004 §3.4). We wrap it, we do not rewrite it: the attacks, their random-guess baselines, the control
comparison and the intervals are anonymeter's.

Risk (seed 004 eq. 1, anonymeter's ``risk()``): with a control set, R = (tau_train - tau_control) /
(1 - tau_control) - the *residual* risk not explained by population patterns; without one, the attack's raw
success rate. Rates are Wilson estimates with anonymeter's error propagation. Each result also reports the
random-guess baseline: an attack no better than it is not evidence of risk (anonymeter warns, we keep a note).

Reproducibility: singling out is seeded. Anonymeter draws the linkability / inference baselines from
unseeded generators, so those baselines (not the attacks: we pass every target in a seeded order) vary
slightly between runs.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from dpsynth.attacks._encoding import check_same_columns
from dpsynth.attacks.base import Attack, Estimate, Result
from dpsynth.errors import InputError

__all__ = ["InferenceRisk", "LinkabilityRisk", "SinglingOutRisk", "anonymeter_result"]


def _import():
    try:
        from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise InputError(
            "Singling out, linkability and inference need anonymeter: pip install 'dpsynth[risk]'.") from exc
    return SinglingOutEvaluator, LinkabilityEvaluator, InferenceEvaluator


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _quiet() -> Iterator[list[str]]:
    """Keep anonymeter's warnings and log lines off the console (library code does not print); yields the
    logged messages so results can carry them as notes."""
    log = logging.getLogger("anonymeter")
    level, propagate, handler = log.level, log.propagate, _Collect()
    log.setLevel(logging.WARNING)
    log.propagate = False
    log.addHandler(handler)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield handler.messages
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate


def anonymeter_result(name: str, kind: str, results: Any, *, confidence: float, notes: str = "",
                      details: dict | None = None) -> Result:
    """Convert anonymeter ``EvaluationResults`` into a :class:`Result`."""
    risk = results.risk()
    base = results.risk(baseline=True)
    rate = results.attack_rate
    metrics = {
        "risk": Estimate(risk.value, tuple(risk.ci)),
        "success_rate": Estimate(rate.value, (max(0.0, rate.value - rate.error), min(1.0, rate.value + rate.error))),
        "baseline_rate": Estimate(base.value, tuple(base.ci)),
    }
    if results.control_rate is not None:
        c = results.control_rate
        metrics["control_rate"] = Estimate(c.value, (max(0.0, c.value - c.error), min(1.0, c.value + c.error)))
    flag = "" if rate.value > results.baseline_rate.value else " Attack no better than random guessing."
    det = {"n_attacks": int(results.n_attacks_ori), "n_success": int(results.n_success),
           "n_baseline": int(results.n_baseline),
           "n_control": None if results.n_control is None else float(results.n_control)}
    det.update(details or {})
    return Result(
        attack=name, kind=kind, value=float(risk.value), ci=(float(risk.ci[0]), float(risk.ci[1])),
        baseline=float(base.value),
        baseline_name="random-guess attacker success rate" if results.control_rate is None
        else "random-guess attacker success rate (risk is residual over the control set)",
        metrics=metrics, n_targets=int(results.n_attacks_ori), confidence=confidence, notes=(notes + flag).strip(),
        details=det,
    )


class _AnonymeterAttack(Attack):
    def __init__(self, train: pd.DataFrame, synthetic: pd.DataFrame, *, control: pd.DataFrame | None = None,
                 n_attacks: int = 500, confidence: float = 0.95, seed: int | None = None, n_jobs: int = 1) -> None:
        check_same_columns(synthetic, train, *(() if control is None else (control,)), names=("train", "control"))
        if isinstance(n_attacks, bool) or not isinstance(n_attacks, int) or n_attacks < 1:
            raise InputError(f"n_attacks must be a positive integer. Found {n_attacks!r}.")
        cols = list(synthetic.columns)
        self.train, self.synthetic = _clean(train[cols]), _clean(synthetic[cols])
        self.control = None if control is None else _clean(control[cols])
        self.n_attacks, self.confidence, self.seed, self.n_jobs = n_attacks, confidence, seed, n_jobs

    def _targets(self, df: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        n = min(self.n_attacks, len(df))
        return df.iloc[rng.choice(len(df), size=n, replace=False)].reset_index(drop=True)


class SinglingOutRisk(_AnonymeterAttack):
    """Anonymeter's singling-out attack, ``mode`` "univariate" or "multivariate" (``n_cols`` per predicate)."""

    name: ClassVar[str] = "singling_out"
    kind: ClassVar[str] = "singling_out"

    def __init__(self, *args, mode: str = "univariate", n_cols: int = 3, max_attempts: int | None = 100_000,
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if mode not in ("univariate", "multivariate"):
            raise InputError(f"Singling-out mode must be 'univariate' or 'multivariate'. Found {mode!r}.")
        self.mode, self.n_cols, self.max_attempts = mode, n_cols, max_attempts

    def evaluate(self) -> Result:
        evaluator_cls, _, _ = _import()
        ev = evaluator_cls(ori=self.train, syn=self.synthetic, n_attacks=self.n_attacks, n_cols=self.n_cols,
                           control=self.control, max_attempts=self.max_attempts, seed=self.seed)
        with _quiet() as messages:
            ev.evaluate(mode=self.mode)
            res = ev.results(confidence_level=self.confidence)
        n_q = len(ev.queries())
        note = f"{self.mode} predicates" + (f" on {self.n_cols} columns" if self.mode == "multivariate" else "")
        note += "".join(f"; anonymeter: {m}" for m in messages if "could generate only" in m)
        if self.control is not None and len(self.control) < len(self.train) / 2:
            note += (f"; control ({len(self.control)} rows) much smaller than training data ({len(self.train)}):"
                     " anonymeter's size correction may overstate the residual risk")
        return anonymeter_result(f"singling_out_{self.mode}", self.kind, res, confidence=self.confidence,
                                 notes=note,
                                 details={"successful_queries": n_q})


class LinkabilityRisk(_AnonymeterAttack):
    """Anonymeter's linkability attack; ``aux_cols`` = two disjoint column lists (default: halves)."""

    name: ClassVar[str] = "linkability"
    kind: ClassVar[str] = "linkability"

    def __init__(self, *args, aux_cols: tuple[Sequence[str], Sequence[str]] | None = None, n_neighbors: int = 1,
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        cols = list(self.synthetic.columns)
        if aux_cols is None:
            aux_cols = (cols[: len(cols) // 2], cols[len(cols) // 2:])
        a, b = list(aux_cols[0]), list(aux_cols[1])
        if not a or not b or set(a) & set(b) or not set(a + b) <= set(cols):
            raise InputError(f"aux_cols must be two non-empty disjoint lists of columns. Found {a} and {b}.")
        self.aux_cols, self.n_neighbors = (a, b), n_neighbors

    def evaluate(self) -> Result:
        _, evaluator_cls, _ = _import()
        rng = np.random.default_rng(self.seed)
        ori = self._targets(self.train, rng)
        control = None if self.control is None else self._targets(self.control, rng)
        n = len(ori) if control is None else min(len(ori), len(control))
        ev = evaluator_cls(ori=ori.iloc[:n], syn=self.synthetic, aux_cols=self.aux_cols, n_attacks=n,
                           n_neighbors=self.n_neighbors, control=None if control is None else control.iloc[:n])
        with _quiet():
            ev.evaluate(n_jobs=self.n_jobs)
            res = ev.results(confidence_level=self.confidence)
        return anonymeter_result(self.name, self.kind, res, confidence=self.confidence,
                                 notes=f"links via {self.n_neighbors} nearest synthetic neighbour(s)",
                                 details={"aux_cols": [self.aux_cols[0], self.aux_cols[1]]})


class InferenceRisk(_AnonymeterAttack):
    """Anonymeter's nearest-neighbour attribute inference of ``secret`` from ``aux_cols`` (default: all others)."""

    name: ClassVar[str] = "attribute_nearest_neighbour"
    kind: ClassVar[str] = "attribute"

    def __init__(self, *args, secret: str, aux_cols: Sequence[str] | None = None, regression: bool | None = None,
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        cols = list(self.synthetic.columns)
        if secret not in cols:
            raise InputError(f"secret must be a column of the data. Found {secret!r}; columns are {cols}.")
        aux = [c for c in cols if c != secret] if aux_cols is None else list(aux_cols)
        if not aux or secret in aux or not set(aux) <= set(cols):
            raise InputError(f"aux_cols must be columns other than the secret '{secret}'. Found {aux}.")
        if regression is None:
            s = self.synthetic[secret]
            regression = bool(pd.api.types.is_numeric_dtype(s) and s.nunique() > 20)
        self.secret, self.aux_cols, self.regression = secret, aux, regression

    def evaluate(self) -> Result:
        _, _, evaluator_cls = _import()
        rng = np.random.default_rng(self.seed)
        ori = self._targets(self.train, rng)
        control = None if self.control is None else self._targets(self.control, rng)
        ev = evaluator_cls(ori=ori, syn=self.synthetic, aux_cols=self.aux_cols, secret=self.secret,
                           regression=self.regression, n_attacks=len(ori), control=control)
        with _quiet():
            ev.evaluate(n_jobs=self.n_jobs)
            res = ev.results(confidence_level=self.confidence)
        return anonymeter_result(self.name, self.kind, res, confidence=self.confidence,
                                 notes=f"secret '{self.secret}' from {len(self.aux_cols)} known columns"
                                 + (" (regression: success within 5% relative error)" if self.regression else ""),
                                 details={"secret": self.secret})


def _clean(df: pd.DataFrame) -> pd.DataFrame:
    """anonymeter needs plain dtypes: categoricals/strings as object, nullable ints as float."""
    out = df.reset_index(drop=True).copy()
    for c in out.columns:
        s = out[c]
        if isinstance(s.dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(s) or s.dtype == bool:
            out[c] = s.astype(object).where(s.notna(), None)
        elif pd.api.types.is_extension_array_dtype(s) and pd.api.types.is_numeric_dtype(s):
            out[c] = s.astype("float64")
    return out
