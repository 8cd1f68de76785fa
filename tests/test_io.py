"""Atomic writes: all or nothing, with ordinary file permissions; tables read back or fail in one line."""

from __future__ import annotations

import os
import stat

import pandas as pd
import pytest

import dpsynth
from dpsynth._io import atomic_write, atomic_write_text, read_table, write_table
from dpsynth.errors import InputError


def test_failed_writer_leaves_nothing_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old")

    def broken(path):
        path.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, broken)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_written_files_get_the_umask_mode_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "a.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_missing_output_folder_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        atomic_write_text(tmp_path / "nope" / "a.txt", "x")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_table_round_trip(tmp_path, suffix):
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", None]})
    path = write_table(df, tmp_path / f"t{suffix}")
    back = read_table(path)
    assert back["a"].tolist() == [1, 2, 3]
    assert back["b"].iloc[:2].tolist() == ["x", "y"] and pd.isna(back["b"].iloc[2])


def test_unreadable_table_is_one_line_input_error(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(InputError) as info:
        read_table(bad)
    assert "\n" not in str(info.value)


def test_top_level_names_are_lazy_and_resolve():
    assert set(dpsynth.available_models()) >= {"marginals", "dp-tldm", "dp-auto-gan"}
    assert callable(dpsynth.load_model) and callable(dpsynth.assess_risk)
    with pytest.raises(AttributeError):
        dpsynth.no_such_name  # noqa: B018


def test_model_files_get_the_umask_mode_too(tmp_path, adult_small, adult_schema):
    from dpsynth.models import get_model_class

    old = os.umask(0o022)
    try:
        model = get_model_class("marginals")().fit(adult_small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
        path = model.save(tmp_path / "m.dpsynth")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
