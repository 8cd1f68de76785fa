"""Atomic writes: all or nothing, with ordinary file permissions; tables read back or fail in one line."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import stat
import zipfile

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


@pytest.mark.parametrize("text, line, found", [
    ("a,b\n1,2,3,4\n5\n", 2, 4),  # pandas made the extra fields an index: 1 and 2 vanished from the columns
    ("a,b\n1,2\n5\n", 3, 1),  # pandas filled the short row with NaN
    ("a,b\n1,2\n3,4,5\n", 3, 3),
    ('a,b\n"x,y",2\n\n"multi\nline",3\n7\n', 6, 1),  # quoted separators / newlines are one field; blank lines skipped
])
def test_ragged_csv_is_refused_naming_the_line(tmp_path, text, line, found):
    path = tmp_path / "ragged.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=rf"line {line} has {found} fields but the header has 2") as info:
        read_table(path)
    assert "\n" not in str(info.value)


def test_rectangular_csv_with_quotes_blank_lines_tsv_and_gzip_is_read(tmp_path):
    (tmp_path / "ok.csv").write_text('a,b\n"x,y",2\n\n"multi\nline",3\n')
    assert read_table(tmp_path / "ok.csv")["a"].tolist() == ["x,y", "multi\nline"]
    (tmp_path / "ok.tsv").write_text("a\tb\n1\t2\n")
    assert read_table(tmp_path / "ok.tsv").shape == (1, 2)
    with gzip.open(tmp_path / "ok.csv.gz", "wt") as handle:
        handle.write("a;b\n1;2\n")
    assert read_table(tmp_path / "ok.csv.gz", sep=";")["b"].tolist() == [2]
    with gzip.open(tmp_path / "bad.csv.gz", "wt") as handle:
        handle.write("a,b\n1\n")
    with pytest.raises(InputError, match="line 2 has 1 fields"):
        read_table(tmp_path / "bad.csv.gz")


@pytest.mark.parametrize("suffix", [".csv.bz2", ".csv.xz", ".csv.zip", ".tsv.gz"])
def test_compressed_tables_are_checked_and_read(tmp_path, suffix):
    good, bad = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}), "a,b\n1,2\n3\n"
    sep = "\t" if suffix.startswith(".tsv") else ","
    good.to_csv(tmp_path / f"good{suffix}", index=False, sep=sep)
    assert read_table(tmp_path / f"good{suffix}").equals(good)

    path = tmp_path / f"bad{suffix}"
    data = bad.replace(",", sep).encode()
    if suffix.endswith(".zip"):
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("bad.csv", data)
    else:
        path.write_bytes({".bz2": bz2.compress, ".xz": lzma.compress, ".gz": gzip.compress}[path.suffix](data))
    with pytest.raises(InputError, match="line 3 has 1 fields but the header has 2"):
        read_table(path)


@pytest.mark.parametrize("name", ["s.xlsx", "s.json", "s.csv.gz", "s.pq", "s"])
def test_unknown_table_output_suffix_is_refused_and_nothing_written(tmp_path, name):
    with pytest.raises(InputError, match=rf"must end in \.csv or \.parquet\. Found '{name}'"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_folder_or_missing_file_is_not_a_table(tmp_path):
    folder = tmp_path / "out.csv"
    folder.mkdir()
    with pytest.raises(InputError, match="Not a file"):
        read_table(folder)
    with pytest.raises(InputError, match="No such file"):
        read_table(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="is a folder"):
        write_table(pd.DataFrame({"a": [1]}), folder)
