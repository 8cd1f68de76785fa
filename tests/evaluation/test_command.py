"""``dpsynth evaluate`` / ``dpsynth report`` through the real CLI entry point."""

from __future__ import annotations

import argparse
import json

import pandas as pd
import pytest

import dpsynth
from dpsynth.cli import evaluate as command
from dpsynth.cli import main
from dpsynth.errors import InputError


@pytest.fixture()
def files(tmp_path, real, real_test):
    paths = {name: tmp_path / f"{name}.csv" for name in ("real", "test", "synth")}
    real.to_csv(paths["real"], index=False)
    real_test.to_csv(paths["test"], index=False)
    real.sample(frac=1.0, random_state=1).to_csv(paths["synth"], index=False)
    return paths


def test_package_is_callable_and_exports_evaluate(real):
    from dpsynth.evaluation import evaluate

    res = dpsynth.evaluate(real, real, metrics=["similarity"])
    assert res.value("similarity.jsd") == pytest.approx(0.0)
    assert callable(evaluate)


def test_add_parsers_registers_both_subcommands():
    parser = argparse.ArgumentParser()
    command.add_parsers(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["evaluate", "--real", "r.csv", "--synthetic", "s.csv", "--json", "o.json"])
    assert args.func is command.run_evaluate and args.report is None
    args = parser.parse_args(["report", "--json", "o.json", "--report", "o.html"])
    assert args.func is command.run_report


def test_cli_evaluate_then_report(files, tmp_path, capsys):
    out_json, out_html = tmp_path / "eval.json", tmp_path / "eval.html"
    risk = _risk_json(tmp_path / "risk.json")
    code = main(["evaluate", "--real", str(files["real"]), "--synthetic", str(files["synth"]), "--test",
                 str(files["test"]), "--target", "label", "--metrics", "similarity,ml_efficacy", "--seeds", "0",
                 "--jobs", "1", "--json", str(out_json), "--report", str(out_html), "--risk", str(risk)])
    assert code == 0
    captured = capsys.readouterr()
    assert "utility: XGBoost trained on synthetic, tested on real: AUC" in captured.out  # the headline
    assert "evaluate" in captured.err  # the progress bar (stderr)
    data = json.loads(out_json.read_text())
    metrics = {r["metric"] for r in data["table"]}
    assert "similarity.jsd" in metrics and "ml_efficacy.auc.diff" in metrics
    text = out_html.read_text()
    assert "<img" in text and "Privacy risk" in text and "closest_distance_hamming" in text  # risk beside utility
    again = tmp_path / "again.html"
    assert main(["report", "--json", str(out_json), "--report", str(again), "--risk", str(risk)]) == 0
    assert "Summary" in again.read_text() and "dpsynth-privacy-risk" in again.read_text()
    capsys.readouterr()
    assert main(["evaluate", "--real", str(files["real"]), "--synthetic", str(files["synth"]), "--metrics",
                 "similarity", "--json", str(tmp_path / "quiet.json"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_cli_user_errors_exit_2_with_one_line(files, tmp_path, capsys):
    code = main(["evaluate", "--real", str(files["real"]), "--synthetic", str(tmp_path / "nope.csv"),
                 "--json", str(tmp_path / "o.json")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope.csv" in err[0]
    code = main(["evaluate", "--real", str(files["real"]), "--synthetic", str(files["synth"]), "--target", "zzz",
                 "--json", str(tmp_path / "o.json")])
    assert code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["report", "--json", str(bad), "--report", str(tmp_path / "x.html")]) == 2
    assert main(["evaluate", "--real", str(files["real"]), "--synthetic", str(files["synth"]), "--model",
                 str(files["real"]), "--json", str(tmp_path / "o.json")]) == 2


def test_report_ledger_shows_mu_gdp_and_separation(tmp_path, adult_small, adult_schema):
    """The report's ledger (issue 4 item 3): epsilon, delta, mu-GDP / separation, per phase."""
    import math

    from dpsynth.evaluation.report import ledger_html
    from dpsynth.models import get_model_class
    from dpsynth.privacy.gdp import gdp_epsilon

    model = get_model_class("marginals")().fit(adult_small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    path = model.save(tmp_path / "m.dpsynth")
    ledger = command.load_ledger(str(path))
    mu = ledger["gdp_mu_clt"]
    assert 0 < mu < math.inf and 0 < ledger["gdp_separation_clt"] < 1
    # Gaussian events only: the mu view is exact, so its epsilon at the same delta matches the ledger's
    assert gdp_epsilon(mu, 1e-5) == pytest.approx(model.ledger_.epsilon(), rel=0.02)
    html = ledger_html(ledger)
    assert "gdp_mu_clt" in html and "Per phase" in html


def _risk_json(path):
    """A RiskResult written the way ``dpsynth attack --json`` writes it (no attack run: seconds, not minutes)."""
    from dpsynth.attacks.base import Estimate, Result
    from dpsynth.attacks.risk import RiskResult

    result = Result(attack="closest_distance_hamming", kind="membership", value=0.12, ci=(0.02, 0.22),
                    baseline=0.5, baseline_name="chance accuracy", n_targets=200,
                    metrics={"accuracy": Estimate(0.56, (0.51, 0.61)), "auc": Estimate(0.58, None)})
    RiskResult([result], {"density": "needs control rows"}, {"n_train": 400, "n_synthetic": 400}).to_json(path)
    return path


def test_test_option_takes_the_official_test_split_of_a_bundled_dataset(adult):
    train, test = adult
    got = command.load_test("adult")
    assert len(got) == len(test) != len(train)
    pd.testing.assert_frame_equal(got, test)
    with pytest.raises(InputError, match="no official test split"):
        command.load_test("wine")


def test_cli_evaluate_test_adult_uses_the_test_split(tmp_path, adult):
    train, test = adult
    synth = tmp_path / "synth.csv"
    train.iloc[:300].to_csv(synth, index=False)
    out = tmp_path / "eval.json"
    assert main(["evaluate", "--real", "adult", "--synthetic", str(synth), "--test", "adult", "--metrics",
                 "similarity", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["info"]["n_real_test"] == len(test) == 16281


def test_report_of_risk_alone(tmp_path):
    alone = tmp_path / "risk.html"
    assert main(["report", "--risk", str(_risk_json(tmp_path / "risk.json")), "--report", str(alone)]) == 0
    text = alone.read_text()
    assert "dpsynth-privacy-risk" in text and "closest_distance_hamming" in text and "render-status" in text
    assert "Summary" not in text and "needs control rows" in text


def test_risk_option_user_errors(files, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": 3}')
    assert main(["report", "--risk", str(bad), "--report", str(tmp_path / "x.html")]) == 2
    assert "not a dpsynth risk JSON" in capsys.readouterr().err
    assert main(["report", "--report", str(tmp_path / "x.html")]) == 2
    assert main(["evaluate", "--real", str(files["real"]), "--synthetic", str(files["synth"]), "--json",
                 str(tmp_path / "o.json"), "--risk", str(bad)]) == 2  # --risk needs --report
    assert not (tmp_path / "x.html").exists() and not (tmp_path / "o.json").exists()


def test_attack_report_is_the_evaluation_page_with_only_the_risk_section(tmp_path):
    from dpsynth.cli.attack import write_risk_report
    from dpsynth.evaluation import build_report
    from dpsynth.evaluation.risk_section import load_risk

    result = load_risk(_risk_json(tmp_path / "risk.json"))
    path = tmp_path / "attack.html"
    write_risk_report(result, str(path), title="Privacy risk of s.csv")
    text = path.read_text()
    assert "render-status" in text and "dpsynth-privacy-risk" in text  # not the standalone fallback page
    page = build_report(None, ledger={"epsilon": 1.0}, extra_sections=[("Risk", "<p>r</p>")])
    assert "Privacy ledger" in page and "<p>r</p>" in page and "Summary" not in page


def test_headline_reports_utility_beside_real_and_the_worst_finite_risk():
    """The demo's summary lines: known values in, the same numbers out; undefined values are left out."""
    import math

    from dpsynth.attacks.base import Result
    from dpsynth.attacks.risk import RiskResult
    from dpsynth.evaluation.result import EvaluationResult, Row

    rows = [Row("ml_efficacy.auc.synthetic", "xgb", 0.861, 0.0, 3, ""),
            Row("ml_efficacy.auc.real", "xgb", 0.925, 0.0, 3, ""),
            Row("ml_efficacy.accuracy.synthetic", "xgb", math.nan, math.nan, 3, "one class"),
            Row("quality.resemblance", "(all)", 93.2, math.nan, 1, ""),
            Row("quality.discriminability", "(all)", 31.6, math.nan, 1, ""),
            Row("quality.discriminability.real_vs_real", "(all)", 99.4, math.nan, 1, "")]
    risks = RiskResult([Result("a", "membership", 0.02, (0.0, 0.05), 0.5, "chance"),
                        Result("b", "singling_out", 0.08, (0.05, 0.12), 0.03, "random guess"),
                        Result("c", "linkability", math.nan, (math.nan, math.nan), 0.0, "none")])
    lines = command.headline(EvaluationResult.from_rows(rows), risks)
    assert lines == [
        "utility: XGBoost trained on synthetic, tested on real: AUC 0.861 (trained on real: 0.925)",
        "similarity: resemblance 93/100, discriminability 32/100 (real vs real: 99)",
        "risk: highest is b (singling_out) 0.080 [0.050, 0.120]; baseline: random guess 0.030",
    ]
    assert command.headline(EvaluationResult.from_rows([])) == []
