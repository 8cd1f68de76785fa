"""Encoded rows on disk (dpsynth.data.row_store): what a DP-SGD step reads is exactly the rows it drew."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest
import torch

from dpsynth.data.row_store import EncodedRows
from dpsynth.errors import InputError


def _chunks(rng, sizes, width):
    return [rng.standard_normal((n, width)).astype(np.float32) for n in sizes]


def test_rows_read_by_position_are_the_rows_written():
    rng = np.random.default_rng(0)
    chunks = _chunks(rng, [5, 0, 17, 3], 4)
    whole = np.concatenate(chunks)
    store = EncodedRows.write(iter(chunks), width=4)
    try:
        assert len(store) == 25 and store.shape == (25, 4)
        idx = torch.tensor([24, 0, 7, 7, 13, 5])  # unsorted, repeated, across chunk borders
        got = store[idx]
        assert got.dtype == torch.float32 and got.shape == (6, 4)
        np.testing.assert_array_equal(got.numpy(), whole[idx.numpy()])
        np.testing.assert_array_equal(store[np.arange(25)].numpy(), whole)
        assert store[torch.zeros(0, dtype=torch.long)].shape == (0, 4)
        with pytest.raises(InputError, match="outside"):
            store[torch.tensor([25])]
    finally:
        store.close()


def test_the_folder_is_private_and_removed_at_close_and_on_failure(tmp_path, monkeypatch):
    store = EncodedRows.write([np.ones((2, 3))], width=3)
    folder = store.folder
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    store.close()
    assert not os.path.exists(folder)

    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def failing():
        yield np.ones((2, 3))
        raise ValueError("a chunk failed")

    with pytest.raises(ValueError, match="a chunk failed"):
        EncodedRows.write(failing(), width=3)
    with pytest.raises(InputError, match="not a matrix of 3 columns"):
        EncodedRows.write([np.ones((2, 4))], width=3)
    assert list(tmp_path.iterdir()) == []  # no partial file left behind


def test_a_collected_store_removes_its_folder():
    store = EncodedRows.write([np.ones((1, 2))], width=2)
    folder = store.folder
    del store
    import gc

    gc.collect()
    assert not os.path.exists(folder)
