"""End-to-end CLI: fit, sample, info on a small slice; user errors exit 2 with one line."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

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
    from dpsynth.models import load_model

    assert info["n_rows_dp"] == load_model(model_path).row_count_  # the count `sample` draws without -n
    assert f"DP row count: {info['n_rows_dp']:,} (a DP estimate" in _run("info", str(model_path)).stdout


def test_fit_without_a_schema_takes_a_declared_target(small_csv, tmp_path):
    """``dpsynth fit FILE.csv --target COL``: the pre-flight plan says how the target is released, the DP schema in the
    model file carries it, and its minority class (24% of 1,500 rows) is released."""
    model_path = tmp_path / "m.dpsynth"
    result = _run("fit", str(small_csv), "--model", "marginals", "--epsilon", "3", "--target", "income", "--out",
                  str(model_path), "--seed", "2")
    assert result.returncode == 0, result.stderr
    assert "the target 'income', if text, is released first, and again from a reserve" in result.stderr
    info = json.loads(_run("info", str(model_path), "--json").stdout)
    assert info["schema"]["target"] == "income" and info["schema"]["provenance"] == "dp"
    income = next(c for c in info["schema"]["columns"] if c["name"] == "income")
    assert {"<=50K", ">50K"} <= set(income["categories"])
    bad = _run("fit", str(small_csv), "--model", "marginals", "--epsilon", "3", "--target", "incme", "--out",
               str(tmp_path / "n.dpsynth"))
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].endswith("Found 'incme'.")
    assert not (tmp_path / "n.dpsynth").exists()


def test_schema_infer_says_it_read_private_data_and_how_to_vouch_for_it(small_csv):
    result = _run("schema", "infer", str(small_csv))
    assert result.returncode == 0
    assert "READING THE PRIVATE DATA" in result.stderr and 'set "provenance": "public"' in result.stderr
    schema = json.loads(result.stdout)
    assert schema["provenance"] == "inferred" and '"provenance": "public"' in schema["note"]


@pytest.fixture()
def tiny_csv(tmp_path):
    path = tmp_path / "tiny.csv"
    path.write_text("c,x\n" + "".join(f"{'ab'[i % 2]},{i % 5}\n" for i in range(40)))
    return path


def _one_line_error(capsys, code, *parts):
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpsynth: error:"), err
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("args, message", [
    (["fit", "no-such-file.csv", "--epsilon", "1", "--out", "x"], "No such file"),
    (["fit", "adult", "--epsilon", "0", "--out", "x"], "epsilon must be > 0"),
    (["fit", "adult", "--epsilon", "1", "--delta", "2", "--out", "x"], "delta must be in (0, 1)"),
    (["fit", "{tiny}", "--model", "nope", "--epsilon", "1", "--out", "x"], "Unknown model 'nope'"),
    (["sample", "no-model.dpsynth", "-n", "5", "-o", "x.csv"], "No model file"),
    # the extension is refused before the (missing) model file is even opened
    (["sample", "no-model.dpsynth", "-n", "5", "-o", "s.xlsx"], "must end in .csv or .parquet. Found 's.xlsx'"),
    (["fit", "{tiny}", "--epsilon", "1", "--out", "no/such/folder/m.dpsynth"], "Output folder no/such/folder"),
    # a model that fits frames only: the message names the ones that read tables
    (["fit", "{tiny}", "--model", "gaussian-copula", "--backend", "duckdb", "--epsilon", "inf", "--out", "x"],
     "--backend applies to the models that read tables (aim, batch-aim, dp-auto-gan"),
    # argparse's own complaints: one line too, not a usage block
    (["fit", "adult", "--epsilon", "abc", "--out", "x"], "epsilon must be a number or 'inf'. Found 'abc'"),
    (["fit", "adult", "--epsilon", "1"], "the following arguments are required: --out"),
    (["fit", "adult", "--epsilon", "1", "--delta", "tiny", "--out", "x"], "invalid float value: 'tiny'"),
    (["sample", "m", "-n", "many", "-o", "x.csv"], "invalid int value: 'many'"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["info", "--model", "nope"], "Unknown model 'nope'. Available: aim, batch-aim"),
    (["info", "--model", "aim", "--models"], "info takes a model file, --models or --model NAME: one of them."),
    ([], "the following arguments are required: COMMAND"),
])
def test_user_errors_exit_2_with_one_line(args, message, tiny_csv, capsys):
    code = main([a.replace("{tiny}", str(tiny_csv)) for a in args])
    _one_line_error(capsys, code, message)


@pytest.mark.parametrize("epsilon, delta, message", [
    ("nan", "1e-5", "epsilon must be > 0 and finite (or inf for the non-private mode). Found nan."),
    ("-inf", "1e-5", "Found -inf."),
    ("1", "0", "delta must be in (0, 1). Found 0.0."),
    ("1", "-1e-5", "delta must be in (0, 1). Found -1e-05."),
    ("1", "1", "delta must be in (0, 1). Found 1.0."),
    ("1", "nan", "delta must be in (0, 1). Found nan."),
])
def test_bad_budget_on_the_command_line(epsilon, delta, message, tiny_csv, tmp_path, capsys):
    for command in (["fit", str(tiny_csv), "--out", str(tmp_path / "m.dpsynth")], ["demo", "--out", str(tmp_path)]):
        code = main([*command, "--epsilon", epsilon, "--delta", delta, "--quiet"])
        _one_line_error(capsys, code, message)
    assert not (tmp_path / "m.dpsynth").exists()


def test_malformed_schema_file_through_the_cli(tiny_csv, tmp_path, capsys):
    schema = tmp_path / "schema.yaml"
    schema.write_text("columns: 5\n")
    code = main(["fit", str(tiny_csv), "--epsilon", "1", "--schema", str(schema), "--out", str(tmp_path / "m")])
    _one_line_error(capsys, code, "Schema field 'columns' must be a non-empty list", "Found 5 (int)")
    schema.write_text('columns:\n  - {name: c, kind: categorical, categories: abc}\n')
    code = main(["fit", str(tiny_csv), "--epsilon", "1", "--schema", str(schema), "--out", str(tmp_path / "m")])
    _one_line_error(capsys, code, "Column 'c': field 'categories' must be a list. Found 'abc' (str)")


def test_ragged_csv_through_the_cli(tmp_path, capsys):
    path = tmp_path / "ragged.csv"
    path.write_text("a,b\n1,2,3,4\n5\n")
    code = main(["schema", "infer", str(path)])
    _one_line_error(capsys, code, "line 2 has 4 fields but the header has 2")


def test_info_model_shows_what_param_accepts_with_defaults_and_the_docs(capsys):
    """``dpsynth info --model NAME``: every hyper-parameter a model takes, with the default a fit without ``--param``
    gets, written so that ``--param KEY=VALUE`` reads it back; the ledger phases; the docstrings the README cites."""
    from dpsynth.cli.main import _parse_params
    from dpsynth.models import BUILTIN, get_model_class

    assert main(["info", "--model", "batch-aim"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == "model: batch-aim (dpsynth.models.batch_aim.BatchAIM)"
    assert lines[1] == "ledger phases: metadata, aim; default metadata share 0.1; --noise secure supported"
    rows = {line.split()[0]: line.split(None, 1)[1] for line in lines[3:] if line.startswith("  ")}
    # known answers: the workload's choices of README "Choosing batch-aim's workload"
    assert rows["weighting"] == '"overlap"' and rows["triples"] == '"auto"' and rows["batch"] == "4"
    assert rows["target_weight"] == "2.0" and rows["halving_picks"] == "null" and rows["reuse_metadata"] == "true"
    assert "Flat weights" in text and "about dpsynth.models.batch_aim:" in text
    for name in BUILTIN:  # every built-in model, through --json
        assert main(["info", "--model", name, "--json"]) == 0
        info = json.loads(capsys.readouterr().out)
        cls = get_model_class(name)
        assert info["model"] == name and info["phases"] == list(cls.phases)
        assert info["secure_noise"] is True  # every built-in model's mechanisms are dpsynth.privacy's
        # none left out, in the signature's order
        assert list(info["params"]) == [p.name for p in inspect.signature(cls.__init__).parameters.values()
                                        if p.kind == p.KEYWORD_ONLY], name
        # the printed defaults are what a model built without --param holds, and read back by --param
        built = cls().get_params()
        typed = _parse_params([f"{key}={json.dumps(value)}" for key, value in info["params"].items()])
        for key, value in typed.items():
            expected = list(built[key]) if isinstance(built[key], tuple) else built[key]
            assert value == expected, (name, key, value, built[key])


def test_help_still_prints_the_usage(capsys):
    with pytest.raises(SystemExit) as info:
        main(["fit", "--help"])
    assert info.value.code == 0 and "--epsilon EPSILON" in capsys.readouterr().out


def test_a_real_process_prints_one_line_and_no_traceback():
    result = _run("fit", "adult", "--epsilon", "abc", "--out", "x")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "dpsynth: error: argument --epsilon: epsilon must be a number or 'inf'. Found 'abc'. "
        "(see 'dpsynth fit --help')"]


def test_closed_stdout_pipe_ends_quietly():
    """`dpsynth datasets | head -1`: the reader is gone before dpsynth writes; no BrokenPipeError traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "dpsynth.cli", "datasets"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # nobody will read: dpsynth's write gets EPIPE
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141 and err.decode() == ""


def test_unreadable_file_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"\x00\xff\xfe garbage \x00")
    code = main(["fit", str(path), "--epsilon", "1", "--out", str(tmp_path / "m")])
    _one_line_error(capsys, code, "Cannot read")


def test_corrupt_model_file(tmp_path, capsys):
    path = tmp_path / "m.dpsynth"
    path.write_bytes(b"not a safetensors file")
    _one_line_error(capsys, main(["info", str(path)]), "not a dpsynth model file")


@pytest.mark.anonymeter  # the demo runs the default attacks
@pytest.mark.slow(reason="the full demo on Adult: about 90 s on 2 cores")
@pytest.mark.ci
def test_demo_writes_model_csv_ledger_evaluation_risk_and_report(tmp_path):
    """The README's first command, end to end (floor model and fewer sampled rows, to keep it quick)."""
    out = tmp_path / "demo"
    result = _run("demo", "--model", "marginals", "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    assert "utility: XGBoost trained on synthetic, tested on real: AUC" in result.stdout  # the headline lines
    assert "risk: highest is" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["model.dpsynth", "synthetic.csv", "ledger.json", "evaluation.json", "risk.json", "report.html"])
    synth = pd.read_csv(out / "synthetic.csv")
    from dpsynth.models import load_model

    # no --rows: the model's DP row count, never the exact one
    assert len(synth) == load_model(out / "model.dpsynth").row_count_ and "income" in synth.columns
    ledger = json.loads((out / "ledger.json").read_text())
    assert 0 < ledger["epsilon"] <= 1.0
    html = (out / "report.html").read_text()
    for heading in ("Privacy ledger", "Summary", "Privacy risk"):
        assert heading in html
    risk = json.loads((out / "risk.json").read_text())
    attacks = {r["attack"] for r in risk["results"]}
    assert {"closest_distance_hamming", "singling_out_univariate"} <= attacks  # the default attacks ran
    for r in risk["results"]:
        assert r["value"] is None or -1.0 <= r["value"] <= 1.0
        assert r["n_targets"] > 0 and 0 < r["confidence"] < 1


@pytest.mark.parametrize("name", ["dp-auto-gan", pytest.param("dp-tldm", marks=[
    pytest.mark.slow(reason="dp-auto-gan covers the deep models' CLI path, about 11 s"), pytest.mark.ci])])
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
    from dpsynth.models import load_model

    assert info["n_rows_dp"] == load_model(model_path).row_count_
    assert main(["fit", str(small_csv), "--model", name, "--epsilon", "1", "--param", "no_such_knob=1", "--out",
                 str(tmp_path / "x.dpsynth"), "--quiet"]) == 2
    assert not (tmp_path / "x.dpsynth").exists()


def test_readme_python_api_names_resolve_from_a_bare_import():
    """Every ``dpsynth.NAME`` the README's Python API section uses works after a plain ``import dpsynth``
    (a fresh interpreter, so no other test has imported the submodules first)."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme.split("## Python API", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    names = set(re.findall(r"\bdpsynth\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)", block))
    for imported in re.findall(r"^from dpsynth import (.+)$", block, flags=re.M):
        names |= {n.strip() for n in imported.split(",")}
    names = sorted(names)
    assert "evaluation.write_report" in names and "assess_risk" in names and "DPTLDM" in names
    code = "import dpsynth, operator\n" + "".join(
        f"operator.attrgetter({n!r})(dpsynth)\n" for n in names)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
