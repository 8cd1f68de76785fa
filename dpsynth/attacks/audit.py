"""Empirical privacy audit of a model: an epsilon lower bound next to the ledger's epsilon (DESIGN.md §1 rule 7).

A base table D0 of ``n_rows`` rows is drawn from ``data``. Canaries are records the auditor controls that carry
values D0 lacks (:mod:`dpsynth.attacks._canaries`): a schema category D0 lacks, a number above D0's range.
Without a schema the audit declares one (inferred from D0, plus one fresh category per categorical column and
room above each numeric range), so audits of data without a public schema have power too.

``mode="in-out"`` (Jagielski et al. 2020, Nasr et al. 2021): one canary is inserted in half of ``n_fits`` fits
on D0 (add/remove neighbours, the relation of dpsynth's ledger). Each fit's output is scored against the canary
(closest distance Hamming and L2 - the latter is GAN-Leaks' full black-box score -, kernel density, novelty:
synthetic cells carrying the canary's values D0 lacks). With ``attack="auto"`` the strongest score, threshold
and direction are chosen on one half of the fits and judged on the other, so the bound stays valid; a named
pre-registered attack (``"novelty"``: some cell carries a canary value; ``"hamming"``: the canary is copied)
needs no selection and uses every fit. Bound: ``eps_lower_bound_cp`` (Clopper-Pearson at level alpha).
Cost: ``n_fits`` fits (200 by default; DP marginals ~0.5 s each).

``mode="one-run"`` (Steinke, Nasr, Jagielski 2023): ``n_canaries`` real rows of the population, each tagged
with its own fresh category of one column (declared in the schema), each included w.p. 1/2 in ONE fit;
``n_synthetic`` rows are sampled; score = rows carrying the canary's tag (tie-break: nearest L2); "in"
guesses on the top ``n_guesses`` scores, no "out" guess; bound ``eps_lower_bound_one_run``. Cost: one fit (run
in this process, with the model's progress bars), so a deep model is audited in about a minute instead of hours
(measured, 800 base rows, fast_params, 2 shared cores: dp-auto-gan 25 s, dp-tldm with a wider network 47 s).

``mode="auto"`` (default): the one-run audit runs first and its fit is timed; if ``n_fits`` in-out fits would
take at most ``budget_seconds`` on the executor's workers, the in-out audit runs and is the result, else the
one-run result is (the choice depends on the timing only, never on an outcome). Fast models thus get the
stronger in-out audit for one extra fit, slow ones the one-run audit at no extra cost. The estimate goes to the
``dpsynth.attacks.audit`` logger (the CLI prints it); in-out fits run with a progress bar.

The claimed epsilon is the largest ledger epsilon over every fit (with and without canaries). An audit has
power only if its largest achievable eps_LB (every guess right, at this number of fits or guesses) exceeds the
claim and the canary has values D0 lacks: otherwise the verdict says the audit cannot detect a violation.

Guarantee tested: for an (eps, delta)-DP model, eps_LB <= eps with probability >= 1 - alpha.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpsynth.attacks._canaries import (
    SCORES,
    audit_schema,
    craft_canary,
    novelty_rules,
    score_canary,
    tag_canaries,
    tag_column,
    tag_scores,
)
from dpsynth.attacks._encoding import TableEncoder
from dpsynth.attacks.shadow import ModelFactory, call_generator
from dpsynth.errors import InputError
from dpsynth.executor import get_executor

__all__ = ["ATTACKS", "MODES", "SCORES", "ModelAudit", "audit_model", "audit_schema", "craft_canary",
           "max_achievable_eps_lb", "novelty_rules", "parse_model_spec"]

MODES = ("auto", "in-out", "one-run")
ATTACKS = ("auto", "novelty", "hamming")
# pre-registered rules (score, threshold, "in" when score >= threshold): fixed before any fit is seen
_PRESET = {"novelty": 1.0, "hamming": 0.0}
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelAudit:
    """Outcome of :func:`audit_model`. ``passed``: eps_lb <= epsilon (no violation found); ``verdict`` also
    says whether the audit could have found one (``has_power``)."""

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
    max_eps_lb: float
    novel_values: int
    notes: str = ""
    selection: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.eps_lb <= self.epsilon + 1e-9

    @property
    def has_power(self) -> bool:
        """The canary differs from D0 and a perfect attack would exceed the claimed epsilon."""
        return self.novel_values > 0 and self.max_eps_lb > self.epsilon + 1e-9

    @property
    def verdict(self) -> str:
        """"exceeds", "no-claim" (epsilon inf), "no-power" or "consistent"."""
        if not self.passed:
            return "exceeds"
        if math.isinf(self.epsilon):
            return "no-claim"
        return "consistent" if self.has_power else "no-power"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["epsilon"] = "inf" if math.isinf(self.epsilon) else self.epsilon
        d.update(passed=self.passed, has_power=self.has_power, verdict=self.verdict)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        eps = "inf" if math.isinf(self.epsilon) else f"{self.epsilon:.3f}"
        head = (f"{self.model}: empirical eps_LB = {self.eps_lb:.3f} ({self.mode}, attack {self.attack}, "
                f"{self.n_fits} fit{'s' * (self.n_fits != 1)}, alpha {self.alpha})")
        ledger = f"ledger epsilon {eps} (delta {self.delta:g})"
        verdict = self.verdict
        if verdict == "exceeds":
            return f"{head} EXCEEDS {ledger} (max achievable eps_LB {self.max_eps_lb:.3f})"
        if verdict == "no-claim":
            return f"{head}; {ledger}: no DP claim to test (eps_LB measures the attack's strength)"
        if verdict == "no-power":
            why = ("the canary has no value the base table lacks (declare categories or bounds D0 does not reach, "
                   "or give no schema)" if self.novel_values == 0 else
                   f"max achievable eps_LB = {self.max_eps_lb:.3f} < epsilon {eps} (use more fits, or more "
                   "canaries and guesses)")
            return f"{head}; {ledger}: the audit cannot detect a violation at this size: {why}"
        return f"{head} consistent with {ledger} (max achievable eps_LB {self.max_eps_lb:.3f})"


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


def max_achievable_eps_lb(mode: str, *, alpha: float, delta: float, n_pos: int = 0, n_neg: int = 0,
                          m: int = 0, guesses: int = 0) -> float:
    """The eps_LB of a perfect attack: in-out with n_pos / n_neg judged fits, one-run with m canaries and
    ``guesses`` "in" guesses. A claimed epsilon at or above it cannot be refuted at this size."""
    from dpsynth.privacy.audit import eps_lower_bound_cp, eps_lower_bound_one_run

    if mode == "one-run":
        return float(eps_lower_bound_one_run(m, guesses, guesses, p=alpha, delta=delta))
    return float(eps_lower_bound_cp(n_pos, 0, 0, n_neg, alpha=alpha, delta=delta))


# ------------------------------------------------------------------------------------------------ fits
def _with_schema(generator: Any, schema: Any) -> Any:
    if isinstance(generator, ModelFactory):
        return ModelFactory(generator.model, epsilon=generator.epsilon, delta=generator.delta, schema=schema,
                            noise=generator.noise, **generator.hyperparams)
    return generator


def _fit_sample(generator: Any, train: pd.DataFrame, seed: int, n: int, schema: Any,
                progress: bool = False) -> tuple[pd.DataFrame, float]:
    """(synthetic rows, the fit's ledger epsilon; nan when the generator is a plain callable)."""
    if isinstance(generator, ModelFactory):
        model = generator.fit(train, seed, progress=progress)
        return model.sample(n, seed=seed + 1), float(model.epsilon_)
    return call_generator(generator, train, seed, n, schema=schema), math.nan


def _job(job: tuple, progress: bool = False) -> tuple[Any, float, float]:
    """(scores, the fit's ledger epsilon, seconds to fit and sample)."""
    kind, generator, train, seed, n_out, schema, payload = job
    t0 = time.perf_counter()
    syn, eps = _fit_sample(generator, train, seed, n_out, schema, progress)
    seconds = time.perf_counter() - t0
    scores = score_canary(syn, *payload) if kind == "in-out" else tag_scores(syn, *payload)
    return scores, eps, seconds


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


def _in_out(gen, base, schema, *, n_fits, attack, alpha, delta, rng, ex, progress) -> dict[str, Any]:
    from dpsynth.privacy.audit import eps_lower_bound_cp

    canary = craft_canary(base, schema)
    rules = novelty_rules(base, canary)
    encoder = TableEncoder(pd.concat([base, canary], ignore_index=True))
    labels = rng.permutation(np.r_[np.ones(n_fits // 2, bool), np.zeros(n_fits - n_fits // 2, bool)])
    with_canary = pd.concat([base, canary], ignore_index=True)
    jobs = [("in-out", gen, with_canary if lab else base, int(rng.integers(2**31 - 1)), len(base), schema,
             (canary, encoder, rules)) for lab in labels]
    _log.info("audit in-out: %d fits on %d rows, canary new in %d column(s)", n_fits, len(base), len(rules))
    outs = ex.map(_job, jobs, desc="audit fits", progress=progress)
    scores = {s: np.array([o[0][s] for o in outs]) for s in SCORES}
    judged = np.ones(n_fits, bool)
    if attack == "auto":
        sel = np.zeros(n_fits, bool)
        sel[: n_fits // 2] = True  # labels are already a random permutation
        judged = ~sel
        (_, attack, t, up), per_score = _select({s: v[sel] for s, v in scores.items()}, labels[sel], alpha, delta,
                                                eps_lower_bound_cp)
        how = f"attack chosen on {int(sel.sum())} fits (threshold {t:g}, {'>=' if up else '<='}), bound from the " \
              f"other {int(judged.sum())}"
    else:
        t, up, per_score = _PRESET[attack], True, {}
        how = f"pre-registered attack {attack} >= {t:g}, bound from all {n_fits} fits"
    tp, fn, fp, tn = _counts(scores[attack][judged], labels[judged], t, up)
    return dict(
        eps_lb=float(eps_lower_bound_cp(tp, fn, fp, tn, alpha=alpha, delta=delta)), attack=attack,
        counts={"tp": tp, "fn": fn, "fp": fp, "tn": tn}, n_fits=n_fits, notes=how, selection=per_score,
        max_eps_lb=max_achievable_eps_lb("in-out", alpha=alpha, delta=delta, n_pos=tp + fn, n_neg=fp + tn),
        novel_values=len(rules), fit_eps=[o[1] for o in outs])


def _one_run(gen, base, schema, pool, *, built, m, k, n_synthetic, alpha, delta, rng, seed,
             progress) -> dict[str, Any]:
    import torch

    from dpsynth.privacy.audit import CanaryAudit

    missing = [c for c in base.columns if c not in pool.columns]
    if missing or len(pool) == 0:
        raise InputError(f"The canary pool must be a non-empty frame with the data's columns. Missing {missing}.")
    rows = pool[list(base.columns)].iloc[rng.choice(len(pool), size=m, replace=len(pool) < m)]
    if built:  # the canaries' other values must fit the schema the audit declares: declare it from D0 + them
        schema = audit_schema(pd.concat([base, rows], ignore_index=True))
    column = tag_column(schema, base)
    tagged, canaries = tag_canaries(schema, rows, column)
    audit = CanaryAudit(m, generator=torch.Generator().manual_seed(seed))
    train = pd.concat([base, canaries[audit.included.numpy()]], ignore_index=True)
    encoder = TableEncoder(pd.concat([base, canaries], ignore_index=True))
    _log.info("audit one-run: 1 fit on %d rows (%d base + %d of %d tagged canaries in '%s'), %d rows sampled",
              len(train), len(base), len(train) - len(base), m, column, n_synthetic)
    job = ("one-run", _with_schema(gen, tagged), train, seed, n_synthetic, tagged, (canaries, column, encoder))
    scores, eps, seconds = _job(job, progress)  # one fit: in this process, with the model's own progress bars
    res = audit.lower_bound(scores, k_plus=k, k_minus=0, p=alpha, delta=delta)
    return dict(
        eps_lb=float(res.eps_lower_bound), attack="canary_tag_count",
        counts={"m": m, "guesses": res.guesses, "correct": res.correct}, n_fits=1, selection={},
        notes=f"one fit; {m} canaries tagged with new categories of '{column}', each included w.p. 1/2; "
              f"{k} 'in' guesses on the top tag counts in {n_synthetic} synthetic rows",
        max_eps_lb=max_achievable_eps_lb("one-run", alpha=alpha, delta=delta, m=m, guesses=k),
        novel_values=m, fit_eps=[eps], fit_seconds=seconds)


# ------------------------------------------------------------------------------------------------ API
def _check(mode, attack, n_fits, data, n_rows, n_canaries, n_guesses, n_synthetic) -> None:
    if mode not in MODES:
        raise InputError(f"Audit mode must be one of {MODES}. Found {mode!r}.")
    if attack not in ATTACKS:
        raise InputError(f"Audit attack must be one of {ATTACKS}. Found {attack!r}.")
    for name, v, low in (("n_fits", n_fits, 8), ("n_canaries", n_canaries, 2), ("n_synthetic", n_synthetic, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise InputError(f"{name} must be an integer >= {low}. Found {v!r}.")
    if n_guesses is not None and not (isinstance(n_guesses, int) and 1 <= n_guesses <= n_canaries):
        raise InputError(f"n_guesses must be an integer in [1, n_canaries={n_canaries}]. Found {n_guesses!r}.")
    if not isinstance(data, pd.DataFrame) or len(data) < n_rows:
        raise InputError(f"data must be a DataFrame with at least n_rows={n_rows} rows.")


def _choose_mode(fit_seconds: float, *, n_fits: int, ex: Any, budget: float) -> tuple[str, str]:
    workers = max(1, int(getattr(ex, "max_workers", 1)))
    estimate = fit_seconds * n_fits / workers
    mode = "in-out" if estimate <= budget else "one-run"
    note = (f"auto: the one-run fit took {fit_seconds:.1f} s, so in-out with {n_fits} fits would take "
            f"~{estimate / 60:.1f} min on {workers} worker(s) ({'within' if mode == 'in-out' else 'over'} the "
            f"{budget / 60:.0f} min budget): {mode}")
    _log.info("%s", note)
    return mode, note


def audit_model(
    model: str | Callable[..., pd.DataFrame],
    data: pd.DataFrame,
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    params: dict[str, Any] | None = None,
    schema: Any = None,
    n_rows: int = 200,
    mode: str = "auto",
    n_fits: int = 200,
    attack: str = "auto",
    pool: pd.DataFrame | None = None,
    n_canaries: int = 100,
    n_guesses: int | None = None,
    n_synthetic: int = 20_000,
    budget_seconds: float = 900.0,
    alpha: float = 0.05,
    executor: Any = None,
    progress: bool = False,
    seed: int = 0,
    noise: str = "numpy",
) -> ModelAudit:
    """Audit ``model`` (a registered name, a ``"name:k=v"`` spec, or a generator with a claimed ``epsilon``).

    ``data``: the population D0 (``n_rows`` rows) and the one-run canaries (from ``pool``, default the rest of
    ``data``) are drawn from; ``schema``: public schema for the fits (None: the audit declares one, see the
    module docstring). A callable generator ``(train, seed, n=..., [schema=...])`` receives the audit's schema
    when it takes a ``schema`` argument; its claimed ``epsilon`` is taken as given. ``n_guesses`` defaults to
    ``n_canaries // 5``. ``noise``: a registered model's fits' noise (``"secure"``: OpenDP's samplers, as a release
    with ``--noise secure`` draws them).
    """
    t0 = time.perf_counter()
    _check(mode, attack, n_fits, data, n_rows, n_canaries, n_guesses, n_synthetic)
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(data), size=n_rows, replace=False)
    base = data.iloc[chosen].reset_index(drop=True)
    built = schema is None
    if built:
        schema = audit_schema(base)
        base = base[[c.name for c in schema.columns]]
    if isinstance(model, str):
        name, spec_params = parse_model_spec(model)
        epsilon = float(spec_params.pop("epsilon", epsilon))
        delta = float(spec_params.pop("delta", delta))
        gen: Any = ModelFactory(name, epsilon=epsilon, delta=delta, schema=schema, noise=noise,
                                **{**spec_params, **(params or {})})
        label = model
    else:
        gen, label = model, getattr(model, "__name__", type(model).__name__)
    ex = get_executor(executor)
    notes, out = [], None
    if isinstance(model, str) and noise != "numpy":
        notes.append(f"fits with noise={noise!r} (OpenDP's samplers)")
    if mode != "in-out":
        pool_df = data.drop(index=data.index[chosen]) if pool is None else pool
        try:
            out = _one_run(gen, base, schema, pool_df, built=built, m=n_canaries,
                           k=n_guesses or max(1, n_canaries // 5), n_synthetic=n_synthetic, alpha=alpha, delta=delta,
                           rng=np.random.default_rng([seed, 2]), seed=seed, progress=progress)
        except InputError as exc:
            if mode == "one-run":
                raise
            notes.append(f"auto: in-out ({exc})")
            mode = "in-out"
    if mode == "auto":  # the one-run fit is the probe: it times a fit, and is the result if in-out is too slow
        mode, note = _choose_mode(out.pop("fit_seconds"), n_fits=n_fits, ex=ex, budget=budget_seconds)
        notes.append(note)
    if mode == "in-out":
        out = _in_out(gen, base, schema, n_fits=n_fits, attack=attack, alpha=alpha, delta=delta,
                      rng=np.random.default_rng([seed, 1]), ex=ex, progress=progress)
    out.pop("fit_seconds", None)
    measured = [e for e in out.pop("fit_eps") if not math.isnan(e)]
    # the claim is the largest ledger epsilon of any fit: a model whose epsilon depends on the data must not be
    # judged against the smallest one
    claimed = max(measured) if measured else float(epsilon)
    notes.append(out.pop("notes"))
    return ModelAudit(model=label, epsilon=claimed, delta=delta, mode=mode, n_rows=n_rows, alpha=alpha,
                      seconds=time.perf_counter() - t0, notes="; ".join(notes), **out)
