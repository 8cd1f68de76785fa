"""Attack contract: ``Attack(...).evaluate() -> Result`` (in the style of anonymeter's evaluators).

A :class:`Result` carries one headline risk in [0, 1] (``value``, with a confidence interval ``ci``), the
baseline it is compared with (chance accuracy for membership, the random-guess attacker or the control set for
anonymeter attacks) and every secondary metric as an :class:`Estimate`. Membership results share one
metric set, built by :func:`membership_result` from the attack's decisions and scores on held-out targets:

- accuracy (Wilson interval at ``confidence``), TPR and FPR (Wilson intervals at sqrt(confidence) each, recorded
  in their ``Estimate.level``), AUC (Hanley-McNeil), advantage TPR - FPR (from the TPR and FPR intervals: it
  holds when both do, so at >= ``confidence`` on independent members and non-members);
- privacy gain (seed 002 §4.2.2): (1 - P_fake)/2, P_fake the attack's average probability of the correct
  label (its 0/1 decision when it has no calibrated probability);
- relative risk (seed 004 eq. 1 with tau_control = 0.5 for membership): the headline ``value``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy.stats import norm

from dpsynth.attacks.stats import auc_interval, auc_score, privacy_gain, wilson_interval
from dpsynth.errors import InputError

__all__ = ["KINDS", "Attack", "Estimate", "Result", "fit_threshold", "membership_result"]

KINDS = ("membership", "attribute", "singling_out", "linkability")


@dataclass(frozen=True)
class Estimate:
    """A number with an optional confidence interval (lo, hi) and its level (None: the result's confidence)."""

    value: float
    ci: tuple[float, float] | None = None
    level: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"value": _num(self.value), "ci": None if self.ci is None else [_num(self.ci[0]), _num(self.ci[1])]}
        if self.level is not None:
            out["level"] = float(self.level)
        return out


@dataclass(frozen=True)
class Result:
    """Outcome of one attack. ``value`` is the risk (0 = none beyond the baseline, 1 = maximal)."""

    attack: str
    kind: str
    value: float
    ci: tuple[float, float]
    baseline: float
    baseline_name: str
    metrics: Mapping[str, Estimate] = field(default_factory=dict)
    n_targets: int = 0
    confidence: float = 0.95
    notes: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"Result kind must be one of {KINDS}. Found {self.kind!r}.")

    def metric(self, name: str) -> float:
        """Value of one metric (``nan`` when the attack does not report it)."""
        est = self.metrics.get(name)
        return float("nan") if est is None else est.value

    def to_dict(self) -> dict[str, Any]:
        return {
            "attack": self.attack,
            "kind": self.kind,
            "value": _num(self.value),
            "ci": [_num(self.ci[0]), _num(self.ci[1])],
            "baseline": _num(self.baseline),
            "baseline_name": self.baseline_name,
            "metrics": {k: v.to_dict() for k, v in self.metrics.items()},
            "n_targets": int(self.n_targets),
            "confidence": self.confidence,
            "notes": self.notes,
            "details": jsonable(dict(self.details)),
        }


class Attack(ABC):
    """Base class of every attack. Subclasses set ``name`` and ``kind`` and implement :meth:`evaluate`."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = ""

    @abstractmethod
    def evaluate(self) -> Result:
        """Run the attack and return its :class:`Result`."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def fit_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """Threshold t maximising the accuracy of ``score >= t`` (labels 1 = member); ties -> the highest t (the
    fewest "member" guesses, the conservative choice; ``inf`` when guessing no member is best)."""
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels).astype(bool)
    order = np.argsort(-scores, kind="mergesort")
    s, y = scores[order], labels[order]
    # predicting "member" for the first i items (by descending score): correct = tp(i) + tn(i)
    tp = np.concatenate([[0], np.cumsum(y)])
    fp = np.concatenate([[0], np.cumsum(~y)])
    correct = tp + (int((~y).sum()) - fp)
    # a cut is only valid between distinct scores
    valid = np.ones(len(s) + 1, dtype=bool)
    valid[1:-1] = s[:-1] != s[1:]
    # argmax takes the first maximum: the fewest items above the cut, i.e. the highest threshold
    best = int(np.argmax(np.where(valid, correct, -1)))
    if best == 0:
        return float(np.inf)
    return float(s[best - 1])


def _cluster_ci(values: np.ndarray, clusters: np.ndarray, confidence: float) -> tuple[float, float]:
    """t-interval of a mean over cluster means (observations within a cluster are not independent)."""
    from scipy.stats import t as student_t

    values = np.asarray(values, dtype=float)
    means = np.array([values[clusters == c].mean() for c in np.unique(clusters)])
    m = float(values.mean())
    if len(means) < 2:
        return 0.0, 1.0
    t_quantile = float(student_t.ppf(0.5 + confidence / 2.0, len(means) - 1))
    half = t_quantile * float(means.std(ddof=1)) / math.sqrt(len(means))
    return max(0.0, m - half), min(1.0, m + half)


def membership_result(
    attack: str,
    labels: np.ndarray,
    decisions: np.ndarray,
    scores: np.ndarray,
    *,
    p_correct: np.ndarray | None = None,
    clusters: np.ndarray | None = None,
    confidence: float = 0.95,
    notes: str = "",
    details: Mapping[str, Any] | None = None,
) -> Result:
    """Build the standard membership :class:`Result` (see the module docstring) from held-out targets.

    ``clusters`` (optional) groups observations that are not independent (synthetic sets cut from one model
    fit): intervals are then t-intervals over cluster means instead of binomial intervals.
    """
    labels = np.asarray(labels).astype(bool)
    decisions = np.asarray(decisions).astype(bool)
    n, n_pos = len(labels), int(labels.sum())
    n_neg = n - n_pos
    if n_pos == 0 or n_neg == 0:
        raise InputError(f"Membership evaluation needs members and non-members. Found {n_pos} and {n_neg}.")
    tp = int((decisions & labels).sum())
    tn = int((~decisions & ~labels).sum())
    fp, fn = n_neg - tn, n_pos - tp
    k = tp + tn
    acc = k / n
    level = math.sqrt(confidence)
    tpr, fpr = tp / n_pos, fp / n_neg
    auc = auc_score(labels, scores)
    p = None if p_correct is None else np.asarray(p_correct, dtype=float)
    p_fake = acc if p is None else float(p.mean())
    if clusters is None:
        acc_ci = wilson_interval(k, n, confidence=confidence)
        tpr_ci, fpr_ci = wilson_interval(tp, n_pos, confidence=level), wilson_interval(fp, n_neg, confidence=level)
        n_pos_eff, n_neg_eff = n_pos, n_neg
        if p is None:
            p_ci = acc_ci
        else:
            z = float(norm.ppf(0.5 + confidence / 2.0))
            half = z * float(p.std(ddof=1)) / math.sqrt(n) if n > 1 else 0.0
            p_ci = (max(0.0, p_fake - half), min(1.0, p_fake + half))
    else:
        g = np.asarray(clusters)
        acc_ci = _cluster_ci(decisions == labels, g, confidence)
        tpr_ci = _cluster_ci(decisions[labels], g[labels], level)
        fpr_ci = _cluster_ci(decisions[~labels], g[~labels], level)
        n_pos_eff, n_neg_eff = len(np.unique(g[labels])), len(np.unique(g[~labels]))
        p_ci = acc_ci if p is None else _cluster_ci(p, g, confidence)
    rr, rr_ci = 2.0 * acc - 1.0, (2.0 * acc_ci[0] - 1.0, 2.0 * acc_ci[1] - 1.0)  # seed 004, tau_control = 0.5
    metrics = {
        "accuracy": Estimate(acc, acc_ci),
        "tpr": Estimate(tpr, tpr_ci, level),  # per-rate level sqrt(confidence): the advantage's joint interval
        "fpr": Estimate(fpr, fpr_ci, level),  # (both rates covered) then holds at >= confidence
        "auc": Estimate(auc, auc_interval(auc, n_pos_eff, n_neg_eff, confidence=confidence)),
        "advantage": Estimate(tpr - fpr, (tpr_ci[0] - fpr_ci[1], tpr_ci[1] - fpr_ci[0])),
        "privacy_gain": Estimate(privacy_gain(p_fake), (privacy_gain(p_ci[1]), privacy_gain(p_ci[0]))),
        "p_fake": Estimate(p_fake, p_ci),
        "relative_risk": Estimate(rr, rr_ci),
    }
    det = {"tp": tp, "fp": fp, "tn": tn, "fn": fn}
    det.update(details or {})
    return Result(
        attack=attack, kind="membership", value=max(0.0, rr), ci=(max(0.0, rr_ci[0]), max(0.0, rr_ci[1])),
        baseline=0.5, baseline_name="chance accuracy (tau_control = 0.5, seed 004)", metrics=metrics,
        n_targets=n, confidence=confidence, notes=notes, details=det,
    )


def _num(x: Any) -> Any:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else (str(x) if math.isinf(x) else x)


def jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _num(obj)
    if obj is None or isinstance(obj, str):
        return obj
    return str(obj)
