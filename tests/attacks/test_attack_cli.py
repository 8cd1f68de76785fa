"""The attack and audit subcommands (through dpsynth.cli when it registers them, else directly)."""

from __future__ import annotations

import argparse
import json

import pytest

from dpsynth.cli import attack as command


def _run(argv):
    parser = argparse.ArgumentParser(prog="dpsynth")
    command.add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.mark.anonymeter
def test_attack_command_writes_json_and_report(adult, tmp_path, capsys):
    train, test = adult
    paths = {k: tmp_path / f"{k}.csv" for k in ("train", "syn", "control")}
    train.iloc[:800].to_csv(paths["train"], index=False)
    train.iloc[:800].to_csv(paths["syn"], index=False)
    test.iloc[:800].to_csv(paths["control"], index=False)
    code = _run(["attack", str(paths["train"]), str(paths["syn"]), "--control", str(paths["control"]),
                 "--attacks", "closest_distance_l2,singling_out_univariate", "--targets", "100", "--sequential",
                 "--json", str(tmp_path / "r.json"), "--report", str(tmp_path / "r.html"), "--quiet"])
    assert code == 0
    out = capsys.readouterr().out
    assert "closest_distance_l2" in out
    data = json.loads((tmp_path / "r.json").read_text())
    assert {r["attack"] for r in data["results"]} == {"closest_distance_l2", "singling_out_univariate"}
    assert "Privacy risk" in (tmp_path / "r.html").read_text()


def test_audit_command_says_when_it_cannot_detect_a_violation(tmp_path, capsys):
    # 8 fits judged 2 + 2: no attack can refute epsilon = 1, so the verdict is "no power" (exit 3), not "consistent"
    code = _run(["audit", "marginals", "--epsilon", "1", "--method", "in-out", "--fits", "8", "--rows", "100",
                 "--sequential", "--json", str(tmp_path / "a.json")])
    assert code == 3
    captured = capsys.readouterr()
    assert "cannot detect a violation at this size: max achievable eps_LB = 0.000 < epsilon" in captured.out
    assert "audit in-out: 8 fits" in captured.err  # the plan is logged unless --quiet
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["verdict"] == "no-power" and data["passed"] is True and data["has_power"] is False


def test_cli_registers_subcommands():
    from dpsynth import cli

    parser = cli.build_parser()
    args = parser.parse_args(["audit", "marginals"])
    assert args.func is command.run_audit and args.method == "auto" and args.fits == 200
    assert parser.parse_args(["audit", "dp-tldm", "--mode", "one-run"]).method == "one-run"  # old spelling
