"""CLI subcommands ``dpsynth evaluate`` and ``dpsynth report`` (registered by :mod:`dpsynth.cli.main`), and the
demo's evaluation + risk report.

``dpsynth evaluate --real DATA --synthetic FILE [--test DATA] [--target COL] [--schema FILE] [--model FILE]
--json out.json [--report out.html] [--risk risk.json]``: DATA is a bundled dataset name (``adult`` brings its
official test split and its target; ``--test adult`` means that test split) or a CSV / Parquet path.
``dpsynth report [--json evaluation.json] [--risk risk.json] [--model FILE] --report out.html`` re-renders a
saved evaluation, with the privacy-risk results of ``dpsynth attack --json`` beside it when ``--risk`` is
given. User mistakes raise :class:`~dpsynth.errors.InputError`.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpsynth.errors import InputError

if TYPE_CHECKING:  # pandas and the readers are imported where used: the CLI's start-up stays light
    import pandas as pd

__all__ = ["add_parsers", "run_evaluate", "run_report", "load_data", "load_test", "load_ledger", "demo_report"]

_RISK_HELP = "risk results (dpsynth attack --json) to show beside utility in the report"


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Register ``evaluate`` and ``report`` on an argparse subparsers object (sets ``func`` defaults)."""
    ev = subparsers.add_parser("evaluate", help="score a synthetic table against the real one (JSON + HTML report)")
    ev.add_argument("--real", required=True, metavar="DATA", help="bundled dataset name (e.g. adult) or CSV/Parquet")
    ev.add_argument("--synthetic", required=True, metavar="FILE", help="synthetic table (CSV/Parquet)")
    ev.add_argument("--test", metavar="DATA", help="real test rows (default: the bundled dataset's test split)")
    ev.add_argument("--target", metavar="COL", help="target column for ML efficacy")
    ev.add_argument("--schema", metavar="FILE", help="schema JSON/YAML (column kinds, target)")
    ev.add_argument("--model", metavar="MODEL_FILE", help="model file whose privacy ledger goes in the report")
    ev.add_argument("--metrics", default="all", help="'all' or comma-separated groups")
    ev.add_argument("--seeds", default="0,1,2", help="comma-separated model seeds (default 0,1,2)")
    ev.add_argument("--jobs", type=int, default=2, help="worker processes for model fits (default 2)")
    ev.add_argument("--json", required=True, metavar="OUT_JSON", help="where to write the metric table (JSON)")
    ev.add_argument("--report", metavar="OUT_HTML", help="where to write the HTML report")
    ev.add_argument("--risk", metavar="RISK_JSON", help=_RISK_HELP + " (needs --report)")
    ev.add_argument("--quiet", action="store_true", help="no progress bar")
    ev.set_defaults(func=run_evaluate)
    rp = subparsers.add_parser("report", help="write the HTML report of a saved evaluation and/or risk JSON")
    rp.add_argument("--json", metavar="EVAL_JSON", help="output of dpsynth evaluate --json")
    rp.add_argument("--risk", metavar="RISK_JSON", help=_RISK_HELP)
    rp.add_argument("--report", required=True, metavar="OUT_HTML", help="where to write the HTML report")
    rp.add_argument("--model", metavar="MODEL_FILE", help="model file whose privacy ledger goes in the report")
    rp.add_argument("--title", default="dpsynth evaluation report")
    rp.set_defaults(func=run_report)


def load_data(spec: str) -> tuple[pd.DataFrame, pd.DataFrame | None, object, str | None]:
    """(train, test or None, public schema or None, target or None) of a bundled dataset name or a table path."""
    from dpsynth._io import read_table

    try:
        from dpsynth.datasets import load_table
    except ImportError:  # pragma: no cover - datasets ship with dpsynth; keep paths working without them
        return read_table(spec), None, None, None
    return load_table(spec)


def load_test(spec: str) -> pd.DataFrame:
    """Real test rows from ``--test``: a bundled dataset name means its official test split, else a table path."""
    from dpsynth._io import read_table
    from dpsynth.datasets import REGISTRY

    if spec in REGISTRY:
        _, test, _, _ = load_data(spec)
        if test is None:
            raise InputError(f"--test {spec}: the bundled dataset '{spec}' has no official test split; "
                             "pass a CSV/Parquet path.")
        return test
    return read_table(spec)


def _risk_sections(risk_path: str | None) -> list[tuple[str, str]]:
    if not risk_path:
        return []
    from dpsynth.evaluation.risk_section import risk_section

    return [risk_section(risk_path)]


def load_ledger(model_path: str | None) -> dict[str, Any] | None:
    """The ledger dict stored in a model file's header (ModelFileError when it is not a model file)."""
    if not model_path:
        return None
    from dpsynth.models import model_phases
    from dpsynth.models._file import ledger_check, read_model_header

    header = read_model_header(model_path)  # checks the header's structure and digest (without torch)
    # recomputed from the events, never the stored summary
    ledger, flags = ledger_check(header, model_phases(header["model"]))
    if flags:
        ledger = {**ledger, "flags": flags}
    return {**ledger, **_gdp_view(ledger)}


def _gdp_view(ledger: dict[str, Any]) -> dict[str, Any]:
    """mu-GDP and separation of the ledger's Gaussian events (pure accounting on the public event list), shown
    beside the (epsilon, delta) guarantee; empty for a non-private ledger or one without Gaussian events."""
    import math

    from dpsynth.privacy.gdp import ledger_gdp_report
    from dpsynth.privacy.ledger import PrivacyLedger

    try:
        restored = PrivacyLedger.from_dict(ledger)
        if restored.non_private:
            return {}
        report = ledger_gdp_report(restored)
    except Exception:  # noqa: BLE001 - an older or partial ledger: the report simply shows no GDP view
        return {}
    keys = ("mu_clt", "mu_seed004", "separation_clt", "separation_seed004")
    out = {f"gdp_{k}": float(report[k]) for k in keys if isinstance(report.get(k), float) and math.isfinite(report[k])}
    if out and report.get("not_covered"):
        out["gdp_note"] = "mu covers the Gaussian entries only: " + ", ".join(report["not_covered"])
    return out


def _int_list(text: str, what: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError as exc:
        raise InputError(f"{what} must be comma-separated integers. Found {text!r}.") from exc


def run_evaluate(args: argparse.Namespace) -> int:
    from dpsynth._io import atomic_write_text, read_table
    from dpsynth.evaluation.core import evaluate
    from dpsynth.evaluation.report import write_report

    if args.risk and not args.report:
        raise InputError("--risk puts the risk results in the HTML report: give --report OUT_HTML too.")
    sections = _risk_sections(args.risk)  # read before the long evaluation so a bad file fails fast
    real, bundled_test, schema, default_target = load_data(args.real)
    test = load_test(args.test) if args.test else bundled_test
    synthetic = read_table(args.synthetic)
    if args.schema:
        from dpsynth.data.schema import Schema

        schema = Schema.load(args.schema)
    target = args.target or (schema.target if schema is not None and schema.target else default_target)
    ledger = load_ledger(args.model)  # read before the long evaluation so a bad file fails fast
    metrics = "all" if args.metrics == "all" else [m.strip() for m in args.metrics.split(",") if m.strip()]
    result = evaluate(real, synthetic, real_test=test, schema=schema, target=target, metrics=metrics,
                      seeds=_int_list(args.seeds, "--seeds"), executor=args.jobs, progress=not args.quiet)
    atomic_write_text(args.json, result.to_json())
    for line in headline(result):
        print(line)
    print(f"wrote {args.json} ({len(result.table)} metric rows)")
    if args.report:
        write_report(args.report, result, ledger=ledger, extra_sections=sections,
                     title=f"dpsynth evaluation: {Path(args.synthetic).name}")
        print(f"wrote {args.report}")
    return 0


def run_report(args: argparse.Namespace) -> int:
    from dpsynth.evaluation.report import write_report

    if not (args.json or args.risk or args.model):
        raise InputError("dpsynth report needs something to show: --json EVAL_JSON, --risk RISK_JSON or --model FILE.")
    result = _load_evaluation(args.json) if args.json else None
    write_report(args.report, result, ledger=load_ledger(args.model), extra_sections=_risk_sections(args.risk),
                 title=args.title)
    print(f"wrote {args.report}")
    return 0


def _load_evaluation(json_path: str):
    from dpsynth.evaluation.result import EvaluationResult

    path = Path(json_path)
    if not path.is_file():
        raise InputError(f"No such file: {path}.")
    try:
        return EvaluationResult.from_json(path.read_text(encoding="utf-8"))
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path} is not a dpsynth evaluation JSON ({type(exc).__name__}: {exc}).") from exc


def demo_report(train: pd.DataFrame, synthetic: pd.DataFrame, *, test: pd.DataFrame | None = None, schema=None,
                model_path: str | Path | None = None, out: str | Path = ".", risk: bool = True,
                progress: bool = False) -> tuple[Path, list[str]]:
    """Evaluate and write ``out/evaluation.json`` and ``out/report.html`` (used by ``dpsynth demo``); returns
    the report's path and the :func:`headline` lines for the caller to show.

    With ``risk=True`` the default privacy attacks (:func:`dpsynth.attacks.assess_risk`) also run, with ``test``
    as the control rows (same population, not used for training); their JSON goes to ``out/risk.json`` and
    their section into the report, so one page says what was spent, what utility and what risk resulted.
    """
    from dpsynth._io import atomic_write_text
    from dpsynth.evaluation.core import evaluate
    from dpsynth.evaluation.report import write_report

    out = Path(out)
    ledger = load_ledger(str(model_path)) if model_path else None
    target = schema.target if schema is not None and getattr(schema, "target", None) else None
    result = evaluate(train, synthetic, real_test=test, schema=schema, target=target, progress=progress)
    atomic_write_text(out / "evaluation.json", result.to_json())
    sections: list[tuple[str, str]] = []
    risk_result = None
    if risk:
        from dpsynth.attacks import assess_risk

        risk_result = assess_risk(train, synthetic, control=test, progress=progress)
        atomic_write_text(out / "risk.json", risk_result.to_json())
        sections.append(("Privacy risk", risk_result.to_html_section()))
    page = write_report(out / "report.html", result, ledger=ledger, extra_sections=sections,
                        title="dpsynth demo: Adult")
    return page, headline(result, risk_result)


def headline(result, risk_result=None) -> list[str]:
    """The few numbers a reader looks at first, as lines of text: XGBoost trained on synthetic and tested on
    real data (beside the same model trained on real data), resemblance and discriminability (beside the
    real-vs-real floor), and the highest-risk attack with its interval. Missing or undefined values are
    skipped, never printed as NaN."""

    def get(metric: str, subject: str = "(all)") -> float | None:
        try:
            v = result.value(metric, subject)
        except KeyError:
            return None
        return None if math.isnan(v) else v

    lines = []
    parts = []
    for name, label in (("auc", "AUC"), ("accuracy", "accuracy")):
        syn, real = get(f"ml_efficacy.{name}.synthetic", "xgb"), get(f"ml_efficacy.{name}.real", "xgb")
        if syn is not None:
            parts.append(f"{label} {syn:.3f}" + ("" if real is None else f" (trained on real: {real:.3f})"))
    if parts:
        lines.append("utility: XGBoost trained on synthetic, tested on real: " + ", ".join(parts))
    res, disc, floor = (get("quality.resemblance"), get("quality.discriminability"),
                        get("quality.discriminability.real_vs_real"))
    if res is not None or disc is not None:
        text = [] if res is None else [f"resemblance {res:.0f}/100"]
        if disc is not None:
            text.append(f"discriminability {disc:.0f}/100" + ("" if floor is None else f" (real vs real: {floor:.0f})"))
        lines.append("similarity: " + ", ".join(text))
    scored = [] if risk_result is None else [r for r in risk_result.results if not math.isnan(r.value)]
    if scored:
        worst = max(scored, key=lambda r: r.value)
        lines.append(f"risk: highest is {worst.attack} ({worst.kind}) {worst.value:.3f} "
                     f"[{worst.ci[0]:.3f}, {worst.ci[1]:.3f}]; baseline: {worst.baseline_name} {worst.baseline:.3f}")
    return lines
