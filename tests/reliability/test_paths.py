"""Nothing a user types destroys data (issue 15): an output that is an input of the same command is refused before
any work, whatever the spelling (relative, '..', symlink, hard link); I/O errors are one line and exit 2."""

from __future__ import annotations

import errno
import os

import numpy as np
import pandas as pd
import pytest

from dpsynth.cli import main


@pytest.fixture()
def table(tmp_path):
    path = tmp_path / "data.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.integers(0, 5, 3000), "b": rng.choice(["x", "y"], 3000)}).to_csv(path, index=False)
    return path


def _spellings(path):
    """The same file written four ways."""
    link = path.with_name("link.csv")
    link.symlink_to(path)
    hard = path.with_name("hard.csv")
    os.link(path, hard)
    return [str(path), str(path.parent / "sub" / ".." / path.name), str(link), str(hard)]


def _refused(capsys, code, path, before):
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("dpsynth: error:") and err.count("\n") == 1 and "same file" in err, err
    assert path.read_bytes() == before  # untouched


def test_fit_and_schema_infer_refuse_to_overwrite_their_input(table, tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    before = table.read_bytes()
    for spelling in _spellings(table):
        _refused(capsys, main(["fit", str(table), "--epsilon", "1", "--out", spelling, "--quiet"]), table, before)
        _refused(capsys, main(["schema", "infer", str(table), "-o", spelling]), table, before)
    schema = tmp_path / "s.json"
    assert main(["schema", "infer", str(table), "-o", str(schema)]) == 0
    capsys.readouterr()
    before_schema = schema.read_bytes()
    _refused(capsys, main(["fit", str(table), "--schema", str(schema), "--epsilon", "1", "--out", str(schema)]),
             schema, before_schema)


def test_sample_refuses_to_overwrite_the_model_and_evaluate_its_inputs(table, tmp_path, capsys):
    model = tmp_path / "m.dpsynth"
    assert main(["fit", str(table), "--epsilon", "1", "--out", str(model), "--quiet"]) == 0
    capsys.readouterr()
    before = model.read_bytes()
    # a model file is a valid output suffix for nothing but fit: make the collision the only problem
    link = tmp_path / "m.csv"
    link.symlink_to(model)
    _refused(capsys, main(["sample", str(model), "-o", str(link)]), model, before)
    before_table = table.read_bytes()
    code = main(["evaluate", "--real", str(table), "--synthetic", str(table), "--json", str(table), "--quiet"])
    _refused(capsys, code, table, before_table)
    code = main(["attack", str(table), str(table), "--json", str(tmp_path / "r.json"),
                 "--report", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2 and "same file" in err and not (tmp_path / "r.json").exists()


def test_an_os_error_while_writing_is_one_line_and_exit_2(table, tmp_path, capsys, monkeypatch):
    import dpsynth._io as io

    def full_disk(path, writer):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(io, "atomic_write", full_disk)
    out = tmp_path / "s.json"
    code = main(["schema", "infer", str(table), "-o", str(out)])
    last = capsys.readouterr().err.splitlines()[-1]  # after the note that schema infer read the data
    assert code == 2 and last.startswith("dpsynth: error: No space left on device") and str(out) in last
    assert not out.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere: a read-only folder cannot be simulated")
def test_an_unwritable_output_folder_is_refused_before_the_fit(table, tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        code = main(["fit", str(table), "--epsilon", "1", "--out", str(folder / "m.dpsynth"), "--quiet"])
        assert code == 2 and "not writable" in capsys.readouterr().err
    finally:
        folder.chmod(0o755)
