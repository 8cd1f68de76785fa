"""``dpsynth bench --paper``: each paper's grid is the one its tables need, and the comparison puts our mean beside
the published number (known answers on hand-made results, no fit)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dpsynth.bench.papers import PAPERS, SEED003_EPSILONS, compare, paper_spec
from dpsynth.cli import main
from dpsynth.errors import InputError


def test_paper_grids():
    tldm = paper_spec("dp-tldm")
    assert len(tldm.runs) == 4 * (4 + 3) * 3  # datasets x (non-private + DP models) x seeds
    dp = {r.epsilon for r in tldm.runs if r.model == "dp-ctgan"}
    assert len(dp) == 1 and 1.3 < dp.pop() < 1.45  # mu = 0.3563 GDP at delta 1e-5
    assert {r.epsilon for r in tldm.runs if r.model == "ctgan"} == {math.inf}
    auto = paper_spec("dp-auto-gan", seeds=[0])
    assert sorted((r.model, r.epsilon) for r in auto.runs) == sorted(
        (m, e) for m, eps in SEED003_EPSILONS.items() for e in eps)
    unified = paper_spec("unified", models=["dp-dnn"])
    assert len(unified.runs) == 3 * 2 * 10 and {r.delta for r in unified.runs} == {1e-5, 1e-3}
    with pytest.raises(InputError, match="--paper must be one of"):
        paper_spec("gan")
    with pytest.raises(InputError, match="dp-tldm runs on adult, cardio, loan, housing"):
        paper_spec("dp-tldm", datasets=["wine"])
    with pytest.raises(InputError, match="No run left"):
        paper_spec("dp-auto-gan", models=["ctgan"])


def test_seed004_comparison_puts_our_mean_beside_the_paper():
    runs = pd.DataFrame({"key": ["a", "b", "c"], "spec": "paper-dp-tldm", "dataset": "loan", "status": "ok",
                         "model": ["gaussian-copula", "gaussian-copula", "dp-tldm"],
                         "epsilon": [math.inf, math.inf, math.inf]})
    rows = [("a", 90.0, 60.0, 70.0), ("b", 80.0, 64.0, 74.0), ("c", 99.0, 97.0, 98.0)]
    metrics = pd.DataFrame([{"key": k, "metric": f"quality.{m}", "subject": "(all)", "value": v}
                            for k, *values in rows for m, v in zip(("resemblance", "discriminability", "utility"),
                                                                   values)])
    table = compare("dp-tldm", runs, metrics)
    copula = table[table["model"] == "gaussian-copula"].iloc[0]
    assert copula["resemblance (paper)"] == "85 (86)" and copula["utility (paper)"] == "72 (78)"
    assert copula["seeds"] == 2
    tldm = table[table["model"] == "dp-tldm@inf"].iloc[0]  # the paper's TLDM is DP-TLDM without DP
    assert tldm["discriminability (paper)"] == "97 (98)"
    assert set(table["model"]) >= {"CopulaGAN (paper only)", "ADS-GAN (paper only)"}


def test_every_paper_has_a_title_and_datasets():
    assert set(PAPERS) == {"dp-tldm", "dp-auto-gan", "unified"}
    for paper in PAPERS.values():
        assert paper.title and paper.datasets


def test_cli_paper_errors(tmp_path, capsys):
    results = str(tmp_path / "r.duckdb")
    assert main(["bench", "--paper", "nope", "--results", results]) == 2
    assert "--paper must be one of" in capsys.readouterr().err
    assert main(["bench", "spec.yaml", "--paper", "unified", "--results", results]) == 2
    assert "drop the spec file" in capsys.readouterr().err
    assert main(["bench", "--paper", "unified", "--seeds", "a", "--results", results]) == 2
    assert "--seeds takes integers" in capsys.readouterr().err


@pytest.mark.slow(reason="six DP-DNN fits on Wine (about 2 minutes)")
def test_cli_paper_unified_runs_and_prints(tmp_path, capsys):
    assert main(["bench", "--paper", "unified", "--models", "dp-dnn", "--seeds", "0", "--quiet",
                 "--results", str(tmp_path / "r.duckdb")]) == 0
    out = capsys.readouterr().out
    assert "ours (paper):" in out and out.count("dp-dnn") >= 6 and "nan" not in out
