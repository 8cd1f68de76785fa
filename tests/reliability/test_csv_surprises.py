"""Files pandas would silently repair are refused with one line that names the problem (issue 15)."""

from __future__ import annotations

import zipfile

import pandas as pd
import pytest

from dpsynth._io import read_table
from dpsynth.cli import main
from dpsynth.errors import InputError

CASES = {
    "dupes.csv": ("a,b,a\n1,2,3\n4,5,6\n", r"names columns \['a'\] more than once"),
    "headerless.csv": ("1,2.5,3\n4,5,6\n", r"no header line"),
    "semicolons.csv": ("a;b;c\n1;2;3\n", r"seems ';'-separated, not ','-separated"),
    "tabs.csv": ("a\tb\n1\t2\n", r"seems tab-separated"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_suspicious_csv_is_refused_with_the_reason(tmp_path, name):
    text, message = CASES[name]
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_table(path)
    with pytest.raises(InputError, match=message):
        read_table(path, as_text=True)


def test_the_right_separator_reads_the_file(tmp_path, capsys):
    path = tmp_path / "semicolons.csv"
    path.write_text("a;b\n" + "".join(f"{i % 4};{'xy'[i % 2]}\n" for i in range(3000)))
    assert read_table(path, sep=";").shape == (3000, 2)
    out = tmp_path / "m.dpsynth"
    assert main(["fit", str(path), "--sep", ";", "--epsilon", "1", "--out", str(out), "--quiet"]) == 0
    assert main(["fit", str(path), "--epsilon", "1", "--out", str(tmp_path / "x.dpsynth"), "--quiet"]) == 2
    assert "';'-separated" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".xlsx", ".xls", ".csv"])
def test_spreadsheets_are_refused_by_suffix_or_content(tmp_path, suffix):
    path = tmp_path / f"book{suffix}"
    with zipfile.ZipFile(path, "w") as archive:  # an .xlsx is a zip container; named .csv it is still refused
        archive.writestr("xl/workbook.xml", "<workbook/>")
    with pytest.raises(InputError, match="spreadsheets are not supported: save the sheet as CSV"):
        read_table(path)


def test_an_ole2_excel_file_is_refused(tmp_path):
    path = tmp_path / "old.csv"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100))
    with pytest.raises(InputError, match="spreadsheet"):
        read_table(path)


def test_a_zip_holding_one_csv_still_reads(tmp_path):
    path = tmp_path / "t.csv.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("t.csv", "a,b\n1,x\n2,y\n")
    assert read_table(path).equals(pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}).astype({"b": "str"}))
