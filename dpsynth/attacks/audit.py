"""Empirical privacy audit of a model: an epsilon lower bound next to the ledger's epsilon (DESIGN.md §1 rule 7).

``mode="in-out"`` (default; Jagielski et al. 2020, Nasr et al. 2021): a crafted canary record (categories the
base data lacks, numbers at the top of their range - Stadler et al.'s outlier target, made stronger) is
inserted in half of ``n_fits`` fits of the model on a small base table D0 (add/remove neighbours, the
relation dpsynth's ledger uses). Each fit's synthetic output is scored against the canary with the
membership attacks that need no reference data (closest distance Hamming and L2) and by "novelty": the
number of synthetic cells carrying the canary's values that D0 lacks (what a per-column histogram leaks; the
auditor knows D0, the standard audit threat model). The strongest attack - score, threshold and
direction - is chosen on one half of the fits and judged on the other, so the bound stays valid:
``dpsynth.privacy.audit.eps_lower_bound_cp`` (Clopper-Pearson at level alpha) of its TP/FN/FP/TN.

``mode="one-run"`` (Steinke, Nasr, Jagielski 2023): m canaries (rows of a held-out pool) each included with
probability 1/2 in one fit; guesses on the top / bottom ``k`` L2 scores; ``eps_lower_bound_one_run``.

Guarantee tested: for an (eps, delta)-DP model, eps_LB <= eps with probability >= 1 - alpha. A model whose
eps_LB exceeds its ledger's epsilon leaks (or under-counts); the non-private mode shows the audit's power.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpsynth.attacks._encoding import TableEncoder
from dpsynth.attacks.executor import get_executor
from dpsynth.attacks.membership import nearest_hamming, nearest_l2
from dpsynth.attacks.shadow import ModelFactory, call_generator
from dpsynth.errors import InputError

__all__ = ["SCORES", "ModelAudit", "audit_model", "craft_canary", "novelty_rules", "parse_model_spec"]

SCORES = ("hamming", "l2", "novelty")


@dataclass(frozen=True)
class ModelAudit:
    """Outcome of :func:`audit_model`. ``passed`` is eps_lb <= epsilon (the ledger's, or the claimed one)."""

    model: str
    epsilon: float
    delta: float
    eps_lb: float
    mode: str
    attack: str
    counts: dict[str, int]
    n_fits: int
    n_rows: int
    alpha: float
    seconds: float
    notes: str = ""
    selection: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.eps_lb <= self.epsilon + 1e-9

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["epsilon"] = "inf" if math.isinf(self.epsilon) else self.epsilon
        d["passed"] = self.passed
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        eps = "inf" if math.isinf(self.epsilon) else f"{self.epsilon:.3f}"
        verdict = "consistent with" if self.passed else "EXCEEDS"
        return (f"{self.model}: empirical eps_LB = {self.eps_lb:.3f} ({self.mode}, attack {self.attack}, "
                f"{self.n_fits} fits, alpha {self.alpha}) {verdict} ledger epsilon {eps} (delta {self.delta:g})")


def parse_model_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name"`` or ``"name:key=value,key=value"`` -> (name, hyper-parameters); values parsed as JSON if possible."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"A model spec is 'NAME' or 'NAME:key=value,...'. Found {spec!r}.")
    name, _, rest = spec.strip().partition(":")
    params: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InputError(f"Model parameters are key=value pairs. Found {item!r} in {spec!r}.")
        try:
            params[key.strip()] = json.loads(value.strip().replace("True", "true").replace("False", "false"))
        except json.JSONDecodeError:
            params[key.strip()] = value.strip()
    return name.strip(), params


def craft_canary(data: pd.DataFrame, schema: Any = None) -> pd.DataFrame:
    """One record unlike ``data``: per column a schema category absent from ``data`` (else its rarest value),
    numbers at the schema's upper bound (else the data's maximum)."""
    row = {}
    columns = {c.name: c for c in schema.columns} if schema is not None else {}
    for c in data.columns:
        s, col = data[c], columns.get(c)
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            upper = getattr(col, "upper", None)
            row[c] = upper if upper is not None else s.max()
            continue
        cats = list(getattr(col, "categories", None) or [])
        present = set(s.dropna().astype(str))
        absent = [v for v in cats if str(v) not in present]
        row[c] = absent[-1] if absent else s.value_counts().index[-1]
    out = pd.DataFrame([row])
    for c in data.columns:
        try:
            out[c] = out[c].astype(data[c].dtype)
        except (TypeError, ValueError):
            pass
    return out


def novelty_rules(base: pd.DataFrame, canary: pd.DataFrame) -> list[tuple[str, str, Any]]:
    """Where the canary is new w.r.t. the base table D0: (column, "eq"|"gt"|"lt", value or D0's extreme)."""
    rules = []
    for c in base.columns:
        v, s = canary[c].iloc[0], base[c]
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            if v > s.max():
                rules.append((c, "gt", float(s.max())))
            elif v < s.min():
                rules.append((c, "lt", float(s.min())))
        elif str(v) not in set(s.dropna().astype(str)):
            rules.append((c, "eq", str(v)))
    return rules


def _novelty(syn: pd.DataFrame, rules: list[tuple[str, str, Any]]) -> float:
    """Synthetic cells that carry the canary's novel values (what a per-column histogram leaks)."""
    total = 0
    for c, op, v in rules:
        if op == "eq":
            total += int((syn[c].astype(str) == v).sum())
        else:
            x = pd.to_numeric(syn[c], errors="coerce")
            total += int((x > v).sum() if op == "gt" else (x < v).sum())
    return float(total)


def _scores(syn: pd.DataFrame, canaries: pd.DataFrame, encoder: TableEncoder, rules=None) -> dict[str, np.ndarray]:
    syn = syn[encoder.columns]
    syn_codes, can_codes = encoder.codes(syn, canaries)
    out = {
        "hamming": -nearest_hamming(can_codes, syn_codes).astype(float),
        "l2": -nearest_l2(encoder.numeric_matrix(canaries), encoder.numeric_matrix(syn)),
    }
    if rules is not None:
        out["novelty"] = np.array([_novelty(syn, rules)])
    return out


def _audit_job(job: tuple) -> dict[str, np.ndarray]:
    generator, train, seed, n_out, encoder, canaries, rules = job
    return _scores(call_generator(generator, train, seed, n_out), canaries, encoder, rules)


def _counts(score: np.ndarray, labels: np.ndarray, t: float, up: bool) -> tuple[int, int, int, int]:
    guess = score >= t if up else score <= t
    tp = int((guess & labels).sum())
    fp = int((guess & ~labels).sum())
    return tp, int(labels.sum()) - tp, fp, int((~labels).sum()) - fp


def _select(scores: dict[str, np.ndarray], labels: np.ndarray, alpha: float, delta: float, bound) -> tuple:
    best = (-np.inf, SCORES[0], np.inf, True)
    per_score = {}
    for name, s in scores.items():
        top = -np.inf
        for t in np.unique(s):
            for up in (True, False):
                eps = bound(*_counts(s, labels, t, up), alpha=alpha, delta=delta)
                top = max(top, eps)
                if eps > best[0]:
                    best = (eps, name, float(t), up)
        per_score[name] = float(top)
    return best, per_score


def audit_model(
    model: str | Callable[..., pd.DataFrame],
    data: pd.DataFrame,
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    params: dict[str, Any] | None = None,
    schema: Any = None,
    n_rows: int = 200,
    n_fits: int = 200,
    mode: str = "in-out",
    pool: pd.DataFrame | None = None,
    n_canaries: int = 200,
    alpha: float = 0.05,
    executor: Any = None,
    progress: bool = False,
    seed: int = 0,
) -> ModelAudit:
    """Audit ``model`` (a registered name, a ``"name:k=v"`` spec, or a generator with a claimed ``epsilon``).

    ``data``: the population the base table D0 (``n_rows`` rows) is drawn from; ``schema``: public schema for
    the fits (inferred from D0 and the canary when None - public by construction of the audit).
    """
    from dpsynth.privacy.audit import CanaryAudit, eps_lower_bound_cp

    t0 = time.perf_counter()
    if mode not in ("in-out", "one-run"):
        raise InputError(f"Audit mode must be 'in-out' or 'one-run'. Found {mode!r}.")
    if isinstance(n_fits, bool) or not isinstance(n_fits, int) or n_fits < 8:
        raise InputError(f"n_fits must be an integer >= 8. Found {n_fits!r}.")
    if not isinstance(data, pd.DataFrame) or len(data) < n_rows:
        raise InputError(f"data must be a DataFrame with at least n_rows={n_rows} rows.")
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(data), size=n_rows, replace=False)
    base = data.iloc[chosen].reset_index(drop=True)
    if schema is None:
        from dpsynth.data.inference import infer_schema

        schema = infer_schema(pd.concat([base, craft_canary(base)], ignore_index=True), warn=False)
        base = base[[c.name for c in schema.columns]]
    if isinstance(model, str):
        name, spec_params = parse_model_spec(model)
        epsilon = float(spec_params.pop("epsilon", epsilon))
        delta = float(spec_params.pop("delta", delta))
        generator = ModelFactory(name, epsilon=epsilon, delta=delta, schema=schema, **{**spec_params, **(params or {})})
        label = model
        claimed = float(generator.fit(base, seed).epsilon_)  # the ledger's composed epsilon
    else:
        generator, label, claimed = model, getattr(model, "__name__", type(model).__name__), float(epsilon)
    ex = get_executor(executor)

    if mode == "one-run":
        pool_df = data.drop(index=data.index[chosen]) if pool is None else pool
        pool_df = pool_df[list(base.columns)]
        canaries = pool_df.iloc[rng.choice(len(pool_df), size=n_canaries, replace=False)].reset_index(drop=True)
        import torch

        audit = CanaryAudit(n_canaries, generator=torch.Generator().manual_seed(seed))
        inc = audit.included.numpy()
        train = pd.concat([base, canaries[inc]], ignore_index=True)
        encoder = TableEncoder(pd.concat([base, canaries], ignore_index=True))
        scores = _audit_job((generator, train, seed, len(train), encoder, canaries, None))["l2"]
        k = max(1, n_canaries // 10)
        res = audit.lower_bound(scores, k_plus=k, k_minus=k, p=alpha, delta=delta)
        return ModelAudit(label, claimed, delta, float(res.eps_lower_bound), mode, "closest_distance_l2",
                          {"m": n_canaries, "guesses": res.guesses, "correct": res.correct}, 1, n_rows, alpha,
                          time.perf_counter() - t0, "one fit; canaries are held-out population rows")

    canary = craft_canary(base, schema)
    encoder = TableEncoder(pd.concat([base, canary], ignore_index=True))
    labels = rng.permutation(np.r_[np.ones(n_fits // 2, bool), np.zeros(n_fits - n_fits // 2, bool)])
    with_canary = pd.concat([base, canary], ignore_index=True)
    rules = novelty_rules(base, canary)
    jobs = [(generator, with_canary if lab else base, int(rng.integers(2**31 - 1)), n_rows, encoder, canary, rules)
            for lab in labels]
    outs = ex.map(_audit_job, jobs, desc="audit fits", progress=progress)
    scores = {s: np.array([o[s][0] for o in outs]) for s in SCORES}
    sel = np.zeros(n_fits, bool)
    sel[: n_fits // 2] = True  # labels are already a random permutation
    (_, attack, t, up), per_score = _select({s: v[sel] for s, v in scores.items()}, labels[sel], alpha, delta,
                                                  eps_lower_bound_cp)
    tp, fn, fp, tn = _counts(scores[attack][~sel], labels[~sel], t, up)
    eps_lb = float(eps_lower_bound_cp(tp, fn, fp, tn, alpha=alpha, delta=delta))
    return ModelAudit(label, claimed, delta, eps_lb, mode, attack, {"tp": tp, "fn": fn, "fp": fp, "tn": tn}, n_fits,
                      n_rows, alpha, time.perf_counter() - t0,
                      f"attack chosen on {int(sel.sum())} fits (threshold {t:g}, {'>=' if up else '<='}), "
                      f"bound from the other {int((~sel).sum())}", per_score)
