"""Sampling streams (issue 15): bounded memory at any n, rows independent of how they are consumed, an n that
cannot fit the disk refused before any work, seeds and sizes type-checked."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpsynth.cli import main
from dpsynth.errors import InputError
from dpsynth.models import get_model_class


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 9, 3000), "b": rng.choice(["x", "y", "z"], 3000),
                          "c": rng.normal(size=3000)})
    return get_model_class("marginals")().fit(frame, epsilon=1.0, delta=1e-5, seed=0)


def test_chunks_concatenate_to_the_sample(model):
    whole = model.sample(2500, seed=7)
    chunks = list(model.sample_chunks(2500, seed=7))
    assert len(chunks) == 1 and chunks[0].equals(whole)
    small = list(model.sample_chunks(2500, seed=7, chunk_rows=1000))
    assert [len(c) for c in small] == [1000, 1000, 500]
    again = pd.concat(list(model.sample_chunks(2500, seed=7, chunk_rows=1000)), ignore_index=True)
    assert again.equals(pd.concat(small, ignore_index=True))  # same seed and chunk size: same rows
    assert [str(t) for t in again.dtypes] == [str(t) for t in whole.dtypes]
    assert len(list(model.sample_chunks(0, seed=1))[0]) == 0


@pytest.mark.parametrize("bad", [1.5, -1, "abc", True, [1]])
def test_bad_seeds_are_one_line_errors(model, bad):
    with pytest.raises(InputError, match="seed must be a non-negative integer or None"):
        model.sample(3, seed=bad)


@pytest.mark.parametrize("bad", [-1, 2.5, "10", True])
def test_bad_sizes_are_one_line_errors(model, bad):
    with pytest.raises(InputError, match="n must be a non-negative integer"):
        model.sample(bad)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_cli_streams_chunks_into_one_file(model, tmp_path, suffix, capsys, monkeypatch):
    from dpsynth.models import base

    path = tmp_path / "m.dpsynth"
    model.save(path)
    monkeypatch.setitem(base.Synthesizer.sample_chunks.__kwdefaults__, "chunk_rows", 700)  # 3 chunks of n=2000
    sizes = []
    real_sample = type(model)._sample
    monkeypatch.setattr(type(model), "_sample", lambda self, n, rng: sizes.append(n) or real_sample(self, n, rng=rng))
    out = tmp_path / f"s{suffix}"
    assert main(["sample", str(path), "-n", "2000", "-o", str(out), "--seed", "3"]) == 0
    frame = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    assert len(frame) == 2000 and list(frame.columns) == ["a", "b", "c"] and sizes[-3:] == [700, 700, 600]
    assert "wrote 2000 rows" in capsys.readouterr().err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


def test_cli_refuses_an_n_the_disk_cannot_hold(model, tmp_path, capsys):
    path = tmp_path / "m.dpsynth"
    model.save(path)
    out = tmp_path / "s.csv"
    assert main(["sample", str(path), "-n", str(10**13), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "GB free" in err and err.count("\n") == 1 and not out.exists()
