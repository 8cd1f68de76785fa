"""Speed of the privacy-risk attacks on Adult (issue 6): prints a table, does not pass/fail.

    python benchmarks/risk_speed.py [--workers 2] [--skip-shadow] [--preset fast|paper] [--audit MODEL,...]

1. ``assess_risk`` with the default (non-shadow) attacks: 32,561 training rows, a marginals release of the same
   size (epsilon 1), the 16,281-row test split as control, 1,000 targets. Budget: 3 minutes on 2 cores.
2. The shadow-model (groundhog) attack, ``fast`` preset, generator = marginals at epsilon 1. Budget: 15 minutes.
3. With ``--audit``: ``audit_model`` of each named model at epsilon 1 on 200 Adult rows, method "auto" (the
   one-run audit, timed; then 200 in-out fits if they fit in 15 minutes); ``--audit-fast`` uses each model's
   fast_params. No budget: the figures document what an audit costs.
Timings on a shared machine are upper bounds: say so when you quote them.

Measured 2026-11-23 (``--audit marginals,dp-tldm --audit-fast``, 2 workers, a day the VM ran 2.5-3.7x slower than
the one before; peak RSS 0.9 GB)::

    task                                                 wall s   CPU s   budget
    assess_risk default attacks (Adult, 1000 targets)      93.1   127.2      180
    shadow groundhog, fast preset (marginals eps=1)       235.8   269.9      900
    audit marginals (fast_params): in-out, 200 fits        40.1    70.0        -
    audit dp-tldm (fast_params): one-run, 1 fit            41.7    42.8        -

Later the same day, after the executor moved to joblib's loky (workers reused between calls) and with the
machine faster again: default attacks 48.8 s wall / 97.9 CPU-s, shadow fast preset 69.1 s / 130.7 CPU-s, audit
of marginals 24.5 s / 50.2 CPU-s; every risk number identical (each job carries its own seed).

Slowest default attacks: anonymeter's multivariate singling out (65 s) and the nearest-neighbour attribute
attack (33 s). Both audits: eps_LB 0.000, consistent with the ledger's 1.0 (max achievable 2.6 and 1.8).
"""

from __future__ import annotations

import argparse
import math
import resource
import time


def _cpu() -> float:
    """CPU seconds of this process and its worker processes (loky keeps workers alive between calls: they are
    shut down first so that the kernel has reaped them and counts them in RUSAGE_CHILDREN)."""
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-shadow", action="store_true")
    ap.add_argument("--skip-default", action="store_true")
    ap.add_argument("--preset", default="fast", choices=["fast", "paper"])
    ap.add_argument("--audit", default="", help="comma-separated models to audit (e.g. marginals,dp-tldm)")
    ap.add_argument("--audit-fast", action="store_true", help="audit with each model's fast_params")
    args = ap.parse_args()

    import pandas as pd

    from dpsynth.attacks import GroundhogAttack, LocalExecutor, ModelFactory, assess_risk
    from dpsynth.datasets import load, schema
    from dpsynth.models.marginals import Marginals

    train, test = load("adult").split()
    sc = schema("adult")
    rows = []
    if not args.skip_default:
        release = Marginals().fit(train, epsilon=1.0, delta=1e-5, schema=sc, seed=0).sample(seed=1)
        t0, c0 = time.perf_counter(), _cpu()
        rr = assess_risk(train, release, control=test, executor=LocalExecutor(args.workers), seed=0)
        total, cpu = time.perf_counter() - t0, _cpu() - c0
        print(rr.summary.drop(columns=["notes"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        rows.append(("assess_risk default attacks (Adult, 1000 targets)", total, cpu, 180.0))
    if not args.skip_shadow:
        factory = ModelFactory("marginals", epsilon=1.0, delta=1e-5, schema=sc)
        t0, c0 = time.perf_counter(), _cpu()
        res = GroundhogAttack(pd.concat([test, train], ignore_index=True), factory, config=args.preset,
                              executor=LocalExecutor(args.workers), seed=0).evaluate_all()
        total, cpu = time.perf_counter() - t0, _cpu() - c0
        for f, r in res.items():
            print(f"shadow {f:12s} accuracy {r.metric('accuracy'):.3f}  privacy gain {r.metric('privacy_gain'):.3f}"
                  f"  risk {r.value:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}]")
        rows.append((f"shadow groundhog, {args.preset} preset (marginals eps=1)", total, cpu,
                     900.0 if args.preset == "fast" else float("nan")))
    for name in filter(None, args.audit.split(",")):
        rows.append(_audit_row(name.strip(), train, sc, args.workers, args.audit_fast))
    print()
    print(f"{'task':55s} {'wall s':>8s} {'CPU s':>8s} {'CPU/2':>7s} {'budget':>7s}  within (wall / CPU/2)")
    for name, secs, cpu, budget in rows:
        ok = ["n/a" if math.isnan(budget) else ("yes" if v <= budget else "NO") for v in (secs, cpu / 2)]
        print(f"{name:55s} {secs:8.1f} {cpu:8.1f} {cpu / 2:7.1f} {budget:7.0f}  {ok[0]} / {ok[1]}")
    print(f"(workers: {args.workers}; wall-clock on a machine shared with other jobs; CPU/2 = CPU seconds spread "
          "over 2 cores, the uncontended estimate)")


def _audit_row(name: str, data, schema, workers: int, fast: bool) -> tuple[str, float, float, float]:
    from dpsynth.attacks import LocalExecutor, audit_model
    from dpsynth.models import get_model_class

    params = dict(getattr(get_model_class(name), "fast_params", None) or {}) if fast else {}
    t0, c0 = time.perf_counter(), _cpu()
    audit = audit_model(name, data, epsilon=1.0, delta=1e-5, params=params, schema=schema,
                        executor=LocalExecutor(workers), seed=0)
    total, cpu = time.perf_counter() - t0, _cpu() - c0
    print(audit)
    print(f"  {audit.notes}")
    return (f"audit {name}{' (fast_params)' if fast else ''}: {audit.mode}, {audit.n_fits} fit(s)", total, cpu,
            float("nan"))


if __name__ == "__main__":
    main()
