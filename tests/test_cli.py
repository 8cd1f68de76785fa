"""End-to-end CLI: fit, sample, info on a small slice; user errors exit 2 with one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from dpsynth.cli import main


def _run(*args):
    return subprocess.run([sys.executable, "-m", "dpsynth.cli", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture()
def small_csv(adult_small, tmp_path):
    path = tmp_path / "small.csv"
    adult_small.head(1500).to_csv(path, index=False)
    return path


def test_fit_sample_info(small_csv, tmp_path, adult_schema):
    schema_path = tmp_path / "schema.json"
    adult_schema.save(schema_path)
    model_path = tmp_path / "m.dpsynth"
    assert main(["fit", str(small_csv), "--model", "marginals", "--epsilon", "1", "--schema", str(schema_path),
                 "--out", str(model_path), "--quiet", "--seed", "1"]) == 0
    out_csv = tmp_path / "synth.csv"
    assert main(["sample", str(model_path), "-n", "250", "-o", str(out_csv), "--seed", "3"]) == 0
    synth = pd.read_csv(out_csv)
    assert synth.shape == (250, 15) and list(synth.columns) == adult_schema.names
    result = _run("info", str(model_path), "--json")
    assert result.returncode == 0
    info = json.loads(result.stdout)
    assert info["model"] == "marginals" and 0 < info["ledger"]["epsilon"] <= 1


def test_schema_infer_says_it_read_private_data(small_csv):
    result = _run("schema", "infer", str(small_csv))
    assert result.returncode == 0
    assert "READING THE PRIVATE DATA" in result.stderr
    assert json.loads(result.stdout)["provenance"] == "inferred"


@pytest.mark.parametrize("args, message", [
    (["fit", "no-such-file.csv", "--epsilon", "1", "--out", "x"], "No such file"),
    (["fit", "adult", "--epsilon", "0", "--out", "x"], "epsilon must be > 0"),
    (["fit", "adult", "--epsilon", "1", "--delta", "2", "--out", "x"], "delta must be in (0, 1)"),
    (["fit", "adult", "--model", "nope", "--epsilon", "1", "--out", "x"], "Unknown model 'nope'"),
    (["sample", "no-model.dpsynth", "-n", "5", "-o", "x.csv"], "No model file"),
])
def test_user_errors_exit_2_with_one_line(args, message):
    result = _run(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("dpsynth: error:") and message in lines[-1]
    assert "Traceback" not in result.stderr


def test_unreadable_file_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"\x00\xff\xfe garbage \x00")
    result = _run("fit", str(path), "--epsilon", "1", "--out", str(tmp_path / "m"))
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_corrupt_model_file(tmp_path):
    path = tmp_path / "m.dpsynth"
    path.write_bytes(b"not a safetensors file")
    result = _run("info", str(path))
    assert result.returncode == 2 and "not a dpsynth model file" in result.stderr


def test_demo_writes_model_csv_ledger_evaluation_risk_and_report(tmp_path):
    """The README's first command, end to end (floor model and fewer sampled rows, to keep it quick)."""
    out = tmp_path / "demo"
    result = _run("demo", "--model", "marginals", "--rows", "3000", "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["model.dpsynth", "synthetic.csv", "ledger.json", "evaluation.json", "risk.json", "report.html"])
    synth = pd.read_csv(out / "synthetic.csv")
    assert len(synth) == 3000 and "income" in synth.columns
    ledger = json.loads((out / "ledger.json").read_text())
    assert 0 < ledger["epsilon"] <= 1.0
    html = (out / "report.html").read_text()
    for heading in ("Privacy ledger", "Summary", "Privacy risk"):
        assert heading in html
    risk = json.loads((out / "risk.json").read_text())
    assert risk  # the attacks ran and their results were saved


@pytest.mark.parametrize("name", ["dp-tldm", "dp-auto-gan"])
def test_deep_models_fit_sample_info_through_the_cli(name, small_csv, tmp_path, adult_schema, capsys):
    from dpsynth.models import get_model_class

    schema_path = tmp_path / "schema.json"
    adult_schema.save(schema_path)
    params = [f"--param={k}={json.dumps(list(v) if isinstance(v, tuple) else v)}"
              for k, v in get_model_class(name).fast_params.items()]
    model_path = tmp_path / "m.dpsynth"
    assert main(["fit", str(small_csv), "--model", name, "--epsilon", "1", "--schema", str(schema_path),
                 "--out", str(model_path), "--quiet", "--seed", "0", *params]) == 0
    out_csv = tmp_path / "synth.csv"
    assert main(["sample", str(model_path), "-n", "300", "-o", str(out_csv), "--seed", "1"]) == 0
    synth = pd.read_csv(out_csv)
    assert synth.shape == (300, 15) and list(synth.columns) == adult_schema.names
    capsys.readouterr()
    assert main(["info", str(model_path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["model"] == name and 0 < info["ledger"]["epsilon"] <= 1
    assert main(["fit", str(small_csv), "--model", name, "--epsilon", "1", "--param", "no_such_knob=1", "--out",
                 str(tmp_path / "x.dpsynth"), "--quiet"]) == 2
    assert not (tmp_path / "x.dpsynth").exists()
