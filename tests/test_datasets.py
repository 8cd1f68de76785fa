from __future__ import annotations

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
    assert datasets.load("wine").shape == (178, 14)
    assert datasets.load("karate").number_of_nodes() == 34


def test_file_datasets_from_a_user_path(tmp_path):
    with pytest.raises(InputError, match="needs the file universal_bank_loan.csv.gz"):
        datasets.load("loan", path=tmp_path)
    shared = tmp_path.parent / "missing"
    import shutil
    from pathlib import Path

    source = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "universal_bank_loan.csv.gz"
    if not source.exists():
        pytest.skip("shared datasets folder not next to the repository")
    shutil.copy(source, tmp_path / source.name)
    assert datasets.load("loan", path=tmp_path).shape == (5000, 14)
    del shared


def test_unknown_dataset():
    with pytest.raises(InputError, match="Unknown dataset 'nope'"):
        datasets.load("nope")
