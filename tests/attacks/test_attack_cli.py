"""The attack and audit subcommands (through dpsynth.cli when it registers them, else directly)."""

from __future__ import annotations

import argparse
import json

import pytest

from dpsynth.attacks import command


def _run(argv):
    parser = argparse.ArgumentParser(prog="dpsynth")
    command.add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


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


def test_audit_command(tmp_path, capsys):
    code = _run(["audit", "marginals", "--epsilon", "inf", "--delta", "0", "--fits", "40", "--rows", "100",
                 "--sequential", "--quiet", "--json", str(tmp_path / "a.json")])
    assert code == 0
    assert "eps_LB" in capsys.readouterr().out
    assert json.loads((tmp_path / "a.json").read_text())["passed"] is True


def test_cli_registers_subcommands():
    cli = pytest.importorskip("dpsynth.cli")
    parser = cli.build_parser()
    assert parser.parse_args(["audit", "marginals"]).func is command.run_audit
