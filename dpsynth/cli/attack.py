"""``dpsynth attack`` and ``dpsynth audit``: argument parsing and printing only (the logic is in the API).

- ``dpsynth attack TRAIN SYNTHETIC [--control CSV] [--attacks default|all|a,b] [--json F] [--report F.html]``:
  :func:`~dpsynth.attacks.risk.assess_risk`. TRAIN may be a bundled dataset name ("adult"): its test split is
  then the control set unless ``--control`` is given. ``--model`` (+ ``--epsilon``, ``--param``) names the
  generator for the shadow attack (``--attacks all`` or ``shadow_groundhog``), ``--fast`` / ``--paper`` its size.
- ``dpsynth audit MODEL-SPEC [--data adult] [--epsilon 1] [--method auto|in-out|one-run] [--fits 200] [--json F]``:
  :func:`~dpsynth.attacks.audit.audit_model`; exit code 1 when eps_LB exceeds the ledger's epsilon, 3 when the
  audit has no power (its largest achievable eps_LB is below the claim, or the canary is not new), else 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dpsynth.errors import InputError

__all__ = ["add_parsers", "run_attack", "run_audit"]


def _eps(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"epsilon must be a number or 'inf'. Found {text!r}.") from None


def _executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--sequential", action="store_true", help="run everything in this process")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def add_parsers(subparsers) -> None:
    """Register the ``attack`` and ``audit`` subcommands on an argparse subparsers object."""
    p = subparsers.add_parser("attack", help="measure the privacy risk of a synthetic table (attacks)")
    p.add_argument("train", help="training data the release came from: CSV/Parquet path or dataset name")
    p.add_argument("synthetic", help="synthetic table (CSV/Parquet)")
    p.add_argument("--control", help="real rows of the same population NOT used for training")
    p.add_argument("--attacks", default="default",
                   help="'default', 'all' (adds the shadow attack) or names, comma-separated")
    p.add_argument("--sensitive", help="secret column for attribute inference (default: age, else first numeric)")
    p.add_argument("--targets", type=int, default=1000, help="records attacked per attack (default 1000)")
    p.add_argument("--model", help="generator for the shadow attack: MODEL or MODEL:key=value,...")
    p.add_argument("--epsilon", type=_eps, default=1.0, help="epsilon of the shadow generator")
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--schema", help="public schema file for the shadow generator")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--fast", dest="shadow", action="store_const", const="fast",
                      help="shadow attack in minutes (default)")
    size.add_argument("--paper", dest="shadow", action="store_const", const="paper", help="seed 002 shadow settings")
    p.set_defaults(shadow="fast")
    p.add_argument("--json", help="write the results as JSON here")
    p.add_argument("--report", help="write an HTML report (risk section) here")
    _executor_args(p)
    p.set_defaults(func=run_attack)

    p = subparsers.add_parser(
        "audit", help="empirical epsilon lower bound of a model (canaries; exit 1: exceeds, 3: audit has no power)")
    p.add_argument("model", metavar="MODEL-SPEC", help="MODEL or MODEL:key=value,... (e.g. marginals)")
    p.add_argument("--data", default="adult", help="population to draw the small base table from (default adult)")
    p.add_argument("--schema", help="public schema file (default: the dataset's, else one the audit declares)")
    p.add_argument("--epsilon", type=_eps, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--rows", type=int, default=200, help="rows of the base table D0 (default 200)")
    p.add_argument("--method", "--mode", dest="method", choices=["auto", "in-out", "one-run"], default="auto",
                   help="in-out: --fits fits, half with a canary (marginals: ~0.5 s a fit); one-run: ONE fit with "
                        "--canaries tagged canaries (deep models: 0.5-3 min); auto (default): one-run, then in-out "
                        "too (and reported) if its timed fit says --fits fits take at most --budget minutes")
    p.add_argument("--fits", type=int, default=200, help="in-out: model fits, half with the canary (default 200)")
    p.add_argument("--attack", choices=["auto", "novelty", "hamming"], default="auto",
                   help="in-out: 'auto' picks the strongest score on half the fits; a pre-registered one uses all")
    p.add_argument("--canaries", type=int, default=100, help="one-run: tagged canaries (default 100)")
    p.add_argument("--guesses", type=int, help="one-run: 'in' guesses (default canaries / 5)")
    p.add_argument("--synthetic", type=int, default=20_000, help="one-run: synthetic rows scored (default 20000)")
    p.add_argument("--budget", type=float, default=15.0, help="auto: minutes allowed for in-out (default 15)")
    p.add_argument("--fast", action="store_true",
                   help="use the model's small fast_params (a quick check of the code path, not of the release setup)")
    p.add_argument("--alpha", type=float, default=0.05, help="1 - confidence of the lower bound")
    p.add_argument("--noise", choices=["numpy", "secure"], default="numpy",
                   help="the fits' noise: 'secure' audits the secure samplers (OpenDP's counts, the cryptographic "
                        "generator's training noise), as `dpsynth fit --noise secure` draws them")
    p.add_argument("--json", help="write the audit as JSON here")
    _executor_args(p)
    p.set_defaults(func=run_audit)


def _executor(args):
    from dpsynth.executor import LocalExecutor, SequentialExecutor

    if args.sequential or args.workers <= 1:
        return SequentialExecutor()
    return LocalExecutor(args.workers)


def _schema(path):
    if not path:
        return None
    from dpsynth.data.schema import Schema

    return Schema.load(path)


def run_attack(args) -> int:
    import pandas as pd

    from dpsynth._io import read_table
    from dpsynth.attacks.risk import assess_risk
    from dpsynth.datasets import load_table

    train, test, bundled_schema, _ = load_table(args.train)
    synthetic = read_table(args.synthetic)
    control = read_table(args.control) if args.control else None
    if control is None and test is not None:
        control = test
        print(f"dpsynth: using the test split of '{args.train}' as the control set", file=sys.stderr)
    generator = None
    if args.model:
        from dpsynth.attacks.audit import parse_model_spec
        from dpsynth.attacks.shadow import ModelFactory

        name, params = parse_model_spec(args.model)
        generator = ModelFactory(name, epsilon=args.epsilon, delta=args.delta,
                                 schema=_schema(args.schema) or bundled_schema, **params)
    missing = [c for c in synthetic.columns if c not in train.columns]
    if missing:
        raise InputError(f"The synthetic table has columns the training data lacks: {missing}.")
    train = train[list(synthetic.columns)]
    control = None if control is None else control[list(synthetic.columns)]
    result = assess_risk(train, synthetic, control=control, generator=generator, attacks=args.attacks,
                         sensitive=args.sensitive, n_targets=args.targets, shadow=args.shadow,
                         executor=_executor(args), seed=args.seed, progress=not args.quiet)
    with pd.option_context("display.width", 160, "display.max_colwidth", 60):
        print(result.summary.drop(columns=["notes"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for name, why in result.skipped.items():
        print(f"dpsynth: skipped {name}: {why}", file=sys.stderr)
    if args.json:
        result.to_json(args.json)
        print(f"dpsynth: wrote {args.json}", file=sys.stderr)
    if args.report:
        write_risk_report(result, args.report, title=f"Privacy risk of {Path(args.synthetic).name}")
        print(f"dpsynth: wrote {args.report}", file=sys.stderr)
    return 0


def write_risk_report(result, path: str, *, title: str) -> None:
    """The evaluation report's page holding only the risk section (same style, render check and atomic write)."""
    from dpsynth.evaluation.report import write_report

    write_report(path, None, extra_sections=[("Privacy risk", result.to_html_section())], title=title)


def run_audit(args) -> int:
    import logging

    from dpsynth.attacks.audit import audit_model, parse_model_spec
    from dpsynth.datasets import load_table

    data, _, bundled_schema, _ = load_table(args.data)
    params = {}
    if args.fast:
        from dpsynth.models import get_model_class

        params = dict(getattr(get_model_class(parse_model_spec(args.model)[0]), "fast_params", None) or {})
    log = logging.getLogger("dpsynth.attacks.audit")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("dpsynth: %(message)s"))
    if not args.quiet:  # the time estimate and the chosen method
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    try:
        audit = audit_model(args.model, data, epsilon=args.epsilon, delta=args.delta, params=params,
                            schema=_schema(args.schema) or bundled_schema, n_rows=args.rows, mode=args.method,
                            n_fits=args.fits, attack=args.attack, n_canaries=args.canaries, n_guesses=args.guesses,
                            n_synthetic=args.synthetic, budget_seconds=60.0 * args.budget, alpha=args.alpha,
                            executor=_executor(args), progress=not args.quiet, seed=args.seed, noise=args.noise)
    finally:
        log.removeHandler(handler)
    print(audit)
    if args.json:
        from dpsynth._io import atomic_write_text

        atomic_write_text(args.json, json.dumps(audit.to_dict(), indent=2) + "\n")
        print(f"dpsynth: wrote {args.json}", file=sys.stderr)
    return {"exceeds": 1, "no-power": 3}.get(audit.verdict, 0)
