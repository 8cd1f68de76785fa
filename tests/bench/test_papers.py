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
    dtgan = paper_spec("dtgan", seeds=[0])
    assert sorted((r.dataset, r.model, r.epsilon) for r in dtgan.runs if r.dataset == "loan") == [
        ("loan", "dtgan-d", 1), ("loan", "dtgan-d", 100), ("loan", "dtgan-g", 1), ("loan", "dtgan-g", 100),
        ("loan", "dtgan-g", math.inf)]
    sactgan = paper_spec("dp-sactgan")
    assert len(sactgan.runs) == 2 * 2 * 3 and {r.dataset for r in sactgan.runs} == {"adult", "king"}
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


def _ml_rows(key: str, scores: dict[str, dict[str, float]]) -> list[dict]:
    return [{"key": key, "metric": f"ml_efficacy.{score}.diff", "subject": model, "value": value}
            for score, by_model in scores.items() for model, value in by_model.items()]


def _similarity_rows(key: str, jsd: dict[str, float], wd: dict[str, float], corr: float) -> list[dict]:
    rows = [{"key": key, "metric": "similarity.jsd", "subject": c, "value": v} for c, v in jsd.items()]
    rows += [{"key": key, "metric": "similarity.jsd", "subject": "(all)", "value": 99.0}]  # the mean row: not used
    rows += [{"key": key, "metric": "similarity.wasserstein", "subject": c, "value": v} for c, v in wd.items()]
    return rows + [{"key": key, "metric": "similarity.association_diff", "subject": "(all)", "value": corr}]


def test_seed002_comparison_averages_four_classifiers_and_reports_jsd_as_a_distance():
    runs = pd.DataFrame({"key": ["a", "b", "c"], "spec": "paper-dtgan", "status": "ok",
                         "dataset": ["adult", "loan", "loan"], "model": "dtgan-d", "epsilon": [1.0, 1.0, 1.0]})
    classifiers = {"dt": 0.1, "rf": 0.2, "lr": 0.3, "mlp": 0.4, "xgb": 9.0}  # xgb is not in the paper's average
    metrics = pd.DataFrame(
        _ml_rows("a", {"accuracy": classifiers, "auc": classifiers, "ap": classifiers, "f1": classifiers})
        + _ml_rows("b", {"accuracy": {"dt": 0.0, "rf": 0.0, "lr": 0.0, "mlp": 0.0}, "auc": classifiers})
        + _ml_rows("c", {"accuracy": {"dt": 0.2, "rf": 0.2, "lr": 0.2, "mlp": 0.2}, "auc": classifiers})
        + _similarity_rows("a", {"x": 0.04, "y": 0.16}, {"n": 0.1}, 2.0)
        + _similarity_rows("b", {"x": 0.01}, {"n": 0.3}, 1.0) + _similarity_rows("c", {"x": 0.09}, {"n": 0.5}, 3.0))
    table = compare("dtgan", runs, metrics).set_index("dataset")
    assert table.loc["adult", "d acc % (paper)"] == "25.0"  # mean of 0.1..0.4, in %
    assert table.loc["adult", "Avg-JSD (paper)"] == "0.300"  # mean of sqrt(0.04), sqrt(0.16)
    assert table.loc["loan", "d acc % (paper)"] == "10.0" and table.loc["loan", "seeds"] == 2
    assert table.loc["loan", "Avg-JSD (paper)"] == "0.200" and table.loc["loan", "Diff-Corr (paper)"] == "2.000"
    mean = table.loc["mean of 2"]  # over datasets, beside the paper's DTGAN_D at epsilon 1
    assert mean["d acc % (paper)"] == "17.5 (16.1)" and mean["Avg-WD (paper)"] == "0.250 (0.063)"
    assert mean["model"] == "dtgan-d (DTGAN_D)"


def test_seed000_comparison_uses_logistic_regression_on_adult_and_ridge_on_king(monkeypatch):
    import dpsynth.bench.papers as papers

    monkeypatch.setattr(papers, "_test_range", lambda dataset: 200.0)
    runs = pd.DataFrame({"key": ["a", "k"], "spec": "paper-dp-sactgan", "status": "ok", "dataset": ["adult", "king"],
                         "model": "dp-sactgan", "epsilon": [1.0, math.inf]})
    metrics = pd.DataFrame(
        _ml_rows("a", {"accuracy": {"lr": 0.05, "rf": 0.5}, "auc": {"lr": 0.02}, "f1": {"lr": 0.03}})
        + _ml_rows("k", {"mae": {"lr": 4.0}, "evs": {"lr": 0.2}, "r2": {"lr": 0.25}})
        + _similarity_rows("a", {"x": 0.01}, {"n": 0.02}, 0.9) + _similarity_rows("k", {"x": 0.04}, {"n": 0.03}, 3.0))
    table = compare("dp-sactgan", runs, metrics).set_index("dataset")
    adult, king = table.loc["adult"], table.loc["king"]
    assert adult["model"] == "dp-sactgan (DP-SACTGAN)" and adult["LR d acc % (paper)"] == "5.00 (4.084)"
    assert adult["LR d AUC (paper)"] == "0.0200 (0.0261)" and adult["JSD (paper)"] == "0.1000 (0.101)"
    assert king["model"] == "dp-sactgan (CTAB-GAN+)" and king["d MAE (scaled) (paper)"] == "0.0200 (0.042)"
    assert king["d R2 (paper)"] == "0.2500 (0.222)" and king["Diff Cor (paper)"] == "3.000 (3.311)"


def test_every_paper_has_a_title_and_datasets():
    assert set(PAPERS) == {"dp-tldm", "dp-auto-gan", "unified", "dtgan", "dp-sactgan"}
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
