"""``dpsynth evaluate`` / ``dpsynth report`` through the real CLI entry point."""

from __future__ import annotations

import argparse
import json

import pytest

import dpsynth
from dpsynth.cli import main
from dpsynth.evaluate import command


@pytest.fixture()
def files(tmp_path, real, real_test):
    paths = {name: tmp_path / f"{name}.csv" for name in ("real", "test", "synth")}
    real.to_csv(paths["real"], index=False)
    real_test.to_csv(paths["test"], index=False)
    real.sample(frac=1.0, random_state=1).to_csv(paths["synth"], index=False)
    return paths


def test_package_is_callable_and_exports_evaluate(real):
    from dpsynth.evaluate import evaluate

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
    code = main(["evaluate", "--real", str(files["real"]), "--synthetic", str(files["synth"]), "--test",
                 str(files["test"]), "--target", "label", "--metrics", "similarity,ml_efficacy", "--seeds", "0",
                 "--jobs", "1", "--json", str(out_json), "--report", str(out_html)])
    assert code == 0
    data = json.loads(out_json.read_text())
    metrics = {r["metric"] for r in data["table"]}
    assert "similarity.jsd" in metrics and "ml_efficacy.auc.diff" in metrics
    assert "<img" in out_html.read_text()
    again = tmp_path / "again.html"
    assert main(["report", "--json", str(out_json), "--report", str(again)]) == 0
    assert "Summary" in again.read_text()


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

    from dpsynth.evaluate.report import ledger_html
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
